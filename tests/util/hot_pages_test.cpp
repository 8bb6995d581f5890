#include "util/hot_pages.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace aiflame {
namespace {

bool all_zero(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; i++)
    if (b[i]) return false;
  return true;
}

TEST(HotPages, AllocationsAreZeroedAlignedAndDisjoint) {
  std::thread([] {
    void *o1 = nullptr, *o2 = nullptr, *o3 = nullptr;
    auto* a = static_cast<char*>(hot_alloc(100, &o1));
    auto* b = static_cast<char*>(hot_alloc(5000, &o2));
    auto* c = static_cast<char*>(hot_alloc(1, &o3));
    for (char* p : {a, b, c}) EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    EXPECT_TRUE(all_zero(a, 100));
    EXPECT_TRUE(all_zero(b, 5000));
    std::memset(a, 1, 100);
    std::memset(b, 2, 5000);
    std::memset(c, 3, 1);
    EXPECT_GE(b, a + 100);
    EXPECT_GE(c, b + 5000);
    EXPECT_EQ(a[99], 1);
    EXPECT_EQ(b[0], 2);
    EXPECT_EQ(b[4999], 2);
    // The first allocation of a thread starts its 2-MiB-aligned region.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % (2u << 20), 0u);
  }).join();
}

// A thread's first allocations come from a region the stock backed ahead: writing them takes no page
// fault on the thread (a pool's new thread's first launch zeroed a huge page there, 60-100 us).
// Reads every page of [p, p + n) (true if all zero), then writes one byte of each. Not instrumented:
// AddressSanitizer's shadow reads would fault pages of their own.
__attribute__((no_sanitize("address"))) bool read_then_write(char* p, size_t n) {
  bool zero = true;
  for (size_t i = 0; i < n; i++) zero &= p[i] == 0;
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
  return zero;
}

TEST(HotPages, AThreadsFirstAllocationsFromTheStockTakeNoPageFault) {
  hot_pages_stock();
  long faults = -1;
  bool zero = false;
  std::thread([&] {
    void *o1 = nullptr, *o2 = nullptr;
    auto* a = static_cast<char*>(hot_alloc(100 << 10, &o1));  // the tables' sizes: 100 KiB, then 1.2 MiB
    auto* b = static_cast<char*>(hot_alloc(1200 << 10, &o2));
    rusage before{}, after{};
    getrusage(RUSAGE_THREAD, &before);
    zero = read_then_write(a, 100 << 10);
    zero &= read_then_write(b, 1200 << 10);
    getrusage(RUSAGE_THREAD, &after);
    faults = after.ru_minflt - before.ru_minflt;
  }).join();
  EXPECT_TRUE(zero);
  EXPECT_EQ(faults, 0);
}

// back_pages: every page of a fresh mapping (small pages: no huge page backs it all at one touch)
// resident afterwards, and values written before it unchanged.
TEST(HotPages, BackingPagesMakesEveryPageResidentAndChangesNothing) {
  constexpr size_t kBytes = 64 * 4096;
  auto* p = static_cast<char*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  madvise(p, kBytes, MADV_NOHUGEPAGE);
  p[5 * 4096] = 7;
  p[5 * 4096 + 3] = 9;
  auto resident = [&] {
    unsigned char v[kBytes / 4096];
    EXPECT_EQ(mincore(p, kBytes, v), 0);
    size_t n = 0;
    for (unsigned char r : v) n += r & 1;
    return n;
  };
  EXPECT_LT(resident(), kBytes / 4096);
  back_pages(p, kBytes);
  EXPECT_EQ(resident(), kBytes / 4096);
  EXPECT_EQ(p[5 * 4096], 7);
  EXPECT_EQ(p[5 * 4096 + 3], 9);
  EXPECT_EQ(p[6 * 4096], 0);
  munmap(p, kBytes);
}

TEST(HotPages, EachThreadHasItsOwnRegion) {
  void* mine = nullptr;
  void* other = nullptr;
  uintptr_t mine_at = 0, other_at = 0;
  std::thread a([&] {
    mine_at = reinterpret_cast<uintptr_t>(hot_alloc(64, &mine));
    std::thread([&] { other_at = reinterpret_cast<uintptr_t>(hot_alloc(64, &other)); }).join();
  });
  a.join();
  ASSERT_TRUE(mine_at && other_at);
  EXPECT_NE(mine_at >> 21, other_at >> 21);
}

