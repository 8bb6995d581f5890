#include "record/python_frames.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "record/debug_log.h"
#include "util/hot_pages.h"
#include "util/safe_memory.h"
#include "util/hot_path.h"
#include "util/tls_offsets.h"
#include "util/word_hash.h"

namespace aiflame {
namespace {

template <class F>
bool sym(F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return fn != nullptr;
}

template <class T>
T read_at(const void* base, size_t off) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + off, sizeof v);
  return v;
}

bool plausible(const void* p) { return p && (reinterpret_cast<uintptr_t>(p) & 7) == 0; }

// The frames the last walk on this thread visited (prefetch()). A training loop's launches share
// their outer Python frames at the same addresses (3.11+ keeps frames in the thread's data stack).
struct PyWalkRecord {
  static constexpr int kFrames = 64;
  int n = 0;
  const void* frame[kFrames];
};
thread_local constinit PyWalkRecord* t_pywalk = nullptr;  // in the thread's hot pages (util/hot_pages.h)
AIFLAME_TLS_ENROLL(tls::kPyWalk, t_pywalk);
static_assert(PythonFrames::kFingerprintFrames <= PyWalkRecord::kFrames, "fingerprint() keeps every frame it visits");

template <class T>
bool safe_at(const void* base, size_t off, T* v) {
  return base && safe_copy(static_cast<const char*>(base) + off, v, sizeof *v);
}

// Offsets of the x86-64 release builds of CPython (printed with offsetof against each version's headers,
// 3.10.13, 3.11.7, 3.12.1, 3.13.0), from Include/cpython/pystate.h,
// Include/internal/pycore_frame.h, Include/cpython/code.h and Include/cpython/unicodeobject.h.
using Layout = PythonFrames::Layout;
constexpr Layout kLayout311 = {.ts_cframe = 56, .cframe_current = 8, .frame_code = 32, .frame_previous = 48,
                               .frame_instr = 56, .frame_owner = 69, .owner_cstack = 3, .code_filename = 112,
                               .code_qualname = 128, .code_firstlineno = 72, .code_adaptive = 184, .ascii_header = 48};
constexpr Layout kLayout312 = {.ts_cframe = 56, .cframe_current = 0, .frame_code = 0, .frame_previous = 8,
                               .frame_instr = 56, .frame_owner = 70, .owner_cstack = 3, .code_filename = 112,
                               .code_qualname = 128, .code_firstlineno = 68, .code_adaptive = 192, .ascii_header = 40};
constexpr Layout kLayout313 = {.kind = Layout::Direct, .ts_cframe = 72, .cframe_current = 0, .frame_code = 0,
                               .frame_previous = 8, .frame_instr = 56, .frame_owner = 70, .owner_cstack = 3,
                               .code_filename = 112, .code_qualname = 128, .code_firstlineno = 68,
                               .code_adaptive = 200, .ascii_header = 40};
// frame_previous is f_back, frame_instr is f_lasti (an int, in code units); no qualname: co_name.
constexpr Layout kLayout310 = {.kind = Layout::FrameObject, .ts_cframe = 24, .cframe_current = 0, .frame_code = 32,
                               .frame_previous = 24, .frame_instr = 96, .frame_owner = 0, .owner_cstack = -1,
                               .code_filename = 104, .code_qualname = 112, .code_firstlineno = 40,
                               .code_adaptive = 0, .ascii_header = 48};
bool layout_for(int minor, Layout& L) {
  switch (minor) {
    case 10: L = kLayout310; return true;
    case 11: L = kLayout311; return true;
    case 12: L = kLayout312; return true;
    case 13: L = kLayout313; return true;
    default: return false;
  }
}

