#include "record/stack_capture.h"

#include "record/measure/capture_stats.h"
#include "record/crash_report.h"
#include "record/debug_log.h"
#include "record/unwind/object_table.h"
#include "record/unwind/unwinder.h"
#include "util/hot_pages.h"
#include "util/word_hash.h"
#include "util/hot_path.h"
#include "util/tls_offsets.h"

#include <execinfo.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <memory>

namespace aiflame {
namespace {

constexpr int kMaxNative = 256;
// Frames a backtrace() wrapper may put at the leaf before this function's return address (unwind()).
constexpr int kMaxLeafWrappers = 8;
constexpr int kMaxPython = 256;
constexpr size_t kMaxContent = 2 + kMaxNative + 2 * kMaxPython;
static_assert(kMaxNative <= ProfileWriter::kMaxBufferedFrames && kMaxPython <= ProfileWriter::kMaxBufferedFrames,
              "a new stack's frames fit its buffered record");

uint64_t hash_words(const uint64_t* w, size_t n) {
  WordHash h;
  size_t i = 0;
  for (; i + 1 < n; i += 2) h.pair(w[i], w[i + 1]);
  if (i < n) h.a = (h.a ^ w[i]) * 0x9e3779b97f4a7c15ULL;
  return h.finish(n);
}

std::atomic<uint64_t> g_serial{1};

// Set when this thread's LocalStacks is destroyed (a bool has no destructor: readable until the thread
// ends). A launch from a later thread-local destructor, or at exit after the main thread's, must not
// use the freed table (ThreadSanitizer found the use after free, 2026-11-27): it interns through the
// shared table instead.
thread_local bool t_stacks_gone = false;

// The stacks this thread has seen for one StackCapture: an open-addressing table whose slots point
// at their content in a per-thread arena, compared in full on a hash match. Read and written by its
// thread only: the launch path takes no lock for a stack the thread has launched from before.
struct LocalStacks {
  LocalStacks() = default;
  LocalStacks(const LocalStacks&) = delete;
  LocalStacks& operator=(const LocalStacks&) = delete;
  ~LocalStacks() { t_stacks_gone = true; }
  struct Slot {
    uint64_t hash = 0;
    uint64_t off = 0;
    uint32_t len = 0;
    uint32_t id = 0;  // 0: empty
  };
  uint64_t owner = 0;
  std::vector<Slot> slots;
  size_t used = 0;
  std::vector<uint64_t> arena;

