// What the autograd tracking's tests hand it in place of a loaded torch: a node laid out as the tracker
// reads torch::autograd::Node, and a TorchApi made of given functions.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "record/autograd/torch_api.h"

namespace aiflame::test {

// torch::autograd::Node as the tracker reads it: sequence_nr_ at 24, thread_id_ at 48.
struct FakeNode {
  void* vptr = nullptr;
  // enable_shared_from_this's weak_ptr: two pointers, as a real one holds.
  uintptr_t weak[2] = {0x7f1234567890, 0x7f12345678a0};
  uint64_t sequence_nr = 0;
  uint64_t topological_nr = 0;
  bool has_parent = false;
  uint64_t thread_id = 0;
};
static_assert(offsetof(FakeNode, sequence_nr) == 24 && offsetof(FakeNode, thread_id) == 48);

// A torch 2.11 whose node layout is known, made of these functions.
inline TorchApi torch_api_of(uint64_t (*peek)(), uint64_t (*thread_id)(), int (*graph_task_id)(),
                             std::shared_ptr<void> (*current_node)(), const char* library) {
  TorchApi api;
  api.peek = peek;
  api.thread_id = thread_id;
  api.graph_task_id = graph_task_id;
  api.current_node = current_node;
  api.node_layout = true;
  api.version = "2.11.0";
  api.library = library;
  return api;
}

}  // namespace aiflame::test
