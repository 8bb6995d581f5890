// The CPU stack of a kernel launch, captured on the launching thread inside the driver callback.
//
// Every launch is unwound (src/record/unwind/: CFI rows built once per loaded object, frame pointers
// where an object has no CFI, a per-thread cache of resolved return addresses), so a launch always
// carries its own path's stack; there is no per-site cache to charge it to another path's stack.
// Python frames are read at every launch as well. The stack is then interned: a per-thread table of
// the stacks this thread has seen (content compared word by word) gives its id without a lock; only a
// stack new to the thread takes the mutex, where the process-wide table keeps ids unique per content
// across threads and writes each stack once.
//
// With caches cold (a training loop between two launches), the capture first prefetches either the
// memo of its call path or, when there is none (or the thread's last launch walked), what the previous
// walk on its thread read: its stack lines, record and cache sets (unwind::prefetch_for_walk), so that
// the check's or the walk's dependent loads hit; the walk takes the outer frames it shares with that
// previous walk from its record, after re-reading their stack words (incremental unwinding,
// src/record/unwind/unwinder.cpp).
//
// Every check and walk of a capture starts from the state capture() takes at its start
// (unwind::unwind_from), so capture() checks the memo predicted for the launch itself, in few
// instructions, and capture_walk (another frame) does everything else: the key's other memos, a walk,
// the measurements.
//
// While an object's rows are being built (the first walks through it, on a background thread), a walk
// steps that object's frames by their FDEs read in place (unwind::find_cfi_row); just after a dlopen
// (the snapshot not yet refreshed), or for an object without a usable .eh_frame_hdr table, a launch
// falls back to glibc's backtrace() (~17 us at 43 frames warm, ~120 us on the H200 in a loop's first
// steps).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "profile/profile_writer.h"
#include "record/py_name_cache.h"
#include "record/python_frames.h"
#include "record/string_table.h"
#include "record/unwind/unwinder.h"

