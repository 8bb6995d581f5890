// Whether this host's CPU counters can be read by a process (perf_event_open), and by rdpmc. Run on
// the GPU machine (2026-11-29): every event "No such file or directory" there as here (no PMU in the VM).
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int open_ev(uint32_t type, uint64_t config, int group) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = type;
  a.config = config;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return (int)syscall(SYS_perf_event_open, &a, 0, -1, group, 0);
}
#define CACHE(c, op, r) ((c) | ((op) << 8) | ((r) << 16))
int main(void) {
  struct { const char* name; uint32_t type; uint64_t config; } ev[] = {
      {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
      {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
      {"llc-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
      {"l1d-read-miss", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS)},
      {"l1i-read-miss", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_L1I, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS)},
      {"dtlb-read-miss", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_DTLB, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS)},
      {"itlb-read-miss", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_ITLB, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS)},
      {"ll-read-miss", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS)},
  };
  size_t n = sizeof ev / sizeof ev[0];
  int fd[16];
  size_t big = 256 << 20;
  char* buf = malloc(big);
  for (size_t i = 0; i < n; i++) {
    fd[i] = open_ev(ev[i].type, ev[i].config, -1);
    if (fd[i] < 0) { printf("%-16s open failed: %m\n", ev[i].name); continue; }
  }
  for (size_t j = 0; j < big; j += 64) buf[j] = (char)j;
  for (size_t i = 0; i < n; i++) {
    if (fd[i] < 0) continue;
    uint64_t v = 0;
    if (read(fd[i], &v, sizeof v) != sizeof v) { printf("%-16s read failed\n", ev[i].name); continue; }
    printf("%-16s %llu (a 256-MiB write, %zu lines)\n", ev[i].name, (unsigned long long)v, big / 64);
  }
  if (fd[0] >= 0) {
    struct perf_event_mmap_page* p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd[0], 0);
    if (p == MAP_FAILED) printf("mmap failed: %m\n");
    else printf("rdpmc: cap_user_rdpmc %u index %u width %u\n", (unsigned)p->cap_user_rdpmc, p->index, p->pmc_width);
  }
  FILE* f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
  int par = -9;
  if (f) { if (fscanf(f, "%d", &par) != 1) par = -9; fclose(f); }
  printf("perf_event_paranoid %d\n", par);
  return 0;
}
