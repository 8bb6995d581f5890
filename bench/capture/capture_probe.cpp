// The launch-capture benchmark, run inside a real CPython: capture_bench.py calls aiflame_bench_init
// with the GIL held (so PythonFrames validates its in-place layout against the C API), then, 20
// Python frames deep and with the GIL released like PyTorch around a launch, aiflame_bench_run,
// which recurses 40 native frames and runs the Google Benchmark loop at the bottom. Every
// benchmark therefore captures a real stack: 20 interpreter frames walked in place, and a native
// stack of 40 frames plus the benchmark runner, ctypes and the interpreter below them.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>

#include "profile/profile_writer.h"
#include "record/autograd/autograd_tracker.h"
#include "record/module_map.h"
#include "record/python_frames.h"
#include "record/stack_capture.h"
#include "record/string_table.h"

namespace aiflame {
namespace {

// Runs fn with the GIL taken for a moment, as at a launch from Python code that holds it: a
// PythonFrames trusts its in-place walk only after comparing it with the C API under the GIL.
template <class F>
void with_gil(F fn) {
  auto ensure = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
  auto release = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "PyGILState_Release"));
  int state = ensure();
  fn();
  release(state);
}

// One recorder's worth of state: a profile going to /dev/null, its string table and the capture.
struct Capturer {
  ProfileWriter writer;
  StringTable strings{writer};
  StackCapture capture{writer, strings};
  explicit Capturer(UnwindPolicy policy) {
    std::string error;
    writer.open_fd(::open("/dev/null", O_WRONLY | O_CLOEXEC), &error);
    with_gil([&] { capture.init(policy, /*python=*/true); });
    // As the recorder trims its own library's frames (and CUPTI's and the driver's) from the leaf end.
    uint64_t lo, hi;
    if (find_module_range("libaiflame_capture_bench", &lo, &hi)) capture.add_skip_range(lo, hi);
  }
};

// The one call site of every capture, like the driver callback: a site whose native stack ever
// changes is unwound at every launch, so the benchmarks must not capture from two places.
__attribute__((noinline)) StackCapture::Result launch(Capturer& c, uint64_t site) {
  StackCapture::Result r = c.capture.capture(site);
  benchmark::DoNotOptimize(r);
  return r;
}

int g_python_frames = 0;  // what PythonFrames sees at the bottom, reported with every benchmark

void report_shape(benchmark::State& state) {
  void* frames[512];
  state.counters["py_frames"] = g_python_frames;
  state.counters["native_frames"] = backtrace(frames, 512);
}

// Steady state: one launch site seen again and again (sampled policy: re-unwound at hits 2^k only).
void BM_CaptureCachedSite(benchmark::State& state) {
  Capturer c(UnwindPolicy::Sampled);
  uint64_t unwound = 0;
  for (auto _ : state) unwound += launch(c, 0x1000).unwound;
  state.counters["unwound"] = static_cast<double>(unwound);
  report_shape(state);
}
BENCHMARK(BM_CaptureCachedSite);

// First sight: every launch is a new site, so every launch is unwound and its stack looked up.
void BM_CaptureFirstSight(benchmark::State& state) {
  Capturer c(UnwindPolicy::Sampled);
  uint64_t site = 0x1000;
  for (auto _ : state) launch(c, ++site);
  report_shape(state);
}
BENCHMARK(BM_CaptureFirstSight);

// A training run: `steps` steps of `sites` distinct launch sites each (a GPT step launches about
// 420 kernels from about as many sites), with a fresh capture per run, so the mix of first sights,
// power-of-two re-unwinds and cached hits is that of a real run of this length.
void BM_CaptureTrainingRun(benchmark::State& state) {
  const int steps = static_cast<int>(state.range(0)), sites = static_cast<int>(state.range(1));
  uint64_t launches = 0, unwound = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto c = std::make_unique<Capturer>(UnwindPolicy::Sampled);
    state.ResumeTiming();
    for (int s = 0; s < steps; s++)
      for (int k = 0; k < sites; k++) unwound += launch(*c, 0x1000 + static_cast<uint64_t>(k) * 64).unwound;
    launches += static_cast<uint64_t>(steps) * static_cast<uint64_t>(sites);
    state.PauseTiming();
    c.reset();
    state.ResumeTiming();
  }
  state.counters["per_launch"] = benchmark::Counter(static_cast<double>(launches), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["unwound_pct"] = 100.0 * static_cast<double>(unwound) / static_cast<double>(launches);
  report_shape(state);
}
BENCHMARK(BM_CaptureTrainingRun)->Args({100, 420})->Args({1000, 420})->Unit(benchmark::kMillisecond);

