#include "util/hot_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace aiflame {
namespace {

constexpr size_t kRegion = size_t{2} << 20;  // one huge page on x86-64: the walk memos (~1.3 MB), the unwinder's cache and record, the Python walk
constexpr size_t kHugePage = size_t{2} << 20;
constexpr int kMaxOwners = 16;

// On the heap, one pointer in TLS: the injection library's TLS must stay small enough for glibc's
// static TLS surplus (util/static_tls.h). A use during the process's exit (CUPTI calls back then,
// after the main thread's thread_local destructors ran and released it) makes a new one.
struct Region {
  char* base = nullptr;
  size_t used = 0;
  bool tried = false;
  int owners = 0;
  void** owner[kMaxOwners];       // the thread_local pointers to null when the region goes
  void* heap[kMaxOwners];         // allocations that did not fit, freed with it
  int heaps = 0;
};
thread_local Region* t_region = nullptr;

// The regions mapped now, and with hot_pages_audit on those released, for hot_regions().
constexpr int kListed = 64;
std::atomic<uintptr_t> g_listed[kListed];
std::atomic<bool> g_audit{false};
std::atomic<int> g_released{0}, g_released_huge{0};

// How many of the given region bases have a huge page (/proc/self/smaps).
int huge_among(const uintptr_t* bases, int n) {
  if (n == 0) return 0;
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return 0;
  char line[512];
  bool ours = false;
  int huge = 0;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && std::strchr(line, '-') < std::strchr(line, ' ')) {
      ours = std::find(bases, bases + n, static_cast<uintptr_t>(lo)) != bases + n;
      continue;
    }
    unsigned long kb = 0;
    if (ours && std::sscanf(line, "AnonHugePages: %lu kB", &kb) == 1 && kb > 0) huge++;
  }
  std::fclose(f);
  return huge;
}

void list_region(char* base, bool add) {
  for (auto& slot : g_listed) {
    uintptr_t want = add ? 0 : reinterpret_cast<uintptr_t>(base);
    if (slot.compare_exchange_strong(want, add ? reinterpret_cast<uintptr_t>(base) : 0)) return;
  }
}

void release_region() {
  Region* r = t_region;
  if (!r) return;
  if (r->base) {
    list_region(r->base, false);
    if (g_audit.load(std::memory_order_relaxed)) {
      const auto base = reinterpret_cast<uintptr_t>(r->base);
      g_released_huge.fetch_add(huge_among(&base, 1));
      g_released.fetch_add(1);
    }
  }
  for (int i = 0; i < r->owners; i++) *r->owner[i] = nullptr;
  for (int i = 0; i < r->heaps; i++) ::operator delete(r->heap[i], std::align_val_t{64});
  if (r->base) munmap(r->base, kRegion);
  delete r;
  t_region = nullptr;
}

// Releases the thread's region when the thread ends: a program that starts and ends launching
// threads (a thread per request) would otherwise keep 2 MiB per thread it ever had.
struct Releaser {
  ~Releaser() { release_region(); }
};

char* map_region() { return static_cast<char*>(map_huge_aligned(kRegion)); }

// A region for a thread that found the stock empty, mapped on its launching thread: advised away from
// huge pages, so that its first write faults in one 4-KiB page, not a 2-MiB one the kernel must find
// and zero there. On the H100, jax_train (about 40 XLA threads starting within a second, the stock
// holds 4) had one launch of 2.4-6.8 ms in each of six runs, a thread's fourth, walked; with the hot
// pages off (AIFLAME_HOT=0: the tables on the heap) that launch took 101 us and the run's figure was
// 1.18 us against 2.4-4.3.
char* map_small_region() {
  void* p = mmap(nullptr, kRegion, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, kRegion, MADV_NOHUGEPAGE);  // also where the kernel's mode is "always"
  return static_cast<char*>(p);
}

// Regions mapped and backed ahead, off the launch path (hot_pages_stock): a thread's first launch
// takes one instead of mapping its own, whose first write had the kernel zero its huge page on the
// launching thread. On the development machine a pool's new thread's first launch took 62-69 us
// (median), 11-12 with its region from the stock (bench/probes/pool_threads.py at d9aa39d).
constexpr int kStock = 4;  // 8 MiB backed while unused
std::atomic<char*> g_stock[kStock];

char* take_stocked() {
  for (auto& slot : g_stock)
    if (slot.load(std::memory_order_relaxed))
      if (char* r = slot.exchange(nullptr, std::memory_order_acquire)) return r;
  return nullptr;
}

}  // namespace

void* map_huge_aligned(size_t bytes) {
  // A huge page more than asked, then the 2-MiB-aligned part kept: huge pages need the alignment.
  const size_t mapped = bytes + kHugePage;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto at = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (at + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > at) munmap(p, aligned - at);
  if (uintptr_t end = at + mapped, kept = aligned + bytes; end > kept)
    munmap(reinterpret_cast<void*>(kept), end - kept);
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);  // a hint: 4-KiB pages without it
  return reinterpret_cast<void*>(aligned);
}

void* hot_alloc(size_t bytes, void** owner) {
  bytes = (bytes + 63) & ~size_t{63};
  if (!t_region) t_region = new Region;
  Region& r = *t_region;
  if (!r.tried) {
    thread_local Releaser releaser;  // registered once per thread, at its first region
    (void)releaser;
    r.tried = true;
    r.base = take_stocked();
    if (!r.base) r.base = map_small_region();
    if (r.base) list_region(r.base, true);
  }
  void* p = nullptr;
  if (r.base && bytes <= kRegion - r.used) {
    p = r.base + r.used;  // fresh anonymous memory: zero
    r.used += bytes;
  } else {
    p = ::operator new(bytes, std::align_val_t{64});
    std::memset(p, 0, bytes);
    if (r.heaps < kMaxOwners) r.heap[r.heaps++] = p;  // else kept to the end (the launch path has 4 owners)
  }
  if (r.owners < kMaxOwners) r.owner[r.owners++] = owner;
  return p;
}

void hot_pages_stock() {
  for (auto& slot : g_stock) {
    if (slot.load(std::memory_order_relaxed)) continue;
    char* r = map_region();
    if (!r) return;
    // Every page written (its zeros unchanged: the region stays as hot_alloc hands it out), so that the
    // kernel backs it now: one huge page, or 512 small ones where it gives none.
    back_pages(r, kRegion);
    char* expected = nullptr;
    if (!slot.compare_exchange_strong(expected, r, std::memory_order_release)) munmap(r, kRegion);
  }
}

void back_pages(void* p, size_t bytes) {
  auto* c = static_cast<char*>(p);
  for (size_t at = 0; at < bytes; at += 4096) reinterpret_cast<std::atomic<uint32_t>*>(c + at)->fetch_or(0, std::memory_order_relaxed);
}

void hot_pages_audit(bool on) { g_audit.store(on, std::memory_order_relaxed); }

HotRegions hot_regions() {
  HotRegions h;
  uintptr_t bases[kListed];
  int n = 0;
  for (auto& slot : g_listed)
    if (uintptr_t b = slot.load()) bases[n++] = b;
  h.regions = n + g_released.load();
  h.huge = huge_among(bases, n) + g_released_huge.load();
  return h;
}

}  // namespace aiflame
