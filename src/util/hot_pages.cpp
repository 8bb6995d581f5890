#include "util/hot_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>

namespace aiflame {
namespace {

constexpr size_t kRegion = size_t{6} << 20;  // three huge pages on x86-64: the walk memos' ~3.7 MB and the rest
constexpr size_t kHugePage = size_t{2} << 20;

struct Region {
  char* base = nullptr;
  size_t used = 0;
  bool tried = false;
};
thread_local Region t_region;  // trivially destructible: usable during the process's exit

char* map_region() {
  // A huge page more than the region, then the 2-MiB-aligned region kept: huge pages need the alignment.
  const size_t mapped = kRegion + kHugePage;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto at = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (at + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > at) munmap(p, aligned - at);
  if (uintptr_t end = at + mapped, kept = aligned + kRegion; end > kept)
    munmap(reinterpret_cast<void*>(kept), end - kept);
  madvise(reinterpret_cast<void*>(aligned), kRegion, MADV_HUGEPAGE);  // a hint: 4-KiB pages without it
  return reinterpret_cast<char*>(aligned);
}

}  // namespace

void* hot_alloc(size_t bytes) {
  bytes = (bytes + 63) & ~size_t{63};
  Region& r = t_region;
  if (!r.tried) {
    r.tried = true;
    r.base = map_region();
  }
  if (r.base && bytes <= kRegion - r.used) {
    void* p = r.base + r.used;  // fresh anonymous memory: zero
    r.used += bytes;
    return p;
  }
  void* p = ::operator new(bytes, std::align_val_t{64});
  std::memset(p, 0, bytes);
  return p;
}

}  // namespace aiflame