// When a thread ends its region goes (a thread per request must not keep 2 MiB each): its owners are
// set to null (here a global standing for the thread_local the launch path uses) and the pages
// unmapped.
int* g_owner = nullptr;
TEST(HotPages, AThreadsRegionIsReleasedWhenItEnds) {
  uintptr_t at = 0;
  std::thread([&] {
    int* p = hot_new(g_owner);
    *p = 7;
    EXPECT_EQ(g_owner, p);
    at = reinterpret_cast<uintptr_t>(p);
  }).join();
  EXPECT_EQ(g_owner, nullptr);
  // msync on a range that is not mapped fails with ENOMEM.
  errno = 0;
  EXPECT_EQ(msync(reinterpret_cast<void*>(at & ~uintptr_t{4095}), 4096, MS_ASYNC), -1);
  EXPECT_EQ(errno, ENOMEM);
}

TEST(HotPages, PastTheRegionAllocationsComeFromTheHeap) {
  std::thread([] {
    void *small = nullptr, *large = nullptr;
    hot_alloc(64, &small);
    auto* big = static_cast<char*>(hot_alloc(7u << 20, &large));  // larger than the region: from the heap
    EXPECT_TRUE(all_zero(big, 7u << 20));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % 64, 0u);
    // Freed with the region when this thread ends (leak checks would say otherwise).
  }).join();
}

bool huge_pages_off() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string m((std::istreambuf_iterator<char>(mode)), {});
  return m.find("[never]") != std::string::npos || m.empty();
}

// The kB of huge pages in the mapping that holds p (/proc/self/smaps).
uint64_t huge_kb_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  uint64_t huge_kb = 0;
  while (std::getline(smaps, line)) {
    uint64_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      in = reinterpret_cast<uintptr_t>(p) >= lo && reinterpret_cast<uintptr_t>(p) < hi;
      continue;
    }
    if (in && line.rfind("AnonHugePages:", 0) == 0) huge_kb = std::stoull(line.substr(14));
  }
  return huge_kb;
}

// Where the kernel hands out transparent huge pages on request, a region from the stock is one.
TEST(HotPages, TheRegionIsAHugePageWhereTheKernelGivesThem) {
  if (huge_pages_off()) GTEST_SKIP() << "transparent huge pages are off here";
  hot_pages_stock();
  std::thread([] {
    void* owner = nullptr;
    auto* p = static_cast<char*>(hot_alloc(1u << 20, &owner));
    std::memset(p, 1, 1u << 20);  // fault it in
    EXPECT_GE(huge_kb_at(p), 2048u);
    // The capture breakdown's count says the same.
    HotRegions h = hot_regions();
    EXPECT_GE(h.regions, 1);
    EXPECT_GE(h.huge, 1);
  }).join();
}

// A thread that finds the stock empty (none stocked in this process) maps its region on its launching
// thread: of 4-KiB pages, so that its first write does not have the kernel find and zero a huge page
// there (2.4-6.8 ms for one launch on the H100).
TEST(HotPages, AThreadThatFindsTheStockEmptyTakesNoHugePage) {
  if (huge_pages_off()) GTEST_SKIP() << "transparent huge pages are off here";
  std::thread([] {
    void* owner = nullptr;
    auto* p = static_cast<char*>(hot_alloc(1u << 20, &owner));
    rusage before{}, after{};
    getrusage(RUSAGE_THREAD, &before);
    std::memset(p, 1, 1u << 20);
    getrusage(RUSAGE_THREAD, &after);
    EXPECT_EQ(huge_kb_at(p), 0u);
    EXPECT_GE(after.ru_minflt - before.ru_minflt, 200) << "faulted in page by page";
  }).join();
}

TEST(HotPages, TheBreakdownCountsTheRegionsOfLiveThreads) {
  const int before = hot_regions().regions;
  std::thread([&] {
    void* owner = nullptr;
    hot_alloc(64, &owner);
    EXPECT_EQ(hot_regions().regions, before + 1);
  }).join();
  EXPECT_EQ(hot_regions().regions, before);
}

}  // namespace
}  // namespace aiflame
