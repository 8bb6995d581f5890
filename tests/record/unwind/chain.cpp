// One link of a call chain across three shared libraries built from this file with different flags
// (tests/CMakeLists.txt): chain_nofp (-fomit-frame-pointer, CFI only), chain_fp (frame pointers and
// CFI) and chain_nocfi (frame pointers, no .eh_frame), each calling the next through the PLT, like
// PyTorch's C++ without frame pointers calling through libraries with them.
#include <cstdint>

extern "C" {
typedef int (*chain_cb)(void*);
int CHAIN_NEXT(int depth, chain_cb cb, void* arg);

__attribute__((noinline)) int CHAIN_NAME(int depth, chain_cb cb, void* arg) {
  volatile uint64_t pad[3] = {static_cast<uint64_t>(depth), 1, 2};  // a frame of some size
  int r = depth <= 0 ? cb(arg) : CHAIN_NEXT(depth - 1, cb, arg);
  pad[1] = pad[1] + static_cast<uint64_t>(r);
  return static_cast<int>(pad[1]);  // not a tail call: every link keeps its frame
}

#ifdef CHAIN_WORK
// A small function with a frame, called in a loop through the PLT (from chain_spin in another
// library), so that asynchronous signals land in its prologue, body, epilogue and in PLT stubs.
__attribute__((noinline)) uint64_t CHAIN_WORK(uint64_t x) {
  volatile uint64_t a[6];
  for (int i = 0; i < 6; i++) a[i] = x + static_cast<uint64_t>(i);
  return a[x % 6] * 3 + 1;
}
#endif
#ifdef CHAIN_SPIN
uint64_t chain_work(uint64_t x);
__attribute__((noinline)) int chain_spin(void* flag) {
  uint64_t acc = 0;
  while (!*static_cast<volatile int*>(flag)) acc += chain_work(acc);
  return static_cast<int>(acc & 1);
}
#endif
}
