// Reads the Python call stack of the calling thread at a kernel launch.
//
// PyTorch releases the GIL before it dispatches an operator, so the launching thread usually holds
// no GIL and the C API (which moves reference counts) must not be used. Instead the thread's own
// interpreter frames are read in place, read-only, like py-spy does from outside: they cannot change
// while the thread sits in our callback. The structure offsets are per CPython minor version and
// are checked against the C API once, on a thread that holds the GIL, before they are trusted.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "record/py_runtime_fields.h"

namespace aiflame {

// What tells a code object from another made later at its address (PyNameCache): its file and name
// objects and first line.
struct CodeIdentity {
  const void* file = nullptr;  // co_filename
  const void* name = nullptr;  // co_qualname
  int first_line = 0;          // co_firstlineno
  bool operator==(const CodeIdentity&) const = default;
};

struct RawPyFrame {
  const void* code = nullptr;  // PyCodeObject*
  int32_t lasti = -1;          // byte offset of the instruction in the code object (-1: unknown)
  bool operator==(const RawPyFrame&) const = default;
};

class PythonFrames {
 public:
  // Looks the interpreter's symbols up; harmless when the process runs no Python.
  void init();
  bool available() const { return api_ok_; }
  bool raw_walk_enabled() const { return layout_ok_ && validated_; }
  // Fills up to max frames, leaf first. Returns 0 when the thread runs no Python.
  // check: if not null, set to hash(out, n), computed by the in-place walk as it reads the frames (a
  // second pass over them was ~13 instructions a frame of a launch's ~140 per Python frame, issue 22).
  // in_place = false: the interpreter asked whether it is initialized and for the thread's state
  // through its functions even where they are read in place (AIFLAME_LAB=autograd_ab=4, a measurement).
  int capture(RawPyFrame* out, int max, uint64_t* check = nullptr, bool in_place = true);
  // Whether they are read in place now (found and checked on a thread with a thread state).
  bool initialized_in_place() const { return initialized_at_.load(std::memory_order_relaxed) != nullptr; }
  bool thread_state_in_place() const { return tss_.load(std::memory_order_relaxed) != nullptr; }
  // The hash of frames' words (each frame's code and lasti, in order): a walk memo's check of its
  // Python frames (record/stack_capture.cpp).
  static uint64_t hash(const RawPyFrame* f, int n);
  // Prefetches the frames the last capture on this thread walked: a walk is a chain of dependent
  // loads, and a training loop's next launch walks mostly the same frames (issue 22).
  void prefetch() const;
  // The launch path's check of its predicted walk memo (StackCapture::capture): a fingerprint of every
  // word the in-place walk would read (each frame it would visit: its owner, code object and
  // instruction pointer, shim frames included; and how many it would visit), computed without
  // storing a frame or working out an offset. Equal fingerprints mean (but for a 2^-64 chance) equal
  // words, so the walk would return the same frames. ~17 instructions a frame, where capture()'s
  // walk with its hash took ~45 and the launch path's largest part (callgrind).
  // False where the in-place walk is not what capture() would run (the layout not checked yet,
  // 3.10's frame objects, the interpreter's state asked through its functions) or the thread visits
  // more than kFingerprintFrames: then the caller walks. Updates the record prefetch() reads.
  static constexpr int kFingerprintFrames = 64;
  bool fingerprint(uint64_t* out) const;
  // Names a frame captured on this same thread, while the launch callback still runs (its frames are alive).
  void describe(const RawPyFrame& f, std::string* file, std::string* function, uint32_t* line) const;
  // The identity of a code object captured on this same thread (its frames are alive): false without
  // a known layout.
  bool identity(const void* code, CodeIdentity* out) const;
  // Starts loading the lines identity() reads (PyNameCache::name_all).
  void prefetch_identity(const void* code) const {
    if (!layout_ok_) return;
    const char* c = static_cast<const char*>(code);
    __builtin_prefetch(c + L_.code_filename);
    __builtin_prefetch(c + L_.code_qualname);
    __builtin_prefetch(c + L_.code_firstlineno);
  }
  std::string version() const { return version_; }

