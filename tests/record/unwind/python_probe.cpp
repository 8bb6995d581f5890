// Loaded by python_unwind_test.py into a real CPython: compares the native walk with libunwind's
// from inside the interpreter (its eval loop, ctypes, libffi, and libc's qsort calling back into
// Python). Returns the number of frames when both agree, -1 (after printing both) when not, -2 when
// the walk had to fall back.
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "record/unwind/object_table.h"
#include "record/unwind/unwinder.h"
#include "util/loaded_objects.h"

namespace {

__attribute__((noinline)) void reference(std::vector<uint64_t>* out) {
  unw_context_t ctx;
  unw_cursor_t cur;
  unw_getcontext(&ctx);
  unw_init_local(&cur, &ctx);
  if (unw_step(&cur) <= 0) return;
  while (out->size() < 512) {
    unw_word_t ip = 0;
    unw_get_reg(&cur, UNW_REG_IP, &ip);
    if (!ip) break;
    out->push_back(ip);
    if (unw_step(&cur) <= 0) break;
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"), noinline)) int aiflame_unwind_compare() {
  using namespace aiflame::unwind;
  ObjectTable::instance().build_all_now();
  std::vector<uint64_t> ref;
  reference(&ref);
  uint64_t frames[512];
  WalkStatus st;
  int n = unwind_here(frames, 512, &st);
  if (st.needs_fallback()) return -2;
  std::vector<uint64_t> ours(frames + (n ? 1 : 0), frames + n);
  if (!ref.empty()) ref.erase(ref.begin());
  if (ours == ref) return static_cast<int>(ours.size());
  std::fprintf(stderr, "ours (%zu):", ours.size());
  for (uint64_t a : ours) std::fprintf(stderr, " %lx", static_cast<unsigned long>(a));
  std::fprintf(stderr, "\nref  (%zu):", ref.size());
  for (uint64_t a : ref) std::fprintf(stderr, " %lx", static_cast<unsigned long>(a));
  std::fprintf(stderr, "\n");
  return -1;
}

// In a library that CPython loaded with dlopen, as the injection library is: aiflame's module id found,
// so that iterate_loaded_objects can bring a thread's DTV up to date (util/loaded_objects.h).
extern "C" __attribute__((visibility("default"))) int aiflame_tls_refresh() {
  return aiflame::refresh_thread_tls_generation() ? 1 : 0;
}
