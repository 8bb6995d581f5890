// Issue #22: what a walk through an object whose unwind rows are not built yet costs when it reads the
// object's FDEs in place (unwind::find_cfi_row, behind _dl_find_object), against what it cost before:
// glibc's backtrace() from the same place. Prints per library three lookups of one pc in a fresh
// process (the first takes the page faults on .eh_frame_hdr and the FDE), in TSC ticks; with `walk`,
// one launch's capture through a freshly dlopen'ed zlib (rows not built) as StackCapture makes it: the
// walk, then backtrace() if the walk needs the fallback. Built against this tree, the walk reads zlib's
// FDEs in place; built with -DBEFORE_FDES_IN_PLACE against a tree before 614a6e0, it ends at zlib and
// backtrace() follows (the same program, the previous behaviour).
// Build (against a build of this tree in build/) and run:
//   g++ -std=c++20 -O2 -I src bench/probes/lazy_fde_cost.cpp build/src/libaiflame_record.a
//     build/src/libaiflame_core.a build/src/libaiflame_format.a -lz -lfmt -lpthread -o /tmp/lazy_fde_cost
//   /tmp/lazy_fde_cost lookup libz.so.1 deflateInit_
//   /tmp/lazy_fde_cost capture [DEPTH]   (DEPTH frames of this program above the callback, default 40:
//                                          a training loop's launch has ~45)
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <x86intrin.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "record/unwind/cfi_table.h"
#include "record/unwind/object_table.h"
#include "record/unwind/unwinder.h"

using namespace aiflame::unwind;

namespace {
uint64_t g_ticks = 0;
int g_frames = 0, g_lazy = 0;
bool g_fell_back = false;

void* zalloc_timed(void*, unsigned n, unsigned s) {
  static int calls = 0;
  if (calls++ == 0) {
    uint64_t out[256];
    void* bt[256];
    WalkStatus st;
    const uint64_t t0 = __rdtsc();
    g_frames = unwind_here(out, 256, &st);
    g_fell_back = st.needs_fallback();
    if (g_fell_back) g_frames = backtrace(bt, 256);
    g_ticks = __rdtsc() - t0;
#ifndef BEFORE_FDES_IN_PLACE
    g_lazy = st.lazy_rows;
#endif
  }
  return calloc(n, s);
}
void zfree(void*, void* p) { free(p); }

using Init = int (*)(z_stream*, int, const char*, int);
__attribute__((noinline)) int deep(int depth, Init init, z_stream* s) {
  int r = depth > 0 ? deep(depth - 1, init, s) : init(s, 6, ZLIB_VERSION, sizeof *s);
  asm volatile("" : "+r"(r));  // not a tail call: every level keeps its frame
  return r;
}

#ifndef BEFORE_FDES_IN_PLACE
int lookup(const char* lib, const char* sym) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  void* f = h ? dlsym(h, sym) : nullptr;
  if (!f) return std::fprintf(stderr, "no %s in %s\n", sym, lib), 1;
  ObjectTable::instance().refresh_now();
  const TextRange* r = ObjectTable::instance().snapshot()->find(reinterpret_cast<uint64_t>(f));
  if (!r || !r->object->eh_size) return std::fprintf(stderr, "%s: no .eh_frame_hdr segment\n", lib), 1;
  const Object* o = r->object;
  const uint64_t pc = reinterpret_cast<uint64_t>(f) + 16;
  for (int rep = 0; rep < 3; rep++) {
    const uint64_t t0 = __rdtsc();
    dl_find_object found;
    _dl_find_object(reinterpret_cast<void*>(pc), &found);
    const uint64_t t1 = __rdtsc();
    FrameRow row;
    const bool ok = find_cfi_row(MemView{reinterpret_cast<const uint8_t*>(o->eh_lo), o->eh_lo, o->eh_size}, o->hdr_addr,
                                 o->bias, static_cast<uint32_t>(pc - o->bias), &row);
    const uint64_t t2 = __rdtsc();
    std::printf("%s: _dl_find_object %llu ticks, find_cfi_row %llu ticks (%s)\n", lib, (unsigned long long)(t1 - t0),
                (unsigned long long)(t2 - t1), ok ? "a row" : "declined");
  }
  return 0;
}
#endif
}  // namespace

int main(int argc, char** argv) {
#ifndef BEFORE_FDES_IN_PLACE
  if (argc >= 4 && !std::strcmp(argv[1], "lookup")) return lookup(argv[2], argv[3]);
#endif
  if (argc < 2 || std::strcmp(argv[1], "capture"))
    return std::fprintf(stderr, "usage: %s lookup LIB SYMBOL | capture\n", argv[0]), 2;
  ObjectTable::instance().build_all_now();
  ObjectTable::instance().start_builder();
  void* z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  auto init = reinterpret_cast<Init>(z ? dlsym(z, "deflateInit_") : nullptr);
  if (!init) return std::fprintf(stderr, "no zlib\n"), 1;
  ObjectTable::instance().refresh_now();
  {  // the walk's and backtrace()'s own first-call costs, on another path
    uint64_t out[256];
    WalkStatus st;
    unwind_here(out, 256, &st);
    void* bt[8];
    backtrace(bt, 8);
  }
  z_stream s{};
  s.zalloc = zalloc_timed;
  s.zfree = zfree;
  deep(argc > 2 ? std::atoi(argv[2]) : 40, init, &s);
  std::printf("capture: %llu ticks, %d frames (%d read in place%s)\n", (unsigned long long)g_ticks, g_frames, g_lazy,
              g_fell_back ? ", then backtrace()" : "");
  return 0;
}
