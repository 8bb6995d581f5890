// Entry point of libaiflame_cupti.so: the CUDA driver calls InitializeInjection() from cuInit when
// CUDA_INJECTION64_PATH names this library. Nothing here may throw or stop the program.
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include <atomic>

#include "record/attach.h"
#include "record/cupti/cupti_backend.h"
#include "record/crash_report.h"
#include "record/debug_log.h"
#include "record/module_map.h"
#include "record/recorder.h"

namespace aiflame {
namespace {

// Leaked on purpose: they must outlive every static destructor and late CUDA callback.
Recorder* g_recorder = nullptr;
CuptiBackend* g_backend = nullptr;
pid_t g_pid = 0;
decltype(&::cuptiGetTimestamp) g_timestamp = nullptr;

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
  debug("at exit: %llu launches, %llu samples so far", (unsigned long long)g_recorder->launches.load(),
        (unsigned long long)g_recorder->samples.load());
  g_recorder->stop_collector();
  if (g_backend) g_backend->stop();
  uint64_t kernels = g_recorder->kernels, samples = g_recorder->samples;
  if (kernels > 0 && samples == 0 && g_recorder->options().pc_sampling && g_recorder->options().period_log2 &&
      !g_recorder->sampling_declined)
    g_recorder->warn("kernels ran but no GPU sample came; some GPUs sample nothing at an explicit period: try --period default");
  uint64_t ts = 0;
  if (g_timestamp) g_timestamp(&ts);
  g_recorder->finish(ts);
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
  p.backend = "cupti";
  p.tool_version = AIFLAME_VERSION;
  auto env_int = [](const char* name, int32_t dflt) {
    const char* v = std::getenv(name);
    return v && *v ? static_cast<int32_t>(std::atoi(v)) : dflt;
  };
  p.rank = env_int("RANK", env_int("OMPI_COMM_WORLD_RANK", env_int("PMI_RANK", -1)));
  p.local_rank = env_int("LOCAL_RANK", env_int("OMPI_COMM_WORLD_LOCAL_RANK", -1));
  p.world_size = env_int("WORLD_SIZE", env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 0)));
  return p;
}

// Nothing can be recorded (no usable libcupti): one line on stderr, and a profile that holds only the
// process and that warning, so `aiflame record` and `aiflame report` say why it is empty.
int run_unprofiled(const RecordOptions& opt, const ProcessRecord& p, const std::string& why) {
  Recorder rec;
  std::string err;
  if (!rec.start(opt, p, &err)) {
    std::fprintf(stderr, "aiflame: %s; the program runs on unprofiled\n", why.c_str());
    return 1;
  }
  rec.warn(why + "; the program runs on unprofiled");
  rec.finish(0);
  return 1;
}

int initialize() {
  RecordOptions opt = record_options_from_env();
  if (debug_enabled()) install_crash_report();
  ProcessRecord p = process_record(opt);
  CuptiApi api;
  std::string err;
  if (!load_cupti(&api, &err)) return run_unprofiled(opt, p, err);
  if (api.version < kCuptiApiMinimum)
    return run_unprofiled(opt, p, api.library_path + " has CUPTI API version " + std::to_string(api.version) +
                                      "; aiflame reads the records of CUDA 12.0 (API " + std::to_string(kCuptiApiMinimum) +
                                      ") and newer: run with a newer CUDA runtime or point AIFLAME_CUPTI at a newer libcupti");
  if (api.version / 10000 > CUPTI_API_VERSION / 10000)
    std::fprintf(stderr, "aiflame: %s (CUPTI API %u) is newer than the CUPTI %d aiflame was built with; if kernel times "
                 "look wrong, rebuild aiflame against the newer CUDA headers\n",
                 api.library_path.c_str(), api.version, CUPTI_API_VERSION / 10000);
  api.cuptiGetTimestamp(&p.start_timestamp);
  p.backend_version = api.version;

  auto* rec = new Recorder();
  if (!rec->start(opt, p, &err)) {
    std::fprintf(stderr, "aiflame: %s; the program runs on unprofiled\n", err.c_str());
    delete rec;
    return 1;
  }
  rec->stacks().init(opt.unwind, opt.python, opt.unwind == UnwindPolicy::Sampled ? opt.unstable_sample : 1);
  skip_frames_of(rec->stacks(), "libaiflame_cupti");
  skip_frames_of(rec->stacks(), "libcupti.so");
  skip_frames_of(rec->stacks(), "libcuda.so");
  rec->write_modules_if_changed();
  g_recorder = rec;
  g_pid = getpid();
  g_timestamp = api.cuptiGetTimestamp;
  auto* backend = new CuptiBackend(*rec, api);
  if (backend->start()) {
    g_backend = backend;
    backend->start_window_thread();
  }
  rec->start_collector([] { if (g_backend) g_backend->drain_all(); });
  std::atexit(at_exit);
  debug("started: %s (CUPTI API %u), writing %s.%d", api.library_path.c_str(), api.version, opt.output.c_str(), (int)getpid());
  return 1;
}

}  // namespace

// For attach.cpp: the same process record and skipped frames as a recording started with the program.
ProcessRecord injection_process_record(const RecordOptions& opt) { return process_record(opt); }
void injection_skip_own_frames(StackCapture& st) {
  for (const char* lib : {"libaiflame_cupti", "libcupti.so", "libcuda.so"}) skip_frames_of(st, lib);
}

}  // namespace aiflame

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::once_flag once;
  static int result = 1;
  std::call_once(once, [] {
    try {
      result = aiflame::initialize();
    } catch (...) {
      std::fprintf(stderr, "aiflame: internal error while starting; the program runs on unprofiled\n");
    }
  });
  return result;
}