// The interpreter frames of 3.11+ from `frame` outwards, leaf first. The layout's offsets in locals:
// read from the layout inside the loop, GCC reloaded them at every frame (the loop's stores may alias
// them). A frame's four fields are loaded before anything is stored, for the same reason, and hashed
// as they are stored (PythonFrames::hash: the same words in the same order), where a second loop over
// the stored frames did (issue 22: ~13 instructions a frame). Inlined into walk_raw: one copy of the
// loop on the launch path's lines (a copy per version, as template constants, spread walk_raw over
// 13 code lines a launch, against 8 before the change). kept: the frames visited, for the next
// launch's prefetch.
AIFLAME_HOT inline int walk_frames(const Layout& layout, const void* frame, RawPyFrame* out, int max, PyWalkRecord* rec,
                                   uint64_t* check) {
  const size_t owner_at = layout.frame_owner, code_at = layout.frame_code, instr_at = layout.frame_instr,
               previous_at = layout.frame_previous, adaptive = layout.code_adaptive;
  const char cstack = static_cast<char>(layout.owner_cstack);
  const void** kept = rec->frame;
  LaneHash h;
  RawPyFrame* o = out;
  RawPyFrame* const end = out + max;
  int v = 0;  // frames visited, shim frames included: a corrupt chain ends at 4096
  for (; o < end && v < 4096 && plausible(frame); v++) {
    kept[v & (PyWalkRecord::kFrames - 1)] = frame;  // past kFrames the record's frames are only less useful
    const char owner = read_at<char>(frame, owner_at);
    const void* code = read_at<const void*>(frame, code_at);
    const char* instr = read_at<const char*>(frame, instr_at);
    const void* previous = read_at<const void*>(frame, previous_at);
    if (owner != cstack && plausible(code)) {
      // The byte offset from the code's first instruction, -1 before it (a frame not started yet).
      const int64_t d = instr - (static_cast<const char*>(code) + adaptive);
      const auto lasti = static_cast<int32_t>(d | (d >> 63));
      *o++ = RawPyFrame{code, lasti};
      h.pair(reinterpret_cast<uint64_t>(code), static_cast<uint32_t>(lasti));
    }
    frame = previous;
  }
  rec->n = std::min(v, PyWalkRecord::kFrames);
  const int n = static_cast<int>(o - out);
  if (check) *check = h.finish(2 * static_cast<size_t>(n));
  return n;
}

}  // namespace

void PythonFrames::init() {
  const char* (*get_version)() = nullptr;
  api_ok_ = sym(gil_check_, "PyGILState_Check") && sym(this_thread_state_, "PyGILState_GetThisThreadState") &&
            sym(get_frame_, "PyThreadState_GetFrame") && sym(frame_back_, "PyFrame_GetBack") &&
            sym(frame_code_, "PyFrame_GetCode") && sym(frame_line_, "PyFrame_GetLineNumber") &&
            sym(decref_, "Py_DecRef") && sym(is_initialized_, "Py_IsInitialized") &&
            sym(addr2line_, "PyCode_Addr2Line") && sym(get_version, "Py_GetVersion");
  if (!api_ok_) return;
  sym(frame_lasti_, "PyFrame_GetLasti");  // 3.11+
  code_type_ = dlsym(RTLD_DEFAULT, "PyCode_Type");
  sym(main_interp_, "PyInterpreterState_Main");
  sym(thread_head_, "PyInterpreterState_ThreadHead");
  sym(thread_next_, "PyThreadState_Next");
  version_ = get_version();
  int major = 0, minor = 0;
  std::sscanf(version_.c_str(), "%d.%d", &major, &minor);
  layout_ok_ = major == 3 && layout_for(minor, L_);
  debug("Python %d.%d: %s", major, minor, layout_ok_ ? "frames read in place" : "frames read only while the GIL is held");
  if (layout_ok_ && is_initialized_() && gil_check_() == 1) validate();
}

