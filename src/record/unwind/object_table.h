// The loaded objects of this process as the native unwinder sees them: an immutable snapshot (sorted
// executable ranges, each with its object's CFI rows once built), read without a lock and replaced
// whole (RCU style) when the loader's dlopen/dlclose counters move. Rows are built per object, once,
// by a background thread when a walk first needs them (the walk reads FDEs in place meanwhile), outside
// the loader's lock and under a fault guard (run_guarded): an object unloaded during its build, or any
// other fault of the build, leaves that object without rows and the program running.
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
  // The loaded segment that holds .eh_frame_hdr (and .eh_frame): where a walk reads an FDE itself while
  // the rows are being built (find_cfi_row). 0: not found.
  uint64_t eh_lo = 0, eh_size = 0;
  // Written by the builder thread: the kernel was asked to read ahead its .eh_frame_hdr table
  // (cfi_header_range, at the first snapshot that has the object) and its CFI (cfi_readahead_range,
  // when queued). Atomic for the tests that watch them.
  std::atomic<bool> header_advised{false}, advised{false};
  // The bytes asked for at the first snapshot (the search table, or at the default level the whole CFI).
  std::atomic<uint64_t> header_advised_bytes{0};
  enum State : uint8_t { kNone, kQueued, kBuilt };
  std::atomic<uint8_t> state{kNone};
  // The pid of the process whose thread builds the rows (0: no build begun). A build holds none of the
  // locks a fork waits for (util/fork_guard.h); a forked child, which has no copy of the building
  // thread, sees its parent's pid here and builds the rows itself (ObjectTable::claim_build).
  std::atomic<int32_t> build_claim{0};
  // Published once (release) when built; freed with the process (a walk may be reading it).
  std::atomic<const std::vector<FrameRow>*> rows{nullptr};
  // The rows' page index (build_row_pages), stored before rows is published.
  const std::vector<uint32_t>* pages = nullptr;
  CfiStats stats;
};

// The pages of an object's CFI that the builder asks the kernel to read ahead when the object is queued:
// from .eh_frame_hdr's page to the end of its segment (.eh_frame and .gcc_except_table follow the
// header there in GNU ld's and lld's layouts). {0, 0} without a header. Why: until an object's rows
// are built, a walk through it reads its header's table and FDEs in place, and on a cold page cache
// each page it touches is a read from disk: an H200 run's first launches took 10 ms each on a fresh
// machine, against 2 ms on its second run.
struct PageRange {
  uint64_t lo = 0, hi = 0;
};
PageRange cfi_readahead_range(const Object& o);
// The .eh_frame_hdr's search table, read ahead for every object of a snapshot: a walk through an object
// whose rows are not built binary-searches it in place (a dozen pages of libtorch_cpu.so's 2.8-MB
// table per frame), and an object is queued only when a walk first meets it. {0, 0} for encodings
// other than GNU ld's and lld's (count udata4, table datarel sdata4).
PageRange cfi_header_range(const Object& o);

struct TextRange {
  uint64_t lo, hi;
  Object* object;
};

