// The launch path's thread-locals reached as the thread pointer plus an offset, without a TLS
// descriptor's call (issue 22).
//
// The injection library is compiled with TLS descriptors (-mtls-dialect=gnu2, util/static_tls.h):
// each thread-local's address is an indirect call into ld.so (_dl_tlsdesc_return), which a launch
// runs with the branch predictors cold, and GCC takes it again after any call or branch. On the H200
// such an access cost 10.8-12.0 ns before each launch of a training loop against 7.0-7.3 for a
// global's (AIFLAME_LAB=capture_probe=4). Taking each address once per function
// brought a launch from 22 calls to 12; callgrind still counted 10 in the timed
// part of a launch and 2 in the callback around it (BM_OnLaunchCold), none with
// this. A library in glibc's static TLS block has its thread-locals at one offset from the thread
// pointer in every thread, so once that offset is known an access is %fs:0 plus a load from one
// shared line. (An initial-exec build, which would have the linker do this, did not record on the GPU
// host.)
//
// Each variable is enrolled with a function that takes its address (AIFLAME_TLS_ENROLL) and learned
// once per process (learn(), off the launch path): its offset from a new thread's pointer, where the
// block below the pointer is that thread's static TLS and then its stack (a dynamic TLS block comes
// from malloc, never from there), and from the learning thread's, the two equal. Until then, or where
// they differ, the access is the ordinary one. The variables must be constant-initialised and
// trivially destructible (an access by offset runs no initialiser and registers no destructor).
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace aiflame::tls {

// One per variable reached this way (the variables live in their own files).
enum Slot : int {
  kPhase,       // record/crash_report.cpp: t_phase
  kLaunch,      // record/recorder.cpp: t_launch
  kMemo,        // record/stack_capture.cpp: t_memo
  kStack,       // record/unwind/unwinder.cpp: t_stack
  kAutograd,    // record/autograd/autograd_tracker.cpp: t_autograd
  kAutogradSets,  // and t_sets
  kWriterLast,  // profile/profile_writer.cpp: t_last
  kPyWalk,      // record/python_frames.cpp: t_pywalk
  kPriming,     // record/cupti/cupti_windows.cpp: t_priming (the launch callback's enter and exit)
  kTestA,       // tests only
  kTestB,
  kSlots
};

// The offsets from the thread pointer (0: not known, the ordinary access), on one line.
struct alignas(64) Offsets {
  std::atomic<intptr_t> at[kSlots];
};
extern constinit Offsets g_offsets;

using AddressOf = void* (*)();
// At static initialisation: the function that takes slot s's variable's address. Returns true (for
// the macro's static).
bool enroll(Slot s, AddressOf address_of);

// Learns every enrolled variable's offset, once per process (later calls return the first's answer):
// true if they are in static TLS and so reached by offset. Creates and joins one short-lived thread.
bool learn();
// Tests: every offset forgotten (the ordinary access again), and learn() runs again at its next call.
void forget_for_tests();
// Tests: learn() with `probe` standing in for slot s's variable on both threads (an address that is
// not in static TLS, say).
bool learn_for_tests(Slot s, AddressOf probe);

inline uintptr_t thread_pointer() {
  uintptr_t tp;
  asm("mov %%fs:0, %0" : "=r"(tp));  // not volatile: one read serves a function
  return tp;
}

// The address of slot S's variable, whose ordinary access is `address_of` (a lambda returning it).
// The empty asm keeps the pointer in a register (util/hot_path.h's tls_address says why).
template <Slot S, class F>
__attribute__((always_inline)) inline auto address(F address_of) {
  using P = decltype(address_of());
  const intptr_t off = g_offsets.at[S].load(std::memory_order_relaxed);
  P p;
  if (off) [[likely]]
    p = reinterpret_cast<P>(thread_pointer() + static_cast<uintptr_t>(off));
  else
    p = address_of();
  asm("" : "+r"(p));
  return p;
}

}  // namespace aiflame::tls

// Enrolls `var` (a namespace-scope, constinit thread_local of this file) as `slot`.
#define AIFLAME_TLS_ENROLL(slot, var)                                                                 \
  static_assert(std::is_trivially_destructible_v<std::remove_reference_t<decltype(var)>>,             \
                "reached by offset: no destructor is registered (util/tls_offsets.h)");               \
  [[maybe_unused]] static const bool aiflame_tls_enrolled_##var =                                     \
      ::aiflame::tls::enroll(slot, []() -> void* { return const_cast<void*>(static_cast<const void*>(&var)); })
// The address of `var`, enrolled as `slot`.
#define AIFLAME_TLS(slot, var) ::aiflame::tls::address<slot>([]() { return &var; })
