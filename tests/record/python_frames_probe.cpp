// Loaded into a Python interpreter by python_frames_test.py through ctypes: reports the Python frames
// that PythonFrames reads at the call, as "function file:line" lines, leaf first.
#include <cstring>
#include <new>
#include <string>

#include "record/python_frames.h"

namespace {
aiflame::PythonFrames g_frames;
}

extern "C" int aiflame_probe_init() {
  g_frames.init();
  return g_frames.available() ? 1 : 0;
}

// A fresh reader whose first look at the frames happens without the GIL (CDLL call).
extern "C" int aiflame_probe_reset_and_init() {
  g_frames.~PythonFrames();
  new (&g_frames) aiflame::PythonFrames();
  g_frames.init();
  return g_frames.available() ? 1 : 0;
}

extern "C" int aiflame_probe_raw_enabled() { return g_frames.raw_walk_enabled() ? 1 : 0; }

extern "C" int aiflame_probe_capture(char* buf, int size) {
  aiflame::RawPyFrame frames[64];
  int n = g_frames.capture(frames, 64);
  std::string out;
  for (int i = 0; i < n; i++) {
    std::string file, function;
    uint32_t line = 0;
    g_frames.describe(frames[i], &file, &function, &line);
    out += function + " " + file.substr(file.rfind('/') + 1) + ":" + std::to_string(line) + "\n";
  }
  std::strncpy(buf, out.c_str(), static_cast<size_t>(size) - 1);
  buf[size - 1] = 0;
  return n;
}