// Compares the in-place walk with the C API on a thread that holds the GIL.
bool PythonFrames::validate() {
  RawPyFrame raw[64], api[64];
  int n = walk_raw(raw, 64), m = walk_api(api, 64);
  bool same = n == m && n > 0;
  // 3.10 has no PyFrame_GetLasti: the API side has -1 there and only the code objects are compared.
  for (int i = 0; same && i < n; i++)
    same = raw[i].code == api[i].code && (api[i].lasti < 0 || raw[i].lasti == api[i].lasti);
  if (n == 0 && m == 0) return false;  // nothing to compare yet
  validated_ = same;
  validation_failed_ = !same;
  debug("Python frame layout check: %s (%d in place, %d through the C API)", same ? "ok" : "MISMATCH", n, m);
  return same;
}

// Without the GIL (PyTorch releases it before it launches, and a process may start CUDA on such a
// thread, so that no launch ever holds it): the in-place walk is accepted when it finds frames and
// every one of them holds a genuine code object (ob_type == &PyCode_Type).
bool PythonFrames::validate_by_type() {
  if (!code_type_) return false;
  RawPyFrame raw[64];
  int n = walk_raw(raw, 64);
  if (n == 0) return false;  // nothing to check yet
  bool same = true;
  for (int i = 0; same && i < n; i++) same = read_at<const void*>(raw[i].code, 8) == code_type_;
  validated_ = same;
  validation_failed_ = !same;
  debug("Python frame layout check without the GIL: %s (%d frames, code object types %s)", same ? "ok" : "MISMATCH",
        n, same ? "right" : "wrong");
  return same;
}

AIFLAME_HOT void PythonFrames::prefetch() const {
  const PyWalkRecord* r = *AIFLAME_TLS(tls::kPyWalk, t_pywalk);
  if (!r) return;
  // The fields the walk reads span a frame's first 72 bytes: one or two lines.
  for (int i = 0; i < r->n; i++) {
    const char* f = static_cast<const char*>(r->frame[i]);
    __builtin_prefetch(f);
    __builtin_prefetch(f + 71);
  }
}

AIFLAME_HOT bool PythonFrames::fingerprint(uint64_t* out) const {
  // capture()'s conditions for walk_raw with the state read in place (the flag and the thread-state
  // key found, so initialized(true) and thread_state(true) read them), else false (the caller walks).
  if (!initialized_at_.load(std::memory_order_relaxed) || !tss_.load(std::memory_order_relaxed) ||
      !validated_.load(std::memory_order_relaxed) || L_.kind == Layout::FrameObject || !api_ok_ || !layout_ok_ ||
      state_search_.load(std::memory_order_relaxed) != 2) [[unlikely]]
    return false;
  if (!initialized(true)) return false;
  PyWalkRecord* const rec = *AIFLAME_TLS(tls::kPyWalk, t_pywalk);
  if (!rec) return false;
  LaneHash h;
  int v = 0;  // frames visited
  // walk_raw's reads: a state that is not plausible, or a null cframe, is no frames.
  const void* ts = thread_state(true);
  if (plausible(ts)) {
    const void* frame = read_at<const void*>(ts, L_.ts_cframe);
    if (L_.kind == Layout::CFrame) frame = plausible(frame) ? read_at<const void*>(frame, L_.cframe_current) : nullptr;
    const size_t owner_at = L_.frame_owner, code_at = L_.frame_code, instr_at = L_.frame_instr,
                 previous_at = L_.frame_previous;
    const void** kept = rec->frame;
    for (; plausible(frame); v++) {
      if (v == kFingerprintFrames) [[unlikely]]
        return false;
      kept[v] = frame;
      // An instruction pointer is a user-space address (below 2^47): the owner byte above it.
      const auto owner = static_cast<uint64_t>(read_at<unsigned char>(frame, owner_at));
      h.pair(read_at<uint64_t>(frame, code_at), read_at<uint64_t>(frame, instr_at) ^ (owner << 56));
      frame = read_at<const void*>(frame, previous_at);
    }
  }
  rec->n = v;
  *out = h.finish(static_cast<size_t>(v)) | 1;  // never 0 (a memo entry's "none")
  return true;
}

