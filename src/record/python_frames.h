// Reads the Python call stack of the calling thread through CPython's public C API, found at run time.
// Only used when the thread holds the GIL, so no Python object can change under us.
#pragma once
#include <cstdint>
#include <string>

namespace aiflame {

struct RawPyFrame {
  const void* code = nullptr;  // PyCodeObject*, kept alive by the walker once named
  uint32_t line = 0;
};

class PythonFrames {
 public:
  // Looks the interpreter's symbols up; harmless when the process runs no Python.
  void init();
  bool available() const { return ok_; }
  // Fills up to max frames, leaf first. Returns 0 when the thread holds no Python frames or the GIL.
  int capture(RawPyFrame* out, int max) const;
  // File and qualified function name of a code object (call with the GIL held, i.e. right after
  // capture on the same thread). Takes a reference so the code object outlives the profile.
  void describe(const void* code, std::string* file, std::string* function) const;

 private:
  bool ok_ = false;
  int (*gil_check_)() = nullptr;
  void* (*this_thread_state_)() = nullptr;
  void* (*get_frame_)(void*) = nullptr;
  void* (*frame_back_)(void*) = nullptr;
  void* (*frame_code_)(void*) = nullptr;
  int (*frame_line_)(void*) = nullptr;
  void (*decref_)(void*) = nullptr;
  void (*incref_)(void*) = nullptr;
  int (*is_initialized_)() = nullptr;
  void* (*get_attr_)(void*, const char*) = nullptr;
  const char* (*as_utf8_)(void*) = nullptr;
  void (*err_clear_)() = nullptr;
};

}  // namespace aiflame