// What the launch callback does around the capture (Recorder::on_launch): time it, encode the
// launch record and append it to the profile's pending chunk (flushed outside the timing).
void BM_LaunchCallbackCachedSite(benchmark::State& state) {
  Capturer c(UnwindPolicy::Sampled);
  uint64_t capture_ns = 0, n = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    StackCapture::Result st = launch(c, 0x1000);
    LaunchRecord rec;
    rec.correlation_id = static_cast<uint32_t>(++n);
    rec.tid = 1;
    rec.timestamp = n * 1000;
    rec.stack_id = st.stack_id;
    rec.api = 211;
    rec.native_unwound = st.unwound;
    c.writer.add(rec);
    capture_ns += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    if (n % 65536 == 0) {
      state.PauseTiming();
      c.writer.flush();
      state.ResumeTiming();
    }
  }
  report_shape(state);
}
BENCHMARK(BM_LaunchCallbackCachedSite);

// The autograd tracking (issue 23) in the same callback, against a fake libtorch whose functions
// behave like torch 2.x's (thread-local sequence number and graph task, a current node): the added
// cost per launch of a forward launch, a backward launch, and of none when torch is not loaded.
namespace fake_torch {
struct Node {
  void* vptr = nullptr;
  void* weak[2] = {nullptr, nullptr};
  uint64_t sequence_nr = 0, topological_nr = 0;
  bool has_parent = false;
  uint64_t thread_id = 1;
};
thread_local uint64_t sequence = 0;
thread_local int graph_task = -1;
thread_local std::shared_ptr<Node> current;
uint64_t peek() { return sequence; }
uint64_t thread_id() { return 1; }
int graph_task_id() { return graph_task; }
std::shared_ptr<void> current_node() { return current; }
TorchApi api() {
  TorchApi a;
  a.peek = peek;
  a.thread_id = thread_id;
  a.graph_task_id = graph_task_id;
  a.current_node = current_node;
  a.node_layout = true;
  a.version = "2.11.0";
  a.library = "fake";
  return a;
}
}  // namespace fake_torch

enum class Pass { Forward, Backward };

// What Recorder::on_launch does with the tracker: capture, ask the tracker, write the launch record.
void launch_callback_loop(benchmark::State& state, AutogradTracker* tracker, Pass pass) {
  Capturer c(UnwindPolicy::Sampled);
  uint64_t n = 0;
  auto node = std::make_shared<fake_torch::Node>();
  // The nodes of the last 4,000 forward launches (the caller made 4,096 before the loop).
  const uint64_t first = fake_torch::sequence >= 4096 ? fake_torch::sequence - 4096 : 0;
  node->sequence_nr = first;
  if (pass == Pass::Backward) {
    fake_torch::graph_task = 1;
    fake_torch::current = node;
  }
  for (auto _ : state) {
    n++;
    if (pass == Pass::Forward) {
      fake_torch::sequence++;  // every launch from an op of its own: each one is remembered
    } else {
      // A backward call every 1000 launches (a new caller scan), 20 launches per node.
      if (n % 1000 == 0) fake_torch::graph_task++;
      if (n % 20 == 0) node->sequence_nr = first + (node->sequence_nr - first + 37) % 4000;
    }
    StackCapture::Result st = launch(c, 0x1000);
    LaunchRecord rec;
    rec.correlation_id = static_cast<uint32_t>(n);
    rec.tid = 1;
    rec.timestamp = n * 1000;
    rec.stack_id = tracker ? tracker->on_launch(st.stack_id) : st.stack_id;
    rec.api = 211;
    rec.native_unwound = st.unwound;
    c.writer.add(rec);
    if (n % 65536 == 0) {
      state.PauseTiming();
      c.writer.flush();
      state.ResumeTiming();
    }
  }
  fake_torch::graph_task = -1;
  fake_torch::current.reset();
  if (tracker) {
    AutogradSummaryRecord s = tracker->summary();
    state.counters["backward"] = static_cast<double>(s.backward_launches);
    state.counters["with_caller_pct"] = s.backward_launches ? 100.0 * s.with_caller / s.backward_launches : 0;
    state.counters["with_forward_pct"] = s.with_node ? 100.0 * s.with_forward / s.with_node : 0;
  }
  report_shape(state);
}

