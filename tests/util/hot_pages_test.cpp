#include "util/hot_pages.h"

#include <gtest/gtest.h>

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
    auto* a = static_cast<char*>(hot_alloc(100));
    auto* b = static_cast<char*>(hot_alloc(5000));
    auto* c = static_cast<char*>(hot_alloc(1));
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

TEST(HotPages, EachThreadHasItsOwnRegion) {
  char* mine = nullptr;
  char* other = nullptr;
  std::thread([&] { mine = static_cast<char*>(hot_alloc(64)); }).join();
  std::thread([&] { other = static_cast<char*>(hot_alloc(64)); }).join();
  ASSERT_TRUE(mine && other);
  EXPECT_NE(reinterpret_cast<uintptr_t>(mine) >> 21, reinterpret_cast<uintptr_t>(other) >> 21);
}

TEST(HotPages, PastTheRegionAllocationsComeFromTheHeap) {
  std::thread([] {
    hot_alloc(64);
    auto* big = static_cast<char*>(hot_alloc(7u << 20));  // larger than the region
    EXPECT_TRUE(all_zero(big, 7u << 20));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % 64, 0u);
    ::operator delete(big, std::align_val_t{64});  // heap memory (the test frees it: leak checks)
  }).join();
}

// Where the kernel hands out transparent huge pages on request, the region is one.
TEST(HotPages, TheRegionIsAHugePageWhereTheKernelGivesThem) {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string m((std::istreambuf_iterator<char>(mode)), {});
  if (m.find("[never]") != std::string::npos || m.empty()) GTEST_SKIP() << "transparent huge pages are off here";
  std::thread([] {
    auto* p = static_cast<char*>(hot_alloc(1u << 20));
    std::memset(p, 1, 1u << 20);  // fault it in
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
    EXPECT_GE(huge_kb, 2048u);
  }).join();
}

}  // namespace
}  // namespace aiflame
