// The launch-capture benchmark, run inside a real CPython: capture_bench.py calls, 20 Python frames
// deep and with the GIL released like PyTorch around a launch, aiflame_bench_run (which validates
// PythonFrames' in-place layout under the GIL first). That recurses 40 native frames through three
// libraries built from tests/record/unwind/chain.cpp (without frame pointers, with them, with them
// and no CFI: PyTorch's mix) and runs the Google Benchmark loop at the bottom. Every benchmark
// therefore captures a real stack: 20 interpreter frames walked in place, and a native stack of the
// 40 frames, ctypes, libffi and the interpreter below them (the probe's own frames are trimmed, as
// the recorder trims its own), unwound at every launch.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "profile/profile_writer.h"
#include "util/hot_pages.h"
#include "util/static_tls.h"
#include "record/autograd/autograd_tracker.h"
#include "record/module_map.h"
#include "record/measure/capture_stats.h"
#include "record/python_frames.h"
#include "record/recorder.h"
#include "record/stack_capture.h"
#include "record/string_table.h"
#include "record/unwind/object_table.h"
#include "record/unwind/unwinder.h"

extern "C" int chain_nofp(int depth, int (*cb)(void*), void* arg);

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

// The call sites of every capture, like the driver callback reached from four call paths of a
// training step: every launch is unwound, so the four paths give four stacks, each interned once.
template <int Path>
__attribute__((noinline)) StackCapture::Result launch_from(Capturer& c, uint64_t site) {
  StackCapture::Result r = c.capture.capture(site);
  benchmark::DoNotOptimize(r);
  return r;
}
using LaunchFn = StackCapture::Result (*)(Capturer&, uint64_t);
constexpr LaunchFn kPaths[4] = {launch_from<0>, launch_from<1>, launch_from<2>, launch_from<3>};
StackCapture::Result launch(Capturer& c, uint64_t i) { return kPaths[i & 3](c, 0x1000 + (i & 3)); }


// on_launch's call sites, four paths as launch_from.
template <int Path>
__attribute__((noinline)) void on_launch_from(Recorder& r, uint32_t corr, uint64_t site) {
  r.on_launch(211, corr, site, corr * 1000ull, 0);
  r.on_launch_exit();
  benchmark::ClobberMemory();
}
using OnLaunchFn = void (*)(Recorder&, uint32_t, uint64_t);
constexpr OnLaunchFn kOnLaunchPaths[4] = {on_launch_from<0>, on_launch_from<1>, on_launch_from<2>, on_launch_from<3>};

int g_python_frames = 0;  // what PythonFrames sees at the bottom, reported with every benchmark
int g_native_frames = 0;  // what the launch's native walk returns below the capture

void report_shape(benchmark::State& state) {
  state.counters["py_frames"] = g_python_frames;
  state.counters["native_frames"] = g_native_frames;
}

// Until the background thread has built the rows of every object on the stack, a launch falls back
// to backtrace(): launch until 1000 in a row took the fast walk (the steady state being measured).
uint64_t warm_up(Capturer& c) {
  uint64_t quiet = 0, i = 0;
  for (int spins = 0; quiet < 1000 && spins < 100000; spins++) {
    uint64_t before = c.capture.fallbacks();
    launch(c, i++);
    if (c.capture.fallbacks() != before) {
      quiet = 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else {
      quiet++;
    }
  }
  return c.capture.fallbacks();
}

// The frames a capture keeps: the walk from here less its leading frames in this library.
// The native frames a launch's capture returned (below the probe's own frames): one launch with the
// breakdown on. (A walk of its own from the benchmark's frame is not the launches' walk: with the
// benchmark function compiled into another shape it ended at its realigned frame, 2 frames.)
int captured_native_frames(Capturer& c) {
  const bool was = CaptureStats::on();
  CaptureStats::enable();
  CaptureStats& cs = CaptureStats::instance();
  cs.reset();
  launch(c, 0);
  const int n = static_cast<int>(cs.native_frames.load());
  cs.reset();
  if (!was) CaptureStats::disable();
  return n;
}

// Every launch timed on its own (steady_clock around it, the clock's own cost measured and taken
// off): the distribution whose median and p99 the issue budgets. The last run's samples are kept.
std::vector<double> g_launch_ns;
double g_clock_ns = 0;
uint64_t g_warmup_fallbacks = 0, g_steady_fallbacks = 0;

void BM_CaptureEveryLaunch(benchmark::State& state) {
  Capturer c(UnwindPolicy::Always);
  g_warmup_fallbacks = warm_up(c);
  g_native_frames = captured_native_frames(c);
  std::vector<double> clock;
  for (int i = 0; i < 10000; i++) {
    auto t0 = std::chrono::steady_clock::now();
    auto t1 = std::chrono::steady_clock::now();
    clock.push_back(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
  }
  std::nth_element(clock.begin(), clock.begin() + clock.size() / 2, clock.end());
  g_clock_ns = clock[clock.size() / 2];
  std::vector<double> ns;
  ns.reserve(static_cast<size_t>(state.max_iterations));
  uint64_t i = 0, before = c.capture.fallbacks();
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    launch(c, i++);
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) - g_clock_ns);
  }
  g_steady_fallbacks = c.capture.fallbacks() - before;
  g_launch_ns = std::move(ns);
  state.counters["fallbacks"] = static_cast<double>(g_steady_fallbacks);
  report_shape(state);
}
BENCHMARK(BM_CaptureEveryLaunch)->Iterations(200000);


