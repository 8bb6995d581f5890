// Where the launch path's time goes, for `AIFLAME_LAB=capture_stats` (a measurement switch, off by
// default): the recorder times each part of every launch with the TSC and prints one line at the end.
// Issue #22: bench/capture measured 0.35 us per launch on the development machine while the H100's
// training loops reported 4.1-4.5 us of "stack capture cost"; this splits that figure by part.
#pragma once
#include <x86intrin.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace aiflame {

struct CaptureStats {
  enum Part { Python, Unwind, Hash, Intern, Autograd, Write, Total,
              // Inside Intern (a stack new to its thread): waiting for the shared table's lock; naming
              // the Python frames of a stack new to the process (PyCode_Addr2Line, the string table);
              // adding its stack record to the writer.
              InternLock, InternNames, InternWrite,
              // Inside Autograd: the part spent on launches by autograd's engine threads (backward).
              AutogradBackward,
              // Inside Unwind: the part spent on launches that walked (took no memo).
              UnwindWalked,
              // Looking for the Python thread that called backward() (once per graph task: the other
              // threads' frames read with process_vm_readv). Inside AutogradBackward only with
              // resolved at the launch; deferred (the recorder's way) the recorder's caller scanner does it.
              CallerScan,
              // Inside CallerScan: reading the threads' Python stacks (PythonFrames::capture_thread).
              CallerRead,
              // Inside UnwindWalked: the launches whose stack came from glibc's backtrace() (an object's
              // rows not built yet: StackCapture::unwind).
              UnwindFallback,
              // Inside UnwindWalked: the walks themselves (unwind::walk), and inside those the lookups of
              // return addresses not in the thread's cache (unwind::WalkStatus::lookup_ticks).
              UnwindWalk, UnwindLookup, kParts };
  std::atomic<uint64_t> ticks[kParts] = {};
  std::atomic<uint64_t> backward_walked{0};  // launches by autograd's engine threads that walked (took no memo)
  std::atomic<uint64_t> launches{0}, backward_launches{0}, native_frames{0}, python_frames{0}, cache_misses{0}, fp_frames{0};
  std::atomic<uint64_t> reused_frames{0};  // native frames checked against the thread's previous walk, not walked
  std::atomic<uint64_t> shared_hits{0};    // of cache_misses, frames found in the process's shared rows (no search)
  std::atomic<uint64_t> memo_held{0};      // launches whose call path's memo held (no walk, no lookup)
  // Memos checked at those launches, and those launches whose memo was not the predicted one (the
  // entry that followed the previous launch's): the key's set was searched.
  std::atomic<uint64_t> memo_checks{0}, memo_slow{0};
  std::atomic<uint64_t> memo_missing{0};   // launches whose call path had no memo (new, or evicted from the table)
  std::atomic<uint64_t> memo_failed{0};    // launches whose call path's memo did not hold (a word the walk reads changed)
  // of which the walk gave the stack of one of the memos that did not hold (the memo was stricter than
  // the stack: a word it keeps changed without changing the frames)
  std::atomic<uint64_t> memo_failed_same{0};
  std::atomic<uint64_t> donated{0};  // launches without a memo of their key that took another key's walk (no walk)
  std::atomic<uint64_t> fallbacks{0};    // UnwindFallback's count
  std::atomic<uint64_t> walks{0}, walks_after_reset{0};  // UnwindWalk's count; of those, the first after the loaded objects changed
  std::atomic<uint64_t> lazy_frames{0};  // frames stepped by an FDE read in place (rows being built: unwind::find_cfi_row)
  std::atomic<uint64_t> thread_new{0};   // stacks new to their thread (took the shared table's mutex)
  std::atomic<uint64_t> process_new{0};  // of those, stacks new to the process (named and written)
  // The memos checked at launches that walked, by why each failed (unwind::MemoMiss: held, empty,
  // start, sp, fp, generation, bounds, words). A key's memos of other paths fail on words.
  std::atomic<uint64_t> memo_miss[8] = {};
  std::atomic<uint64_t> caller_scans{0};  // CallerScan's count
  std::atomic<uint64_t> caller_reads{0};  // CallerRead's count (thread stacks read)
  std::atomic<uint64_t> caller_rereads{0};  // of those, the last caller found at its stack in one read
  // Backward launches' lookups of their node's forward launch, the table slots they read (seq + 1,
  // seq + 2 ... until found or 16: a slot past the prefetched first is a line the launch waits for
  // when it is not the same line), and how many found one.
  std::atomic<uint64_t> forward_lookups{0}, forward_slots{0}, forward_found{0};
  std::atomic<uint64_t> ends[6] = {};   // unwind::WalkEnd counts
  uint64_t tsc0 = 0, ns0 = 0;           // calibration taken when switched on

  static CaptureStats& instance();
  static bool on() { return enabled_.load(std::memory_order_relaxed); }
  static void enable();
  static void disable() { enabled_.store(false); }  // benchmarks
  void reset();  // zeroes every count (benchmarks: one breakdown per run)
  static uint64_t now() { return __rdtsc(); }
  void add(Part p, uint64_t t0, uint64_t t1) { ticks[p].fetch_add(t1 - t0, std::memory_order_relaxed); }
  // fn(), timed into part p and counted in `count` when the stats are on.
  template <class F>
  static auto timed(Part p, std::atomic<uint64_t> CaptureStats::*count, F&& fn) {
    if (!on()) return fn();
    const uint64_t t0 = now();
    auto r = fn();
    CaptureStats& s = instance();
    s.add(p, t0, now());
    (s.*count).fetch_add(1, std::memory_order_relaxed);
    return r;
  }
  // One line: per launch, microseconds in each part, frames, cache misses, walk ends.
  std::string line() const;
  // The memo_miss counts that are not zero, named ("sp 12, words 3"), or "none".
  std::string miss_causes() const;

 private:
  static std::atomic<bool> enabled_;
};

}  // namespace aiflame