  // A thread's stack as capture_thread last read it (3.11+), for same_stack.
  struct OtherStack {
    static constexpr int kMax = 64;
    const void* ts = nullptr;
    const void* cframe = nullptr;  // the _PyCFrame its innermost frame was read through (3.11, 3.12)
    const void* top = nullptr;     // its innermost frame
    int n = 0;                     // 0: none
    RawPyFrame frames[kMax];
  };
  // Another thread's frames, for autograd: the thread that called backward() sits in C++ with the
  // GIL released while the engine's threads launch the backward kernels. Everything is read through
  // util/safe_memory.h, so that memory a running thread frees meanwhile costs an error, not a crash;
  // every frame's code object must be a genuine code object (else 0). Needs a known layout.
  // keep: where a read of up to OtherStack::kMax frames is kept (else left as it was).
  int capture_thread(const void* tstate, RawPyFrame* out, int max, OtherStack* keep = nullptr) const;
  // Whether that thread still has that stack, in one safe_read where its frames sit in the
  // data stack (each of 3.12's entry frames, on the C stack, takes one more; capture_thread takes four
  // or more): a training loop calls backward() from the same line at every step (issue 23 item 5:
  // inside a training process a read of another thread's stack took 28 us on the H100, against 3.4 us
  // in a small one).
  bool same_stack(const OtherStack& last) const;
  // The main interpreter's thread states (at most max), and the calling thread's (nullptr: none).
  int thread_states(const void** out, int max) const;
  const void* this_thread_state() const { return api_ok_ ? this_thread_state_() : nullptr; }
  // A code object's file and qualified name, read safely (another thread's code may be freed).
  bool code_names(const void* code, std::string* file, std::string* function) const;

  struct Layout {
    // How the current frame is reached and what a frame is:
    //   CFrame (3.11, 3.12): PyThreadState -> _PyCFrame -> _PyInterpreterFrame, linked by `previous`;
    //   Direct (3.13): PyThreadState -> current _PyInterpreterFrame;
    //   FrameObject (3.10): PyThreadState -> PyFrameObject, linked by f_back, f_lasti in code units.
    enum Kind : uint8_t { CFrame, Direct, FrameObject } kind = CFrame;
    size_t ts_cframe = 0, cframe_current = 0;      // ts_cframe: the thread state's cframe/frame field
    size_t frame_code = 0, frame_previous = 0, frame_instr = 0, frame_owner = 0;
    int owner_cstack = 3;
    size_t code_filename = 0, code_qualname = 0, code_firstlineno = 0, code_adaptive = 0;
    size_t ascii_header = 0;                        // sizeof(PyASCIIObject)
  };

 private:
  // The bytes of a frame that a walk of another thread copies: every field it reads sits in a frame's
  // first 80 bytes in 3.10-3.13.
  size_t frame_span() const { return std::max({L_.frame_code, L_.frame_previous, L_.frame_instr, L_.frame_owner}) + 8; }
  int walk_raw(RawPyFrame* out, int max, uint64_t* check = nullptr, bool in_place = true) const;
  // Py_IsInitialized() and PyGILState_GetThisThreadState(), from _PyRuntime's fields where they were
  // found (record/py_runtime_fields.h), else through the functions.
  bool initialized(bool in_place) const {
    if (const int* at = initialized_at_.load(std::memory_order_relaxed); at && in_place)
      return __atomic_load_n(at, __ATOMIC_RELAXED) != 0;
    return is_initialized_();
  }
  void* thread_state(bool in_place) const;
  // Finds those fields, once, on a thread that has a thread state (`ts`, the function's answer).
  void find_state_fields(const void* ts);
  int walk_api(RawPyFrame* out, int max) const;
  bool validate();
  bool validate_by_type();
  std::string ascii_string(const void* unicode) const;

  bool api_ok_ = false;
  bool layout_ok_ = false;
  std::atomic<bool> validated_{false};
  std::atomic<bool> validation_failed_{false};
  std::string version_;
  Layout L_;
  int (*gil_check_)() = nullptr;
  void* (*this_thread_state_)() = nullptr;
  void* (*get_frame_)(void*) = nullptr;
  void* (*frame_back_)(void*) = nullptr;
  void* (*frame_code_)(void*) = nullptr;
  int (*frame_line_)(void*) = nullptr;
  int (*frame_lasti_)(void*) = nullptr;
  int (*addr2line_)(void*, int) = nullptr;
  void (*decref_)(void*) = nullptr;
  int (*is_initialized_)() = nullptr;
  const void* code_type_ = nullptr;  // &PyCode_Type: every frame's code object must point at it
  void* (*main_interp_)() = nullptr;
  void* (*thread_head_)(void*) = nullptr;
  void* (*thread_next_)(void*) = nullptr;
  std::atomic<int> state_search_{0};  // 0: not yet; 1: being searched; 2: done (found or not)
  std::atomic<const int*> initialized_at_{nullptr};
  std::atomic<const PyTss*> tss_{nullptr};
};

}  // namespace aiflame