uint64_t PythonFrames::hash(const RawPyFrame* f, int n) {
  LaneHash h;
  for (int i = 0; i < n; i++) h.pair(reinterpret_cast<uint64_t>(f[i].code), static_cast<uint32_t>(f[i].lasti));
  return h.finish(2 * static_cast<size_t>(n));
}

AIFLAME_HOT void* PythonFrames::thread_state(bool in_place) const {
  if (const PyTss* t = tss_.load(std::memory_order_relaxed); t && in_place)
    return __atomic_load_n(&t->is_initialized, __ATOMIC_RELAXED) ? pthread_getspecific(__atomic_load_n(&t->key, __ATOMIC_RELAXED))
                                                                 : nullptr;
  return this_thread_state_();
}

void PythonFrames::find_state_fields(const void* ts) {
  int idle = 0;
  if (!ts || !state_search_.compare_exchange_strong(idle, 1)) return;
  void* runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
  Dl_info info{};
  void* entry = nullptr;  // the symbol's ElfW(Sym)
  size_t size = 0;
  if (runtime && dladdr1(runtime, &info, &entry, RTLD_DL_SYMENT) && entry) size = static_cast<const ElfW(Sym)*>(entry)->st_size;
  const uint64_t lo = reinterpret_cast<uint64_t>(runtime), hi = lo + size;
  // The address an operand names: `addr` itself, or `disp` past what the GOT slot at `addr` holds, which
  // must be _PyRuntime (0 if not, or unreadable).
  auto target = [lo](uint64_t addr, bool via_slot, int32_t disp) -> uint64_t {
    if (!via_slot) return addr;
    uint64_t base = 0;
    if (!safe_copy(reinterpret_cast<const void*>(addr), &base, sizeof base) || base != lo) return 0;
    return base + static_cast<uint64_t>(static_cast<int64_t>(disp));
  };
  // Py_IsInitialized's flag: an int inside _PyRuntime that reads as the function answers now.
  constexpr size_t kCode = 24;
  if (size) {
    uint8_t code[kCode];
    const auto fn = reinterpret_cast<uint64_t>(is_initialized_);
    if (safe_copy(reinterpret_cast<const void*>(fn), code, kCode)) {
      if (const auto g = decode_int_getter(code, fn)) {
        const uint64_t at = target(g->addr, g->via_slot, g->disp);
        int now = 0;
        if (at >= lo && at + sizeof(int) <= hi && (at & 3) == 0 &&
            safe_copy(reinterpret_cast<const void*>(at), &now, sizeof now) && now == is_initialized_() && now == 1)
          initialized_at_.store(reinterpret_cast<const int*>(at), std::memory_order_relaxed);
      }
    }
  }
  // The thread-state key: the Py_tss_t in _PyRuntime that PyGILState_GetThisThreadState's code refers
  // to and whose key holds this thread's state (every such candidate the same one).
  const PyTss* tss = nullptr;
  bool agree = true;
  constexpr size_t kTssCode = 64;
  uint8_t tcode[kTssCode];
  const auto tfn = reinterpret_cast<uint64_t>(this_thread_state_);
  if (size && safe_copy(reinterpret_cast<const void*>(tfn), tcode, kTssCode)) {
    for (const TssRef& r : tss_refs(tcode, tfn)) {
      // check_tss reads only inside [lo, hi).
      const auto* t = reinterpret_cast<const PyTss*>(target(r.addr, r.via_slot, r.disp));
      if (!check_tss(t, lo, hi, ts, [](unsigned key) { return pthread_getspecific(key); })) continue;
      if (tss && tss != t) agree = false;
      tss = t;
    }
  }
  if (tss && agree) tss_.store(tss, std::memory_order_relaxed);
  else tss = nullptr;
  debug("Python's initialized flag %s, its thread-state key %s (_PyRuntime %zu bytes)",
        initialized_at_.load() ? "read in place" : "through Py_IsInitialized",
        tss ? "read in place" : "through PyGILState_GetThisThreadState", size);
  state_search_.store(2);
}