namespace aiflame {

// Sampled is kept as a name for Always: every launch is unwound at either (docs/attribution.md).
enum class UnwindPolicy { Sampled, Always, Off };

class StackCapture {
 public:
  // The launches whose memo entries predict the next launch's (set_memo_history). Four: on the H100,
  // of the launches from a memo over 30 steps, 90.4/85.6/77.5% took theirs by the prediction with none
  // (hf_gpt2/resnet_train/gpt_train), 94.7/86.6/86.6% with two and 95.7/89.6/96.9% with four.
  static constexpr int kDefaultMemoHistory = 4;
  StackCapture(ProfileWriter& w, StringTable& strings);
  // unstable_sample: no longer used (every launch is unwound); kept for the recorder's call.
  void init(UnwindPolicy policy, bool python, uint32_t unstable_sample = 1);
  // Address ranges whose frames are the profiler's own or the driver's, trimmed from the leaf end.
  // Call before the first capture.
  void add_skip_range(uint64_t lo, uint64_t hi) { skip_.push_back({lo, hi}); }
  // false: every native frame walked at every launch (tests: launches with no memo).
  void set_incremental_unwind(bool on) {
    incremental_ = on;
    update_fast();
  }
  // true: each launch that takes its memo is walked again in full, every frame (no memo, no frame
  // reused), and the two stacks compared (AIFLAME_LAB=verify_memos, a check on real programs; slow).
  void set_verify_memos(bool on) {
    verify_memos_ = on;
    update_fast();
  }
  // true: a memo's key includes the launch's site (kernel and API) (tests: keys of their own for many kernels).
  void set_memo_key_site(bool on) { memo_key_site_ = on; }
  // A launch with no memo of its own key takes the native frames of another key's walk whose memo holds
  // for it (default on; tests compare it off).
  void set_memo_donors(bool on) { donors_ = on; }
  // n > 0: the memo a launch checks first is the one that followed the thread's last n launches' the
  // last time they came in that order (0 to 4, default 4); 0: the one that followed the
  // last launch's (tests compare the two). Set before the first capture.
  void set_memo_history(int n) { history_ = std::clamp(n, 0, 4); }
  // true: a launch whose predicted memos all fail checks the memo last found or written for its Python
  // fingerprint at its depth before searching its key's (default on; tests compare it off).
  void set_memo_context(bool on) { context_ = on; }
  struct Donors {
    uint64_t checked = 0, took = 0;  // memos of other keys checked, and launches that took one
  };
  Donors donors() const { return {donor_checks_.load(), donated_.load()}; }
  // true: a walk whose key's memos all failed replaces the least recently used of them
  // (the default); false: the last one checked (tests compare the two).
  void set_memo_evict_lru(bool on) { memo_evict_lru_ = on; }
  // Tests: every walk takes the fallback, as while an object's rows are built, through `bt` in place
  // of backtrace() (a backtrace() interposed by a wrapper, as sanitizers' interceptors are, adds the
  // wrapper's frames at the leaf).
  using BacktraceFn = int (*)(void**, int);
  void set_fallback_for_test(bool always, BacktraceFn bt) {
    fallback_always_ = always;
    backtrace_ = bt;
  }
  // true: before each capture whose likely next memo is known, every stack line its check would read
  // is loaded and timed, then loaded and timed again (AIFLAME_LAB=capture_probe=1: what reading the stack
  // alone costs a launch on the host; slow).
  void set_probe_lines(bool on) {
    probe_lines_ = on;
    update_fast();
  }
  // The Python frames walked as a capture walks them, nothing kept (AIFLAME_LAB=capture_probe=2).
  void probe_python();
  struct LineProbe {
    uint64_t launches = 0, lines = 0, pages = 0, cold_ticks = 0, hot_ticks = 0;
  };
  LineProbe line_probe() const {
    return {probe_.launches.load(), probe_.lines.load(), probe_.pages.load(), probe_.cold_ticks.load(), probe_.hot_ticks.load()};
  }
  struct MemoCheck {
    uint64_t checked = 0, differed = 0;
    uint64_t by_fingerprint = 0;  // of the checked: launches that took their memo by the Python fingerprint
  };
  MemoCheck memo_check() const { return {memo_checked_.load(), memo_differed_.load(), memo_fast_.load()}; }
  // The calling thread's launches that took their predicted memo by the Python frames' fingerprint
  // (capture()'s fast path), for tests.
  uint64_t thread_fast_holds() const;

  struct Result {
    uint32_t stack_id = 0;
    bool unwound = false;
    bool walked = false;  // walked in full: no memo of the thread held (AIFLAME_LAB=autograd_ab's kinds)
    bool predicted = false;  // took the memo it predicted, by the Python fingerprint (capture's fast path)
  };
  // site: the kernel and API of the launch; not needed to find its stack any more (kept for callers).
  // predict = false: the memo that likely follows the previous launch's is not checked alone first
  // (AIFLAME_LAB=autograd_ab=2, a measurement): the key's set is searched.
  // key_salt: mixed into the walk memo's key whatever the switches (the launch's autograd node class).
  // py_in_place = false: the interpreter's state asked through its functions (AIFLAME_LAB=autograd_ab=4).
  // fast = false: the predicted memo checked inside the walk's loop, as any other (AIFLAME_LAB=autograd_ab=5).
  Result capture(uint64_t site, bool predict = true, uint64_t key_salt = 0, bool py_in_place = true, bool fast = true);

  uint64_t stacks() const { return next_stack_id_.load() - 1; }
  // Launches whose native stack came from backtrace() because the fast walk was not ready.
  uint64_t fallbacks() const { return fallbacks_.load(std::memory_order_relaxed); }

