// The bounds of the calling thread's stack, which every walk's reads are kept inside.
#pragma once
#include <cstdint>

namespace aiflame::unwind {

struct StackBounds {
  uint64_t lo = 0, hi = 0;  // [lo, hi); hi = 0: unknown
  bool holds(uint64_t sp) const { return hi && sp >= lo && sp < hi; }
};

// The calling thread's stack, found once per thread (the walk keeps it in a thread-local). A thread
// other than the main one: pthread_getattr_np, which reads glibc's thread descriptor. The main thread:
// main_thread_stack() when it finds one, else pthread_getattr_np.
StackBounds find_thread_stack();

// The main thread's stack without /proc/self/maps, which pthread_getattr_np reads for the main thread
// at a cost in proportion to the mappings (1.2 ms at 2,000 on the development machine; a PyTorch
// training loop's first launch took 2.1 ms on the H200). hi is glibc's: the end of
// the page that holds __libc_stack_end (the program's first stack pointer; argv, the environment and the
// auxiliary vector lie above it). lo is hi less RLIMIT_STACK, without glibc's clipping at the mapping
// below (that needs /proc/self/maps again): the kernel keeps the mmap base at least RLIMIT_STACK plus the
// stack's randomisation and guard gap below the stack's top, so nothing else is mapped there. lo only
// tells a stack pointer on another stack (the walk then takes the slow path); reads stay in [sp, hi).
// Returns bounds with hi = 0 on another thread, on a thread that forked the process (the child's only
// thread, on its own stack), or when RLIMIT_STACK is unlimited or above 1 GiB (the layout above is then
// not assured).
StackBounds main_thread_stack();

}  // namespace aiflame::unwind