AIFLAME_HOT int PythonFrames::walk_raw(RawPyFrame* out, int max, uint64_t* check, bool in_place) const {
  auto none = [&] {  // no frames (their hash, too)
    if (check) *check = hash(out, 0);
    return 0;
  };
  void* ts = thread_state(in_place);
  if (!plausible(ts)) return none();
  PyWalkRecord* rec = *AIFLAME_TLS(tls::kPyWalk, t_pywalk);
  if (!rec) rec = hot_new(t_pywalk);
  if (!rec) return none();
  const void* frame = read_at<const void*>(ts, L_.ts_cframe);
  if (L_.kind == Layout::FrameObject) {
    int n = 0, visited = 0;
    for (int guard = 0; plausible(frame) && n < max && guard < 4096; guard++) {
      if (visited < PyWalkRecord::kFrames) rec->frame[visited++] = frame;
      const void* code = read_at<const void*>(frame, L_.frame_code);
      if (plausible(code)) {
        int lasti = read_at<int>(frame, L_.frame_instr);
        out[n].code = code;
        out[n].lasti = lasti >= 0 ? lasti * 2 : -1;  // bytes, as PyCode_Addr2Line wants
        n++;
      }
      frame = read_at<const void*>(frame, L_.frame_previous);
    }
    rec->n = visited;
    if (check) *check = hash(out, n);
    return n;
  }
  if (L_.kind == Layout::CFrame) {
    if (!plausible(frame)) return none();
    frame = read_at<const void*>(frame, L_.cframe_current);
  }
  return walk_frames(L_, frame, out, max, rec, check);
}

int PythonFrames::walk_api(RawPyFrame* out, int max) const {
  void* ts = this_thread_state_();
  if (!ts) return 0;
  void* frame = get_frame_(ts);
  int n = 0;
  while (frame && n < max) {
    void* code = frame_code_(frame);
    out[n].code = code;
    out[n].lasti = frame_lasti_ ? frame_lasti_(frame) : -1;
    decref_(code);
    n++;
    void* back = frame_back_(frame);
    decref_(frame);
    frame = back;
  }
  if (frame) decref_(frame);
  return n;
}

AIFLAME_HOT int PythonFrames::capture(RawPyFrame* out, int max, uint64_t* check, bool in_place) {
  int n = 0;
  if (api_ok_ && initialized(in_place)) {
    if (layout_ok_ && !validated_ && !validation_failed_) {
      if (gil_check_() == 1) validate();
      else validate_by_type();
    }
    if (state_search_.load(std::memory_order_relaxed) != 2) [[unlikely]]
      find_state_fields(this_thread_state_());
    if (layout_ok_ && validated_) return walk_raw(out, max, check, in_place);
    // Unverified layout: only the C API, and only with the GIL.
    if (gil_check_() == 1) n = walk_api(out, max);
  }
  if (check) *check = hash(out, n);
  return n;
}

std::string PythonFrames::ascii_string(const void* unicode) const {
  if (!plausible(unicode)) return "?";
  // PyASCIIObject: length at 16, state bits at 32 (kind 2-4, compact 5, ascii 6).
  auto length = read_at<int64_t>(unicode, 16);
  auto state = read_at<uint32_t>(unicode, 32);
  bool compact_ascii = (state >> 5 & 1) && (state >> 6 & 1);
  if (!compact_ascii || length < 0 || length > 4096) return "<non-ascii>";
  return std::string(static_cast<const char*>(unicode) + L_.ascii_header, static_cast<size_t>(length));
}

