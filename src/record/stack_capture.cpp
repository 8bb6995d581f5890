#include "record/stack_capture.h"

#include "record/crash_report.h"

#include <execinfo.h>
#include <pthread.h>

#include <cstring>
#include <string>
#include <string_view>

namespace aiflame {
namespace {

constexpr int kMaxNative = 256;
constexpr int kMaxPython = 256;

uint64_t mix(uint64_t h, uint64_t v) {
  // 64-bit multiplicative mixing (splitmix64 finaliser) over a running hash.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30; h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27; h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

// One cheap step of the launch-site key per Python frame (a multiply and a rotate; two full mixes per
// frame were half the cost of a cached launch). Every step is a bijection of the running value for a
// given frame, and the rotate carries high bits back down; mix() finishes the key.
uint64_t step(uint64_t h, uint64_t code, uint32_t lasti) {
  h = (h ^ code) * 0x9e3779b97f4a7c15ULL;
  h = ((h << 31) | (h >> 33)) ^ lasti;
  return h * 0xff51afd7ed558ccdULL;
}

bool is_power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

// A per-thread xorshift generator: which launches of an unstable site get unwound must not follow
// the program's own launch pattern (A A A B ...), or the sampled mix would alias.
bool one_in(uint32_t n) {
  thread_local uint64_t s = 0x9e3779b97f4a7c15ULL ^ reinterpret_cast<uintptr_t>(&s);
  s ^= s << 13; s ^= s >> 7; s ^= s << 17;
  return n <= 1 || s % n == 0;
}

// Top (highest address) of the calling thread's stack.
uintptr_t stack_top() {
  thread_local uintptr_t top = [] {
    pthread_attr_t attr;
    uintptr_t hi = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) hi = reinterpret_cast<uintptr_t>(addr) + size;
      pthread_attr_destroy(&attr);
    }
    return hi;
  }();
  return top;
}

// Depth of the calling thread's stack in bytes: free to read, and different call paths to the same
// launch almost always sit at different depths, so it tells native launch sites apart without unwinding.
uint64_t stack_depth(uintptr_t sp) {
  uintptr_t top = stack_top();
  return top > sp ? top - sp : sp;
}

// Where the first return addresses of an unwound stack sit in stack memory, as distances from the
// stack's top (one pass upwards from sp, bounded). Two call paths at the same depth run the same
// frame layout above the launch, so reading those slots later tells the paths apart for a few loads.
// Reads one word of this thread's stack, wherever it is: the scan below and the slot reads look at
// other frames' memory on purpose, which AddressSanitizer would report as stack overflows.
__attribute__((no_sanitize("address"))) uint64_t stack_word(uintptr_t at) {
  return *reinterpret_cast<const volatile uint64_t*>(at);
}

__attribute__((no_sanitize("address")))
std::vector<uint32_t> find_return_slots(uintptr_t sp, const uint64_t* native, int nn, size_t max_slots) {
  std::vector<uint32_t> slots;
  uintptr_t top = stack_top();
  if (!top || sp >= top) return slots;
  constexpr uintptr_t kMaxScan = 64 * 1024;
  uintptr_t end = std::min(top, sp + kMaxScan);
  uintptr_t p = (sp + 7) & ~uintptr_t{7};
  for (int i = 0; i < nn && slots.size() < max_slots; i++) {
    // A frame whose return address is not found (it sits below sp, or in a register) is skipped.
    uintptr_t q = p;
    while (q + 8 <= end && stack_word(q) != native[i]) q += 8;
    if (q + 8 > end) continue;
    slots.push_back(static_cast<uint32_t>(top - q));
    p = q + 8;
  }
  return slots;
}


}  // namespace

void StackCapture::init(UnwindPolicy policy, bool python, uint32_t unstable_sample) {
  policy_ = policy;
  unstable_sample_ = unstable_sample ? unstable_sample : 1;
  use_python_ = python;
  if (python) python_.init();
}

int StackCapture::unwind(uint64_t* out, int max) const {
  PhaseScope phase(Phase::Unwind);
  void* frames[kMaxNative];
  int n = backtrace(frames, std::min(max, kMaxNative));
  int first = 0;
  // Drop the leaf frames that belong to aiflame, CUPTI and the driver: the launch is the first frame after them.
  while (first < n) {
    auto a = reinterpret_cast<uint64_t>(frames[first]);
    bool skip = false;
    for (const auto& [lo, hi] : skip_) skip |= a >= lo && a < hi;
    if (!skip) break;
    first++;
  }
  int k = 0;
  for (int i = first; i < n; i++) out[k++] = reinterpret_cast<uint64_t>(frames[i]);
  return k;
}

