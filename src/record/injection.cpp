// Entry points of libaiflame_cupti.so: the CUDA driver calls InitializeInjection() from cuInit when
// CUDA_INJECTION64_PATH names this library; for a Level Zero program, the preloaded
// libaiflame_ze_preload.so calls aiflame_levelzero_initialize() after the program's first zeInit.
// The first runtime to arrive records the process (one backend per process: a second would need its
// own Recorder hub). Nothing here may throw or stop the program.
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <atomic>

#include "record/attach.h"
#include "record/crash_report.h"
#include "record/debug_log.h"
#include "record/duty_cycle.h"
#include "util/static_tls.h"
#include "util/tls_offsets.h"
#include "record/gpu_backend.h"
#include "record/module_map.h"
#include "record/recorder.h"
#include "util/hot_pages.h"

namespace aiflame {
namespace {

// Leaked on purpose: they must outlive every static destructor and late CUDA callback.
Recorder* g_recorder = nullptr;
GpuBackend* g_backend = nullptr;
std::atomic<bool> g_backend_started{false};
pid_t g_pid = 0;

std::string read_cmdline() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && s.back() == '\0') s.pop_back();
  for (char& c : s) if (c == '\0') c = ' ';
  return s;
}

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

void at_exit() {
  // A forked child that never exec'd shares our file descriptor: only the recording process finishes it.
  if (!g_recorder || getpid() != g_pid) return;
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  const Recorder::Counters& n = g_recorder->counters();
  debug("at exit: %llu launches, %llu samples so far", (unsigned long long)g_recorder->launch_totals().launches,
        (unsigned long long)n.samples.load());
  g_recorder->stop_collector();
  if (g_backend_started) g_backend->stop();
  uint64_t kernels = n.kernels, samples = n.samples;
  if (kernels > 0 && samples == 0 && g_recorder->options().pc_sampling && g_recorder->options().period_log2 &&
      !n.sampling_declined && g_backend && std::string(g_backend->name()) == "cupti")
    g_recorder->warn("kernels ran but no GPU sample came; some GPUs sample nothing at an explicit period: try --period default");
  g_recorder->finish(g_backend ? g_backend->timestamp() : 0);
  debug("profile written");
}

void skip_frames_of(StackCapture& st, const char* name) {
  uint64_t lo, hi;
  if (find_module_range(name, &lo, &hi)) st.add_skip_range(lo, hi);
}

ProcessRecord process_record(const RecordOptions& opt) {
  ProcessRecord p;
  p.pid = static_cast<uint32_t>(getpid());
  p.ppid = static_cast<uint32_t>(getppid());
  p.command = read_cmdline();
  p.hostname = hostname();
  p.start_realtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
  if (auto get = reinterpret_cast<int (*)(int*)>(dlsym(RTLD_DEFAULT, "cuDriverGetVersion"))) {
    int v = 0;
    if (get(&v) == 0) p.driver_version = static_cast<uint32_t>(v);
  }
  p.sampling_period_log2 = opt.period_log2;
  p.interval_ms = opt.interval_ms;
  if (opt.pc_sampling && opt.pc_mode == PcMode::Windows) {
    p.pc_mode = static_cast<uint32_t>(opt.pc_mode);
    p.windows_per_s = opt.windows_per_s;
    p.window_us = opt.window_us;
  }
  p.tool_version = AIFLAME_VERSION;
  LauncherRanks r = launcher_ranks_from_env();
  p.rank = r.rank;
  p.local_rank = r.local_rank;
  p.world_size = r.world_size;
  return p;
}

// Nothing can be recorded (no usable vendor library, e.g. no libcupti): one line on stderr, and a profile that holds only the
// process and that warning, so `aiflame record` and `aiflame report` say why it is empty.
int run_unprofiled(const RecordOptions& opt, const ProcessRecord& p, const std::vector<std::string>& option_warnings,
                   const std::string& why) {
  Recorder rec;
  std::string err;
  if (!rec.start(opt, p, &err)) {
    std::fprintf(stderr, "aiflame: %s; the program runs on unprofiled\n", why.c_str());
    return 1;
  }
  for (const auto& w : option_warnings) rec.warn(w);
  rec.warn(why + "; the program runs on unprofiled");
  rec.finish(0);
  return 1;
}

