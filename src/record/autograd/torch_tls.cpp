#include "record/autograd/torch_tls.h"

#include <dlfcn.h>

#include <cstring>
#include <limits>

#include "record/autograd/torch_tls_code.h"
#include "util/safe_memory.h"

namespace aiflame {
namespace {

// A function's first bytes: each decoded sequence is under 64 bytes.
struct Code {
  uint8_t bytes[64];
  size_t n = 0;
  std::span<const uint8_t> span() const { return {bytes, n}; }
};
bool read_code(const void* fn, Code& c) {
  // A function near the end of its mapping: fewer bytes, down to what the shortest sequence needs.
  for (size_t n : {sizeof c.bytes, size_t{32}, size_t{24}})
    if (safe_copy(fn, c.bytes, n)) {
      c.n = n;
      return true;
    }
  return false;
}
template <class T>
bool read_word(uint64_t at, T& out) {
  return safe_copy(reinterpret_cast<const void*>(at), &out, sizeof out);
}
template <class F>
uint64_t addr_of_fn(F f) {
  return reinterpret_cast<uint64_t>(reinterpret_cast<void*>(f));
}

std::nullopt_t refuse(std::string* why, const char* what) {
  if (why) *why = what;
  return std::nullopt;
}

// Whether the reads from `base` give what the functions give now, on this thread.
bool same_as_functions(const TorchTls& t, const char* base, const TorchApi& api) {
  if (torch_tls_seq(base, t.seq) != api.peek()) return false;
  if (torch_tls_graph_task(base, t.task, t.task_id) != api.graph_task_id()) return false;
  std::shared_ptr<void> node = api.current_node();
  return torch_tls_node(base, t.node) == node.get();
}

bool fits(int64_t v) {
  return v >= std::numeric_limits<int16_t>::min() && v <= std::numeric_limits<int16_t>::max();
}

}  // namespace

std::optional<TorchTls> resolve_torch_tls(const TorchApi& api, std::string* why) {
#if defined(__x86_64__)
  if (!api.peek || !api.graph_task_id || !api.current_node) return refuse(why, "torch lacks a function");
  // Called once first: a lazily bound PLT slot is bound by then.
  (void)api.peek();
  (void)api.graph_task_id();
  (void)api.current_node();
  TorchTls t;
  t.tls_get_addr = reinterpret_cast<void* (*)(const void*)>(dlsym(RTLD_DEFAULT, "__tls_get_addr"));
  if (!t.tls_get_addr) return refuse(why, "no __tls_get_addr");
  Code peek, task, node;
  if (!read_code(reinterpret_cast<const void*>(api.peek), peek) ||
      !read_code(reinterpret_cast<const void*>(api.graph_task_id), task) ||
      !read_code(reinterpret_cast<const void*>(api.current_node), node))
    return refuse(why, "code not readable");
  const auto load = decode_tls_get_addr_load(peek.span(), addr_of_fn(api.peek));
  if (!load) return refuse(why, "peek's code is not a known sequence");
  // The call must reach __tls_get_addr: through a PLT stub or a GOT slot, bound to it.
  uint64_t slot = load->callee;
  if (!load->indirect) {
    Code stub;
    if (!read_code(reinterpret_cast<const void*>(load->callee), stub)) return refuse(why, "PLT stub not readable");
    const auto s = decode_plt_stub(stub.span(), load->callee);
    if (!s) return refuse(why, "peek's call is not through a PLT stub");
    slot = *s;
  }
  uint64_t target = 0;
  if (!read_word(slot, target) || target != addr_of_fn(t.tls_get_addr))
    return refuse(why, "peek's call does not reach __tls_get_addr");
  const auto gt = decode_graph_task_id(task.span(), addr_of_fn(api.graph_task_id));
  const auto cn = decode_current_node(node.span(), addr_of_fn(api.current_node));
  if (!gt) return refuse(why, "get_current_graph_task_id's code is not a known sequence");
  if (!cn) return refuse(why, "get_current_node's code is not a known sequence");
  if (!read_word(gt->slot, t.task_accessor) || !read_word(cn->slot, t.node_accessor) || !t.task_accessor ||
      !t.node_accessor)
    return refuse(why, "accessor slots not readable");
  t.index = reinterpret_cast<const void*>(load->index);
  const char* base = static_cast<const char*>(t.tls_get_addr(t.index));
  const int64_t task_off = static_cast<const char*>(t.task_accessor()) - base;
  const int64_t node_off = static_cast<const char*>(t.node_accessor()) - base;
  // Within 32 KiB of the base (libtorch_cpu.so 2.11's TLS block is 26 KiB): the per-thread state keeps
  // the offsets in 16 bits, and a variable of another module's block would be farther.
  if (!fits(load->disp) || !fits(task_off) || !fits(node_off) || !fits(gt->disp))
    return refuse(why, "thread-locals not within 32 KiB of each other");
  t.seq = load->disp;
  t.task = static_cast<int32_t>(task_off);
  t.node = static_cast<int32_t>(node_off);
  t.task_id = gt->disp;
  if (!same_as_functions(t, base, api)) return refuse(why, "the reads differ from the functions");
  return t;
#else
  (void)api;
  (void)same_as_functions;
  (void)fits;
  return refuse(why, "not x86-64");
#endif
}

const char* torch_tls_base_here(const TorchTls& t, const TorchApi& api) {
  const char* base = static_cast<const char*>(t.tls_get_addr(t.index));
  if (!base || static_cast<const char*>(t.task_accessor()) - base != t.task ||
      static_cast<const char*>(t.node_accessor()) - base != t.node || !same_as_functions(t, base, api))
    return nullptr;
  return base;
}

}  // namespace aiflame
