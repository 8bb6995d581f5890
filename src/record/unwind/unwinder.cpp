#include "record/unwind/unwinder.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "record/unwind/object_table.h"
#include "record/unwind/shared_rows.h"
#include "record/unwind/thread_stack.h"
#include "util/hot_pages.h"
#include "util/loaded_objects.h"
#include "util/hot_path.h"
#include "util/tls_offsets.h"

namespace aiflame::unwind {
namespace {

// A per-thread cache: return address -> the row of its caller's frame, for one snapshot generation.
// A training loop launches from a few hundred call paths, so nearly every frame of a steady-state
// walk is a hit here instead of two binary searches. 4-way set associative, a set per 64-byte line:
// a lookup costs the one line a direct-mapped slot did (issue 22: the direct-mapped 2,048 entries
// still missed 0.8-2.2 times per launch on the H100's training loops, each a binary search through
// cold rows).
struct CacheEntry {
  uint64_t pc;
  int32_t cfa;
  int32_t fp_off;
};
constexpr unsigned kSetBits = 10;  // 1,024 sets x 4 ways: 64 KiB per thread that walks
constexpr int kWays = 4;
struct alignas(64) CacheSet {
  CacheEntry e[kWays];
};
// Incremental unwinding (issue 22). Consecutive launches of a training loop share most of their
// stack: the interpreter, main, the training step... On the H100 those 34-47 frames cost 0.9-1.5 us a
// walk with caches cold, each frame a chain of dependent misses (stack word -> pc -> cache set -> rule
// -> stack word). So each thread keeps the states of its previous walk; when the walk reaches a state
// of that record, the frames above it are checked instead of walked.
//
// Why the reuse gives exactly the frames of a full walk. The walk's state is (pc, exact, sp, rbp); a
// step looks up the row of (pc, exact), which is fixed within a snapshot generation (the per-thread
// state is reset when it changes), computes the CFA from the row and sp, or rbp for the rules that
// use it (rbp plus an offset, a dereference of rbp, the frame pointer chain), reads the return address
// at CFA - 8 and, where the row says rbp was saved, the caller's rbp, and bounds every read by sp and
// the stack's top (the record is kept for one stack top). The record holds, per state, pc, exact, sp,
// the row looked up, and rbp. When the walk reaches a state whose pc and exact equal a recorded
// state's, with the same sp (or, at the first state, any sp: then everything below is shifted by
// d = sp - recorded sp), the full walk would look up the recorded row (same pc, same generation),
// and, if the row does not use rbp or the actual rbp equals the recorded one (+ d), compute a CFA
// from the recorded sp or rbp (+ d): same_step() computes it and requires it to be the next recorded
// sp (+ d), then re-reads the words the step reads (the return address, a dereferenced CFA, a signal
// frame's rsp and rip, at the recorded addresses + d, bounded by the stack's top as walk() bounds
// them) and requires the values of the next recorded state (pc; sp + d). If they match, the full
// walk's next pc and sp are the recorded ones (+ d), its bounds checks pass as they passed then (the
// same offsets from sp; the top is checked again when shifted), and the caller's rbp, where the row
// says it was saved, is read as the walk reads it, so the actual rbp is always known; by induction
// the walk goes through the recorded states. The first step that reads another word (a different
// caller at the same depth) or whose row uses an rbp that differs (another caller's frame pointer) is
// walked normally from its state, which is the walk's true state; its row is the recorded one (same
// pc), so even that lookup is saved. The one thing taken on trust is that each recorded row is the
// row of its recorded pc, which holds as the record is written from the walk's own lookups.
// Matching on rbp too would be sound but miss: code without frame pointers keeps any value in rbp,
// saved by the first callee that uses it. Matching on pc alone (below the first state) would waste
// checks: the same return address at another depth has other slots. Other callee-saved registers play
// no part: the walk tracks only pc, sp and rbp (rows with rules on other registers are walked by frame
// pointer: state as above). Every word re-read lies in [sp of the matched state, stack top): inside
// the current stack, since the matched state is on the current walk and stack pointers only grow
// (except an interrupted frame's saved rbp in its red zone, which the walk reads too: bounded by the
// walk's start, as there).
// The record then becomes this walk's (reused runs moved to their new index, shifted by d; a reused
// state's rbp is the actual one wherever its row uses rbp, since it was checked equal).
struct WalkState {
  uint64_t key;  // pc, with bit 63 set when exact (the instruction itself, not a return address)
  uint64_t sp, fp;
  int32_t cfa;     // the row's CFA rule as looked up; kRuleUnknown where the walk ended before a lookup
  int32_t fp_off;  // the row's rbp rule as looked up
};
constexpr int32_t kRuleUnknown = 0;  // no CfaRule has a low byte of 0
constexpr uint64_t kExactBit = uint64_t{1} << 63;  // user addresses never have the top bit
constexpr int kRecord = 260;  // states kept: a walk of up to 259 frames (StackCapture asks for 256)
constexpr int kMaxRuns = 16;  // runs of reused states per walk (the driver's, the framework's, the interpreter's...)

struct PcCache {
  uint32_t generation = 0;
  // The previous walk on this thread, top down: rec[0] is its last state (the outermost frame),
  // rec[rec_n - 1] its first. Top down, the frames that two walks share keep their indices when only
  // the leaf part differs, so a reuse moves nothing. rec_n = 0: none (or for another generation).
  uint32_t rec_n = 0;
  uint64_t rec_looked_up[(kRecord + 63) / 64] = {};  // by record index: rows looked up, not reused (sets prefetched)
  uint64_t rec_hi = 0;         // the stack top it was bounded by
  WalkState rec[kRecord];
  WalkState fresh[kRecord];  // the current walk's states by index from the leaf (scratch)
  CacheSet sets[1u << kSetBits];
};
thread_local PcCache* t_cache = nullptr;  // in the thread's hot pages, never freed (util/hot_pages.h)

PcCache* cache_for(uint32_t generation, bool* reset = nullptr) {
  PcCache* c = t_cache;
  if (!c) c = hot_new(t_cache);
  if (c->generation != generation) {
    // Generations start at 1: 0 is a new thread's cache, hot_alloc's zeros, not written (its 64 KiB
    // of sets would be page faults at the thread's first launch).
    if (c->generation) {
      if (reset) *reset = true;
      for (auto& set : c->sets)
        for (auto& e : set.e) e.pc = 0;
    }
    c->rec_n = 0;
    c->generation = generation;
  }
  return c;
}

inline unsigned set_of(uint64_t pc) { return static_cast<unsigned>((pc * 0x9e3779b97f4a7c15ULL) >> (64 - kSetBits)); }

// Reads one word of the stack being walked: its own frames and its callers', which AddressSanitizer
// would report as stack overflows. The caller bounds the address to this thread's stack.
// A plain load, not a volatile one: GCC 12 made each volatile read a lea and a mov, where a plain one
// folds the address into the load (one instruction less per word of a memo check: issue 22, where the
// GPU host ran the warm capture at 0.6-0.8 us per launch, its instruction count the cost).
__attribute__((no_sanitize("address"))) inline uint64_t stack_word(uint64_t at) {
  uint64_t v;
  __builtin_memcpy(&v, reinterpret_cast<const void*>(at), sizeof v);
  return v;
}

// One step of the previous walk checked instead of walked: from recorded state s (whose pc the walk
// is at, d bytes above s.sp, with rbp = *fp, the actual value, which may differ from s.fp) to the
// recorded next state nx. True if walk()'s step for s's row lands at nx's pc and sp (+ d), reading the
// words it read then (at their addresses + d, the values that point into the stack + d); *fp is then
// the actual rbp at nx. The words' addresses come from the record, so the checks of consecutive steps
// do not wait for each other's loads. The CFA as walk() computes it is compared with nx.sp too (the
// record's invariant says they are equal; checked all the same, it costs no load), so only the
// recorded rows are taken on trust. Shifted (d != 0: the same frames at another depth, the launch
// path's leaf frames under a deeper or shallower caller), each word is bounded by the stack's top as
// walk() bounds it; the shift keeps it above sp and 8-aligned (d is a multiple of 8).
template <bool kShifted, class Log>
inline bool same_step(const WalkState& s, const WalkState& nx, uint64_t* fp, uint64_t d, uint64_t stack_hi, uint64_t lowest,
                      Log& log) {
  auto shifted = [&](uint64_t at) { return kShifted ? at + d : at; };
  auto in = [&](uint64_t at) { return !kShifted || at + d <= stack_hi - 8; };
  auto word = [&](uint64_t at) { return log.word(shifted(at)); };
  auto fp_word = [&](uint64_t at) { return log.fp_word(shifted(at)); };
  if (kShifted && nx.sp + d > stack_hi) return false;
  const uint64_t off = static_cast<uint64_t>(static_cast<int64_t>(s.cfa >> 8));
  switch (static_cast<CfaRule>(s.cfa & 0xff)) {
    case kCfaSp:
      if (nx.sp != s.sp + off) return false;
      break;
    case kCfaPlt:
      if (nx.sp != s.sp + 8 + ((s.key & 15) >= off ? 8 : 0)) return false;
      break;
    case kCfaFp:  // rbp plus an offset: the recorded rbp's if the actual one is the same
      log.use_fp();
      if (*fp != s.fp + d || nx.sp != s.fp + off) return false;
      break;
    case kCfaDerefFp:
      log.use_fp();
      if (*fp != s.fp + d || !in(s.fp + off) || word(s.fp + off) != nx.sp + d) return false;
      break;
    case kCfaSignal:  // the ucontext_t's rsp, rip and rbp (walk()'s offsets)
      if (!in(s.sp + 168) || word(s.sp + 160) != nx.sp + d || word(s.sp + 168) != (nx.key & ~kExactBit)) return false;
      *fp = fp_word(s.sp + 120);
      return true;
    case kCfaEnd:
      return false;  // the outermost frame has no next state
    default:  // the frame pointer chain: the caller's rbp at rbp, the return address above it
      log.use_fp();
      if (*fp != s.fp + d || nx.sp != s.fp + 16 || !in(s.fp + 8) || word(s.fp + 8) != nx.key) return false;
      *fp = fp_word(s.fp);
      return true;
  }
  if (!in(nx.sp - 8) || word(nx.sp - 8) != nx.key) return false;
  if (s.fp_off == kFpAtFp) {  // saved at the frame's rbp: the recorded one's if the actual one is the same
    log.use_fp();
    if (*fp != s.fp + d || !in(s.fp)) return false;
    *fp = fp_word(s.fp);
  } else if (s.fp_off != kFpSame) {
    const uint64_t at = nx.sp + static_cast<uint64_t>(static_cast<int64_t>(s.fp_off));
    // The one read that may lie below s.sp (an interrupted frame's red zone: walk_impl's saved_readable),
    // so bounded by this walk's start as the walk bounds it.
    if (!in(at) || shifted(at) < lowest) return false;
    *fp = fp_word(at);
  }
  return true;
}

// The stack words a walk reads, through one of these: NoLog reads them; MemoLog also writes them to
// a WalkMemo. A saved rbp that the walk loads (fp_word) counts only once a rule uses it (use_fp):
// code without frame pointers keeps any value in rbp (a loop counter, a pointer), which its callees
// save, and the walk loads each such slot though only frame-pointer and rbp-based rules read rbp; a
// value loaded and replaced unused changes nothing the walk does (memos of the capture benchmark held
// on 0% of launches with every loaded rbp logged: its loop's counter was in one).
struct NoLog {
  static uint64_t word(uint64_t at) { return stack_word(at); }
  static uint64_t fp_word(uint64_t at) { return stack_word(at); }
  static void use_fp() {}
};
// The memo fingerprint: the words in their order, dealt to four lanes (word i to lane i mod 4), each
// lane a polynomial in an odd multiplier (lane = lane * K + word), the lanes summed with odd weights.
// One differing word changes its lane by (difference) * K^m and the sum by that times an odd weight:
// never 0 mod 2^64 (odd numbers are invertible), so a single moved word is always seen. Several
// differing words cancel with a chance of about 2^-(64 - t), t the trailing zero bits of the
// differences, as with the per-position keys before. Four lanes keep four multiply-adds in flight,
// with no table of keys to load: the keys' 13 lines were cold at most launches. The development
// machine's warm memo check went from 0.23 to 0.21 us per launch; on the H200 the loops' native part
// did not move beyond the runs' spread.
struct Fingerprint {
  static constexpr uint64_t kK[4] = {0x9e3779b97f4a7c15ULL, 0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL,
                                     0xd6e8feb86659fd93ULL};
  static constexpr uint64_t kWeight[4] = {1, 0xc2b2ae3d27d4eb4fULL, 0x165667b19e3779f9ULL, 0x27d4eb2f165667c5ULL};
  uint64_t lane[4] = {};
  void add(int i, uint64_t v) { lane[i & 3] = lane[i & 3] * kK[i & 3] + v; }
  uint64_t value() const {
    return lane[0] * kWeight[0] + lane[1] * kWeight[1] + lane[2] * kWeight[2] + lane[3] * kWeight[3];
  }
};
static_assert((Fingerprint::kK[0] & Fingerprint::kK[1] & Fingerprint::kK[2] & Fingerprint::kK[3] & 1) &&
                  (Fingerprint::kWeight[0] & Fingerprint::kWeight[1] & Fingerprint::kWeight[2] & Fingerprint::kWeight[3] & 1),
              "odd multipliers and weights: one differing word always changes the fingerprint");

struct MemoLog {
  WalkMemo* m;
  int n = 0;
  bool fp_start = true;    // rbp still holds the starting register's value
  bool fp_logged = false;  // rbp's value was loaded from fp_at and is logged (or is the start's)
  bool unfit = false;      // a word misaligned or beyond 65,535 words of sp: no memo
  uint64_t fp_at = 0, fp_value = 0;
  Fingerprint fingerprint;
  void add(uint64_t at, uint64_t v) {
    if (n < WalkMemo::kMaxWords) {
      const uint64_t off = at - m->sp;  // reads lie in [sp, top): at >= sp
      if ((off & 7) || (off >> 3) > UINT16_MAX) unfit = true;
      m->offset[n] = static_cast<uint16_t>(off >> 3);
      fingerprint.add(n, v);
    }
    n++;
  }
  uint64_t word(uint64_t at) {
    const uint64_t v = stack_word(at);
    add(at, v);
    return v;
  }
  uint64_t fp_word(uint64_t at) {
    fp_value = stack_word(at);
    fp_at = at;
    fp_start = false;
    fp_logged = false;
    return fp_value;
  }
  void use_fp() {
    if (fp_start) {
      m->fp_used = true;
    } else if (!fp_logged) {
      add(fp_at, fp_value);
      fp_logged = true;
    }
  }
};

// glibc 2.35's lock-free _dl_find_object (what libgcc's unwinder asks at every frame), looked up when
// the library is loaded, so that the library still loads on older ones (RHEL 9's 2.34), and not at a
// launch: dlsym takes the loader's lock, which a launch inside the driver's callback must not wait for
// (a thread in dlopen may be waiting for the driver).
using FindObject = int (*)(void*, dl_find_object*);
const FindObject g_find_object = reinterpret_cast<FindObject>(dlsym(RTLD_DEFAULT, "_dl_find_object"));

// An address in an object that the loader knows and the snapshot does not: one loaded since the
// snapshot was taken. (An address in a known object's data is not: that is a bad frame.)
// Without _dl_find_object (glibc < 2.35), through dl_iterate_phdr: its lock a dlopen holds only while
// it edits the list of objects, where dladdr1's (used here before) it holds throughout, constructors
// included.
bool stale_object(const Snapshot& snap, uint64_t pc) {
  uint64_t bias;
  if (dl_find_object r; g_find_object) {
    if (g_find_object(reinterpret_cast<void*>(pc), &r) != 0 || !r.dlfo_link_map) return false;
    bias = r.dlfo_link_map->l_addr;
  } else if (!executable_object_bias(pc, &bias)) {
    return false;
  }
  for (const auto& o : snap.objects)
    if (o->bias == bias) return false;
  return true;
}

}  // namespace

namespace {
// Found at the thread's first walk. One constant-initialised thread-local (a function's thread_local
// initialised by a call also has a guard: two TLS descriptor calls a launch, util/hot_path.h).
struct ThreadStack {
  StackBounds bounds;
  bool found = false;
};
thread_local constinit ThreadStack t_stack;
AIFLAME_TLS_ENROLL(tls::kStack, t_stack);
StackBounds thread_stack() {
  ThreadStack& t = *AIFLAME_TLS(tls::kStack, t_stack);
  if (!t.found) [[unlikely]] {
    t.bounds = find_thread_stack();
    t.found = true;
  }
  return t.bounds;
}
}  // namespace

uint64_t thread_stack_top() { return thread_stack().hi; }

namespace {
// The row of `pc` in object `o`, whose rows are being built, from its own FDE (find_cfi_row): while
// the builder works on an object (cuDNN's engines, loaded at a training loop's first convolution), a
// launch through it read the FDEs of its frames in place instead of falling back to glibc's backtrace()
// (~120 us on the H200). The object must be the one the loader
// has at pc now (_dl_find_object, lock-free: what libgcc's unwinder asks at every frame before it reads
// .eh_frame the same way), so that a stale snapshot never leads the walk into unmapped memory.
bool lazy_row(const Object& o, uint64_t pc, FrameRow* row) {
  const FindObject find = g_find_object;
  if (!o.eh_size || !find) return false;
  dl_find_object found;
  if (find(reinterpret_cast<void*>(pc), &found) != 0 || !found.dlfo_link_map ||
      found.dlfo_link_map->l_addr != o.bias || reinterpret_cast<uint64_t>(found.dlfo_eh_frame) != o.hdr_addr)
    return false;
  const uint64_t loc = pc - o.bias;
  if (loc > UINT32_MAX) return false;
  const MemView mem{reinterpret_cast<const uint8_t*>(o.eh_lo), o.eh_lo, o.eh_size};
  return find_cfi_row(mem, o.hdr_addr, o.bias, static_cast<uint32_t>(loc), row);
}

template <class Log>
int walk_impl(const Regs& start, uint64_t stack_hi, uint64_t* out, int max, WalkStatus* status, bool incremental, Log& log) {
  ObjectTable& table = ObjectTable::instance();
  const Snapshot* snap = table.snapshot();
  WalkStatus st;
  const bool timed = status->explain_memo;  // the capture stats: the lookups timed
  PcCache* cache = cache_for(snap->generation, &st.cache_reset);
  WalkState* const rec = cache->rec;
  WalkState* const fresh = cache->fresh;
  max = std::min(max, kRecord - 1);  // every state fits the record
  uint64_t pc = start.pc, sp = start.sp, fp = start.fp;
  bool exact = true;  // pc is the instruction itself (first frame, after a signal frame), not a return address
  int n = 0;
  // The recorded state to compare with (its sp the lowest not below the walk's): -1 when there is no
  // record for this stack.
  int cand = incremental && cache->rec_n && cache->rec_hi == stack_hi ? static_cast<int>(cache->rec_n) - 1 : -1;
  // Runs of reused states: the leaf index and record index of each run's first state, its length,
  // and its shift (the first run's states may lie at another depth: d = actual sp - recorded sp).
  struct Run {
    int from, top, len;
    uint64_t d;
  } runs[kMaxRuns];
  int nruns = 0;
  auto readable = [&](uint64_t at) { return at >= sp && at <= stack_hi - 8 && !(at & 7); };
  // A saved register's slot below an interrupted frame's sp: at the `ret` after `pop %rbp` GCC's CFI
  // still says the caller's rbp is at CFA - 16, now 8 bytes below sp, in the red zone (the 128 bytes
  // below sp that the ABI lets a function use and that the kernel's signal frame skips), and the value
  // there is the one just popped. Only an exact pc (a signal's interrupted instruction) can be in an
  // epilogue; a return address is a call site, whose saved slots lie above its sp. Never below the
  // walk's own start: [start.sp, top) is the thread's live stack. (CI, 2026-12-04: one asynchronous
  // signal of 300 landed on such a `ret` and the walk ended there; libunwind reads the slot.)
  const uint64_t lowest = start.sp;
  auto saved_readable = [&](uint64_t at) {
    return readable(at) || (exact && at < sp && at + 128 >= sp && at >= lowest && !(at & 7));
  };
  for (;;) {
    int32_t cfa_rule = kRuleUnknown, fp_off = kFpSame;
    uint64_t key = exact ? pc | kExactBit : pc;
    if (cand >= 0) {
      // A state of the previous walk: at the start, the recorded first state at any depth (the
      // launch path's leaf frames are the same at every launch, at the depth of its caller); later,
      // a recorded state at the same sp. Its rbp may differ.
      uint64_t d = 0;
      bool met = false;
      if (n == 0 && cand == static_cast<int>(cache->rec_n) - 1 && rec[cand].key == key && !((sp - rec[cand].sp) & 7)) {
        d = sp - rec[cand].sp;
        met = true;
      } else {
        while (cand >= 0 && rec[cand].sp < sp) cand--;  // stack pointers grow along both walks
        met = cand >= 0 && rec[cand].sp == sp && rec[cand].key == key;
      }
      if (met && nruns < kMaxRuns) {
        // Its steps are checked, not walked, for as long as they read what they read then
        // (same_step; the argument is above PcCache), and no further than max.
        int t = cand;
        const int room = max - n;
        while (t > 0 && cand - t < room &&
               (d ? same_step<true>(rec[t], rec[t - 1], &fp, d, stack_hi, lowest, log)
                 : same_step<false>(rec[t], rec[t - 1], &fp, 0, 0, lowest, log))) {
          const int rule = rec[t].cfa & 0xff;
          st.fp_frames += rule != kCfaSp && rule != kCfaFp && rule != kCfaDerefFp && rule != kCfaPlt && rule != kCfaSignal;
          t--;
        }
        if (cand > t) runs[nruns++] = Run{n, cand, cand - t, d};
        for (int u = cand - 1; u >= t; u--) out[n++] = rec[u].key & ~kExactBit;
        st.reused = static_cast<uint16_t>(st.reused + cand - t);
        // Walked on from rec[t] (the last state, or the first whose step differs) with the actual rbp,
        // and the recorded row.
        key = rec[t].key;
        pc = key & ~kExactBit;
        exact = key & kExactBit;
        sp = rec[t].sp + d;
        cfa_rule = rec[t].cfa;
        fp_off = rec[t].fp_off;
        // A later state may meet the record again (the frames above a middle part that differs),
        // beyond this run (runs stay disjoint and in order).
        cand = t - 1;
      }
    }
    if (cfa_rule == kRuleUnknown) {
      fresh[n] = WalkState{key, sp, fp, kRuleUnknown, kFpSame};  // if the walk ends at this lookup
      const unsigned set_index = set_of(key);
      CacheSet& set = cache->sets[set_index];
      int way = 0;
      while (way < kWays && set.e[way].pc != key) way++;
      if (way < kWays) {
        cfa_rule = set.e[way].cfa;
        fp_off = set.e[way].fp_off;
      } else {
        st.cache_misses++;
        const uint64_t l0 = timed ? __rdtsc() : 0;
        if (shared_row_find(key, snap->generation, &cfa_rule, &fp_off)) {
          st.shared_hits++;  // another thread looked it up (shared_rows.h)
        } else {
          const uint64_t at = pc - (exact ? 0 : 1);  // inside the call instruction, for a return address
          const TextRange* r = snap->find(at);
          if (!r) {
            // Not a return address into loaded code: the last frame was not one (it is dropped).
            st.end = stale_object(*snap, pc) ? WalkEnd::Stale : WalkEnd::BadFrame;
            if (st.end == WalkEnd::Stale) table.request_refresh();
            if (n) n--;  // its state, with its row, is the last one recorded
            break;
          }
          Object* o = r->object;
          const std::vector<FrameRow>* rows = o->rows.load(std::memory_order_acquire);
          FrameRow lazy;
          if (!rows) {
            if (!o->hdr_addr) {
              cfa_rule = kCfaNoInfo;  // no CFI at all: frame pointers
              fp_off = kFpSame;
            } else if (table.request_build(o); lazy_row(*o, at, &lazy)) {
              cfa_rule = lazy.cfa;
              fp_off = lazy.fp_off;
              st.lazy_rows++;
            } else {
              st.end = WalkEnd::NotReady;
              break;
            }
          } else {
            uint64_t loc = at - o->bias;
            const FrameRow* row = loc <= UINT32_MAX ? find_row_paged(rows->data(), rows->size(), o->pages->data(),
                                                                     o->pages->size(), static_cast<uint32_t>(loc))
                                                    : nullptr;
            cfa_rule = row ? row->cfa : kCfaNoInfo;
            fp_off = row ? row->fp_off : kFpSame;
          }
          shared_row_add(key, snap->generation, cfa_rule, fp_off);
        }
        if (timed) st.lookup_ticks += __rdtsc() - l0;
        // The newest entry first; the oldest of the set goes.
        for (int w = kWays - 1; w > 0; w--) set.e[w] = set.e[w - 1];
        set.e[0] = CacheEntry{key, cfa_rule, fp_off};
      }
    }
    fresh[n] = WalkState{key, sp, fp, cfa_rule, fp_off};

    // One step: the caller's pc, sp and fp.
    uint64_t cfa, next_pc, next_fp = fp;
    bool next_exact = false;
    int32_t off = cfa_rule >> 8;
    switch (static_cast<CfaRule>(cfa_rule & 0xff)) {
      case kCfaSp: cfa = sp + static_cast<int64_t>(off); break;
      case kCfaFp:
        log.use_fp();
        cfa = fp + static_cast<int64_t>(off);
        break;
      case kCfaDerefFp:
        log.use_fp();
        if (!readable(fp + static_cast<int64_t>(off))) goto bad;
        cfa = log.word(fp + static_cast<int64_t>(off));
        break;
      case kCfaPlt: cfa = sp + 8 + ((pc & 15) >= static_cast<uint64_t>(off) ? 8 : 0); break;
      case kCfaSignal: {
        // glibc's __restore_rt: the kernel's ucontext_t is at sp; its mcontext's rbp, rsp and rip.
        constexpr uint64_t kRbp = 120, kRsp = 160, kRip = 168;
        if (!readable(sp + kRip)) goto bad;
        next_fp = log.fp_word(sp + kRbp);
        cfa = log.word(sp + kRsp);
        next_pc = log.word(sp + kRip);
        next_exact = true;
        goto stepped;
      }
      case kCfaEnd: st.end = WalkEnd::Outermost; goto done;
      default:  // no information here, or a rule not modelled: the frame pointer chain
        log.use_fp();
        if (!readable(fp) || !readable(fp + 8)) goto bad;
        cfa = fp + 16;
        st.fp_frames++;
        next_pc = log.word(cfa - 8);
        next_fp = log.fp_word(fp);
        goto stepped;
    }
    if (!readable(cfa - 8)) goto bad;
    next_pc = log.word(cfa - 8);
    if (fp_off == kFpAtFp) {
      log.use_fp();
      if (!readable(fp)) goto bad;
      next_fp = log.fp_word(fp);
    } else if (fp_off != kFpSame) {
      if (!saved_readable(cfa + static_cast<int64_t>(fp_off))) goto bad;
      next_fp = log.fp_word(cfa + static_cast<int64_t>(fp_off));
    }
  stepped:
    if (cfa <= sp || cfa > stack_hi) goto bad;  // the stack pointer must grow, within the stack
    if (next_pc == 0) {
      st.end = WalkEnd::Outermost;
      goto done;
    }
    if (n == max) {
      st.end = WalkEnd::Limit;
      goto done;
    }
    out[n++] = next_pc;
    pc = next_pc;
    sp = cfa;
    fp = next_fp;
    exact = next_exact;
    continue;
  bad:
    st.end = WalkEnd::BadFrame;
    goto done;
  }
done:
  // This walk's n + 1 states become the record, top down: the reused runs, moved where the depth of
  // the parts between them changed, and the states walked anew from `fresh`.
  if (!incremental) {
    // The record stays that of the last incremental walk.
  } else if (n + 1 > kRecord) {
    cache->rec_n = 0;
  } else {
    // A run moves by shift = its new index - its old one. Runs are disjoint and keep their order, so
    // moving up (shift > 0) the highest run first and then down the lowest first never overwrites a
    // run not yet moved: a run moving up ends below the next higher run's new place, below its old
    // one; likewise down.
    auto move = [&](const Run& r) {
      const int shift = (n - r.from) - r.top;
      if (shift) std::memmove(&rec[r.top - r.len + 1 + shift], &rec[r.top - r.len + 1], sizeof(WalkState) * static_cast<size_t>(r.len));
    };
    for (int i = 0; i < nruns; i++)  // runs[0] is the deepest: the highest record indices
      if ((n - runs[i].from) - runs[i].top > 0) move(runs[i]);
    for (int i = nruns - 1; i >= 0; i--)
      if ((n - runs[i].from) - runs[i].top < 0) move(runs[i]);
    for (int i = 0; i < nruns; i++)  // a shifted run's states as this walk met them
      if (runs[i].d)
        for (int u = n - runs[i].from; u > n - runs[i].from - runs[i].len; u--) {
          rec[u].sp += runs[i].d;
          rec[u].fp += runs[i].d;  // the actual rbp wherever a row uses it (checked equal)
        }
    std::memset(cache->rec_looked_up, 0, sizeof cache->rec_looked_up);
    for (int i = 0, r = 0; i <= n; i++) {
      if (r < nruns && i == runs[r].from) i += runs[r++].len;
      if (i > n) break;
      rec[n - i] = fresh[i];
      cache->rec_looked_up[(n - i) / 64] |= uint64_t{1} << ((n - i) % 64);
    }
    cache->rec_n = static_cast<uint32_t>(n + 1);
    cache->rec_hi = stack_hi;
  }
  st.reuse_runs = static_cast<uint8_t>(nruns);
  *status = st;
  return n;
}
}  // namespace

int walk(const Regs& start, uint64_t stack_hi, uint64_t* out, int max, WalkStatus* status, bool incremental, WalkMemo* memo) {
  if (!memo) {
    NoLog log;
    return walk_impl(start, stack_hi, out, max, status, incremental, log);
  }
  memo->words = 0;
  memo->fp_used = false;
  memo->sp = start.sp;  // the base of the logged offsets
  MemoLog log{memo};
  const int n = walk_impl(start, stack_hi, out, max, status, incremental, log);
  if ((status->end == WalkEnd::Outermost || status->end == WalkEnd::Limit) && !status->lazy_rows && log.n > 0 && log.n <= WalkMemo::kMaxWords &&
      max >= 0 && max <= UINT16_MAX) {
    memo->pc = start.pc;
    memo->sp = start.sp;
    memo->fp = start.fp;
    memo->hi = stack_hi;
    memo->generation = ObjectTable::instance().snapshot()->generation;
    memo->max = static_cast<uint16_t>(max);
    memo->fingerprint = log.fingerprint.value();
    uint16_t highest = 0;
    for (int i = 0; i < log.n; i++) highest = std::max(highest, memo->offset[i]);
    memo->highest = highest;
    if (!log.unfit && !(start.sp & 7)) memo->words = static_cast<uint16_t>(log.n);
  }
  return n;
}

// memo_holds and memo_miss: one check, inlined into both (memo_holds is on the launch path).
__attribute__((always_inline)) inline MemoMiss check_memo(const WalkMemo& m, const Regs& start, uint64_t stack_hi,
                                                          int max) {
  if (!m.words) return MemoMiss::Empty;
  if (m.pc != start.pc || m.hi != stack_hi || m.max != max) return MemoMiss::Start;
  if (m.sp != start.sp) return MemoMiss::Sp;
  if (m.fp_used && m.fp != start.fp) return MemoMiss::Fp;
  if (m.generation != g_published_generation.value.load(std::memory_order_acquire)) return MemoMiss::Generation;
  // Every address on the current stack before any load (offsets from sp, so at or above it; the
  // memo's walk bounded them to the same [sp, top), so this only guards against a memo of another
  // stack); then one load and one multiply-add per word, no load waiting for another.
  if (stack_hi < 8 || start.sp + 8 * uint64_t{m.highest} > stack_hi - 8) return MemoMiss::Bounds;
  Fingerprint f;
  const int n = m.words, n4 = n & ~3;
  auto at = [&](int i) { return stack_word(start.sp + 8 * uint64_t{m.offset[i]}); };
  for (int i = 0; i < n4; i += 4) {
    f.lane[0] = f.lane[0] * Fingerprint::kK[0] + at(i);
    f.lane[1] = f.lane[1] * Fingerprint::kK[1] + at(i + 1);
    f.lane[2] = f.lane[2] * Fingerprint::kK[2] + at(i + 2);
    f.lane[3] = f.lane[3] * Fingerprint::kK[3] + at(i + 3);
  }
  for (int i = n4; i < n; i++) f.add(i, at(i));
  return f.value() == m.fingerprint ? MemoMiss::Held : MemoMiss::Words;
}

AIFLAME_HOT bool memo_holds(const WalkMemo& m, const Regs& start, uint64_t stack_hi, int max) {
  return check_memo(m, start, stack_hi, max) == MemoMiss::Held;
}

MemoMiss memo_miss(const WalkMemo& m, const Regs& start, uint64_t stack_hi, int max) {
  return check_memo(m, start, stack_hi, max);
}

AIFLAME_HOT void prefetch_for_check() { __builtin_prefetch(&g_published_generation); }

void prefetch_for_walk() {
  const PcCache* c = t_cache;
  if (!c) return;
  // Prefetches never fault: a stale line of a stack or a set is only a wasted load. The stack lines of
  // the previous walk's return addresses (read from the record's 40-byte states: ~40 cold lines), the
  // record's lines (the words the reuse compares) and the cache sets of the frames that the previous
  // walk looked up (the next walk likely looks them up again).
  // Not at every capture's start: with 99.6-99.9% of a training loop's launches taking their memo,
  // prefetching the stack lines there cost the cold benchmarks more than it saved.
  const int n = static_cast<int>(c->rec_n);
  for (int t = 0; t < n; t++) __builtin_prefetch(reinterpret_cast<const void*>(c->rec[t].sp - 8));
  for (int t = 0; t < n; t += 2) __builtin_prefetch(&c->rec[t]);
  for (int t = 0; t < n; t++)
    if (c->rec_looked_up[t / 64] >> (t % 64) & 1) __builtin_prefetch(&c->sets[set_of(c->rec[t].key)]);
}

void forget_walk() {
  if (PcCache* c = t_cache) c->rec_n = 0;
}

// unwind_here and unwind_from: inlined into both (unwind_here's state must stay live while it walks,
// so it is not a call from unwind_here that the compiler could make a tail call).
__attribute__((always_inline)) inline int unwind_impl(const Regs& r, uint64_t* out, int max, WalkStatus* status,
                                                      bool incremental, const WalkMemo* const* checks, int n_checks,
                                                      WalkMemo* memo, bool check_only) {
  // Reads are bounded to [sp, top of the thread's stack): only if sp is on that stack is all of it
  // mapped. On another stack (a signal's alternate stack, a coroutine's) or without known bounds,
  // the caller takes the slow path.
  StackBounds b = thread_stack();
  if (!b.holds(r.sp)) {
    status->end = WalkEnd::OffStack;
    return 0;
  }
  n_checks = std::min(n_checks, kMaxChecks);
  for (int i = 0; i < n_checks; i++)
    if (checks[i] && memo_holds(*checks[i], r, b.hi, max)) return kMemoHeld - i;
  // The capture stats' causes (the walk writes *status whole: they are set after it).
  MemoMiss why[kMaxChecks];
  int explained = 0;
  if (status->explain_memo)
    for (int i = 0; i < n_checks; i++)
      if (checks[i]) why[explained++] = memo_miss(*checks[i], r, b.hi, max);
  int n = kNoMemoHeld;
  if (!check_only) {
    if (n_checks) prefetch_for_walk();  // not done before the checks: a memo that holds needs none of it
    const uint64_t w0 = status->explain_memo ? __rdtsc() : 0;
    n = walk(r, b.hi, out, max, status, incremental, memo);
    if (w0) status->walk_ticks = __rdtsc() - w0;
  }
  status->explained = static_cast<uint8_t>(explained);
  std::copy(why, why + explained, status->memo_miss);
  return n;
}

AIFLAME_HOT __attribute__((noinline)) int unwind_here(uint64_t* out, int max, WalkStatus* status, bool incremental,
                                         const WalkMemo* const* checks, int n_checks, WalkMemo* memo,
                                         bool check_only) {
  Regs r;
  // pc, sp and fp of one instruction of this function: its CFI row describes exactly this state.
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(r.pc), "=r"(r.sp), "=r"(r.fp));
  return unwind_impl(r, out, max, status, incremental, checks, n_checks, memo, check_only);
}

AIFLAME_HOT bool memo_holds_here(const WalkMemo& m, const Regs& start, int max) {
  const StackBounds b = thread_stack();
  return b.holds(start.sp) && memo_holds(m, start, b.hi, max);
}

AIFLAME_HOT int unwind_from(const Regs& r, uint64_t* out, int max, WalkStatus* status, bool incremental,
                            const WalkMemo* const* checks, int n_checks, WalkMemo* memo, bool check_only) {
  return unwind_impl(r, out, max, status, incremental, checks, n_checks, memo, check_only);
}

}  // namespace aiflame::unwind