void PythonFrames::describe(const RawPyFrame& f, std::string* file, std::string* function, uint32_t* line) const {
  const void* code = f.code;
  if (layout_ok_) {
    *file = ascii_string(read_at<const void*>(code, L_.code_filename));
    *function = ascii_string(read_at<const void*>(code, L_.code_qualname));
  } else {
    // assign(1, '?'): GCC 12 warns (-Wrestrict, a false positive: PR 105329) on `*file = "?"` once
    // inlined here.
    file->assign(1, '?');
    function->assign(1, '?');
  }
  // PyCode_Addr2Line only reads the code object's immutable line table.
  int l = f.lasti >= 0 ? addr2line_(const_cast<void*>(code), f.lasti) : -1;
  if (l < 0 && layout_ok_) l = read_at<int>(code, L_.code_firstlineno);
  *line = l > 0 ? static_cast<uint32_t>(l) : 0;
}

bool PythonFrames::identity(const void* code, CodeIdentity* out) const {
  if (!layout_ok_) return false;
  out->file = read_at<const void*>(code, L_.code_filename);
  out->name = read_at<const void*>(code, L_.code_qualname);
  out->first_line = read_at<int>(code, L_.code_firstlineno);
  return true;
}

int PythonFrames::thread_states(const void** out, int max) const {
  if (!api_ok_ || !main_interp_ || !thread_head_ || !thread_next_ || !is_initialized_()) return 0;
  // Plain reads of the interpreter's list (no lock, as in CPython 3.10-3.13): a thread state is freed
  // only when its thread ends, and what the walk reads of it goes through safe_copy.
  void* interp = main_interp_();
  int n = 0;
  for (void* ts = interp ? thread_head_(interp) : nullptr; ts && n < max; ts = thread_next_(ts)) out[n++] = ts;
  return n;
}

namespace {
// A copy of the pages below another thread's innermost frame. 3.11+ keeps a thread's frames in its
// data stack, each caller below its callee, so one safe_read of these pages holds most of a
// walk's frames, where a copy of each frame took a syscall of its own (issue 23 item 5: the scan for
// the caller of backward() took 40-48 us on the H100). Two pages: on the development VM a read of a
// 5-frame stack took 6.7 us with two, 12.1 us with eight (each page is pinned).
struct FrameWindow {
  static constexpr size_t kPage = 4096, kPages = 2;
  uintptr_t lo = 0, hi = 0;  // the copied range: [lo, hi)
  alignas(64) char bytes[kPage * kPages];