  void reset(uint64_t o) {
    owner = o;
    slots.assign(1024, Slot{});
    used = 0;
    arena.clear();
  }
  // at: set to the content's offset in the arena when found.
  uint32_t find(uint64_t h, const uint64_t* w, size_t n, uint64_t* at) const {
    size_t mask = slots.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots[i];
      if (!s.id) return 0;
      if (s.hash == h && s.len == n && std::memcmp(&arena[s.off], w, n * sizeof *w) == 0) {
        *at = s.off;
        return s.id;
      }
    }
  }
  void insert(uint64_t h, const uint64_t* w, size_t n, uint32_t id) {
    if (2 * (used + 1) > slots.size()) {
      std::vector<Slot> old(slots.size() * 2);
      old.swap(slots);
      size_t mask = slots.size() - 1;
      for (const Slot& s : old) {
        if (!s.id) continue;
        size_t i = s.hash & mask;
        while (slots[i].id) i = (i + 1) & mask;
        slots[i] = s;
      }
    }
    size_t mask = slots.size() - 1;
    size_t i = h & mask;
    while (slots[i].id) i = (i + 1) & mask;
    slots[i] = Slot{h, arena.size(), static_cast<uint32_t>(n), id};
    arena.insert(arena.end(), w, w + n);
    used++;
  }
};
thread_local LocalStacks t_stacks;

// Launches from a call path this thread launched from before (issue 22): per (kernel and API, depth
// of the capture on the stack, Python frames), the memo of the native walk that the last such launch
// made and the stack id it got. If the memo holds (unwind::memo_holds: every stack word that walk read
// still has its value, so a walk now would return the same frames), the launch takes that id: one
// independent load per word instead of a walk, and no hash or table lookup of the content. On the
// H100 the walk of 34-47 frames cost 1.5-2.5 us per launch with 33-43 of them reused from the previous
// walk, each reused frame still a switch on its rule and its dependent checks. The
// key only picks the memo to check; the check alone decides (a key shared by two paths costs a walk).
constexpr int kMemoPython = 32;   // Python frames a memo keeps (deeper stacks are walked every time)
// 512 sets of 4 ways: 2,048 memos (~1.2 MB per launching thread, in its hot pages). The H100's
// hf_gpt2.py loop had ~190 call paths on its main thread; with 128 sets of 2 a third of its launches
// found no memo (sets shared by three paths or more evicted each other's). A training step visits its
// paths in the same order each step, so a set that five paths hash to loses all five every step
// (round robin): at 256 sets, 256 paths left 30-42 of 512 launches without their memo in 17 of 300
// runs of StackCapture.AThreadKeepsTheMemosOfHundredsOfCallPaths (where the sets fall moves with the
// stack's address); the compact memos leave room for twice the sets.
// Each key has two candidate sets (from two parts of its hash), searched both, and a walk's memo goes
// to the emptier one (two choices, 8 ways): with one set per key, a set that more memos than its
// ways hash to thrashes every step, and with ~400 memos that was about every other run (a training
// run's stack addresses, and so its sets, move between runs): an H200 run of hf_gpt2.py walked 1,710
// times in 300 steps against 196 in another, 0.15 us per launch.
constexpr unsigned kMemoSetBits = 9;
constexpr int kMemoWays = 4;
constexpr unsigned kDonorBits = 10;
constexpr size_t kDonorSlots = size_t{1} << kDonorBits;
constexpr unsigned kHistoryBits = 14;  // MemoTable::after: 16,384 slots (64 KB)
constexpr unsigned kContextBits = 13;  // MemoTable::by_context: 8,192 slots (16 KB)

// Memos one key keeps (on hf_gpt2 and timm_train 6.2-6.7% of
// launches found their key's two memos not holding, and 97-99.9% of those walked to a third stack).
constexpr int kMemosPerKey = std::min(kMemoWays, unwind::kMaxChecks);
// An entry's Python frames are kept as a hash of their words alone (the key hashes them after the
// site and depth, in other lanes): a memo check reads the entry's header and the walk's offsets, ~4
// lines for 80 words, and no frame list (issue 22: the check's cold lines were most of the H100's
// capture cost). Two Python stacks that share the key and this hash: about 2^-64 per pair.
struct MemoEntry {
  uint64_t py_check;  // PythonFrames::hash() of the Python frames
  // The launch path's check of its predicted entry (StackCapture::capture): PythonFrames::fingerprint()
  // of the last launch that took or wrote this entry, mixed with its key's site and salt (0: none). Equal
  // fingerprints mean equal Python frames (and so equal py_check and key, but for the depth, which the
  // walk memo checks), without the walk that materialises them.
  uint64_t py_fast;
  // The entry the thread's next launch took last time, and its lines (MemoTable::last says why).
  MemoEntry* next;
  uint32_t next_lines;
  uint32_t id;
  int32_t nn, np;
  // Where the stack's content lies in the thread's LocalStacks arena (kNoContent: not there), so that
  // a launch of another key whose walk this memo's check shows to be the same takes its native frames
  // (take_donor).
  uint32_t content_at;
  unwind::WalkMemo walk;
};
constexpr uint32_t kNoContent = UINT32_MAX;
// The lines a memo check reads of an entry: its header and the walk's offsets.
uint32_t lines_of(const MemoEntry& m) {
  const char* end = reinterpret_cast<const char*>(m.walk.offset + m.walk.words);
  return static_cast<uint32_t>((end - reinterpret_cast<const char*>(&m)) / 64 + 2);  // + the partial lines at both ends
}
// A set's keys on one line (a lookup reads one line, then only the entry whose key matches).
struct alignas(64) MemoSet {
  uint64_t key[kMemoWays];  // 0: empty
  // The thread's use clock (MemoTable::clock) when each way's memo last held or was written: the least
  // recently used of the memos compared is the one with the lowest. One clock for the table, not one
  // per set, since a key's memos and the ways a walk may replace lie in two sets.
  uint32_t used[kMemoWays];
  uint8_t last_held;        // the way whose memo held last (checked first)
};
static_assert(sizeof(MemoSet) == 64, "a set's keys and ages on one line");
struct MemoTable {
  uint64_t owner = 0;
  bool walked = true;  // the thread's last capture walked (took no memo): prefetch a walk's tables early
  uint32_t clock = 0;  // ticked when a memo holds or is written (MemoSet::used)
  uint64_t fast_holds = 0;  // launches that took their predicted memo by the Python fingerprint (tests)
  // The entry of the thread's last launch (null: it had none). A training step launches from its call
  // paths in the same order every step, so the entry the launch after this one took last time is
  // likely the next launch's: its lines and its set's are prefetched at the capture's start, and load
  // while the Python frames are walked, instead of after the key is known (issue 22: the memo check's
  // round of cold loads was the largest part of the H100's capture).
  MemoEntry* last = nullptr;
  // The entries of the thread's last launches (StackCapture::set_memo_history: the last `history` of
  // them, each entry's index + 1 shifted in by history_shift bits; 0: none), and what `after` holds
  // for them (the likely next entry, looked up as the last launch ended).
  uint32_t history = 0;
  uint8_t history_shift = 16;
  uint32_t predicted = 0;
  MemoSet sets[1u << kMemoSetBits];
  // The entry that followed the thread's last launches' entries (`history`) the last time they came in
  // that order: entry index + 1 and that entry's lines << 16 (0: none), at history_slot(history). A
  // training step launches from some paths at several points (one layer's kernels, once per layer; on
  // an engine thread one kernel under many nodes of a class, as a linear layer's two matrix products
  // under every linear layer's node), each followed by another path each time, so the entry that
  // followed a path's last launch (MemoEntry::next) is the wrong guess at every point but one; the
  // entries before it tell them apart (a branch predictor's global history). On the H100 10-22% of
  // the three loops' launches from a memo found neither `next` nor `last` theirs. 16,384 slots: a loop's step has ~300-1,000 launch points a thread, and a
  // point whose slot another takes is predicted wrong every step.
  uint32_t after[size_t{1} << kHistoryBits];
  // The entry found by a search or written by a walk last for a launch's Python fingerprint (with its
  // site and salt: MemoEntry::py_fast) at its depth: entry index + 1 (0: none), at context_slot. A launch
  // whose predicted entries all fail (a step's order not as before: another path's launches between, a
  // history that collides with another in `after`) checks it before the Python walk and the search of
  // its key's sets, which cost it ~1.2 us more on the H100 (the histogram probe: 1.5-1.8 us a searched
  // launch from a memo against 0.38-0.41 a predicted one; 4-9.5% of the loops' launches from a memo).
  uint16_t by_context[size_t{1} << kContextBits];
  // The entries whose memos were written last at a depth (two, newest first) and at a depth for a site
  // and salt: where a launch with no memo of its own key looks for a walk it would repeat (take_donor).
  // Entry index + 1; 0: none.
  uint16_t donor_depth[kDonorSlots][2];
  uint16_t donor_site[kDonorSlots];
  // Not constructed: the hot pages start zeroed, a zero entry is an empty one, and constructing the
  // 2,048 entries (WalkMemo's initialisers) wrote a line of each, so every page of the table, at the
  // thread's first launch: where the kernel gives no huge page, 327 page faults and ~470 us on the
  // development machine, against 30 faults now.
  union {
    MemoEntry e[kMemoWays << kMemoSetBits];
  };
  MemoTable() {}
};
// With the unwinder's cache and record (~80 KB) and the Python walk's record it fits the thread's 2-MB
// hot-pages region (util/hot_pages.cpp); past it, hot_alloc would take it from the heap, in 4-KiB pages.
static_assert(sizeof(MemoTable) <= (size_t{3} << 19), "the memo table must leave room in the 2-MB hot-pages region");
thread_local constinit MemoTable* t_memo = nullptr;  // in the thread's hot pages, never freed (util/hot_pages.h)
AIFLAME_TLS_ENROLL(tls::kMemo, t_memo);
// The thread's table, reached by offset (util/tls_offsets.h).
inline MemoTable* thread_memo() { return *AIFLAME_TLS(tls::kMemo, t_memo); }

// The distinct stack lines that `m`'s check reads, in address order: line i at (m.sp & ~63) + 64 * out[i].
int memo_lines(const unwind::WalkMemo& m, uint16_t (&out)[unwind::WalkMemo::kMaxWords]) {
  int n = 0;
  for (int i = 0; i < m.words; i++) out[n++] = static_cast<uint16_t>(((m.sp & 63) + 8 * uint64_t{m.offset[i]}) >> 6);
  std::sort(out, out + n);
  return static_cast<int>(std::unique(out, out + n) - out);
}

// The slot of MemoTable::after for a history of entries.
size_t history_slot(uint32_t history) { return (history * 0x9e3779b1u) >> (32 - kHistoryBits); }

// The thread's launch took (or wrote) entry `cur`, index i: the previous launch's entry learns its
// successor, the history of the last launches' entries theirs (MemoTable::after), and the next
// launch's likely entry is looked up.
void follow(MemoTable& t, MemoEntry* cur, int i) {
  MemoEntry* const prev = t.last;
  const auto cur_i = static_cast<uint16_t>(i + 1);
  if (prev) {
    const uint32_t lines = lines_of(*cur);
    if (prev != cur) {
      prev->next = cur;
      prev->next_lines = lines;
    }
    t.after[history_slot(t.history)] = cur_i | std::min(lines, 0xffffu) << 16;
  }
  t.history = t.history_shift < 32 ? (t.history << t.history_shift) ^ cur_i : cur_i;
  t.last = cur;
  t.predicted = t.after[history_slot(t.history)];
}

// The entry that followed the thread's last launches' entries last time (MemoTable::predicted), or -1;
// *lines its lines, if one.
int predicted_index(const MemoTable& t, uint32_t* lines = nullptr) {
  const uint32_t v = t.predicted;
  if (lines) *lines = v >> 16;
  return static_cast<int>(v & 0xffff) - 1;
}

// The slot of MemoTable::by_context for a launch's Python fingerprint and depth.
size_t context_slot(uint64_t py_fast, uint64_t sp) { return mix(py_fast, sp) >> (64 - kContextBits); }

// Entry i was found by a search or written by a walk for a launch with this fingerprint at this depth.
void note_context(MemoTable& t, uint64_t py_fast, uint64_t sp, int i) {
  if (py_fast) t.by_context[context_slot(py_fast, sp)] = static_cast<uint16_t>(i + 1);
}

// No entry to link the next launch's to.
void forget_last(MemoTable& t) {
  t.last = nullptr;
  t.history = 0;
  t.predicted = 0;
}

// The entry that followed the thread's last launches' entries last time (MemoTable::after, with
// `history`), else the one that followed the previous launch's (MemoTable::last), else the previous
// launch's own, if it is one of this key's: its index, else -1. The previous launch's own: a path that
// launches several kernels in a row (an op's kernels, one Python line and one native path) follows
// itself, which `next` does not keep (the previous entry learns its successor only when it is
// another): on the H200, 24% of hf_gpt2.py's launches from a memo had to search their set without it.
// An entry is a key's if its way holds the key (a key's entries lie only in the key's two sets, where
// its walks write them).
int predicted_entry(const MemoTable& t, uint64_t key, int np, uint64_t py_check, bool history) {
  auto of_key = [&](const MemoEntry* e) {
    if (!e) return false;
    const auto i = static_cast<size_t>(e - t.e);
    return t.sets[i / kMemoWays].key[i % kMemoWays] == key && e->np == np && e->py_check == py_check;
  };
  const MemoEntry* last = t.last;
  if (!last) return -1;
  if (const int p = history ? predicted_index(t) : -1; p >= 0 && of_key(&t.e[p])) return p;
  if (of_key(last->next)) return static_cast<int>(last->next - t.e);
  return of_key(last) ? static_cast<int>(last - t.e) : -1;
}

// Entry i held: checked first in its set next time, and its use stamped (MemoSet::used).
void mark_held(MemoTable& t, int i) {
  MemoSet& set = t.sets[static_cast<size_t>(i) / kMemoWays];
  set.last_held = static_cast<uint8_t>(i % kMemoWays);
  set.used[i % kMemoWays] = ++t.clock;
}

// The launch took entry e (index i, both at hand in the callers) in StackCapture::capture itself,
// without a walk: the entry used, and the table's order of paths told (capture_walk does the same for
// the entries it takes).
void take_memo(MemoTable& t, MemoEntry* e, int i) {
  mark_held(t, i);
  t.walked = false;
  follow(t, e, i);
}

// A memo's key: the Python frames' hash, the site and salt (StackCapture::capture's key_salt), and
// the depth of the capture on its stack.
inline uint64_t memo_key(uint64_t py_hash, uint64_t site_salt, uint64_t depth) { return mix(mix(py_hash, site_salt), depth) | 1; }

// A walk's memo before it replaces another path's (StackCapture::capture).
unwind::WalkMemo& t_scratch_memo() {
  thread_local unwind::WalkMemo* m = nullptr;
  if (!m) hot_new(m);
  return *m;
}

// No entry is a donor any more (take_donor): the table changed owner, or the thread's table of stack
// contents, into which the entries' content offsets point, was emptied.
void forget_donors(MemoTable& t) {
  std::memset(t.donor_depth, 0, sizeof t.donor_depth);
  std::memset(t.donor_site, 0, sizeof t.donor_site);
}

MemoTable& memo_table(uint64_t owner, int history) {
  MemoTable* t = thread_memo();
  if (!t) t = hot_new(t_memo);  // owner 0: cleared below (serials start at 1)
  if (t->owner != owner) {
    const bool had_owner = t->owner != 0;
    if (had_owner)  // a fresh table's sets are hot_alloc's zeros already: not written (their pages untouched)
      for (auto& set : t->sets) set = MemoSet{};
    t->owner = owner;
    t->history_shift = static_cast<uint8_t>(32 / std::max(history, 1));
    forget_last(*t);
    if (had_owner) {
      std::memset(t->after, 0, sizeof t->after);
      std::memset(t->by_context, 0, sizeof t->by_context);
    }
    forget_donors(*t);
  }
  return *t;
}

// The donor slots of a depth, and of a site and salt at a depth.
size_t depth_slot(uint64_t sp) { return mix(sp, 0x5eed) >> (64 - kDonorBits); }
size_t site_slot(uint64_t site_salt, uint64_t sp) { return mix(site_salt, sp) >> (64 - kDonorBits); }

// Entry i got a memo (a walk wrote it): the newest at its depth, and for its site and salt there.
void note_donor(MemoTable& t, int i, uint64_t site_salt, uint64_t sp) {
  const auto v = static_cast<uint16_t>(i + 1);
  uint16_t* d = t.donor_depth[depth_slot(sp)];
  if (d[0] != v) {
    d[1] = d[0];
    d[0] = v;
  }
  t.donor_site[site_slot(site_salt, sp)] = v;
}

// A launch with no memo of its own key that holds (a call path new to its key: new Python frames, a
// new autograd node class) whose native walk would repeat one this thread made before for another key:
// the last two at its depth, or the last at its depth for its site and salt, checked as memos are
// (unwind::memo_holds: a walk now would read what that one read, so return its frames). If one holds,
// its native frames are copied into content[1..] from the thread's arena `local` and its memo into
// `record`, and their count is returned; else -1 (the launch walks). *checked counts the memos checked.
// A walk costs 6-13 us on the H100 in a training loop's first steps (its lookups cold, some objects'
// rows still being built), a memo check of cold lines well under one.
int take_donor(const MemoTable& t, const LocalStacks& local, const unwind::Regs& start, uint64_t site_salt,
               uint64_t* content, unwind::WalkMemo* record, uint64_t* checked) {
  const uint16_t* d = t.donor_depth[depth_slot(start.sp)];
  const uint16_t cands[3] = {t.donor_site[site_slot(site_salt, start.sp)], d[0], d[1]};
  for (int c = 0; c < 3; c++) {
    const uint16_t v = cands[c];
    if (!v || std::find(cands, cands + c, v) != cands + c) continue;
    const int i = v - 1;
    const MemoEntry& e = t.e[i];
    // A way whose key is 0 is empty, or the slot this launch's walk is about to write.
    if (!t.sets[static_cast<size_t>(i) / kMemoWays].key[i % kMemoWays] || !e.walk.words || e.content_at == kNoContent)
      continue;
    if (static_cast<size_t>(e.content_at) + 1 + static_cast<size_t>(e.nn) > local.arena.size() ||
        local.arena[e.content_at] != static_cast<uint64_t>(e.nn))
      continue;
    ++*checked;
    if (!unwind::memo_holds_here(e.walk, start, kMaxNative)) continue;
    std::memcpy(content + 1, &local.arena[e.content_at + 1], sizeof *content * static_cast<size_t>(e.nn));
    if (record && record != &e.walk)
      std::memcpy(static_cast<void*>(record), &e.walk,
                  offsetof(unwind::WalkMemo, offset) + sizeof e.walk.offset[0] * e.walk.words);
    return e.nn;
  }
  return -1;
}

// With AIFLAME_LAB=capture_stats and AIFLAME_DEBUG=1: for a launch that found no memo for its key, the
// key's parts the last time its stack was walked on this thread, and one debug line when they differ
// (the first 40 times): which part of the key varies between launches of one stack.
struct KeyParts {
  uint64_t site, depth, py_hash;
  int np;
};
void diagnose_key(uint32_t id, const KeyParts& now) {
  thread_local std::unordered_map<uint32_t, KeyParts>* seen = new std::unordered_map<uint32_t, KeyParts>;
  static std::atomic<int> lines{0};
  auto [it, fresh] = seen->try_emplace(id, now);
  if (fresh) return;
  const KeyParts was = it->second;
  it->second = now;
  if (was.site == now.site && was.depth == now.depth && was.py_hash == now.py_hash && was.np == now.np) return;
  if (lines.fetch_add(1) >= 40) return;
  debug("memo key of stack %u changed: site %#llx -> %#llx, depth %#llx -> %#llx (%+lld), Python frames %d -> %d%s", id,
        (unsigned long long)was.site, (unsigned long long)now.site, (unsigned long long)was.depth,
        (unsigned long long)now.depth, (long long)(now.depth - was.depth), was.np, now.np,
        was.py_hash != now.py_hash ? " (their code or offsets differ)" : "");
}

// The Python frames as a stack's content holds them (and a memo's key and entry): code, lasti.
size_t put_python(uint64_t* out, const RawPyFrame* py, int np) {
  for (int i = 0; i < np; i++) {
    out[2 * i] = reinterpret_cast<uint64_t>(py[i].code);
    out[2 * i + 1] = static_cast<uint32_t>(py[i].lasti);
  }
  return 2 * static_cast<size_t>(np);
}

// The parts of a capture's breakdown that a launch from its memo and a walked launch share.
void add_walk_stats(CaptureStats& cs, uint64_t t0, uint64_t t1, uint64_t t2, int nn, int np) {
  cs.add(CaptureStats::Python, t0, t1);
  cs.add(CaptureStats::Unwind, t1, t2);
  cs.native_frames.fetch_add(static_cast<uint64_t>(nn), std::memory_order_relaxed);
  cs.python_frames.fetch_add(static_cast<uint64_t>(np), std::memory_order_relaxed);
}

}  // namespace

