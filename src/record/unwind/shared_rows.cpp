#include "record/unwind/shared_rows.h"

#include <sys/mman.h>

#include <atomic>
#include <cstddef>

#include "util/hot_pages.h"

namespace aiflame::unwind {
namespace {

// A seqlock per slot: seq is odd while a thread writes the slot (it claims it with a compare-exchange
// from an even value), and a reader takes the slot's fields only if seq was even and unchanged around
// its reads. key 0: never written. rule: cfa in the low half, fp_off in the high.
struct Slot {
  std::atomic<uint32_t> seq;
  std::atomic<uint32_t> generation;
  std::atomic<uint64_t> key;
  std::atomic<uint64_t> rule;
};
struct alignas(64) Line {
  Slot way[2];
};
constexpr unsigned kLineBits = 15;
constexpr size_t kBytes = sizeof(Line) << kLineBits;  // 2 MiB
static_assert(kBytes == (size_t{2} << 20), "one huge page");

std::atomic<Line*> g_lines{nullptr};
std::atomic<bool> g_failed{false};  // the region could not be mapped, or the rows are switched off

Line* lines() {
  if (Line* l = g_lines.load(std::memory_order_acquire)) return l;
  if (g_failed.load(std::memory_order_relaxed)) return nullptr;
  auto* mine = static_cast<Line*>(map_huge_aligned(kBytes));  // zeroed: no slot written
  if (!mine) {
    g_failed.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  Line* expected = nullptr;
  if (!g_lines.compare_exchange_strong(expected, mine, std::memory_order_acq_rel)) {
    munmap(mine, kBytes);  // another thread mapped it first
    return expected;
  }
  return mine;
}

inline Line& line_of(Line* l, uint64_t key) { return l[shared_row_line(key)]; }

}  // namespace

void shared_rows_back() {
  static std::atomic<bool> backed{false};
  if (backed.load(std::memory_order_relaxed)) return;
  Line* l = lines();
  if (!l) return;
  back_pages(l, kBytes);  // a launching thread may be writing a slot meanwhile: nothing changes
  backed.store(true, std::memory_order_relaxed);
}

const void* shared_rows_region() { return g_lines.load(std::memory_order_acquire); }

uint32_t shared_row_line(uint64_t key) { return static_cast<uint32_t>((key * 0x9e3779b97f4a7c15ULL) >> (64 - kLineBits)); }

bool shared_row_find(uint64_t key, uint32_t generation, int32_t* cfa, int32_t* fp_off) {
  Line* l = g_lines.load(std::memory_order_acquire);
  if (!l) return false;
  for (Slot& s : line_of(l, key).way) {
    const uint32_t seq = s.seq.load(std::memory_order_acquire);
    if (seq & 1) continue;
    const uint64_t k = s.key.load(std::memory_order_relaxed);
    const uint32_t gen = s.generation.load(std::memory_order_relaxed);
    const uint64_t rule = s.rule.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.seq.load(std::memory_order_relaxed) != seq || k != key || gen != generation) continue;
    *cfa = static_cast<int32_t>(static_cast<uint32_t>(rule));
    *fp_off = static_cast<int32_t>(static_cast<uint32_t>(rule >> 32));
    return true;
  }
  return false;
}

void shared_row_add(uint64_t key, uint32_t generation, int32_t cfa, int32_t fp_off) {
  Line* l = lines();
  if (!l || !key) return;
  Line& line = line_of(l, key);
  // A slot never written or of another generation, else the second (the first keeps the older entry).
  Slot* victim = &line.way[1];
  for (Slot& s : line.way)
    if (!s.key.load(std::memory_order_relaxed) || s.generation.load(std::memory_order_relaxed) != generation) {
      victim = &s;
      break;
    }
  uint32_t seq = victim->seq.load(std::memory_order_relaxed);
  if ((seq & 1) || !victim->seq.compare_exchange_strong(seq, seq + 1, std::memory_order_relaxed)) return;
  std::atomic_thread_fence(std::memory_order_release);  // the claim is seen before any new field
  victim->key.store(key, std::memory_order_relaxed);
  victim->generation.store(generation, std::memory_order_relaxed);
  victim->rule.store(static_cast<uint32_t>(cfa) | (static_cast<uint64_t>(static_cast<uint32_t>(fp_off)) << 32),
                     std::memory_order_relaxed);
  victim->seq.store(seq + 2, std::memory_order_release);
}

}  // namespace aiflame::unwind