  // The page holding the end of the innermost frame, then the ones below it, as remote iovecs (top
  // first: a partial copy stops at an iovec's end, never inside one, so the pages copied are the top ones).
  static uintptr_t top_page(const void* frame, size_t span) {
    return (reinterpret_cast<uintptr_t>(frame) + span - 1) & ~(kPage - 1);
  }
  void iovecs(uintptr_t top, iovec* local, iovec* remote) {
    for (size_t k = 0; k < kPages; k++) {
      local[k] = {bytes + (kPages - 1 - k) * kPage, kPage};
      remote[k] = {reinterpret_cast<void*>(top - k * kPage), kPage};
    }
  }
  // `got` bytes of the pages copied.
  void took(uintptr_t top, size_t got) {
    hi = top + kPage;
    lo = hi - got / kPage * kPage;
  }
  void load(const void* frame, size_t span) {
    lo = hi = 0;
    const uintptr_t top = top_page(frame, span);
    if (top < (kPages - 1) * kPage) return;
    iovec local[kPages], remote[kPages];
    iovecs(top, local, remote);
    ssize_t got = safe_read(local, kPages, remote, kPages);
    if (got > 0) took(top, static_cast<size_t>(got));
  }
  // The copy of [p, p + n), or null where it is not in the window.
  const char* find(const void* p, size_t n) const {
    auto a = reinterpret_cast<uintptr_t>(p);
    if (a < lo || a + n > hi || a + n < a) return nullptr;
    return bytes + (kPages * kPage - (hi - a));
  }
};

// Each code object's type, read in one call (each object once: a recursion repeats one): true when
// every one is `type`.
bool all_of_type(const RawPyFrame* f, int n, const void* type) {
  constexpr int kMax = 256;
  const void* codes[kMax];
  const void* types[kMax];
  iovec local[kMax], remote[kMax];
  for (int at = 0; at < n; at += kMax) {
    int m = std::min(kMax, n - at);
    for (int i = 0; i < m; i++) codes[i] = f[at + i].code;
    std::sort(codes, codes + m);
    m = static_cast<int>(std::unique(codes, codes + m) - codes);
    for (int i = 0; i < m; i++) {
      local[i] = {&types[i], sizeof(void*)};
      remote[i] = {const_cast<char*>(static_cast<const char*>(codes[i]) + 8), sizeof(void*)};
    }
    const auto k = static_cast<size_t>(m);
    if (safe_read(local, k, remote, k) != static_cast<ssize_t>(k * sizeof(void*)))
      return false;
    for (int i = 0; i < m; i++)
      if (types[i] != type) return false;
  }
  return true;
}

// The frames from `frame` outward, read from `win` (moved to a frame outside it at most `moves` times:
// an older chunk of the data stack, 3.12's entry frames on the C stack, a generator's frame on the
// heap), else one by one. Codes are not checked here.
int walk_frames(const PythonFrames::Layout& L, size_t span, const void* frame, FrameWindow& win, int moves,
                RawPyFrame* out, int max) {
  char buf[128];
  if (span > sizeof buf) return 0;
  int n = 0;
  for (int guard = 0; plausible(frame) && n < max && guard < 4096; guard++) {
    const char* f = win.find(frame, span);
    if (!f && moves > 0) {
      moves--;
      win.load(frame, span);
      f = win.find(frame, span);
    }
    if (!f) {
      if (!safe_copy(frame, buf, span)) return 0;
      f = buf;
    }
    const void* code = read_at<const void*>(f, L.frame_code);
    bool shim = L.kind != PythonFrames::Layout::FrameObject && read_at<char>(f, L.frame_owner) == L.owner_cstack;
    if (!shim && plausible(code)) {
      out[n].code = code;
      if (L.kind == PythonFrames::Layout::FrameObject) {
        int lasti = read_at<int>(f, L.frame_instr);
        out[n].lasti = lasti >= 0 ? lasti * 2 : -1;
      } else {
        auto instr = read_at<const char*>(f, L.frame_instr);
        const char* start = static_cast<const char*>(code) + L.code_adaptive;
        out[n].lasti = instr >= start ? static_cast<int32_t>(instr - start) : -1;
      }
      n++;
    }
    frame = read_at<const void*>(f, L.frame_previous);
  }
  return n;
}

}  // namespace

int PythonFrames::capture_thread(const void* ts, RawPyFrame* out, int max, OtherStack* keep) const {
  if (!layout_ok_ || !code_type_ || !plausible(ts)) return 0;
  const void* frame = nullptr;
  const void* cframe = nullptr;
  if (!safe_at(ts, L_.ts_cframe, &frame)) return 0;
  if (L_.kind == Layout::CFrame) {
    cframe = frame;
    if (!plausible(frame) || !safe_at(frame, L_.cframe_current, &frame)) return 0;
  }
  // Frame objects (3.10) are heap objects: no window. A walk of one or two frames copies no more than
  // it needs.
  FrameWindow win;
  const bool windowed = max > 2 && L_.kind != Layout::FrameObject;
  const void* top = frame;
  int n = walk_frames(L_, frame_span(), frame, win, windowed ? 4 : 0, out, max);
  // Not frames after all (a thread that moved on while it was read): the whole walk is refused.
  if (n <= 0 || !all_of_type(out, n, code_type_)) return 0;
  if (keep && windowed && n <= OtherStack::kMax) {
    keep->ts = ts;
    keep->cframe = cframe;
    keep->top = top;
    keep->n = n;
    std::copy(out, out + n, keep->frames);
  }
  return n;
}

