// A shared library with functions inlined into one another, built with -g -O1 whatever the build
// type, for the native inline-frame tests (tests/symbolize/native_lines_test.cpp). The test finds
// the lines by their markers.
#include <cstdint>

extern "C" __attribute__((noinline, noipa)) uint64_t elf_inline_return_address() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

namespace fixture {

__attribute__((always_inline)) inline uint64_t innermost(int x) {
  uint64_t r = elf_inline_return_address();  // MARK_INNER
  asm volatile("" ::"r"(x));
  return r;
}

__attribute__((always_inline)) inline uint64_t middle(int x) {
  uint64_t r = innermost(x + 1);  // MARK_MIDDLE
  asm volatile("" ::"r"(r));
  return r;
}

}  // namespace fixture

extern "C" __attribute__((noinline)) uint64_t elf_inline_outer(int x) {
  uint64_t r = fixture::middle(x * 2);  // MARK_OUTER
  asm volatile("" ::"r"(r));
  return r;
}
