// Issue #22: what reading N cache lines costs on this host when they are cold, the floor of any
// capture that checks every frame of a launch's stack at every launch. The lines are laid out as a
// launch's stack words are (one line per ~512 bytes, so 40 lines span ~20 KiB and five pages); before
// each timed read a 256-MiB buffer is written (evicting the lines and their page translations, as a
// training step's work between two launches does), or nothing (the lines just read: "hot").
//   independent: all N loads issued at once (what a memo check of N lines does)
//   dependent:   each load's address from the previous load (a walk, or the Python frames' chain)
// Prints per N the median and the 10th-90th percentiles of 101 reads, in ns (TSC calibrated against
// CLOCK_MONOTONIC).
// Build and run: gcc -O2 -o /tmp/cold_lines bench/probes/cold_lines.c && /tmp/cold_lines
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

enum { kStride = 512, kMaxLines = 96, kReps = 101 };
static const size_t kEvict = (size_t)256 << 20;

static double mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  // TSC frequency.
  double n0 = mono_ns();
  uint64_t c0 = __rdtsc();
  while (mono_ns() - n0 < 2e8) {}
  double ns_per_tick = (mono_ns() - n0) / (double)(__rdtsc() - c0);

  char* region = aligned_alloc(4096, (size_t)kMaxLines * kStride + 4096);
  char* evict = malloc(kEvict);
  memset(region, 0, (size_t)kMaxLines * kStride + 4096);
  memset(evict, 1, kEvict);
  // The chain for the dependent reads: line i holds the address of line i + 1.
  for (int i = 0; i < kMaxLines - 1; i++) *(char**)(region + (size_t)i * kStride) = region + (size_t)(i + 1) * kStride;
  *(char**)(region + (size_t)(kMaxLines - 1) * kStride) = region;

  static const int ns[] = {1, 8, 16, 24, 32, 40, 48, 64, 96};
  printf("lines pages  independent-cold  dependent-cold  independent-hot  (ns: median [p10, p90])\n");
  for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
    int n = ns[k];
    double t[3][kReps];
    for (int mode = 0; mode < 3; mode++) {
      for (int r = 0; r < kReps; r++) {
        if (mode < 2) {
          for (size_t i = 0; i < kEvict; i += 64) evict[i]++;
        } else {
          for (int i = 0; i < n; i++) (void)*(volatile uint64_t*)(region + (size_t)i * kStride);
        }
        unsigned aux;
        _mm_lfence();
        uint64_t a = __rdtsc();
        _mm_lfence();
        uint64_t sum = 0;
        if (mode == 1) {
          char* p = region;
          for (int i = 0; i < n; i++) p = *(char* volatile*)p;
          sum = (uint64_t)p;
        } else {
          for (int i = 0; i < n; i++) sum += *(volatile uint64_t*)(region + (size_t)i * kStride);
        }
        uint64_t b = __rdtscp(&aux);
        _mm_lfence();
        __asm__ volatile("" ::"r"(sum));
        t[mode][r] = (double)(b - a) * ns_per_tick;
      }
      qsort(t[mode], kReps, sizeof(double), cmp);
    }
    printf("%5d %5d", n, (n * kStride + 4095) / 4096);
    for (int mode = 0; mode < 3; mode++)
      printf("  %6.0f [%5.0f, %5.0f]", t[mode][kReps / 2], t[mode][kReps / 10], t[mode][kReps * 9 / 10]);
    printf("\n");
  }
  return 0;
}
