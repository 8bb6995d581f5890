// A library dlopen'ed by util/tls_offsets_test.cpp, as the injection library is: its own copy of
// util/tls_offsets.cpp (hidden, so its accesses bind to it), one small thread-local and one of
// AIFLAME_TEST_TLS_BYTES bytes. Small, glibc puts it in its static TLS surplus and learn() reaches the
// variables by offset; past the surplus (512 bytes by default) it gets a dynamic block and learn()
// must leave every access the ordinary one.
#include <cstdint>

#include "util/static_tls.h"
#include "util/tls_offsets.h"

namespace {
thread_local constinit uint64_t t_small = 0;
AIFLAME_TLS_ENROLL(aiflame::tls::kTestA, t_small);
thread_local constinit char t_big[AIFLAME_TEST_TLS_BYTES] = {};
AIFLAME_TLS_ENROLL(aiflame::tls::kTestB, t_big);
}  // namespace

#define EXPORT extern "C" __attribute__((visibility("default")))

EXPORT int aiflame_tlsmod_static() { return aiflame::thread_locals_static() ? 1 : 0; }
EXPORT int aiflame_tlsmod_learn() { return aiflame::tls::learn() ? 1 : 0; }
EXPORT intptr_t aiflame_tlsmod_offset() { return aiflame::tls::g_offsets.at[aiflame::tls::kTestA].load(); }
// 1 if both variables' accesses give their own addresses, and a value written through one reads back.
EXPORT int aiflame_tlsmod_access_ok(uint64_t value) {
  uint64_t* a = AIFLAME_TLS(aiflame::tls::kTestA, t_small);
  auto* b = AIFLAME_TLS(aiflame::tls::kTestB, t_big);
  if (a != &t_small || b != &t_big) return 0;
  *a = value;
  (*b)[AIFLAME_TEST_TLS_BYTES - 1] = static_cast<char>(value);
  return t_small == value && t_big[AIFLAME_TEST_TLS_BYTES - 1] == static_cast<char>(value) ? 1 : 0;
}
