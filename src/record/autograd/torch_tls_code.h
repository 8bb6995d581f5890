// How torch's autograd functions reach their thread-locals, read from their x86-64 machine code, so
// that a launch can read those thread-locals itself (record/autograd/torch_tls.h).
//
// The autograd tracking asks torch, at every launch, for the thread's sequence number (peek), its
// graph task (get_current_graph_task_id) and the node it evaluates (get_current_node). Each is a call
// into libtorch_cpu.so that reaches a thread-local through __tls_get_addr or a c10::ThreadLocal
// accessor, and get_current_node also copies a shared_ptr (two atomic reference-count updates with its
// destruction): 0.08-0.10 us per launch warm on the H200.
// These decoders accept only the exact instruction sequences that compute those values (torch 2.11's
// wheel, and what GCC emits for the same source with general- or local-dynamic TLS), so that what they
// return reads the same memory as the function by construction; anything else is refused (nullopt) and
// the tracking keeps calling the functions.
#pragma once
#include <cstdint>
#include <optional>
#include <span>

namespace aiflame {

// peek(): return *(uint64_t*)(__tls_get_addr(index) + disp).
struct TlsGetAddrLoad {
  uint64_t index = 0;   // address of the tls_index passed to __tls_get_addr (a GOT entry)
  uint64_t callee = 0;  // the call's target (a PLT stub), or with `indirect` the GOT slot it calls through
  bool indirect = false;
  int32_t disp = 0;
};
std::optional<TlsGetAddrLoad> decode_tls_get_addr_load(std::span<const uint8_t> code, uint64_t at);

// A c10::ThreadLocal accessor: `slot` holds a function that returns the thread-local's address.
// get_current_graph_task_id(): p = (*slot)(); return *(void**)p ? *(int32_t*)(*(char**)p + disp) : -1.
// get_current_node(): returns a copy of the shared_ptr at (*slot)() (its element pointer first); disp 0.
struct AccessorLoad {
  uint64_t slot = 0;
  int32_t disp = 0;
};
std::optional<AccessorLoad> decode_graph_task_id(std::span<const uint8_t> code, uint64_t at);
std::optional<AccessorLoad> decode_current_node(std::span<const uint8_t> code, uint64_t at);

// A PLT stub (`jmp *slot(%rip)`, with or without endbr64 and bnd): the GOT slot it jumps through.
std::optional<uint64_t> decode_plt_stub(std::span<const uint8_t> code, uint64_t at);

}  // namespace aiflame