// Cold caches (issue 22): between two launches of a training loop PyTorch and the interpreter run
// thousands of instructions over a lot of memory, so on the H100 machine every line and page the
// launch path touches missed (AIFLAME_LAB=capture_stats there: 3.8-4.3 us per launch against 0.35 us
// here with hot caches). The Evictor does the same between two timed launches, outside the timing:
// it reads an 8 MiB slice of a 256 MiB buffer (one load per 64-byte line; the slice moves on each
// time, so the 32 MiB L3 is refilled every four launches) and one line of each of 4,096 random pages
// (twice the second-level TLB's reach).
struct Evictor {
  static constexpr size_t kBytes = size_t{256} << 20, kPages = 4096;
  // AIFLAME_BENCH_EVICT_MIB (default 8, at most 256): the slice read before each launch. At 8 MiB the
  // lines of the previous launch mostly survive in this machine's 32 MiB L3 (the slice evicts older
  // lines first); at 64 they do not, as between two launches of a framework on the H100.
  const size_t kSlice = [] {
    const char* e = std::getenv("AIFLAME_BENCH_EVICT_MIB");
    size_t mib = e ? std::strtoul(e, nullptr, 10) : 8;
    return std::clamp<size_t>(mib, 1, 256) << 20;
  }();
  uint8_t* buf = nullptr;
  size_t pos = 0;
  uint64_t rng = 0x9e3779b97f4a7c15ULL;
  uint64_t sink = 0;
  Evictor() {
    void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    buf = static_cast<uint8_t*>(p);
    madvise(buf, kBytes, MADV_NOHUGEPAGE);  // 4 KiB pages, as a framework's heap mostly is
    for (size_t i = 0; i < kBytes; i += 4096) buf[i] = static_cast<uint8_t>(i >> 12);
  }
  ~Evictor() {
    if (buf) munmap(buf, kBytes);
  }
  Evictor(const Evictor&) = delete;
  Evictor& operator=(const Evictor&) = delete;
  void run() {
    if (!buf) return;
    uint64_t s = 0;
    for (size_t i = 0; i < kSlice; i += 64) s += buf[pos + i];
    pos = (pos + kSlice) % kBytes;
    if (pos + kSlice > kBytes) pos = 0;
    for (size_t i = 0; i < kPages; i++) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      s += buf[(rng % (kBytes / 4096)) * 4096 + (rng >> 52) % 64 * 64];
    }
    sink += s;
    benchmark::DoNotOptimize(sink);
  }
};