bool PythonFrames::same_stack(const OtherStack& last) const {
  if (!layout_ok_ || !last.n || L_.kind == Layout::FrameObject) return false;
  const size_t span = frame_span();
  const uintptr_t top = FrameWindow::top_page(last.top, span);
  if (top < (FrameWindow::kPages - 1) * FrameWindow::kPage) return false;
  // One read: the thread state's frame pointer, the _PyCFrame's (3.11, 3.12), the window.
  const void* got_ts = nullptr;
  const void* got_cframe = nullptr;
  FrameWindow win;
  iovec local[2 + FrameWindow::kPages], remote[2 + FrameWindow::kPages];
  int k = 0;
  local[k] = {&got_ts, sizeof got_ts};
  remote[k++] = {const_cast<char*>(static_cast<const char*>(last.ts) + L_.ts_cframe), sizeof got_ts};
  if (L_.kind == Layout::CFrame) {
    local[k] = {&got_cframe, sizeof got_cframe};
    remote[k++] = {const_cast<char*>(static_cast<const char*>(last.cframe) + L_.cframe_current), sizeof got_cframe};
  }
  const size_t head = static_cast<size_t>(k) * sizeof(void*);
  win.iovecs(top, local + k, remote + k);
  const size_t iovs = static_cast<size_t>(k) + FrameWindow::kPages;
  ssize_t got = safe_read(local, iovs, remote, iovs);
  if (got < static_cast<ssize_t>(head + FrameWindow::kPage)) {
    debug("python: another thread's stack not read again (%zd bytes copied)", got);
    return false;
  }
  if (L_.kind == Layout::CFrame ? (got_ts != last.cframe || got_cframe != last.top) : got_ts != last.top) {
    debug("python: another thread's frame pointers moved (%p %p, were %p %p)", got_ts, got_cframe,
          L_.kind == Layout::CFrame ? last.cframe : last.top, last.top);
    return false;
  }
  win.took(top, static_cast<size_t>(got) - head);
  // The same frames: the same stack, and its code objects are the ones capture_thread checked (a
  // frame that still holds one keeps it alive). Frames outside the window (3.12's entry frames on
  // the C stack where C called Python, a generator's) are copied one by one.
  RawPyFrame now[OtherStack::kMax + 1];
  int n = walk_frames(L_, span, last.top, win, 0, now, OtherStack::kMax + 1);
  if (n == last.n && std::equal(now, now + n, last.frames)) return true;
  if (debug_enabled()) {
    int i = 0;
    while (i < n && i < last.n && now[i] == last.frames[i]) i++;
    debug("python: another thread's stack changed: %d frames, were %d; frame %d: code %p lasti %d, was %p %d", n, last.n, i,
          i < n ? now[i].code : nullptr, i < n ? now[i].lasti : -1, i < last.n ? last.frames[i].code : nullptr,
          i < last.n ? last.frames[i].lasti : -1);
  }
  return false;
}

bool PythonFrames::code_names(const void* code, std::string* file, std::string* function) const {
  if (!layout_ok_) return false;
  auto name = [&](size_t off, std::string* out) {
    const void* u = nullptr;
    int64_t length = 0;
    uint32_t state = 0;
    if (!safe_at(code, off, &u) || !plausible(u) || !safe_at(u, 16, &length) || !safe_at(u, 32, &state)) return false;
    if (!((state >> 5 & 1) && (state >> 6 & 1)) || length < 0 || length > 4096) return false;  // compact ASCII only
    out->resize(static_cast<size_t>(length));
    return safe_copy(static_cast<const char*>(u) + L_.ascii_header, out->data(), out->size());
  };
  return name(L_.code_filename, file) && name(L_.code_qualname, function);
}

}  // namespace aiflame