struct Snapshot {
  std::vector<TextRange> ranges;  // executable segments, sorted by lo
  std::vector<std::shared_ptr<Object>> objects;
  unsigned long long adds = 0, subs = 0;  // dl_iterate_phdr's counters when taken
  // Moves only when an object of the previous snapshot is gone (unloaded, or another object where it
  // was). A load adds objects and changes no row of an address in the objects that stay, so what was
  // looked up or walked through there (the threads' caches, the shared rows, the walk memos, whose
  // walks ended at the outermost frame or the limit, never at an address outside every object) holds
  // across it. Were it to move at every change, each of torch's lazy loads in a loop's first steps
  // would empty every thread's cache and fail every memo (on the H200, "generation" was then 18-271 of
  // a run's memo failures).
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

// The current snapshot's generation, published after the snapshot itself: what a walk memo's check
// compares (unwinder.cpp), one load of its own line instead of three dependent ones (the table's
// guarded static, current_, the snapshot). On the development machine's cold capture benchmark the
// chain was a third of the memo check's time (0.51 -> 0.47 us per launch without it; on the H200 no
// change beyond the runs' spread). A reader that
// sees the previous generation a moment after a refresh accepts a memo as one that read current_ a
// moment earlier would. 0 before the first snapshot (generations start at 1).
struct alignas(64) PublishedGeneration {
  std::atomic<uint32_t> value{0};
};
extern PublishedGeneration g_published_generation __attribute__((visibility("hidden")));

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
  // Queues the objects of these return addresses (a fallback's frames, the stack at the recorder's
  // start): all of a stack's objects are built in one round instead of one per walk.
  void request_builds_for(const uint64_t* pcs, int n);
  // The walk met a return address that the loader knows and the snapshot does not.
  void request_refresh();
  // Takes a fresh snapshot now (if the loader's counters moved, or none exists yet).
  const Snapshot* refresh_now();
  // Tests and benchmarks: refresh and build every object's rows on this thread.
  void build_all_now();
  // Builds one object's rows on this thread (a no-op when built).
  void build_now(Object* o);
  // Tests: called by each build on its thread once it has claimed the object, before any row is read.
  static void set_build_hook_for_tests(void (*hook)(const Object*));
  uint64_t builds() const { return builds_.load(); }
  // Builds that faulted (their objects have no rows), and the first one's note for the profile's
  // warnings (empty: none).
  uint64_t build_faults() const { return build_faults_.load(); }
  std::string fault_note();
  // Starts the builder thread now (the recorder's start) rather than at the first request.
  void start_builder() {
    std::lock_guard<std::mutex> lock(mu_);
    ensure_thread();
  }
  // The read-ahead level: 2 (the default), every object's whole CFI
  // (.eh_frame_hdr and .eh_frame) at its first snapshot; 1, each object's header then and a queued
  // object's whole CFI; 0, none. With the page cache cold (a machine's first run), the first steps'
  // walks read FDEs in place from disk: on an H100, level 2 took the three training loops' capture
  // cost from 0.92-1.07 to 0.70-0.76 us per launch, their walks from 27.6-67.5 to 16.5-32.5 us each,
  // for 46-97 MB read ahead at the start.
  static constexpr int kDefaultReadahead = 2;
  void set_readahead(int level) { readahead_.store(level, std::memory_order_relaxed); }
  // Objects whose CFI the builder asked the kernel to read ahead (madvise MADV_WILLNEED).
  uint64_t readaheads() const { return readaheads_.load(); }
  uint64_t header_readaheads() const { return header_readaheads_.load(); }
  // Ends the builder thread and waits for it (a detaching `record --pid` leaves no thread behind); a
  // later request starts it again.
  void stop_builder();

 private:
  ObjectTable() = default;
  void ensure_thread();
  void forget_builder_in_child();  // a forked child's (util/fork_guard.h)
  // Whether this thread is to build o's rows: false once they are built (after waiting for another
  // thread of this process that builds them).
  static bool claim_build(Object* o);
  void builder_loop();

  std::atomic<const Snapshot*> current_{nullptr};
  // Two locks, so that a walk under the loader's lock (a launch from a library's constructor during
  // dlopen) cannot deadlock with the builder: work_mu_ (taking snapshots, retired_) is held while
  // calling into the loader; mu_ (the queue, which a walk's request takes) never is. A row build holds
  // neither (Object::build_claim): a fork waits for both, and a build takes 50-160 ms for torch's
  // largest objects on the H200.
  std::mutex work_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Object*> queue_;
  std::atomic<int> readahead_{kDefaultReadahead};
  std::atomic<uint64_t> readaheads_{0}, header_readaheads_{0};
  void advise_headers();  // the builder thread's
  bool refresh_requested_ = false;
  bool thread_started_ = false;
  bool stop_requested_ = false;  // under mu_: the builder ends at its next wake-up
  std::vector<std::unique_ptr<const Snapshot>> retired_;  // kept: a walk may still hold one
  std::atomic<uint64_t> builds_{0};
  std::atomic<uint64_t> build_faults_{0};
  void warn_fault(const Object* o, int sig);
  std::string fault_note_;  // under mu_
};

}  // namespace aiflame::unwind