double clock_cost_ns() {
  std::vector<double> clock;
  for (int i = 0; i < 10000; i++) {
    auto t0 = std::chrono::steady_clock::now();
    auto t1 = std::chrono::steady_clock::now();
    clock.push_back(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
  }
  std::nth_element(clock.begin(), clock.begin() + clock.size() / 2, clock.end());
  return clock[clock.size() / 2];
}

std::vector<double> g_cold_ns;  // BM_CaptureCold's launches, each timed alone

// Each iteration i of the benchmark: untimed(i), caches and TLB evicted, rewarm(i) (what the
// program itself touches right before its launch), then timed(i) timed alone; ns per iteration, the
// clock's own cost taken off.
constexpr auto kNothing = [](uint64_t) {};
template <class Untimed, class Timed, class Rewarm = decltype(kNothing)>
std::vector<double> time_cold(benchmark::State& state, Untimed untimed, Timed timed, Rewarm rewarm = kNothing) {
  Evictor ev;
  const double clock = clock_cost_ns();
  std::vector<double> ns;
  uint64_t i = 0;
  for (auto _ : state) {
    state.PauseTiming();
    untimed(i);
    ev.run();
    rewarm(i);
    state.ResumeTiming();
    auto t0 = std::chrono::steady_clock::now();
    timed(i++);
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) - clock);
  }
  return ns;
}

// The capture alone (as BM_CaptureEveryLaunch), caches and TLB evicted before every launch.
void BM_CaptureCold(benchmark::State& state) {
  Capturer c(UnwindPolicy::Always);
  warm_up(c);
  g_cold_ns = time_cold(state, kNothing, [&](uint64_t i) { launch(c, i); });
  report_shape(state);
}
BENCHMARK(BM_CaptureCold)->Iterations(3000);

// Cold as BM_CaptureCold, from four call paths that differ as a training loop's launches do: the
// outer frames shared, then 1, 3, 6 or 10 links of the chain libraries (a middle part of other
// functions and another depth at each launch), then the capture's own frames (at another depth each
// time). BM_CaptureCold's paths differ only in one frame next to the capture (issue 22).
int capture_at_bottom(void* c) {
  StackCapture::Result r = static_cast<Capturer*>(c)->capture.capture(0x2000);
  benchmark::DoNotOptimize(r);
  return 0;
}
constexpr int kMixedDepths[4] = {0, 2, 5, 9};
void launch_mixed(Capturer& c, uint64_t i) { chain_nofp(kMixedDepths[i & 3], capture_at_bottom, &c); }
std::vector<double> g_cold_mixed_ns;

void BM_CaptureColdMixed(benchmark::State& state) {
  Capturer c(UnwindPolicy::Always);
  warm_up(c);
  for (uint64_t i = 0; i < 1000; i++) launch_mixed(c, i);
  g_cold_mixed_ns = time_cold(state, kNothing, [&](uint64_t i) { launch_mixed(c, i); });
  report_shape(state);
}
BENCHMARK(BM_CaptureColdMixed)->Iterations(3000);


// A pool's new thread (XLA's on the H200: 8% of jax_train.py's launches on stacks new to their
// thread, their walks 32 us, 28.6 of it in lookups): each iteration a fresh thread launches once from
// elsewhere (its tables allocated, the thread's own outer frames cached), evicts caches and TLB, then
// launches from the chain libraries ten links deep, timed: frames its cache lacks, which another
// thread walked first. Shared rows off (arg 0) and on (1).
std::vector<double> g_new_thread_ns;
std::string g_new_thread_lookups;
std::string fmt_lookups(uint64_t lookups, uint64_t shared, double us) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%llu lookups, %llu of them shared, %.3f us in them", static_cast<unsigned long long>(lookups),
                static_cast<unsigned long long>(shared), us);
  return buf;
}
// TSC ticks per nanosecond, over 20 ms.
double clock_ticks_per_ns() {
  const uint64_t t0 = __rdtsc();
  const auto c0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const uint64_t t1 = __rdtsc();
  const auto c1 = std::chrono::steady_clock::now();
  return static_cast<double>(t1 - t0) / static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(c1 - c0).count());
}
void BM_NewThreadCaptureCold(benchmark::State& state) {
  Capturer c(UnwindPolicy::Always);
  warm_up(c);
  std::thread([&] { launch_mixed(c, 3); }).join();  // the chain's frames walked once, on another thread
  Evictor ev;
  const double clock = clock_cost_ns();
  std::vector<double> ns;
  for (auto _ : state) {
    double t = 0;
    std::thread([&] {
      benchmark::DoNotOptimize(c.capture.capture(0x3000));
      ev.run();
      auto t0 = std::chrono::steady_clock::now();
      launch_mixed(c, 3);
      auto t1 = std::chrono::steady_clock::now();
      t = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) - clock;
    }).join();
    ns.push_back(t);
  }
  // One more with the capture stats on: the lookups of that walk, and how many the shared rows gave.
  CaptureStats::enable();
  CaptureStats& cs = CaptureStats::instance();
  std::thread([&] {
    benchmark::DoNotOptimize(c.capture.capture(0x3000));
    cs.reset();
    ev.run();
    launch_mixed(c, 3);
  }).join();
  const double us_per_tick = 1e-3 / (static_cast<double>(clock_ticks_per_ns()));
  g_new_thread_lookups = fmt_lookups(cs.cache_misses.load(), cs.shared_hits.load(),
                                             static_cast<double>(cs.ticks[CaptureStats::UnwindLookup].load()) * us_per_tick);
  CaptureStats::disable();
  g_new_thread_ns = std::move(ns);
}
BENCHMARK(BM_NewThreadCaptureCold)->Iterations(400);

