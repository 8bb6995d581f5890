#include "record/python_frames.h"

#include <dlfcn.h>

namespace aiflame {

template <class F>
static bool sym(F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return fn != nullptr;
}

void PythonFrames::init() {
  ok_ = sym(gil_check_, "PyGILState_Check") && sym(this_thread_state_, "PyGILState_GetThisThreadState") &&
        sym(get_frame_, "PyThreadState_GetFrame") && sym(frame_back_, "PyFrame_GetBack") &&
        sym(frame_code_, "PyFrame_GetCode") && sym(frame_line_, "PyFrame_GetLineNumber") &&
        sym(decref_, "Py_DecRef") && sym(incref_, "Py_IncRef") && sym(is_initialized_, "Py_IsInitialized") &&
        sym(get_attr_, "PyObject_GetAttrString") && sym(as_utf8_, "PyUnicode_AsUTF8") &&
        sym(err_clear_, "PyErr_Clear");
}

int PythonFrames::capture(RawPyFrame* out, int max) const {
  if (!ok_ || !is_initialized_() || gil_check_() != 1) return 0;
  void* ts = this_thread_state_();
  if (!ts) return 0;
  void* frame = get_frame_(ts);  // new reference (or null)
  int n = 0;
  while (frame && n < max) {
    void* code = frame_code_(frame);  // new reference
    out[n].code = code;
    out[n].line = static_cast<uint32_t>(frame_line_(frame));
    decref_(code);  // describe() takes its own reference when the code object is first named
    n++;
    void* back = frame_back_(frame);
    decref_(frame);
    frame = back;
  }
  if (frame) decref_(frame);
  return n;
}

void PythonFrames::describe(const void* code, std::string* file, std::string* function) const {
  void* c = const_cast<void*>(code);
  incref_(c);  // keeps the address from being reused by another code object
  auto text = [&](const char* attr) -> std::string {
    void* v = get_attr_(c, attr);
    if (!v) { err_clear_(); return {}; }
    const char* s = as_utf8_(v);
    std::string r = s ? s : "";
    if (!s) err_clear_();
    decref_(v);
    return r;
  };
  *file = text("co_filename");
  *function = text("co_qualname");  // Python 3.11+
  if (function->empty()) *function = text("co_name");
}

}  // namespace aiflame