StackCapture::StackCapture(ProfileWriter& w, StringTable& strings)
    : writer_(w), strings_(strings), serial_(g_serial.fetch_add(1)) {}

void StackCapture::init(UnwindPolicy policy, bool python, uint32_t) {
  // The launch path's thread-locals by offset from now on, if they are in static TLS (one short-lived
  // thread, once per process; util/tls_offsets.h).
  tls::learn();
  policy_ = policy;
  use_python_ = python;
  update_fast();
  if (python) python_.init();
  // The first snapshot of the loaded objects now, not at the first launch.
  if (policy != UnwindPolicy::Off) {
    auto& objects = unwind::ObjectTable::instance();
    objects.snapshot();
    objects.start_builder();
    // The recorder starts inside the program's first CUDA call, below the frames its launches will
    // have (the framework's libraries, the interpreter): build those objects' rows now.
    void* bt[kMaxNative];
    uint64_t pcs[kMaxNative];
    int n = backtrace(bt, kMaxNative);
    for (int i = 0; i < n; i++) pcs[i] = reinterpret_cast<uint64_t>(bt[i]);
    objects.request_builds_for(pcs, n);
  }
}

static_assert(static_cast<int>(unwind::MemoMiss::kCount) == std::size(CaptureStats{}.memo_miss),
              "a count per MemoMiss");

