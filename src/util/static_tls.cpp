#include "util/static_tls.h"

#include <cstdint>

namespace aiflame {

bool thread_locals_static() {
#if defined(__x86_64__)
  // x86-64 keeps the static block right below the thread pointer (%fs:0 holds its own address); a
  // block allocated at the first access comes from malloc, elsewhere.
  static thread_local char probe;
  uintptr_t tp = 0;
  asm volatile("mov %%fs:0, %0" : "=r"(tp));
  const auto at = reinterpret_cast<uintptr_t>(&probe);
  return at < tp && tp - at <= (uintptr_t{64} << 10);
#else
  return false;
#endif
}

}  // namespace aiflame
