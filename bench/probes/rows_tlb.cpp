// Issue #22: would 2-MiB pages for an object's unwind rows make a walk's uncached row lookups cheaper?
// A walk's lookup of a return address no thread looked up before is a search of the object's row page
// index and then of the rows of one 4-KiB text page (unwind::find_row_paged), in arrays built on the
// builder thread: on the H200 such lookups cost ~1.6 us each (3.7 a walk on hf_gpt2, bench/RESULTS.md,
// twenty-eighth session), most of a first-step walk. This times that search, cold, in a table of 4M
// rows (libtorch_cuda.so-sized) on 4-KiB pages (malloc, as the rows are now) against 2-MiB pages
// (MADV_HUGEPAGE before first touch), alternated, caches and TLB evicted before each lookup.
// Build and run: g++ -O2 -o /tmp/rows_tlb bench/probes/rows_tlb.cpp && /tmp/rows_tlb
#include <sys/mman.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
struct Row { uint32_t loc; int32_t rule; };
static void* huge(size_t bytes) {
  const size_t H = 2u << 20, m = bytes + H;
  char* p = (char*)mmap(nullptr, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char* a = (char*)(((uintptr_t)p + H - 1) & ~(uintptr_t)(H - 1));
  madvise(a, bytes, MADV_HUGEPAGE);
  return a;
}
int main() {
  const size_t n = 4u << 20;
  std::mt19937_64 rng(1);
  std::vector<Row> src(n);
  uint32_t loc = 0x1000;
  for (size_t i = 0; i < n; i++) { loc += 1 + rng() % 24; src[i] = {loc, (int32_t)i}; }
  const uint32_t span = loc;
  std::vector<uint32_t> psrc((span >> 12) + 2);
  for (size_t p = 0, i = 0; p < psrc.size(); p++) { while (i < n && src[i].loc < (p << 12)) i++; psrc[p] = (uint32_t)i; }
  Row* small_rows = (Row*)malloc(n * sizeof(Row)); memcpy(small_rows, src.data(), n * sizeof(Row));
  uint32_t* small_pages = (uint32_t*)malloc(psrc.size() * 4); memcpy(small_pages, psrc.data(), psrc.size() * 4);
  Row* huge_rows = (Row*)huge(n * sizeof(Row)); memcpy(huge_rows, src.data(), n * sizeof(Row));
  uint32_t* huge_pages = (uint32_t*)huge(psrc.size() * 4); memcpy(huge_pages, psrc.data(), psrc.size() * 4);
  const size_t evb = 512u << 20; char* ev = (char*)malloc(evb); memset(ev, 1, evb);
  auto lookup = [&](const Row* rows, const uint32_t* pages, uint32_t l) {
    size_t p = l >> 12, lo = pages[p], hi = pages[p + 1];
    while (lo < hi) { size_t mid = (lo + hi) / 2; if (rows[mid].loc <= l) lo = mid + 1; else hi = mid; }
    return lo ? rows[lo - 1].rule : -1;
  };
  std::vector<double> t[2];
  volatile long sink = 0;
  for (int it = 0; it < 4000; it++) {
    long s = 0; for (size_t i = 0; i < evb; i += 4096) s += ev[i + (it & 63) * 64]; sink += s;
    const uint32_t l = 0x1000 + (uint32_t)(rng() % (span - 0x1000));
    const int k = it & 1;
    auto t0 = std::chrono::steady_clock::now();
    int r = k ? lookup(huge_rows, huge_pages, l) : lookup(small_rows, small_pages, l);
    auto t1 = std::chrono::steady_clock::now();
    sink += r;
    t[k].push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  for (int k = 0; k < 2; k++) {
    std::sort(t[k].begin(), t[k].end());
    printf("%s: median %.0f ns, p90 %.0f ns (%zu lookups)\n", k ? "2-MiB pages" : "4-KiB pages", t[k][t[k].size() / 2], t[k][t[k].size() * 9 / 10], t[k].size());
  }
  FILE* f = fopen("/proc/self/smaps_rollup", "r"); char line[256];
  while (f && fgets(line, sizeof line, f)) if (strstr(line, "AnonHugePages")) fputs(line, stdout);
}