int StackCapture::unwind(const unwind::Regs& start, uint64_t ra, uint64_t* out, int max,
                         const unwind::WalkMemo* const* checks, int n_checks, unwind::WalkMemo* memo, bool full,
                         bool check_only) {
  PhaseScope phase(Phase::Unwind);
  uint64_t frames[kMaxNative];
  unwind::WalkStatus status;
  status.explain_memo = CaptureStats::on();
  int n = unwind::unwind_from(start, frames, std::min(max, kMaxNative), &status, incremental_ && !full, checks,
                              n_checks, memo, check_only);
  int first = 0;  // a walk's frames start at capture()'s return address (the walk starts inside capture())
  if (CaptureStats::on()) {
    CaptureStats& cs = CaptureStats::instance();
    for (int i = 0; i < status.explained; i++)  // also those of a check_only call that none held
      cs.memo_miss[static_cast<int>(status.memo_miss[i])].fetch_add(1, std::memory_order_relaxed);
  }
  if (n < 0) return n;  // a memo held, or none did (check_only)
  if (CaptureStats::on()) {
    CaptureStats& cs = CaptureStats::instance();
    cs.ends[static_cast<int>(status.end)].fetch_add(1, std::memory_order_relaxed);
    cs.ticks[CaptureStats::UnwindWalk].fetch_add(status.walk_ticks, std::memory_order_relaxed);
    cs.ticks[CaptureStats::UnwindLookup].fetch_add(status.lookup_ticks, std::memory_order_relaxed);
    cs.walks.fetch_add(1, std::memory_order_relaxed);
    if (status.cache_reset) cs.walks_after_reset.fetch_add(1, std::memory_order_relaxed);
    cs.lazy_frames.fetch_add(status.lazy_rows, std::memory_order_relaxed);
    cs.cache_misses.fetch_add(status.cache_misses, std::memory_order_relaxed);
    cs.shared_hits.fetch_add(status.shared_hits, std::memory_order_relaxed);
    cs.fp_frames.fetch_add(status.fp_frames, std::memory_order_relaxed);
    cs.reused_frames.fetch_add(status.reused, std::memory_order_relaxed);
  }
  if (status.needs_fallback() || fallback_always_) {
    // An object on this stack has no rows yet (they are being built) or was loaded after the
    // snapshot: this once, the slow and complete unwinder.
    uint64_t k = fallbacks_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (!(k & (k - 1)))
      debug("launch stack from backtrace(), %llu so far (the walk ended: %s)", static_cast<unsigned long long>(k),
            status.end == unwind::WalkEnd::NotReady ? "rows being built"
            : status.end == unwind::WalkEnd::Stale  ? "object loaded after the snapshot"
                                                    : "not on the thread's stack");
    void* bt[kMaxNative];
    const uint64_t b0 = CaptureStats::on() ? CaptureStats::now() : 0;
    n = backtrace_ ? backtrace_(bt, std::min(max, kMaxNative)) : backtrace(bt, std::min(max, kMaxNative));
    for (int i = 0; i < n; i++) frames[i] = reinterpret_cast<uint64_t>(bt[i]);
    unwind::ObjectTable::instance().request_builds_for(frames, n);
    // From capture()'s return address, as a walk's: what lies before it is this function's frame,
    // capture_walk's and capture()'s, and one or more of backtrace()'s. Not simply a fixed count: a
    // backtrace() interposed by a wrapper (ASan's and TSan's interceptors) adds its frame, and under
    // TSan each fallback stack had one frame more than the walks' of its path
    // (StackCapture.EveryLaunchIsUnwoundAndGetsItsOwnPathsStack failed 2 runs in 10). (backtrace()
    // stops at code without CFI, where the walk goes on by frame pointers: stacks through such code
    // still differ while rows are being built.)
    first = 1;
    for (int i = 0; i < n && i < kMaxLeafWrappers + 4; i++)
      if (frames[i] == ra) {
        first = i;
        break;
      }
    if (CaptureStats::on()) {
      CaptureStats& cs = CaptureStats::instance();
      cs.add(CaptureStats::UnwindFallback, b0, CaptureStats::now());
      cs.fallbacks.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // Then drop the leaf frames of aiflame, CUPTI and the driver: the launch is the first one after them.
  while (first < n) {
    uint64_t a = frames[first];
    bool skip = false;
    for (const auto& [lo, hi] : skip_) skip |= a >= lo && a < hi;
    if (!skip) break;
    first++;
  }
  int k = 0;
  for (int i = first; i < n; i++) out[k++] = frames[i];
  return k;
}

// Under mu_ (intern_shared).
void StackCapture::name_python(const RawPyFrame* frames, int n, PyFrame* out) {
  PhaseScope phase(Phase::PythonNames);
  names_.name_all(python_, frames, n, out, [&](const RawPyFrame& g) {
    std::string file, function;
    uint32_t line = 0;
    python_.describe(g, &file, &function, &line);
    return PyFrame{strings_.intern(file), strings_.intern(function), line};
  });
}

// A stack new to this thread: the process-wide table (under the mutex) keeps one id per content.
uint32_t StackCapture::intern_shared(const uint64_t* content, size_t len, uint64_t h, int nn, const RawPyFrame* py,
                                     int np) {
  const bool stats = CaptureStats::on();
  uint64_t t0 = stats ? CaptureStats::now() : 0;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t t1 = stats ? CaptureStats::now() : 0;
  if (stats) CaptureStats::instance().add(CaptureStats::InternLock, t0, t1);
  auto& bucket = stack_ids_[h];
  for (uint32_t id : bucket) {
    const auto& c = stack_content_[id - 1];
    if (c.size() == len && std::equal(c.begin(), c.end(), content)) return id;
  }
  uint32_t id = next_stack_id_++;
  // Named here, while the frames' code objects are alive (this thread runs them); the record is
  // copied into this thread's buffer and encoded by the next flush (ProfileWriter::add_buffered_stack).
  union Names {
    PyFrame at[kMaxPython];
    Names() {}
  } names;
  name_python(py, np, names.at);
  uint64_t t2 = stats ? CaptureStats::now() : 0;
  writer_.add_buffered_stack(id, content + 1, nn, names.at, np);
  if (stats) {
    CaptureStats& cs = CaptureStats::instance();
    cs.add(CaptureStats::InternNames, t1, t2);
    cs.add(CaptureStats::InternWrite, t2, CaptureStats::now());
    cs.process_new.fetch_add(1, std::memory_order_relaxed);
  }
  bucket.push_back(id);
  stack_content_.emplace_back(content, content + len);
  return id;
}

// The id of the stack whose native frames are content[1..nn] and whose Python frames are py: the
// content completed in place (counts, Python words), then this thread's table, else the shared one.
uint32_t StackCapture::stack_id_of(uint64_t* w, int nn, const RawPyFrame* py, int np, bool* thread_new,
                                   uint64_t* t_looked_up, uint32_t* content_at) {
  w[0] = static_cast<uint64_t>(nn);
  size_t len = 1 + static_cast<size_t>(nn);
  w[len++] = static_cast<uint64_t>(np);
  len += put_python(w + len, py, np);
  uint64_t h = hash_words(w, len);
  if (content_at) *content_at = kNoContent;
  if (t_stacks_gone) {
    if (t_looked_up) *t_looked_up = CaptureStats::now();
    *thread_new = false;
    return intern_shared(w, len, h, nn, py, np);
  }
  LocalStacks& local = t_stacks;
  if (local.owner != serial_) {
    local.reset(serial_);
    // The memos' content offsets are into the arena just emptied: none of them is a donor any more
    // (another StackCapture used this thread's table of contents since; tests make several).
    if (MemoTable* t = thread_memo(); t && t->owner == serial_) forget_donors(*t);
  }
  uint64_t at = 0;
  uint32_t id = local.find(h, w, len, &at);
  if (t_looked_up) *t_looked_up = CaptureStats::now();
  *thread_new = !id;
  if (!id) {
    id = intern_shared(w, len, h, nn, py, np);
    at = local.arena.size();
    local.insert(h, w, len, id);
  }
  if (content_at && at < kNoContent) *content_at = static_cast<uint32_t>(at);
  return id;
}

AIFLAME_HOT bool StackCapture::prefetch() {
  // The Python frames' lines load in parallel, then the likely memo's while the Python frames are
  // walked; what a walk reads (the previous walk's stack lines, record and cache sets) if the thread's
  // last launch walked (the next likely does as well), else only once this launch turns out to have
  // no memo.
  if (use_python_) python_.prefetch();
  if (policy_ == UnwindPolicy::Off) return false;
  unwind::prefetch_for_check();
  const MemoTable* mt = thread_memo();
  const bool walk = !mt || mt->walked;
  if (walk) unwind::prefetch_for_walk();
  if (!mt || mt->owner != serial_ || !mt->last) return walk;
  const MemoEntry* last = mt->last;
  // The likely next entry: the one that followed the last launches' (MemoTable::after), else the one
  // that followed the last launch's (MemoTable::last).
  uint32_t lines = 0;
  const int p = history_ > 0 ? predicted_index(*mt, &lines) : -1;
  if (const MemoEntry* nx = p >= 0 ? &mt->e[p] : last->next) {
    const char* at = reinterpret_cast<const char*>(nx);
    for (uint32_t l = 0, n = std::min<uint32_t>(p >= 0 ? lines : last->next_lines, 16); l < n; l++)
      __builtin_prefetch(at + 64 * l);
    __builtin_prefetch(&mt->sets[static_cast<size_t>(nx - mt->e) / kMemoWays]);
  }
  return walk;
}

// AIFLAME_LAB=capture_probe=1: every stack line the likely next memo's check reads, loaded twice, each round
// timed (the memo's own lines loaded first, untimed). The lines lie on this thread's stack (a memo of
// this thread's table, read by a walk on it), which stays mapped while the thread lives. The first
// round meets them as the capture would, the second just after they were loaded.
__attribute__((no_sanitize("address"))) void StackCapture::probe_lines() {
  const MemoTable* mt = thread_memo();
  if (!mt || mt->owner != serial_ || !mt->last || !mt->last->next) return;
  const unwind::WalkMemo& m = mt->last->next->walk;
  uint16_t lines[unwind::WalkMemo::kMaxWords];
  const int n = memo_lines(m, lines);
  if (!n) return;
  const uint64_t base = m.sp & ~uint64_t{63};
  auto round = [&] {
    unsigned aux;
    _mm_lfence();
    const uint64_t t0 = __rdtsc();
    _mm_lfence();
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) sum += *reinterpret_cast<const volatile uint64_t*>(base + 64 * uint64_t{lines[i]});
    const uint64_t t1 = __rdtscp(&aux);
    _mm_lfence();
    asm volatile("" ::"r"(sum));
    return t1 - t0;
  };
  const uint64_t cold = round(), hot = round();
  uint64_t pages = 0, page = ~uint64_t{0};
  for (int i = 0; i < n; i++) {
    const uint64_t p = (base + 64 * uint64_t{lines[i]}) >> 12;
    pages += p != page;
    page = p;
  }
  probe_.launches.fetch_add(1, std::memory_order_relaxed);
  probe_.lines.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  probe_.pages.fetch_add(pages, std::memory_order_relaxed);
  probe_.cold_ticks.fetch_add(cold, std::memory_order_relaxed);
  probe_.hot_ticks.fetch_add(hot, std::memory_order_relaxed);
}

void StackCapture::probe_python() {
  if (!use_python_) return;
  union Frames {
    RawPyFrame at[kMaxPython];
    Frames() {}
  } frames;
  const int n = python_.capture(frames.at, kMaxPython);
  asm volatile("" ::"r"(n), "r"(&frames) : "memory");
}

AIFLAME_HOT StackCapture::Result StackCapture::capture(uint64_t site, bool predict, uint64_t key_salt, bool py_in_place,
                                                   bool fast) {
  // Every memo check and walk of this launch starts from this instruction's state (unwind::unwind_from;
  // its CFI row describes it exactly, as unwind_here's), whichever function below this frame checks or
  // walks: the launch from its predicted memo is checked here, and anything else goes on in
  // capture_walk, another frame, whose walks write memos that this check reads.
  unwind::Regs start;
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(start.pc), "=r"(start.sp), "=r"(start.fp));
  const uint64_t ra = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  if (probe_lines_) [[unlikely]]
    probe_lines();
  // Left uninitialised: clearing 256 frames (4 KB) was a quarter of the cost of a cached launch.
  union Frames {
    RawPyFrame at[kMaxPython];
    Frames() {}
  } frames;
  RawPyFrame* py = frames.at;
  int np = 0;
  const bool tables = prefetch();  // a walk's tables fetched (the thread's last launch walked)
  const bool stats = CaptureStats::on();
  // The Python frames' fingerprint (PythonFrames::fingerprint; 0: none), and with it the memo that
  // likely follows the thread's previous launch's (MemoTable::last), or that launch's own, checked
  // before any walk: nearly every launch of a training loop takes one of the two (1.03-1.07 memos
  // checked per launch from a memo on the H100). Here in as few instructions as
  // it takes, since a launch runs them with the caches and the branch predictors cold (the program ran
  // between two launches); everything else (the Python walk, the key's sets searched, walks, the
  // measurements) after it, and in capture_walk.
  uint64_t py_fast = 0;
  if (policy_ != UnwindPolicy::Off && py_in_place) {
    uint64_t f = 1;  // no Python frames read: one fingerprint for every launch
    if (!use_python_ || python_.fingerprint(&f)) py_fast = mix(f, (memo_key_site_ ? site : 0) ^ key_salt) | 1;
  }
  if (py_fast && fast_ && fast && !stats && predict) {
    if (MemoTable* const table = thread_memo(); table && table->owner == serial_ && table->last) {
      // The entry that followed the last launches' entries last time, the one that followed the last
      // launch's, and the last launch's own (MemoTable::after, MemoEntry::next, MemoTable::last).
      // Then, if none of them holds, the entry last found or written for this launch's fingerprint at its
      // depth (MemoTable::by_context).
      MemoEntry* const last = table->last;
      const int p = history_ > 0 ? predicted_index(*table) : -1;
      MemoEntry* cands[4] = {p >= 0 ? &table->e[p] : nullptr, last->next, last, nullptr};
      for (int k = 0; k < 4; k++) {
        if (k == 3 && context_)
          if (const uint16_t c = table->by_context[context_slot(py_fast, start.sp)]) cands[3] = &table->e[c - 1];
        MemoEntry* const e = cands[k];
        if (!e || e->py_fast != py_fast || std::find(cands, cands + k, e) != cands + k ||
            !unwind::memo_holds_here(e->walk, start, kMaxNative))
          continue;
        take_memo(*table, e, static_cast<int>(e - table->e));
        table->fast_holds++;
        if (verify_memos_) [[unlikely]] {
          if (use_python_) np = python_.capture(py, kMaxPython);
          verify_memo(start, ra, py, np, e->id, true);
        }
        return {e->id, true, false, true};
      }
    }
  }
  uint64_t t0 = stats ? CaptureStats::now() : 0;
  // The Python frames' hash (the memo entry's check), computed by the walk as it reads them.
  uint64_t py_hash = 0;
  if (use_python_) {
    PhaseScope phase(Phase::PythonWalk);
    np = python_.capture(py, kMaxPython, &py_hash, py_in_place);
  } else {
    py_hash = PythonFrames::hash(py, 0);
  }
  const uint64_t t1 = stats ? CaptureStats::now() : 0;
  // Without a fingerprint (the Python state not read in place yet, a stack deeper than the fingerprint
  // reads), the predicted memo by its key.
  int checked = -1;  // the predicted entry, checked here and failed
  if (!py_fast && fast_ && fast && !stats && predict && np <= kMemoPython) {
    if (MemoTable* const table = thread_memo(); table && table->owner == serial_) {
      const uint64_t key = memo_key(py_hash, (memo_key_site_ ? site : 0) ^ key_salt, start.sp);
      if (const int i = predicted_entry(*table, key, np, py_hash, history_ > 0); i >= 0) {
        const MemoEntry* e = &table->e[i];
        if (unwind::memo_holds_here(e->walk, start, kMaxNative)) {
          take_memo(*table, &table->e[i], i);
          if (verify_memos_) [[unlikely]]
            verify_memo(start, ra, py, np, e->id);
          return {e->id, true};
        }
        checked = i;
      }
    }
  }
  const Result r = capture_walk(start, ra, py, np, py_hash, py_fast, tables, t0, t1, site, predict, key_salt, checked);
  // Not a tail call: capture_walk's walks read this frame, from start.sp up.
  asm volatile("" ::"r"(&frames) : "memory");
  return r;
}