// A PcCache miss: the row of a return address found in its object's rows, with caches cold. The
// object with the most rows in this process (the H100's libtorch_cuda.so has millions: more levels
// still), a random code offset each time; the plain binary search (arg 0) against the page index (1).
std::vector<double> g_lookup_ns[2];
std::string g_lookup_object;
void BM_RowLookupCold(benchmark::State& state) {
  const bool paged = state.range(0) == 1;
  unwind::ObjectTable::instance().build_all_now();
  const unwind::Snapshot* snap = unwind::ObjectTable::instance().snapshot();
  const unwind::Object* big = nullptr;
  for (const auto& o : snap->objects)
    if (const auto* r = o->rows.load(); r && (!big || r->size() > big->rows.load()->size())) big = o.get();
  if (!big || big->rows.load()->empty()) {
    state.SkipWithError("no rows");
    return;
  }
  const auto& rows = *big->rows.load();
  const auto& pages = *big->pages;
  g_lookup_object = big->path.substr(big->path.rfind('/') + 1) + ", " + std::to_string(rows.size()) + " rows";
  Evictor ev;
  const double clock = clock_cost_ns();
  uint64_t rng = 12345;
  std::vector<double> ns;
  for (auto _ : state) {
    state.PauseTiming();
    ev.run();
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    uint32_t loc = rows.front().loc + static_cast<uint32_t>(rng % (rows.back().loc - rows.front().loc + 1));
    state.ResumeTiming();
    auto t0 = std::chrono::steady_clock::now();
    const unwind::FrameRow* r = paged ? unwind::find_row_paged(rows.data(), rows.size(), pages.data(), pages.size(), loc)
                                      : unwind::find_row(rows.data(), rows.size(), loc);
    benchmark::DoNotOptimize(r);
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) - clock);
  }
  g_lookup_ns[paged] = std::move(ns);
}
BENCHMARK(BM_RowLookupCold)->Arg(0)->Arg(1)->Iterations(2000);

// The native walk alone (no Python frames, no interning), from the same depth.
__attribute__((noinline)) int walk_here() {
  uint64_t frames[256];
  unwind::WalkStatus st;
  int n = unwind::unwind_here(frames, 256, &st);
  benchmark::DoNotOptimize(frames);
  return st.needs_fallback() ? -1 : n;
}
void BM_NativeWalkOnly(benchmark::State& state) {
  unwind::ObjectTable::instance().build_all_now();
  int n = 0;
  for (auto _ : state) n = walk_here();
  state.counters["frames"] = n;
}
BENCHMARK(BM_NativeWalkOnly);

// glibc's backtrace() from the same depth, side by side (the unwinder of the fallback, and of the
// recorder before issue 22).
__attribute__((noinline)) int backtrace_here() {
  void* frames[256];
  int n = backtrace(frames, 256);
  benchmark::DoNotOptimize(frames);
  return n;
}
void BM_GlibcBacktraceOnly(benchmark::State& state) {
  int n = 0;
  for (auto _ : state) n = backtrace_here();
  state.counters["frames"] = n;
}
BENCHMARK(BM_GlibcBacktraceOnly);

