// Loaded into a Python interpreter by python_frames_test.py through ctypes: reports the Python frames
// that PythonFrames reads at the call, as "function file:line" lines, leaf first.
#include <unistd.h>

#include <algorithm>

#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "profile/profile_writer.h"
#include "record/py_name_cache.h"
#include "record/python_frames.h"
#include "record/stack_capture.h"
#include "record/string_table.h"

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

// 1: Py_IsInitialized's flag read in place; 2: the thread state's key too (PythonFrames, after a capture).
extern "C" int aiflame_probe_state_in_place() {
  return (g_frames.initialized_in_place() ? 1 : 0) | (g_frames.thread_state_in_place() ? 2 : 0);
}

// Captures with the interpreter's functions asked (in_place = false) and from its fields: 1 if both
// give the same frames, 0 if not, -1 for no frames.
extern "C" int aiflame_probe_same_both_ways() {
  aiflame::RawPyFrame a[64], b[64];
  const int n = g_frames.capture(a, 64, nullptr, true), m = g_frames.capture(b, 64, nullptr, false);
  if (n <= 0) return -1;
  return n == m && std::equal(a, a + n, b) ? 1 : 0;
}

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

// The walk's hash of the frames it read (capture's check), and whether it is PythonFrames::hash() of
// them: 1 if so, 0 if not, -1 for no frames.
extern "C" int aiflame_probe_hash(uint64_t* check) {
  aiflame::RawPyFrame frames[64];
  uint64_t h = 0;
  int n = g_frames.capture(frames, 64, &h);
  *check = h;
  if (n <= 0) return -1;
  return h == aiflame::PythonFrames::hash(frames, n) ? 1 : 0;
}

// PythonFrames::fingerprint here: 1 and *out if it is available, else 0.
extern "C" int aiflame_probe_fingerprint(uint64_t* out) {
  *out = 0;
  return g_frames.fingerprint(out) ? 1 : 0;
}

// A StackCapture with Python frames (the launch path's capture) writing to `path`, every launch that
// takes its memo walked again in full and compared (AIFLAME_LAB=verify_memos).
namespace {
struct Stacks {
  aiflame::ProfileWriter writer;
  aiflame::StringTable strings{writer};
  aiflame::StackCapture capture{writer, strings};
};
Stacks* g_stacks = nullptr;
}  // namespace
extern "C" int aiflame_probe_stacks_open(const char* path) {
  g_stacks = new Stacks;
  std::string err;
  if (!g_stacks->writer.open(path, false, &err)) return 0;
  g_stacks->capture.init(aiflame::UnwindPolicy::Always, /*python=*/true);
  g_stacks->capture.set_verify_memos(true);
  return 1;
}
// The stack id of a launch from here (one native call site for every Python caller).
extern "C" __attribute__((noinline)) unsigned aiflame_probe_stack_id() {
  const unsigned id = g_stacks->capture.capture(0x1000).stack_id;
  asm volatile("");
  return id;
}
// Launches from their memo walked again and compared, those whose full walk gave another stack, and
// this thread's launches from their predicted memo by the Python fingerprint.
extern "C" void aiflame_probe_stacks_counts(uint64_t* checked, uint64_t* differed, uint64_t* fast) {
  const auto m = g_stacks->capture.memo_check();
  *checked = m.checked;
  *differed = m.differed;
  *fast = g_stacks->capture.thread_fast_holds();
}

// The same through PyNameCache, as a stack new to the process names its frames (StackCapture::
// name_python): a frame named before is not described again while its code object is the one named.
// Strings are interned in a table of the probe's own. Also returns, in *described, how many frames
// were described (not found in the cache).
namespace {
aiflame::PyNameCache g_names;
std::vector<std::string> g_strings;
uint32_t intern(const std::string& s) {
  for (size_t i = 0; i < g_strings.size(); i++)
    if (g_strings[i] == s) return static_cast<uint32_t>(i);
  g_strings.push_back(s);
  return static_cast<uint32_t>(g_strings.size() - 1);
}
}  // namespace
// Frames that the last aiflame_probe_capture_cached named from the stack named before it (PyNameCache::name_all).
int g_names_reused = 0;
extern "C" int aiflame_probe_names_reused() { return g_names_reused; }
extern "C" int aiflame_probe_capture_cached(char* buf, int size, int* described) {
  aiflame::RawPyFrame frames[64];
  int n = g_frames.capture(frames, 64);
  std::string out;
  *described = 0;
  aiflame::PyFrame named[64];
  g_names_reused = g_names.name_all(g_frames, frames, n, named, [&](const aiflame::RawPyFrame& g) {
    std::string file, function;
    uint32_t line = 0;
    g_frames.describe(g, &file, &function, &line);
    ++*described;
    return aiflame::PyFrame{intern(file), intern(function), line};
  });
  for (int i = 0; i < n; i++) {
    const aiflame::PyFrame& f = named[i];
    const std::string& file = g_strings[f.file];
    out += g_strings[f.function] + " " + file.substr(file.rfind('/') + 1) + ":" + std::to_string(f.line) + "\n";
  }
  std::strncpy(buf, out.c_str(), static_cast<size_t>(size) - 1);
  buf[size - 1] = 0;
  return n;
}

