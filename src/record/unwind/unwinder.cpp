#include "record/unwind/unwinder.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <algorithm>
#include <memory>

#include "record/unwind/object_table.h"

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
constexpr int kPrefetch = 128;  // frames of the previous walk whose lines the next capture prefetches
struct PcCache {
  uint32_t generation = 0;
  // What the previous walk on this thread read: the cache set and the stack line of each frame. The
  // next launch mostly climbs the same outer frames through the same lines; with caches cold, the
  // walk is a chain of dependent misses (stack word -> pc -> set -> rule -> stack word). Prefetched
  // together at the start of the capture (prefetch_walk), the chain then hits.
  uint16_t prev_n = 0;
  uint16_t prev_set[kPrefetch];
  uint64_t prev_line[kPrefetch];
  CacheSet sets[1u << kSetBits];
};
thread_local std::unique_ptr<PcCache> t_cache;

PcCache* cache_for(uint32_t generation) {
  PcCache* c = t_cache.get();
  if (!c) t_cache.reset(c = new PcCache());
  if (c->generation != generation) {
    for (auto& set : c->sets)
      for (auto& e : set.e) e.pc = 0;
    c->generation = generation;
  }
  return c;
}

inline unsigned set_of(uint64_t pc) { return static_cast<unsigned>((pc * 0x9e3779b97f4a7c15ULL) >> (64 - kSetBits)); }

// Reads one word of the stack being walked: its own frames and its callers', which AddressSanitizer
// would report as stack overflows. The caller bounds the address to this thread's stack.
__attribute__((no_sanitize("address"))) inline uint64_t stack_word(uint64_t at) {
  return *reinterpret_cast<const volatile uint64_t*>(at);
}

using FindObject = int (*)(void*, dl_find_object*);
// glibc 2.35's lock-free _dl_find_object, looked up at run time (the library must load on older ones).
FindObject find_object_fn() {
  static FindObject f = reinterpret_cast<FindObject>(dlsym(RTLD_DEFAULT, "_dl_find_object"));
  return f;
}

// An address in an object that the loader knows and the snapshot does not: one loaded since the
// snapshot was taken. (An address in a known object's data is not: that is a bad frame.)
bool stale_object(const Snapshot& snap, uint64_t pc) {
  FindObject f = find_object_fn();
  uint64_t bias;
  if (dl_find_object r; f) {
    if (f(reinterpret_cast<void*>(pc), &r) != 0 || !r.dlfo_link_map) return false;
    bias = r.dlfo_link_map->l_addr;
  } else {
    Dl_info info;
    link_map* map = nullptr;
    if (!dladdr1(reinterpret_cast<void*>(pc), &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) || !map) return false;
    bias = map->l_addr;
  }
  for (const auto& o : snap.objects)
    if (o->bias == bias) return false;
  return true;
}

}  // namespace

namespace {
struct StackBounds {
  uint64_t lo = 0, hi = 0;
};
StackBounds thread_stack() {
  thread_local StackBounds bounds = [] {
    StackBounds b;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        b.lo = reinterpret_cast<uint64_t>(addr);
        b.hi = b.lo + size;
      }
      pthread_attr_destroy(&attr);
    }
    return b;
  }();
  return bounds;
}
}  // namespace

uint64_t thread_stack_top() { return thread_stack().hi; }

