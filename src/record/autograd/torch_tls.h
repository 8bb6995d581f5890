// Torch's autograd thread-locals read in place: the sequence number, the graph task and the current
// node, at offsets from the calling thread's TLS block of libtorch_cpu.so (torch_tls_code.h says why
// and how they are found). Resolved once per process from the functions' code and checked against
// the functions on each thread before that thread reads them itself.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "record/autograd/torch_api.h"

namespace aiflame {

struct TorchTls {
  const void* index = nullptr;  // the tls_index peek() passes to __tls_get_addr: its result is the base
  void* (*tls_get_addr)(const void*) = nullptr;
  void* (*task_accessor)() = nullptr;  // c10::ThreadLocal accessors: this thread's variable
  void* (*node_accessor)() = nullptr;
  // From the base: the sequence number (uint64_t), the graph task's and the current node's
  // shared_ptr (element pointer first); from a GraphTask, its int id.
  int32_t seq = 0, task = 0, node = 0, task_id = 0;
};

// Decodes api's peek, get_current_graph_task_id and get_current_node (x86-64), calls each once, and
// checks the reads on this thread against them. nullopt (with *why) where any step fails.
std::optional<TorchTls> resolve_torch_tls(const TorchApi& api, std::string* why);

// This thread's base, if the accessors' variables lie at the resolved offsets from it and the reads
// equal the functions' results now; null: the thread calls the functions.
const char* torch_tls_base_here(const TorchTls& tls, const TorchApi& api);

// The reads themselves, from a thread's base.
inline uint64_t torch_tls_seq(const char* base, int32_t seq_off) {
  uint64_t v;
  __builtin_memcpy(&v, base + seq_off, sizeof v);
  return v;
}
inline int torch_tls_graph_task(const char* base, int32_t task_off, int32_t id_off) {
  const char* task;
  __builtin_memcpy(&task, base + task_off, sizeof task);
  if (!task) return -1;
  int32_t id;
  __builtin_memcpy(&id, task + id_off, sizeof id);
  return id;
}
inline const char* torch_tls_node(const char* base, int32_t node_off) {
  const char* node;
  __builtin_memcpy(&node, base + node_off, sizeof node);
  return node;
}

}  // namespace aiflame