// A thread parked outside the interpreter (GIL released), as the thread that called backward() is.
namespace {
std::atomic<int> g_parked{0}, g_release{0};
}
extern "C" int aiflame_probe_park() {
  g_parked = 1;
  while (!g_release) usleep(1000);
  g_parked = 0;
  return 0;
}
extern "C" int aiflame_probe_parked() { return g_parked.load(); }
extern "C" void aiflame_probe_unpark() { g_release = 1; }
extern "C" void aiflame_probe_rearm() { g_release = 0; }

// Every other thread's frames, read with capture_thread: "function file:line" per frame, leaf first,
// a line "--" after each thread; names through code_names (safe reads), lines through describe.
extern "C" int aiflame_probe_other_threads(char* buf, int size) {
  const void* states[64];
  int n = g_frames.thread_states(states, 64);
  const void* mine = g_frames.this_thread_state();
  std::string out;
  int threads = 0;
  for (int i = 0; i < n; i++) {
    if (states[i] == mine) continue;
    aiflame::RawPyFrame frames[256];
    int k = g_frames.capture_thread(states[i], frames, 256);
    for (int j = 0; j < k; j++) {
      std::string file, function, file2, function2;
      uint32_t line = 0;
      if (!g_frames.code_names(frames[j].code, &file, &function)) function = "?";
      g_frames.describe(frames[j], &file2, &function2, &line);
      out += function + " " + file.substr(file.rfind('/') + 1) + ":" + std::to_string(line) + "\n";
    }
    out += "--\n";
    threads++;
  }
  std::strncpy(buf, out.c_str(), static_cast<size_t>(size) - 1);
  buf[size - 1] = 0;
  return threads;
}

// Microseconds per capture_thread of each other thread's stack, over n reads (printed by the test:
// what the scan for backward()'s caller costs, issue 23 item 5).
extern "C" double aiflame_probe_time_other_threads(int n) {
  const void* states[64];
  int k = g_frames.thread_states(states, 64);
  const void* mine = g_frames.this_thread_state();
  aiflame::RawPyFrame frames[256];
  int reads = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < n; r++)
    for (int i = 0; i < k; i++)
      if (states[i] != mine) {
        g_frames.capture_thread(states[i], frames, 256);
        reads++;
      }
  auto t1 = std::chrono::steady_clock::now();
  return reads ? std::chrono::duration<double, std::micro>(t1 - t0).count() / reads : 0;
}

// same_stack: a thread parked at step k (park_step(k) returns once go(k) was called), its stack kept
// by keep_other() and checked again by same_other().
namespace {
std::atomic<int> g_step{0}, g_go{0};
aiflame::PythonFrames::OtherStack g_kept;
}  // namespace
extern "C" int aiflame_probe_park_step(int k) {
  g_step = k;
  while (g_go.load() < k) usleep(1000);
  return 0;
}
extern "C" int aiflame_probe_step() { return g_step.load(); }
extern "C" void aiflame_probe_go(int k) { g_go = k; }
extern "C" int aiflame_probe_keep_other() {
  const void* states[64];
  int n = g_frames.thread_states(states, 64);
  const void* mine = g_frames.this_thread_state();
  aiflame::RawPyFrame frames[256];
  for (int i = 0; i < n; i++)
    if (states[i] != mine) {
      g_kept.n = 0;
      int k = g_frames.capture_thread(states[i], frames, 256, &g_kept);
      return k == g_kept.n ? k : -1;
    }
  return 0;
}
extern "C" int aiflame_probe_same_other() { return g_frames.same_stack(g_kept) ? 1 : 0; }
