#include "record/measure/tls_probe.h"

#include <x86intrin.h>

#include <utility>

namespace aiflame {
namespace {

constexpr int kAccesses = 8;

// Each its own function, variable and call site, as the launch path's (recorder, capture, unwinder,
// writer, autograd tracker). One byte each: the library's TLS block must stay inside glibc's 512-byte
// static surplus (util/static_tls.h).
template <int K>
struct ThreadLocal {
  __attribute__((noinline)) static void touch() {
    static thread_local char v;
    v = static_cast<char>(v + 1);
    asm volatile("" ::"r"(&v) : "memory");
  }
};

struct alignas(64) Line {
  char v;
};
Line g_lines[kAccesses];

template <int K>
struct Global {
  __attribute__((noinline)) static void touch() {
    g_lines[K].v = static_cast<char>(g_lines[K].v + 1);
    asm volatile("" ::"r"(&g_lines[K]) : "memory");
  }
};

// TSC ticks of one call of each Kind<K>::touch, fenced.
template <template <int> class Kind, int... K>
uint64_t time_round(std::integer_sequence<int, K...>) {
  _mm_lfence();
  const uint64_t t0 = __rdtsc();
  _mm_lfence();
  (Kind<K>::touch(), ...);
  unsigned aux;
  const uint64_t t1 = __rdtscp(&aux);
  _mm_lfence();
  return t1 - t0;
}

}  // namespace

void TlsProbe::run() {
  constexpr auto seq = std::make_integer_sequence<int, kAccesses>{};
  const bool tls_first = rounds.fetch_add(1, std::memory_order_relaxed) & 1;
  uint64_t t[2], g[2];
  if (tls_first) {
    t[0] = time_round<ThreadLocal>(seq), t[1] = time_round<ThreadLocal>(seq);
    g[0] = time_round<Global>(seq), g[1] = time_round<Global>(seq);
  } else {
    g[0] = time_round<Global>(seq), g[1] = time_round<Global>(seq);
    t[0] = time_round<ThreadLocal>(seq), t[1] = time_round<ThreadLocal>(seq);
  }
  for (int i = 0; i < 2; i++) {
    tls_ticks[i].fetch_add(t[i], std::memory_order_relaxed);
    global_ticks[i].fetch_add(g[i], std::memory_order_relaxed);
  }
}

TlsProbe::Figures TlsProbe::figures(double ns_per_tick) const {
  Figures f;
  f.rounds = rounds.load();
  const double per = f.rounds ? ns_per_tick / static_cast<double>(f.rounds) / kAccesses : 0.0;
  for (int i = 0; i < 2; i++) {
    f.tls_ns[i] = static_cast<double>(tls_ticks[i].load()) * per;
    f.global_ns[i] = static_cast<double>(global_ticks[i].load()) * per;
  }
  return f;
}

}  // namespace aiflame