 private:
  // checks[0..n_checks): the memos of this call path (their frames are the caller's if checks[i]
  // holds: returns unwind::kMemoHeld - i); memo: filled with this walk's, if not null.
  // full: every frame walked (no frame reused from the thread's previous walk); check_only: no walk
  // when none holds (unwind::kNoMemoHeld).
  // start: the state every check and walk of the capture starts from (capture() takes it); ra:
  // capture()'s return address, where the stack begins.
  int unwind(const unwind::Regs& start, uint64_t ra, uint64_t* out, int max,
             const unwind::WalkMemo* const* checks = nullptr, int n_checks = 0, unwind::WalkMemo* memo = nullptr,
             bool full = false, bool check_only = false);
  // capture() past its predicted memo (checked: that entry's index if capture() checked it, else -1).
  // py_fast: the launch's Python fingerprint and key (0: none), kept on the entry it takes or writes.
  Result capture_walk(const unwind::Regs& start, uint64_t ra, const RawPyFrame* py, int np, uint64_t py_hash,
                      uint64_t py_fast, bool tables, uint64_t t0, uint64_t t1, uint64_t site, bool predict, uint64_t key_salt,
                      int checked);
  // capture() checks the predicted memo itself unless a measurement or switch needs capture_walk.
  void update_fast() { fast_ = policy_ != UnwindPolicy::Off && incremental_ && !probe_lines_; }
  // by_fingerprint: the memo was taken by the Python fingerprint (capture()'s fast path).
  void verify_memo(const unwind::Regs& start, uint64_t ra, const RawPyFrame* py, int np, uint32_t held,
                   bool by_fingerprint = false);
  bool fast_ = true;  // update_fast() with the defaults
  // t_looked_up: set to the TSC after this thread's table was looked up (the breakdown), if not null.
  // content_at: set to the content's offset in the thread's arena (kNoContent: not kept there), if not null.
  uint32_t stack_id_of(uint64_t* content, int nn, const RawPyFrame* py, int np, bool* thread_new, uint64_t* t_looked_up,
                       uint32_t* content_at = nullptr);
  bool context_ = true;  // MemoTable::by_context (stack_capture.cpp)
  int history_ = kDefaultMemoHistory;  // the likely next memo from the last launches' (stack_capture.cpp, MemoTable::after)
  bool donors_ = true;  // capture_walk's look for another key's walk that holds (take_donor, stack_capture.cpp)
  std::atomic<uint64_t> donor_checks_{0}, donated_{0};
  uint32_t intern_shared(const uint64_t* content, size_t len, uint64_t hash, int nn, const RawPyFrame* py, int np);
  void name_python(const RawPyFrame* frames, int n, PyFrame* out);  // under mu_

  ProfileWriter& writer_;
  StringTable& strings_;
  PythonFrames python_;
  bool use_python_ = true;
  bool incremental_ = true;
  bool verify_memos_ = false;
  bool probe_lines_ = false;
  struct {
    std::atomic<uint64_t> launches{0}, lines{0}, pages{0}, cold_ticks{0}, hot_ticks{0};
  } probe_;
  void probe_lines();
  // The lines this thread's capture will likely read: called at the capture's start. True if they
  // include a walk's tables (unwind::prefetch_for_walk: the thread's last launch walked).
  bool prefetch();
  bool memo_key_site_ = false;
  bool memo_evict_lru_ = true;
  bool fallback_always_ = false;    // set_fallback_for_test
  BacktraceFn backtrace_ = nullptr;  // set_fallback_for_test; null: glibc's backtrace()
  std::atomic<uint64_t> memo_checked_{0}, memo_differed_{0}, memo_fast_{0};
  UnwindPolicy policy_ = UnwindPolicy::Always;
  std::vector<std::pair<uint64_t, uint64_t>> skip_;
  const uint64_t serial_;  // tells this capture's per-thread tables from another's (tests make several)

  std::mutex mu_;  // only for stacks new to a thread
  PyNameCache names_;  // under mu_: Python frames named before (name_python)
  std::unordered_map<uint64_t, std::vector<uint32_t>> stack_ids_;  // content hash -> ids (collisions checked)
  std::vector<std::vector<uint64_t>> stack_content_;               // by id - 1
  std::atomic<uint32_t> next_stack_id_{1};
  std::atomic<uint64_t> fallbacks_{0};
};

}  // namespace aiflame
