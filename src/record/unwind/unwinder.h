// The native stack walk of a launch (x86-64): DWARF CFI rows where an object has them (ObjectTable),
// frame pointers where a row says nothing (gaps, rules not modelled), ending at the outermost frame.
// Every stack read is bounded to [sp, top of the thread's stack) (an interrupted frame's saved rbp
// also in its red zone, never below the walk's start) and the stack pointer only grows;
// every return address must lie in an executable segment of a loaded object; so a corrupt stack or
// a bad CFI row ends the walk instead of faulting. Lock-free once the rows of the objects on the
// stack are built; a per-thread cache of resolved return addresses makes a frame a few loads, and the
// frames that a walk shares with the previous walk on its thread are checked, not walked (issue 22:
// incremental unwinding; the argument that this gives the full walk's frames is in unwinder.cpp).
#pragma once
#include <cstdint>

namespace aiflame::unwind {

struct Regs {
  uint64_t pc = 0, sp = 0, fp = 0;
};

enum class WalkEnd : uint8_t {
  Outermost,    // the CFI's outermost frame, or a zero return address
  Limit,        // `max` frames
  BadFrame,     // a read out of bounds, a stack pointer that did not grow, a return address in no object
  NotReady,     // an object's rows are being built (queued): fall back for this walk
  Stale,        // a return address in an object loaded after the snapshot (refresh queued): fall back
  OffStack,     // sp is not on the thread's own stack (an alternate signal stack, a coroutine's): fall back
};

// Why a memo did not hold for a start: the first of memo_holds' conditions that failed (the capture
// stats count them, to tell which of a launch's inputs moved when its path's memo failed: issue 22,
// where 0.2-6.3% of a loop's launches walked, most to their memo's own stack).
enum class MemoMiss : uint8_t { Held, Empty, Start, Sp, Fp, Generation, Bounds, Words, kCount };

struct WalkStatus {
  WalkEnd end = WalkEnd::Outermost;
  // In: unwind_here explains why each of its memo checks failed (memo_miss), for the capture stats.
  bool explain_memo = false;
  uint8_t explained = 0;       // out, with explain_memo: the checks explained in memo_miss
  MemoMiss memo_miss[4] = {};  // (kMaxChecks)
  uint16_t fp_frames = 0;  // frames stepped by frame pointer
  uint16_t cache_misses = 0;  // frames not in the per-thread cache
  uint16_t shared_hits = 0;   // of those, frames found in the process's shared rows (shared_rows.h), not searched
  // Out: whether the thread's cache was emptied first (an object was unloaded since its last walk:
  // Snapshot::generation); with explain_memo (the capture stats), TSC ticks in the walk itself and in its cache
  // misses' lookups (the object, then its rows). Issue 22: on the H200 the ~0.5% of a short training run's
  // launches that walked cost 20-30 us each, 0.15-0.4 us of the per-launch figure.
  bool cache_reset = false;
  uint64_t walk_ticks = 0, lookup_ticks = 0;
  uint16_t reused = 0;        // frames taken from the previous walk on this thread (their words re-read)
  // Frames in an object whose rows were not built yet, stepped by their FDE read in place
  // (find_cfi_row); such a walk is not a memo.
  uint16_t lazy_rows = 0;
  uint8_t reuse_runs = 0;     // runs of such frames (separated by frames that differ)
  bool needs_fallback() const { return end == WalkEnd::NotReady || end == WalkEnd::Stale || end == WalkEnd::OffStack; }
};

// What a walk read: its start, and every stack word it loaded with the value it found. A walk is a
// function of its start (pc, sp, rbp where it used the starting rbp), the stack's top, the frame
// limit, the snapshot generation (the rows) and the values of the words it reads, whose addresses
// come from the start and earlier values. So if a later walk starts from the same state and every
// logged word still holds its value, it reads the same words and returns the same frames: checking
// the memo is one independent load per word, where a walk is a chain of dependent ones (issue 22:
// on the H100 a launch's 34-47 frames still cost 1.5-2.5 us walked, 33-43 of them reused).
// Only walks that ended at the outermost frame or at the limit are memos (a bad frame may be an
// object loaded later).
// A word's address is kept as its offset from the start's sp in 8-byte words (the walk reads only
// aligned words of [sp, top)), and the values as one fingerprint (mod 2^64: the words dealt to four
// lanes, each a polynomial in an odd multiplier, summed with odd weights; unwinder.cpp). The memo's
// check loads the same words and compares the fingerprint: one independent load per word, reading 2
// bytes of memo per word where 12 were (issue 22: with nearly every launch from its memo, the check's
// round of cold loads was the largest part of the H100's capture, 0.58-0.92 us; a memo of 80 words was
// ~15 lines, now ~3). Two different value lists give the same fingerprint never for a single
// differing word (odd multipliers), else with a chance of about 2^-(64 - t), t the trailing zero bits
// of the differences (return addresses and stack addresses: t <= 4).
// 256 words: the H100's hf_gpt2.py launches through cuBLASLt read more than the 160 an earlier memo
// kept, so 27% of its launches never had a memo.
struct WalkMemo {
  static constexpr int kMaxWords = 256;
  uint64_t pc = 0, sp = 0, fp = 0, hi = 0;
  uint64_t fingerprint = 0;  // of the values read, in order
  uint32_t generation = 0;
  uint16_t words = 0;    // 0: no memo
  uint16_t max = 0;      // the frame limit it was walked with
  uint16_t highest = 0;  // the highest word offset it holds
  bool fp_used = false;  // a rule used the starting rbp (before any saved rbp was loaded)
  uint16_t offset[kMaxWords];  // of each word read, from sp, in words
};

// Walks from `start` (pc: the exact instruction, as in a signal context) with stack reads bounded to
// [start.sp, stack_hi). Writes the return addresses of the frames above `start` (not start.pc), at
// most min(max, 259). incremental = false: every frame walked, the thread's record of its previous
// walk neither used nor replaced (the reference that tests compare the incremental walk with).
// memo: filled with what this walk read (words = 0 when it is not a memo: too many words, or the
// walk ended otherwise than at the outermost frame or the limit).
int walk(const Regs& start, uint64_t stack_hi, uint64_t* out, int max, WalkStatus* status, bool incremental = true,
         WalkMemo* memo = nullptr);

// True if a walk from `start` with these bounds would read exactly what `memo`'s walk read, and so
// return its frames and end. Reads only the memo's words, each checked to lie in [start.sp, stack_hi).
bool memo_holds(const WalkMemo& memo, const Regs& start, uint64_t stack_hi, int max);
// The same check, naming the first condition that failed (Held: memo_holds is true). Not on the launch
// path: the stats call it for the memos of a launch that walked.
MemoMiss memo_miss(const WalkMemo& memo, const Regs& start, uint64_t stack_hi, int max);

// The caller's stack, like glibc's backtrace() called from the same place: out[0] is the return
// address of unwind_here into its caller, then that caller's return address, and so on.
// checks[0..n_checks): if one holds for this call (memo_holds), returns kMemoHeld - i for the first
// that does (checks[i]) without walking (the caller has the frames of the walk that made it);
// otherwise walks, filling `memo` if not null (it may be a check), or with check_only returns
// kNoMemoHeld without walking. At most kMaxChecks are checked.
constexpr int kMaxChecks = 4;
static_assert(kMaxChecks <= static_cast<int>(sizeof(WalkStatus::memo_miss)), "a cause per check");
constexpr int kMemoHeld = -1, kNoMemoHeld = -16;
int unwind_here(uint64_t* out, int max, WalkStatus* status, bool incremental = true,
                const WalkMemo* const* checks = nullptr, int n_checks = 0, WalkMemo* memo = nullptr,
                bool check_only = false);
// The same from `start`, a state of the calling thread that stays live until this returns (pc: an
// instruction of a caller, with sp and rbp as they were there; StackCapture::capture takes it at its
// start, so that its own calls below that frame, whichever they are, see the same memos). out[0] is the
// return address of start's function.
int unwind_from(const Regs& start, uint64_t* out, int max, WalkStatus* status, bool incremental = true,
                const WalkMemo* const* checks = nullptr, int n_checks = 0, WalkMemo* memo = nullptr,
                bool check_only = false);
// memo_holds for `start` on this thread's stack, with the stack's bounds (false off the stack): the
// launch path's check of its predicted memo, without the walk's arguments (StackCapture::capture).
bool memo_holds_here(const WalkMemo& memo, const Regs& start, int max);

// Prefetches for a capture with cold caches (issue 22). prefetch_for_check: the snapshot generation
// that every memo check compares; call at the start of a capture. prefetch_for_walk: what the previous
// walk on this thread read (its stack lines, its record and the cache sets of the frames it looked
// up), so that the next walk's dependent loads hit; call when the launch has no memo, or the thread's
// last launch walked (unwind_here calls it when no memo holds). On a launch that takes its memo these
// are ~100 prefetches and ~40 loads of the record (for the stack addresses) it does not need: the
// memo's check reads its own words, at its own depth.
void prefetch_for_check();
void prefetch_for_walk();

// Forgets the previous walk on this thread, so that the next one walks every frame (tests compare the
// two; benchmarks time the full walk).
void forget_walk();

// Top (highest address) of the calling thread's stack, 0 if unknown.
uint64_t thread_stack_top();

}  // namespace aiflame::unwind