// Today's callback in the same loop, without the tracker: the baseline of the three below.
void BM_LaunchAutogradBaseline(benchmark::State& state) { launch_callback_loop(state, nullptr, Pass::Forward); }
BENCHMARK(BM_LaunchAutogradBaseline);

void BM_LaunchAutogradNoTorch(benchmark::State& state) {
  ProfileWriter w;
  StringTable strings{w};
  AutogradTracker tracker(w, strings);
  tracker.init(/*python=*/true, [](const std::string&) {});  // finds no libtorch_cpu.so: inactive
  launch_callback_loop(state, &tracker, Pass::Forward);
}
BENCHMARK(BM_LaunchAutogradNoTorch);

void BM_LaunchAutogradForward(benchmark::State& state) {
  ProfileWriter w;
  std::string error;
  w.open_fd(::open("/dev/null", O_WRONLY | O_CLOEXEC), &error);
  StringTable strings{w};
  AutogradTracker tracker(w, strings);
  tracker.init_with(fake_torch::api(), /*python=*/true, [](const std::string&) {});
  launch_callback_loop(state, &tracker, Pass::Forward);
}
BENCHMARK(BM_LaunchAutogradForward);

// Backward launches while a Python thread sits in a fake torch/autograd/graph.py's
// _engine_run_backward (capture_bench.py parks one there): its stack is found once per backward call.
void BM_LaunchAutogradBackward(benchmark::State& state) {
  ProfileWriter w;
  std::string error;
  w.open_fd(::open("/dev/null", O_WRONLY | O_CLOEXEC), &error);
  StringTable strings{w};
  AutogradTracker tracker(w, strings);
  tracker.init_with(fake_torch::api(), /*python=*/true, [](const std::string&) {});
  {  // forward launches first, so that the nodes' forward stacks are there
    Capturer c(UnwindPolicy::Sampled);
    for (int i = 0; i < 4096; i++) {
      fake_torch::sequence++;
      tracker.on_launch(launch(c, 0x1000).stack_id);
    }
  }
  launch_callback_loop(state, &tracker, Pass::Backward);
}
BENCHMARK(BM_LaunchAutogradBackward);

// Recurses `depth` native frames (no tail calls, no inlining), then runs the benchmarks.
__attribute__((noinline)) int descend(int depth, int argc, char** argv) {
  if (depth == 0) {
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
  }
  int r = descend(depth - 1, argc, argv);
  benchmark::DoNotOptimize(r);
  return r + 1;
}

}  // namespace
}  // namespace aiflame

// Called without the GIL (ctypes.CDLL, like PyTorch around its launches) at the Python depth under test.
extern "C" int aiflame_bench_run(int argc, char** argv, int native_depth) {
  aiflame::PythonFrames frames;
  aiflame::with_gil([&] { frames.init(); });
  aiflame::RawPyFrame py[256];
  aiflame::g_python_frames = frames.capture(py, 256);
  if (aiflame::g_python_frames == 0) return -1;  // the in-place walk is off: nothing to measure
  return aiflame::descend(native_depth, argc, argv) >= 0 ? 0 : 1;
}

// The caller thread of a backward call: parked outside the interpreter with the GIL released.
namespace {
std::atomic<int> g_parked{0}, g_release{0};
}
extern "C" int aiflame_bench_park() {
  g_parked = 1;
  while (!g_release) usleep(1000);
  return 0;
}
extern "C" int aiflame_bench_parked() { return g_parked.load(); }
extern "C" void aiflame_bench_unpark() { g_release = 1; }
