// Whether the calling library's thread-locals sit in glibc's static TLS block. The injection library
// is compiled with -mtls-dialect=gnu2 (src/CMakeLists.txt): glibc then places a dlopen'ed library's
// thread-locals in the static block when they fit in its surplus (glibc.rtld.optional_static_tls, 512
// bytes by default), and each access is a load from the TLS descriptor, where otherwise it is a call to
// __tls_get_addr that reads the thread's DTV (the launch path makes about 20).
#pragma once

namespace aiflame {

bool thread_locals_static();

}  // namespace aiflame