int initialize(GpuVendor vendor) {
  std::vector<std::string> option_warnings;
  RecordOptions opt = record_options_from_env(&option_warnings);
  install_crash_report();
  if (opt.duty_period_ms) {
    // Duty-cycled: windows opened from a thread of ours, CUPTI detached between them (duty_cycle.h).
    DutyRun run{opt, option_warnings, {}};
    std::thread([run] {
      pthread_setname_np(pthread_self(), "aiflame-duty");
      run_duty_cycle(run);
    }).detach();
    std::atexit(duty_cycle_at_exit);
    return 1;
  }
  ProcessRecord p = process_record(opt);
  auto* rec = new Recorder();
  std::string err;
  std::unique_ptr<GpuBackend> backend = make_gpu_backend(*rec, opt, &err, vendor);
  if (!backend) {
    delete rec;
    return run_unprofiled(opt, p, option_warnings, err);
  }
  p.backend = backend->name();
  p.backend_version = backend->version();
  p.start_timestamp = backend->timestamp();

  if (!rec->start(opt, p, &err)) {
    std::fprintf(stderr, "aiflame: %s; the program runs on unprofiled\n", err.c_str());
    backend.reset();
    delete rec;
    return 1;
  }
  for (const auto& w : option_warnings) rec->warn(w);
  rec->stacks().init(opt.unwind, opt.python, opt.unwind == UnwindPolicy::Sampled ? opt.unstable_sample : 1);
  skip_frames_of(rec->stacks(), "libaiflame_cupti");
  for (const char* lib : backend->runtime_libraries()) skip_frames_of(rec->stacks(), lib);
  rec->start_autograd(opt);
  rec->write_modules_if_changed();
  g_recorder = rec;
  g_pid = getpid();
  g_backend = backend.release();
  // Hot-page regions backed before the first launch can come (the collector keeps the stock from
  // then on): a thread that finds the stock empty gets a region of small pages for good
  // (util/hot_pages.h).
  hot_pages_stock();
  if (g_backend->start()) {
    g_backend_started = true;
    if (SamplingWindowControl* w = g_backend->sampling_windows()) w->start_window_thread();
  }
  rec->start_collector([] { if (g_backend_started) g_backend->drain(); });
  std::atexit(at_exit);
  debug("started: %s backend (API %u), writing %s.%d; thread-locals in static TLS: %s (reached by offset: %s)",
        g_backend->name(), g_backend->version(), opt.output.c_str(), (int)getpid(), thread_locals_static() ? "yes" : "no",
        tls::learn() ? "yes" : "no");
  return 1;
}

}  // namespace

// For attach.cpp: the same process record and skipped frames as a recording started with the program.
ProcessRecord injection_process_record(const RecordOptions& opt) { return process_record(opt); }
void injection_skip_own_frames(StackCapture& st) {
  for (const char* lib : {"libaiflame_cupti", "libcupti.so", "libcuda.so"}) skip_frames_of(st, lib);
}

}  // namespace aiflame

namespace aiflame {
namespace {

// The first runtime's call starts the recording; a later call of the other runtime gets one line.
int start_once(GpuVendor vendor) {
  static std::mutex mu;
  static int started = -1;  // the GpuVendor that started, -1: none yet
  static int result = 1;
  std::lock_guard<std::mutex> lock(mu);
  if (started < 0) {
    started = static_cast<int>(vendor);
    try {
      result = initialize(vendor);
    } catch (...) {
      std::fprintf(stderr, "aiflame: internal error while starting; the program runs on unprofiled\n");
    }
  } else if (started != static_cast<int>(vendor)) {
    const std::string line = std::string("this process uses both CUDA and Level Zero; only its ") +
                             (started == static_cast<int>(GpuVendor::Cuda) ? "CUDA" : "Level Zero") +
                             " work is recorded (one GPU backend per process)";
    if (g_recorder) g_recorder->warn(line);
    else std::fprintf(stderr, "aiflame: %s\n", line.c_str());
  }
  return result;
}

}  // namespace
}  // namespace aiflame

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  return aiflame::start_once(aiflame::GpuVendor::Cuda);
}

extern "C" __attribute__((visibility("default"))) int aiflame_levelzero_initialize(void) {
  return aiflame::start_once(aiflame::GpuVendor::LevelZero);
}
