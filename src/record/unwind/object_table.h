// The loaded objects of this process as the native unwinder sees them: an immutable snapshot (sorted
// executable ranges, each with its object's CFI rows once built), read without a lock and replaced
// whole (RCU style) when the loader's dlopen/dlclose counters move. Rows are built per object, once,
// by a background thread when a walk first needs them (the walk falls back meanwhile), inside
// dl_iterate_phdr so that the object cannot be unloaded while its .eh_frame is read.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "record/unwind/cfi_table.h"

namespace aiflame::unwind {

struct Object {
  std::string path;
  uint64_t bias = 0;
  const void* phdr = nullptr;  // with bias, tells this load of the object from a later one
  uint64_t hdr_addr = 0;       // .eh_frame_hdr, 0 if the object has none
  enum State : uint8_t { kNone, kQueued, kBuilt };
  std::atomic<uint8_t> state{kNone};
  // Published once (release) when built; freed with the process (a walk may be reading it).
  std::atomic<const std::vector<FrameRow>*> rows{nullptr};
  CfiStats stats;
};

struct TextRange {
  uint64_t lo, hi;
  Object* object;
};

struct Snapshot {
  std::vector<TextRange> ranges;  // executable segments, sorted by lo
  std::vector<std::shared_ptr<Object>> objects;
  unsigned long long adds = 0, subs = 0;  // dl_iterate_phdr's counters when taken
  uint32_t generation = 0;

  const TextRange* find(uint64_t pc) const {
    size_t lo = 0, hi = ranges.size();
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (ranges[mid].lo <= pc) lo = mid + 1;
      else hi = mid;
    }
    if (!lo || pc >= ranges[lo - 1].hi) return nullptr;
    return &ranges[lo - 1];
  }
};

class ObjectTable {
 public:
  // The process's one table (never destroyed: walks and the builder thread may outlive any owner).
  static ObjectTable& instance();

  // The current snapshot; never null after the first call. Lock-free.
  const Snapshot* snapshot() {
    const Snapshot* s = current_.load(std::memory_order_acquire);
    return s ? s : refresh_now();
  }
  // The walk met an object whose rows are not built: queue it for the builder thread (once).
  void request_build(Object* o);
  // The walk met a return address that the loader knows and the snapshot does not.
  void request_refresh();
  // Takes a fresh snapshot now (if the loader's counters moved, or none exists yet).
  const Snapshot* refresh_now();
  // Tests and benchmarks: refresh and build every object's rows on this thread.
  void build_all_now();
  // Builds one object's rows on this thread (a no-op when built).
  void build_now(Object* o);
  uint64_t builds() const { return builds_.load(); }

 private:
  ObjectTable() = default;
  void ensure_thread();
  void builder_loop();

  std::atomic<const Snapshot*> current_{nullptr};
  std::mutex mu_;  // snapshot replacement, the queue and building; never taken by a walk that needs nothing
  std::condition_variable cv_;
  std::deque<Object*> queue_;
  bool refresh_requested_ = false;
  bool thread_started_ = false;
  std::vector<std::unique_ptr<const Snapshot>> retired_;  // kept: a walk may still hold one
  std::atomic<uint64_t> builds_{0};
};

}  // namespace aiflame::unwind