int walk(const Regs& start, uint64_t stack_hi, uint64_t* out, int max, WalkStatus* status) {
  ObjectTable& table = ObjectTable::instance();
  const Snapshot* snap = table.snapshot();
  PcCache* cache = cache_for(snap->generation);
  WalkStatus st;
  uint64_t pc = start.pc, sp = start.sp, fp = start.fp;
  bool exact = true;  // pc is the instruction itself (first frame, after a signal frame), not a return address
  int n = 0;
  auto readable = [&](uint64_t at) { return at >= sp && at <= stack_hi - 8 && !(at & 7); };
  for (;;) {
    int32_t cfa_rule, fp_off;
    uint64_t key = exact ? pc | (uint64_t{1} << 63) : pc;  // user addresses never have the top bit
    const unsigned set_index = set_of(key);
    CacheSet& set = cache->sets[set_index];
    int way = 0;
    while (way < kWays && set.e[way].pc != key) way++;
    if (way < kWays) {
      cfa_rule = set.e[way].cfa;
      fp_off = set.e[way].fp_off;
    } else {
      st.cache_misses++;
      const TextRange* r = snap->find(pc - (exact ? 0 : 1));
      if (!r) {
        // Not a return address into loaded code: the last frame was not one (it is dropped).
        st.end = stale_object(*snap, pc) ? WalkEnd::Stale : WalkEnd::BadFrame;
        if (st.end == WalkEnd::Stale) table.request_refresh();
        if (n) n--;
        break;
      }
      Object* o = r->object;
      const std::vector<FrameRow>* rows = o->rows.load(std::memory_order_acquire);
      if (!rows) {
        if (!o->hdr_addr) {
          cfa_rule = kCfaNoInfo;  // no CFI at all: frame pointers
          fp_off = kFpSame;
        } else {
          table.request_build(o);
          st.end = WalkEnd::NotReady;
          break;
        }
      } else {
        uint64_t loc = pc - (exact ? 0 : 1) - o->bias;
        const FrameRow* row = loc <= UINT32_MAX ? find_row_paged(rows->data(), rows->size(), o->pages->data(),
                                                                 o->pages->size(), static_cast<uint32_t>(loc))
                                                : nullptr;
        cfa_rule = row ? row->cfa : kCfaNoInfo;
        fp_off = row ? row->fp_off : kFpSame;
      }
      // The newest entry first; the oldest of the set goes.
      for (int w = kWays - 1; w > 0; w--) set.e[w] = set.e[w - 1];
      set.e[0] = CacheEntry{key, cfa_rule, fp_off};
    }
    if (n < kPrefetch) cache->prev_set[n] = static_cast<uint16_t>(set_index);

    // One step: the caller's pc, sp and fp.
    uint64_t cfa, next_pc, next_fp = fp;
    bool next_exact = false;
    int32_t off = cfa_rule >> 8;
    switch (static_cast<CfaRule>(cfa_rule & 0xff)) {
      case kCfaSp: cfa = sp + static_cast<int64_t>(off); break;
      case kCfaFp: cfa = fp + static_cast<int64_t>(off); break;
      case kCfaDerefFp:
        if (!readable(fp + static_cast<int64_t>(off))) goto bad;
        cfa = stack_word(fp + static_cast<int64_t>(off));
        break;
      case kCfaPlt: cfa = sp + 8 + ((pc & 15) >= static_cast<uint64_t>(off) ? 8 : 0); break;
      case kCfaSignal: {
        // glibc's __restore_rt: the kernel's ucontext_t is at sp; its mcontext's rbp, rsp and rip.
        constexpr uint64_t kRbp = 120, kRsp = 160, kRip = 168;
        if (!readable(sp + kRip)) goto bad;
        next_fp = stack_word(sp + kRbp);
        cfa = stack_word(sp + kRsp);
        next_pc = stack_word(sp + kRip);
        next_exact = true;
        goto stepped;
      }
      case kCfaEnd: st.end = WalkEnd::Outermost; goto done;
      default:  // no information here, or a rule not modelled: the frame pointer chain
        if (!readable(fp) || !readable(fp + 8)) goto bad;
        cfa = fp + 16;
        fp_off = -16;
        st.fp_frames++;
        break;
    }
    if (!readable(cfa - 8)) goto bad;
    next_pc = stack_word(cfa - 8);
    if (fp_off != kFpSame) {
      if (!readable(cfa + static_cast<int64_t>(fp_off))) goto bad;
      next_fp = stack_word(cfa + static_cast<int64_t>(fp_off));
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
    if (n < kPrefetch) cache->prev_line[n] = cfa - 8;  // the line of the return address just read
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
  // The sets of the n + 1 lookups (the last one's stack line is an older walk's: a wasted prefetch).
  cache->prev_n = static_cast<uint16_t>(std::min(n + 1, kPrefetch));
  *status = st;
  return n;
}

void prefetch_walk() {
  const PcCache* c = t_cache.get();
  if (!c) return;
  // Prefetches never fault: a stale line of a stack or a set is only a wasted load.
  for (int i = 0; i < c->prev_n; i++) {
    __builtin_prefetch(&c->sets[c->prev_set[i]]);
    __builtin_prefetch(reinterpret_cast<const void*>(c->prev_line[i]));
  }
}

__attribute__((noinline)) int unwind_here(uint64_t* out, int max, WalkStatus* status) {
  Regs r;
  // pc, sp and fp of one instruction of this function: its CFI row describes exactly this state.
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(r.pc), "=r"(r.sp), "=r"(r.fp));
  // Reads are bounded to [sp, top of the thread's stack): only if sp is on that stack is all of it
  // mapped. On another stack (a signal's alternate stack, a coroutine's) or without known bounds,
  // the caller takes the slow path.
  StackBounds b = thread_stack();
  if (!b.hi || r.sp < b.lo || r.sp >= b.hi) {
    status->end = WalkEnd::OffStack;
    return 0;
  }
  return walk(r, b.hi, out, max, status);
}

}  // namespace aiflame::unwind