uint64_t StackCapture::thread_fast_holds() const {
  const MemoTable* t = thread_memo();
  return t && t->owner == serial_ ? t->fast_holds : 0;
}

// AIFLAME_LAB=verify_memos: the launch that took stack `held` from its memo walked again in full, every
// frame, and the two stacks compared.
void StackCapture::verify_memo(const unwind::Regs& start, uint64_t ra, const RawPyFrame* py, int np, uint32_t held,
                               bool by_fingerprint) {
  if (by_fingerprint) memo_fast_.fetch_add(1, std::memory_order_relaxed);
  union Content {
    uint64_t words[kMaxContent];
    Content() {}
  } content;
  uint64_t* w = content.words;
  const int nn = unwind(start, ra, w + 1, kMaxNative, nullptr, 0, nullptr, /*full=*/true);
  bool thread_new = false;
  const uint32_t id = nn < 0 ? 0 : stack_id_of(w, nn, py, np, &thread_new, nullptr);
  memo_checked_.fetch_add(1, std::memory_order_relaxed);
  if (id != held && memo_differed_.fetch_add(1, std::memory_order_relaxed) < 8)
    debug("memo check: a launch took stack %u from its memo, a full walk gives stack %u", held, id);
}

// The rest of a capture (StackCapture::capture): the memo predicted checked unless `checked` is it,
// the key's other memos, a walk into a slot of the key's sets when none holds, and the measurements.
StackCapture::Result StackCapture::capture_walk(const unwind::Regs& start, uint64_t ra, const RawPyFrame* py, int np,
                                                uint64_t py_hash, uint64_t py_fast, bool tables, uint64_t t0, uint64_t t1,
                                                uint64_t site, bool predict, uint64_t key_salt, int checked) {
  const bool stats = CaptureStats::on();
  union Content {
    uint64_t words[kMaxContent];
    Content() {}
  } content;
  // The memos of this call path, if the thread has any (up to kMemosPerKey: several native paths may
  // share a key, as one kernel launched from one Python line at one depth through several C++ paths;
  // each checked inside the walk's frame, the one that held last in its set first), and the entry
  // this launch's walk will be the memo of otherwise.
  MemoEntry* found_memo[kMemosPerKey] = {};
  int found[kMemosPerKey], n_found = 0;  // entries' indices in the table
  MemoEntry* slot = nullptr;
  int slot_i = -1;               // its index
  uint64_t* slot_key = nullptr;  // slot's key in its set
  size_t cand[2] = {};           // the key's two sets
  uint64_t key = 0;
  uint64_t k[2] = {};  // the key's words besides the Python frames: site and salt, depth
  uint64_t py_check = 0;
  const bool memos = policy_ != UnwindPolicy::Off && incremental_ && np <= kMemoPython;
  if (!memos && policy_ != UnwindPolicy::Off && !tables) unwind::prefetch_for_walk();
  MemoTable* table = nullptr;
  // The entry that followed the thread's previous launch's last time (MemoTable::last), if it is one of
  // this key's: checked alone first, before the key's set is searched and a slot for a walk chosen. A
  // training step launches from its paths in the same order every step: on the H100 1.03-1.07 memos
  // were checked per launch from a memo with this entry first among the key's.
  int predicted = -1;  // its index in the table
  if (memos) {
    table = &memo_table(serial_, history_);
    k[0] = (memo_key_site_ ? site : 0) ^ key_salt;
    k[1] = start.sp;  // the launch's depth on its stack
    // One pass over the Python frames: the entry's check, and the key from it, the site and the depth.
    py_check = py_hash;
    key = memo_key(py_check, k[0], k[1]);
    cand[0] = key >> (64 - kMemoSetBits);
    cand[1] = (key >> (64 - 2 * kMemoSetBits)) & ((size_t{1} << kMemoSetBits) - 1);
    if (cand[1] == cand[0]) cand[1] ^= 1;
    if (checked >= 0)
      predicted = checked;  // checked by capture(): not again
    else if (predict)
      predicted = predicted_entry(*table, key, np, py_check, history_ > 0);
  }
  // The memos of this call path (up to kMemosPerKey: several native paths may share a key, as one
  // kernel launched from one Python line at one depth through several C++ paths; each checked inside
  // the walk's frame, the predicted one first, then the one that held last in its set), and the entry
  // this launch's walk will be the memo of otherwise. Not needed when the predicted memo holds.
  bool slot_is_found = false, slot_direct = false, predicted_failed = false, searched = false;
  unwind::WalkMemo* record = nullptr;
  auto choose = [&] {
    constexpr int per_key = kMemosPerKey;
    searched = true;
    n_found = 0;
    for (int c = 0; c < 2 && n_found < per_key; c++) {
      const MemoSet& set = table->sets[cand[c]];
      for (int j = 0; j < kMemoWays && n_found < per_key; j++) {
        const int w = (set.last_held + j) % kMemoWays;  // the way that held last first
        const int i = static_cast<int>(cand[c] * kMemoWays) + w;
        if (set.key[w] == key && table->e[i].np == np && table->e[i].py_check == py_check) found[n_found++] = i;
      }
    }
    // The predicted memo, checked alone and failed: last, not checked again (it is the walk's slot
    // unless another of the key's is older).
    predicted_failed = false;
    for (int i = 0; i < n_found && predicted >= 0; i++)
      if (found[i] == predicted) {
        std::rotate(found + i, found + i + 1, found + n_found);
        predicted_failed = true;
        break;
      }
    for (int i = 0; i < n_found; i++) {
      found_memo[i] = &table->e[found[i]];
      const unwind::WalkMemo& m = found_memo[i]->walk;
      for (const char* l = reinterpret_cast<const char*>(&m); l < reinterpret_cast<const char*>(m.offset + m.words); l += 64)
        __builtin_prefetch(l);
    }
    if (!n_found && !tables) unwind::prefetch_for_walk();  // a walk follows
    // The thread's memo uses since entry i last held or was written.
    auto age = [&](int i) {
      const MemoSet& set = table->sets[static_cast<size_t>(i) / kMemoWays];
      return table->clock - set.used[i % kMemoWays];
    };
    // Replaced if no memo holds: with per_key memos of this key, the least recently used (or the last
    // checked: the predicted one was checked first); else an empty way of the emptier of the two sets,
    // else the least recently used of their eight ways (possibly one of this key's memos).
    slot_i = n_found == per_key ? found[n_found - (predicted_failed && n_found > 1 ? 2 : 1)] : -1;
    if (slot_i >= 0 && memo_evict_lru_)
      for (int i = 0; i < n_found; i++)
        if (age(found[i]) > age(slot_i)) slot_i = found[i];
    if (slot_i < 0) {
      int empty[2] = {-1, -1}, n_empty[2] = {0, 0};
      for (int c = 0; c < 2; c++)
        for (int w = kMemoWays - 1; w >= 0; w--)
          if (!table->sets[cand[c]].key[w]) empty[c] = static_cast<int>(cand[c] * kMemoWays) + w, n_empty[c]++;
      slot_i = n_empty[1] > n_empty[0] ? empty[1] : empty[0];
    }
    if (slot_i < 0) {
      slot_i = static_cast<int>(cand[0] * kMemoWays);
      for (int c = 0; c < 2; c++)
        for (int w = 0; w < kMemoWays; w++)
          if (const int i = static_cast<int>(cand[c] * kMemoWays) + w; age(i) > age(slot_i)) slot_i = i;
    }
    slot = &table->e[slot_i];
    slot_key = &table->sets[static_cast<size_t>(slot_i) / kMemoWays].key[slot_i % kMemoWays];
    slot_is_found = std::find(found_memo, found_memo + n_found, slot) != found_memo + n_found;
    // The walk's memo goes straight into the slot when the slot is free or one of this key's memos
    // (checked first, then overwritten, in one call); over another path's memo only once the walk is
    // done (a launch whose memo holds must not cost that path its memo), through the thread's scratch.
    slot_direct = !*slot_key || slot_is_found;
    record = slot_direct ? &slot->walk : &t_scratch_memo();
  };
  if (memos && predicted < 0) choose();
  uint32_t found_id[kMemosPerKey];  // before the walk replaces one
  // The content of the stack, as interned: native frame count, frames, Python frame count, frames.
  uint64_t* w = content.words;
  int nn = 0;
  MemoEntry* held = nullptr;
  int held_i = -1, checks_made = 0;  // the stats: memos checked until one held
  uint32_t checking = 0;  // AIFLAME_LAB=verify_memos: the stack id of a memo that held, walked again in full
  bool donated = false;   // the native frames and memo of another key's walk that held (take_donor)
  if (policy_ != UnwindPolicy::Off) {
    const unwind::WalkMemo* checks[kMemosPerKey];
    const unwind::WalkMemo* const* check_list = checks;
    int n_checks = 0;
    bool check_only = false;
    auto arm = [&] {  // the key's memos, then a walk into the record
      for (int i = 0; i < n_found; i++) found_id[i] = found_memo[i]->id;
      if (slot_direct) *slot_key = 0;  // until the slot holds this launch's walk
      for (int i = 0; i < n_found; i++) checks[i] = &found_memo[i]->walk;
      n_checks = n_found - (predicted_failed ? 1 : 0);
      check_only = false;
    };
    if (predicted >= 0 && checked >= 0) {  // the predicted memo failed in capture()
      checks_made = 1;
      choose();
      arm();
    } else if (predicted >= 0) {
      checks[0] = &table->e[predicted].walk;
      n_checks = 1;
      check_only = true;
    } else {
      arm();
    }
    for (;;) {
      // With donors, the key's memos are checked alone first (a walk does not follow in the same call),
      // then another key's walk that this one would repeat, if any, before a walk.
      nn = unwind::kNoMemoHeld;
      if (!check_only && n_checks && memos && donors_) {
        nn = unwind(start, ra, w + 1, kMaxNative, check_list, n_checks, record, false, /*check_only=*/true);
        if (nn == unwind::kNoMemoHeld) n_checks = 0;
      }
      if (!check_only && !n_checks && memos && donors_ && !t_stacks_gone && t_stacks.owner == serial_) {
        uint64_t checked = 0;
        const int d = take_donor(*table, t_stacks, start, site ^ key_salt, w, record, &checked);
        if (checked) donor_checks_.fetch_add(checked, std::memory_order_relaxed);
        if (d >= 0) {
          donated_.fetch_add(1, std::memory_order_relaxed);
          nn = d;
          donated = true;
          break;
        }
      }
      if (nn == unwind::kNoMemoHeld) nn = unwind(start, ra, w + 1, kMaxNative, check_list, n_checks, record, false, check_only);
      if (check_only) {  // the predicted memo alone
        checks_made = 1;
        if (nn == unwind::kMemoHeld) {
          held_i = predicted;
        } else {
          choose();
          arm();
          continue;
        }
      } else if (nn <= unwind::kMemoHeld && nn > unwind::kMemoHeld - n_found) {
        held_i = found[unwind::kMemoHeld - nn];
        checks_made += unwind::kMemoHeld - nn + 1;
      }
      if (held_i >= 0) {
        held = &table->e[held_i];
        held->py_fast = py_fast;  // this launch's frames: the same code at the same instructions, if not the same shim frames
        mark_held(*table, held_i);
        if (context_) note_context(*table, py_fast, start.sp, held_i);
      }
      if (held && verify_memos_) checking = held->id;
      break;
    }
  }
  if (held && slot_is_found) *slot_key = key;  // not walked: the slot keeps its memo
  if (table) {
    // Before the verification's return below: with AIFLAME_LAB=verify_memos the table learns the order of
    // the paths as without it (it returned first, so a launch after one verified here was never predicted).
    table->walked = !held;
    if (held) follow(*table, held, held_i);
  }
  if (checking) {
    verify_memo(start, ra, py, np, checking);
    if (stats) {  // counted as the launch from its memo that it is (the check's walk included in its time)
      CaptureStats& cs = CaptureStats::instance();
      add_walk_stats(cs, t0, t1, CaptureStats::now(), held->nn, np);
      cs.memo_held.fetch_add(1, std::memory_order_relaxed);
    }
    return {checking, true};
  }
  if (held) {
    if (stats) {
      CaptureStats& cs = CaptureStats::instance();
      add_walk_stats(cs, t0, t1, CaptureStats::now(), held->nn, np);
      cs.memo_held.fetch_add(1, std::memory_order_relaxed);
      cs.memo_checks.fetch_add(static_cast<uint64_t>(checks_made), std::memory_order_relaxed);
      if (searched) cs.memo_slow.fetch_add(1, std::memory_order_relaxed);
    }
    return {held->id, true};
  }
  uint64_t t2 = stats ? CaptureStats::now() : 0;
  bool thread_new = false;
  uint64_t t3 = 0;
  uint32_t content_at = kNoContent;
  uint32_t id = stack_id_of(w, nn, py, np, &thread_new, stats ? &t3 : nullptr, &content_at);
  if (slot && !slot_direct && record->words) {  // another path's memo replaced, now that the walk is done
    *slot_key = 0;
    std::memcpy(static_cast<void*>(&slot->walk), record, sizeof *record);
  }
  if (slot && slot->walk.words) {
    slot->id = id;
    slot->nn = nn;
    slot->np = np;
    slot->py_check = py_check;
    slot->py_fast = py_fast;
    slot->next = nullptr;
    slot->content_at = content_at;
    *slot_key = key;
    MemoSet& set = table->sets[static_cast<size_t>(slot_i) / kMemoWays];
    set.used[slot_i % kMemoWays] = ++table->clock;
    follow(*table, slot, slot_i);
    note_donor(*table, slot_i, site ^ key_salt, start.sp);
    if (context_) note_context(*table, py_fast, start.sp, slot_i);
  } else if (table) {
    forget_last(*table);
  }
  if (donated && verify_memos_) [[unlikely]]
    verify_memo(start, ra, py, np, id);
  if (stats) {
    CaptureStats& cs = CaptureStats::instance();
    add_walk_stats(cs, t0, t1, t2, nn, np);
    cs.add(CaptureStats::UnwindWalked, t1, t2);
    if (donated) cs.donated.fetch_add(1, std::memory_order_relaxed);
    if (memos) (n_found ? cs.memo_failed : cs.memo_missing).fetch_add(1, std::memory_order_relaxed);
    if (std::find(found_id, found_id + n_found, id) != found_id + n_found)
      cs.memo_failed_same.fetch_add(1, std::memory_order_relaxed);
    if (memos && !n_found && debug_enabled())
      diagnose_key(id, {k[0], k[1], py_check, np});
    cs.add(CaptureStats::Hash, t2, t3);
    cs.add(CaptureStats::Intern, t3, CaptureStats::now());
    if (thread_new) cs.thread_new.fetch_add(1, std::memory_order_relaxed);
  }
  return {id, policy_ != UnwindPolicy::Off, policy_ != UnwindPolicy::Off};
}

}  // namespace aiflame