PyFrame StackCapture::name_python(const RawPyFrame& f) {
  PhaseScope phase(Phase::PythonNames);
  std::string file, function;
  uint32_t line = 0;
  python_.describe(f, &file, &function, &line);
  return PyFrame{strings_.intern(file), strings_.intern(function), line};
}

uint32_t StackCapture::intern_stack(const uint64_t* native, int nn, const RawPyFrame* py, int np) {
  std::vector<uint64_t> content;
  content.reserve(2 + nn + 2 * np);
  content.push_back(static_cast<uint64_t>(nn));
  content.insert(content.end(), native, native + nn);
  content.push_back(static_cast<uint64_t>(np));
  for (int i = 0; i < np; i++) {
    content.push_back(reinterpret_cast<uint64_t>(py[i].code));
    content.push_back(static_cast<uint64_t>(static_cast<uint32_t>(py[i].lasti)));
  }
  uint64_t h = 0;
  for (uint64_t v : content) h = mix(h, v);
  auto& bucket = stack_ids_[h];
  for (uint32_t id : bucket)
    if (stack_content_[id - 1] == content) return id;

  uint32_t id = next_stack_id_++;
  StackRecord rec;
  rec.id = id;
  rec.native.assign(native, native + nn);
  rec.python.reserve(static_cast<size_t>(np));
  for (int i = 0; i < np; i++) rec.python.push_back(name_python(py[i]));
  writer_.add(rec);
  bucket.push_back(id);
  stack_content_.push_back(std::move(content));
  return id;
}

StackCapture::Result StackCapture::capture(uint64_t site) {
  // Left uninitialised: clearing 256 frames (4 KB) was a quarter of the cost of a cached launch.
  union Frames {
    RawPyFrame at[kMaxPython];
    Frames() {}
  } frames;
  RawPyFrame* py = frames.at;
  int np = 0;
  if (use_python_) {
    PhaseScope phase(Phase::PythonWalk);
    np = python_.capture(py, kMaxPython);
  }
  auto sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  uint64_t key = mix(mix(0, site), stack_depth(sp));
  for (int i = 0; i < np; i++) key = step(key, reinterpret_cast<uint64_t>(py[i].code), static_cast<uint32_t>(py[i].lasti));
  key = mix(key, static_cast<uint64_t>(np));

  {
    std::lock_guard<std::mutex> lock(mu_);
    SiteEntry* e = &sites_[key];
    e->hits++;
    // A site reached by several native paths (one key, several stacks): refine its key with the
    // return addresses in the stack slots learned at its first unwind, so that each path gets an
    // entry of its own that is as cheap as a stable site.
    if (e->unstable && !e->slots.empty()) {
      uintptr_t top = stack_top();
      uint64_t refined = mix(key, 0x736c6f7473ull);  // "slots"
      for (uint32_t off : e->slots) {
        uintptr_t at = top - off;
        refined = mix(refined, at >= sp && at + 8 <= top ? stack_word(at) : 0);
      }
      key = refined;
      e = &sites_[key];
      e->refined = true;
      e->hits++;
    }
    // A refined entry that still sees several stacks is unwound at random, one launch in
    // unstable_sample_ on average (1: every launch).
    bool need = e->stack_id == 0 || policy_ == UnwindPolicy::Always ||
                (e->unstable ? one_in(unstable_sample_) : policy_ == UnwindPolicy::Sampled && is_power_of_two(e->hits));
    if (!need) return {e->stack_id, false};
  }
  uint64_t native[kMaxNative];
  int nn = policy_ == UnwindPolicy::Off ? 0 : unwind(native, kMaxNative);

  std::lock_guard<std::mutex> lock(mu_);
  uint32_t id = intern_stack(native, nn, py, np);
  SiteEntry& e = sites_[key];
  if (e.stack_id && e.stack_id != id) e.unstable = true;
  if (!e.refined && e.slots.empty() && nn) e.slots = find_return_slots(sp, native, nn, kSlots);
  e.stack_id = id;
  return {id, policy_ != UnwindPolicy::Off};
}

}  // namespace aiflame