// A training run: `steps` steps of `sites` launches each from the four paths, with a fresh capture
// per run (its per-thread and shared stack tables start empty), every launch unwound.
void BM_CaptureTrainingRun(benchmark::State& state) {
  const int steps = static_cast<int>(state.range(0)), sites = static_cast<int>(state.range(1));
  uint64_t launches = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto c = std::make_unique<Capturer>(UnwindPolicy::Always);
    state.ResumeTiming();
    for (int s = 0; s < steps; s++)
      for (int k = 0; k < sites; k++) launch(*c, static_cast<uint64_t>(k));
    launches += static_cast<uint64_t>(steps) * static_cast<uint64_t>(sites);
    state.PauseTiming();
    c.reset();
    state.ResumeTiming();
  }
  state.counters["per_launch"] = benchmark::Counter(static_cast<double>(launches), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  report_shape(state);
}
BENCHMARK(BM_CaptureTrainingRun)->Args({100, 420})->Unit(benchmark::kMillisecond);

// What the launch callback does around the capture (Recorder::on_launch): time it, encode the
// launch record and append it to the profile's pending chunk (flushed outside the timing).
void BM_LaunchCallback(benchmark::State& state) {
  Capturer c(UnwindPolicy::Always);
  warm_up(c);
  uint64_t capture_ns = 0, n = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    StackCapture::Result st = launch(c, n);
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
BENCHMARK(BM_LaunchCallback);

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

// NoTracker: on_launch without the autograd tracker (torch not loaded), the cold benchmarks' baseline.
// Bare: no tracker, no native stack, no Python frames (`--unwind off --no-python`, AIFLAME_AUTOGRAD=0):
// the launch record and the callback's bookkeeping alone, the floor under the capture.
enum class Pass { Forward, Backward, NoTracker, Bare };

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

// A tracker on the fake libtorch, its records written to /dev/null.
struct FakeTorchTracker {
  ProfileWriter w;
  StringTable strings{w};
  AutogradTracker tracker{w, strings};
  FakeTorchTracker() {
    std::string error;
    w.open_fd(::open("/dev/null", O_WRONLY | O_CLOEXEC), &error);
    tracker.init_with(fake_torch::api(), /*python=*/true, [](const std::string&) {});
  }
};

void BM_LaunchAutogradForward(benchmark::State& state) {
  FakeTorchTracker t;
  launch_callback_loop(state, &t.tracker, Pass::Forward);
}
BENCHMARK(BM_LaunchAutogradForward);

// Backward launches while a Python thread sits in a fake torch/autograd/graph.py's
// _engine_run_backward (capture_bench.py parks one there): its stack is found once per backward call.
void BM_LaunchAutogradBackward(benchmark::State& state) {
  FakeTorchTracker t;
  AutogradTracker& tracker = t.tracker;
  // Forward launches first, on another thread (as torch's forward thread): a thread whose first
  // launch is outside backward is a forward thread and is never asked for its graph task again, so
  // these launches on this thread would make every timed launch a forward one.
  std::thread([&] {
    Capturer c(UnwindPolicy::Sampled);
    for (int i = 0; i < 4096; i++) {
      fake_torch::sequence++;
      tracker.on_launch(launch(c, 0x1000).stack_id);
    }
  }).join();
  fake_torch::sequence = 4096;  // thread_local: the loop's nodes are the other thread's
  launch_callback_loop(state, &tracker, Pass::Backward);
}
BENCHMARK(BM_LaunchAutogradBackward);


// Recorder::on_launch itself, cold (issue 22): the capture, the autograd tracker on the fake libtorch
// (a forward launch from an op of its own: its stack is remembered), the launch record through the
// profile writer, while the collector thread adds a batch of 4,096 PC samples every 10 ms and flushes
// the file (to a temporary file, zstd as in a recording). Caches and TLB evicted before every launch.
std::vector<double> g_on_launch_ns, g_backward_ns, g_notracker_ns, g_bare_ns;
std::string g_stats_line, g_backward_stats_line;

// Backward (issue 23 item 5): the launching thread is an engine thread (graph task 1 from its first
// launch), each launch under one of 400 nodes whose forward launches another thread made first (400
// distinct forward stacks, as a training step's hundreds of nodes), a new graph task (a new backward
// call, its caller found again) every 400 launches.
constexpr uint32_t kColdNodes = 400;

void on_launch_cold(benchmark::State& state, bool stats, Pass pass = Pass::Forward) {
  auto dir = std::filesystem::temp_directory_path() / ("aiflame_bench_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  RecordOptions opt;
  opt.output = (dir / "cold.aiflame").string();
  opt.measure.capture_stats = stats;
  Recorder rec;
  std::string error;
  if (!rec.start(opt, ProcessRecord{}, &error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  with_gil([&] {
    rec.stacks().init(pass == Pass::Bare ? UnwindPolicy::Off : UnwindPolicy::Always, /*python=*/pass != Pass::Bare);
  });
  uint64_t lo, hi;
  if (find_module_range("libaiflame_capture_bench", &lo, &hi)) rec.stacks().add_skip_range(lo, hi);
  if (pass != Pass::NoTracker && pass != Pass::Bare) rec.autograd().init_with(fake_torch::api(), /*python=*/true, [](const std::string&) {});
  std::vector<std::shared_ptr<fake_torch::Node>> nodes;
  if (pass == Pass::Backward) {
    std::thread([&] {  // the forward thread: node k made, then its op's launch (stack id 5000 + k)
      for (uint32_t k = 0; k < kColdNodes; k++) {
        nodes.push_back(std::make_shared<fake_torch::Node>());
        nodes.back()->sequence_nr = fake_torch::sequence++;
        rec.autograd().on_launch(5000 + k, rec.autograd().before_capture());
      }
    }).join();
    fake_torch::graph_task = 1;
  }
  auto set_node = [&](uint64_t i) {
    if (pass != Pass::Backward) return;
    fake_torch::current = nodes[i % kColdNodes];
    if (i % kColdNodes == 0) fake_torch::graph_task++;
  };
  PcBatchRecord batch;
  batch.samples.resize(4096);
  for (size_t k = 0; k < batch.samples.size(); k++)
    batch.samples[k] = PcSample{static_cast<uint32_t>(k % 97 + 1), 0x1234, k * 16, static_cast<uint32_t>(k % 12),
                                static_cast<uint32_t>(k % 7 + 1), static_cast<uint32_t>(k)};
  rec.start_collector([&] {
    batch.timestamp += 10000000;
    rec.add_sample_batch(batch, batch.samples.size(), batch.samples.size());
  });
  // The warm-up of BM_CaptureEveryLaunch (rows built, every path's stack interned), here on_launch's.
  uint32_t corr = 0;
  auto launch_cb = [&](uint64_t i) {
    if (pass == Pass::Forward) fake_torch::sequence++;
    kOnLaunchPaths[i & 3](rec, ++corr, 0x1000 + (i & 3));
  };
  for (uint64_t i = 0; i < 20000; i++) {
    set_node(i);
    launch_cb(i);
  }
  if (stats) CaptureStats::instance().reset();  // the timed launches only
  // set_node: the engine's doing (NodeGuard), not the launch path's. Between it and the launch the
  // engine runs the node's apply(), which reads the node and its control block and torch's
  // thread-locals: those are warm at a real backward launch, whatever else the step evicted.
  auto rewarm = [&](uint64_t) {
    if (pass != Pass::Backward) return;
    std::shared_ptr<fake_torch::Node> n = fake_torch::current;
    benchmark::DoNotOptimize(n->sequence_nr);
    benchmark::DoNotOptimize(fake_torch::graph_task);
  };
  std::vector<double> ns = time_cold(state, set_node, launch_cb, rewarm);
  rec.stop_collector();
  fake_torch::graph_task = -1;
  fake_torch::current.reset();
  if (stats) {
    (pass == Pass::Forward ? g_stats_line : g_backward_stats_line) = CaptureStats::instance().line();
    CaptureStats::disable();
  } else {
    (pass == Pass::Forward    ? g_on_launch_ns
     : pass == Pass::Backward ? g_backward_ns
     : pass == Pass::Bare     ? g_bare_ns
                              : g_notracker_ns) = std::move(ns);
  }
  rec.finish(0);
  std::filesystem::remove_all(dir);
  report_shape(state);
}

void BM_OnLaunchCold(benchmark::State& state) { on_launch_cold(state, false); }
BENCHMARK(BM_OnLaunchCold)->Iterations(3000);
// The same with AIFLAME_LAB=capture_stats on: its breakdown by part, as the H100 run printed it.
void BM_OnLaunchColdStats(benchmark::State& state) { on_launch_cold(state, true); }
BENCHMARK(BM_OnLaunchColdStats)->Iterations(3000);
void BM_OnLaunchColdBackward(benchmark::State& state) { on_launch_cold(state, false, Pass::Backward); }
BENCHMARK(BM_OnLaunchColdBackward)->Iterations(3000);
void BM_OnLaunchColdBackwardStats(benchmark::State& state) { on_launch_cold(state, true, Pass::Backward); }
BENCHMARK(BM_OnLaunchColdBackwardStats)->Iterations(3000);
// The same launches with no tracker: what the tracker adds to a cold launch (issue 23 item 5).
void BM_OnLaunchColdNoTracker(benchmark::State& state) { on_launch_cold(state, false, Pass::NoTracker); }
BENCHMARK(BM_OnLaunchColdNoTracker)->Iterations(3000);
void BM_OnLaunchColdBare(benchmark::State& state) { on_launch_cold(state, false, Pass::Bare); }
BENCHMARK(BM_OnLaunchColdBare)->Iterations(3000);

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

// The benchmarks at the bottom of the native chain: 40 frames through three libraries (without
// frame pointers, with them, with them and no CFI; bench/CMakeLists.txt), then this library's.
int g_argc;
char** g_argv;
int run_benchmarks(void*) {
  unwind::ObjectTable::instance().snapshot();
  benchmark::Initialize(&g_argc, g_argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!g_launch_ns.empty())
    std::printf("per-launch capture: median %.3f us, p99 %.3f us (%d native + %d Python frames, every launch unwound)\n"
                "  (%zu launches, 4 call paths; steady_clock's own %.0f ns taken off each; backtrace() fallbacks: "
                "%llu while the rows were built, %llu in the timed launches)\n",
                percentile(g_launch_ns, 0.5) / 1000, percentile(g_launch_ns, 0.99) / 1000, g_native_frames,
                g_python_frames, g_launch_ns.size(), g_clock_ns, static_cast<unsigned long long>(g_warmup_fallbacks),
                static_cast<unsigned long long>(g_steady_fallbacks));
  auto cold = [](const char* what, const std::vector<double>& v) {
    if (!v.empty())
      std::printf("cold %s: median %.3f us, p99 %.3f us (%zu launches, caches and TLB evicted before each)\n", what,
                  percentile(v, 0.5) / 1000, percentile(v, 0.99) / 1000, v.size());
  };
  cold("per-launch capture", g_cold_ns);
  cold("per-launch on_launch", g_on_launch_ns);
  cold("per-launch backward on_launch", g_backward_ns);
  cold("per-launch on_launch without the autograd tracker", g_notracker_ns);
  cold("per-launch on_launch with no stack and no tracker (the floor)", g_bare_ns);
  cold("mixed-path capture", g_cold_mixed_ns);
  if (!g_stats_line.empty()) std::printf("cold on_launch, %s\n", g_stats_line.c_str());
  if (!g_backward_stats_line.empty()) std::printf("cold backward on_launch, %s\n", g_backward_stats_line.c_str());
  if (!g_new_thread_ns.empty())
    std::printf("cold capture on a new thread, frames another thread walked: median %.3f us (p99 %.3f; one walk: %s)\n",
                percentile(g_new_thread_ns, 0.5) / 1000, percentile(g_new_thread_ns, 0.99) / 1000,
                g_new_thread_lookups.c_str());
  if (!g_lookup_ns[0].empty() && !g_lookup_ns[1].empty())
    std::printf("cold row lookup (%s): binary search median %.3f us, p99 %.3f us; page index median %.3f us, p99 %.3f us\n",
                g_lookup_object.c_str(), percentile(g_lookup_ns[0], 0.5) / 1000, percentile(g_lookup_ns[0], 0.99) / 1000,
                percentile(g_lookup_ns[1], 0.5) / 1000, percentile(g_lookup_ns[1], 0.99) / 1000);
  return 0;
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
  aiflame::g_argc = argc;
  aiflame::g_argv = argv;
  std::printf("thread-locals in static TLS: %s\n", aiflame::thread_locals_static() ? "yes" : "no");
  // chain_nofp calls chain_fp calls chain_nocfi calls chain_nofp ...: native_depth links in all.
  chain_nofp(native_depth - 1, aiflame::run_benchmarks, nullptr);
  return 0;
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

