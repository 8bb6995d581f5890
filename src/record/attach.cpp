// aiflame_attach: the entry point `aiflame record --pid` calls in the running program (see attach.h).
// It runs on a program thread that ptrace borrowed while it waited in a system call, so it does as
// little as it can there: no CUDA or CUPTI call (a driver lock could be held by that thread), just a
// check and a thread of its own, which does the rest.
#include "record/attach.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "record/gpu_backend.h"
#include "record/debug_log.h"
#include "record/duty_cycle.h"
#include "record/recorder.h"
#include "record/unwind/object_table.h"
#include "util/hot_pages.h"

namespace aiflame {

std::map<std::string, std::string> parse_attach_text(const char* text) {
  std::map<std::string, std::string> m;
  if (!text) return m;
  const char* p = text;
  while (*p) {
    const char* end = std::strchr(p, '\n');
    std::string line = end ? std::string(p, end) : std::string(p);
    auto eq = line.find('=');
    if (eq != std::string::npos && eq > 0) m[line.substr(0, eq)] = line.substr(eq + 1);
    if (!end) break;
    p = end + 1;
  }
  return m;
}

namespace {

struct Request {
  std::map<std::string, std::string> values;
  std::string status, stop;
  uint64_t duration_ms = 0;
  pid_t cli_pid = 0;
  const char* get(const char* name) const {
    auto it = values.find(name);
    return it == values.end() ? nullptr : it->second.c_str();
  }
};

void report(const std::string& path, const std::string& line) {
  if (path.empty()) return;
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  std::string l = line + "\n";
  (void)!write(fd, l.data(), l.size());
  close(fd);
}

bool driver_loaded() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);  // takes a reference: given back at once
  if (h) dlclose(h);
  return h != nullptr;
}

// One recording at a time. Leaked on purpose, like the start-up recording's: a launch callback that
// began before detaching may still hold a pointer, and per-thread caches are keyed by the address.
enum class State { Idle, Starting, Recording };
std::mutex g_mu;
State g_state = State::Idle;
Recorder* g_rec = nullptr;
GpuBackend* g_backend = nullptr;
AttachControl* g_attach = nullptr;
std::string g_status;
// Under g_mu. `finalize`: detach CUPTI (the program goes on); false at process exit, where CUPTI
// and the driver are being torn down and only the profile must be closed.
void finish_locked(const std::string& reason, bool finalize) {
  if (g_state != State::Recording) return;
  g_rec->stop_collector();
  uint64_t end = g_backend->timestamp();  // before cuptiFinalize: a CUPTI call after it would start CUPTI again
  if (finalize) g_attach->detach();
  else g_backend->stop();
  g_rec->finish(end);
  // The unwinder's builder thread (started with the stack capture): no launch walks a stack any more.
  if (finalize) unwind::ObjectTable::instance().stop_builder();
  debug("attach: detached (%s)", reason.c_str());
  report(g_status, "done " + reason);
  g_state = State::Idle;
}

void at_exit() {
  std::lock_guard<std::mutex> lock(g_mu);
  finish_locked("exit", /*finalize=*/false);
}

void refuse(const Request& r, const std::string& why) {
  unwind::ObjectTable::instance().stop_builder();  // started with the stack capture, if it was
  report(r.status, "refused " + why);
  std::lock_guard<std::mutex> lock(g_mu);
  g_state = State::Idle;
}

bool should_stop(const Request& r, std::chrono::steady_clock::time_point started, std::string* reason) {
  if (!r.stop.empty() && access(r.stop.c_str(), F_OK) == 0) return *reason = "stopped", true;
  if (r.duration_ms && std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(r.duration_ms))
    return *reason = "duration", true;
  if (r.cli_pid > 0 && kill(r.cli_pid, 0) != 0 && errno == ESRCH) return *reason = "cli-gone", true;
  return false;
}

// `record --pid --duty`: the windows of duty_cycle.h until told to stop; "started" at once (the
// first window waits for a context by itself).
void duty_session(const Request& r, const RecordOptions& opt, const std::vector<std::string>& warnings) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_state = State::Recording;
    static bool registered = false;
    if (!registered) registered = std::atexit(duty_cycle_at_exit) == 0;
  }
  report(r.status, "started");
  auto started = std::chrono::steady_clock::now();
  DutyRun run{opt, warnings, [&r, started](std::string* reason) { return should_stop(r, started, reason); }};
  std::string reason = run_duty_cycle(run);
  report(r.status, "done " + (reason.rfind("refused ", 0) == 0 ? "stopped" : reason));
  std::lock_guard<std::mutex> lock(g_mu);
  g_state = State::Idle;
}

void session(Request r) {
  // The program's signals are not ours to take (a Python SIGINT handler, a job's SIGTERM); threads
  // started from here (collector, CUPTI's) inherit the mask.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), "aiflame-attach");
  std::vector<std::string> names, option_warnings;  // the option variables given (AIFLAME_ATTACH_* are not options)
  for (const auto& [name, value] : r.values)
    if (name.rfind("AIFLAME_ATTACH_", 0) != 0) names.push_back(name);
  RecordOptions opt = parse_record_options([&r](const char* n) { return r.get(n); }, names, &option_warnings);

  // The libcupti named on aiflame's command line, else the one the program's own environment names.
  if (const char* e = std::getenv("AIFLAME_CUPTI"); opt.cupti_path.empty() && e) opt.cupti_path = e;
  if (opt.duty_period_ms) return duty_session(r, opt, option_warnings);
  auto* rec = new Recorder();
  std::string err;
  std::unique_ptr<GpuBackend> backend = make_gpu_backend(*rec, opt, &err);
  if (!backend) {
    delete rec;
    return refuse(r, "cupti " + err);
  }
  AttachControl* control = backend->attach_control();
  if (!control) {
    std::string why = std::string("backend the ") + backend->name() + " backend cannot attach to a running program";
    backend.reset();
    delete rec;
    return refuse(r, why);
  }
  size_t contexts = control->find_existing_contexts();
  if (contexts == 0) {
    backend.reset();
    delete rec;
    return refuse(r, "no-context the process has no CUDA context yet (it loaded the driver but made no CUDA call "
                     "that creates one): pass --wait to wait for one");
  }
  if (std::string why = control->cannot_detach(); !why.empty()) {
    backend.reset();
    delete rec;
    return refuse(r, "cupti " + why);
  }

  ProcessRecord p = injection_process_record(opt);
  p.backend = backend->name();
  p.backend_version = backend->version();
  p.start_timestamp = backend->timestamp();
  if (!rec->start(opt, p, &err)) {
    backend.reset();
    delete rec;
    return refuse(r, "output the process cannot write its profile: " + err);
  }
  rec->stacks().init(opt.unwind, opt.python, opt.unwind == UnwindPolicy::Sampled ? opt.unstable_sample : 1);
  for (const auto& w : option_warnings) rec->warn(w);
  injection_skip_own_frames(rec->stacks());
  rec->start_autograd(opt);
  rec->write_modules_if_changed();
  // Hot-page regions backed before the first launch can come (an attached program launches at once;
  // the collector keeps the stock from then on): a thread that finds the stock empty gets a region of
  // small pages for good (util/hot_pages.h).
  hot_pages_stock();
  if (!backend->start()) {
    std::string why = control->start_refusal();
    (void)backend.release();  // its callbacks may be registered: leaked, as a started one is
    rec->finish(0);
    std::remove((opt.output + "." + std::to_string(getpid())).c_str());
    return refuse(r, why);
  }
  control->attach_existing_contexts();
  if (SamplingWindowControl* w = backend->sampling_windows()) w->start_window_thread();
  GpuBackend* b = backend.release();  // leaked on purpose, as the Recorder (see above)
  rec->start_collector([b, control] {
    b->drain();
    control->adopt_new_contexts();
  });
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_rec = rec;
    g_backend = b;
    g_attach = control;
    g_status = r.status;
    g_state = State::Recording;
    static bool registered = false;
    if (!registered) registered = std::atexit(at_exit) == 0;
  }
  report(r.status, "started");
  debug("attach: recording %zu context(s) into %s.%d", contexts, opt.output.c_str(), (int)getpid());
  auto started = std::chrono::steady_clock::now();
  std::string reason;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (should_stop(r, started, &reason)) break;
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_state != State::Recording) return;  // the process is exiting: at_exit closed the profile
  }
  std::lock_guard<std::mutex> lock(g_mu);
  finish_locked(reason, /*finalize=*/true);
}

}  // namespace
}  // namespace aiflame

extern "C" __attribute__((visibility("default"))) int aiflame_attach(const char* options) {
  using namespace aiflame;
  try {
    Request r;
    r.values = parse_attach_text(options);
    if (const char* s = r.get("AIFLAME_ATTACH_STATUS")) r.status = s;
    if (const char* s = r.get("AIFLAME_ATTACH_STOP")) r.stop = s;
    if (const char* s = r.get("AIFLAME_ATTACH_DURATION_MS")) r.duration_ms = std::strtoull(s, nullptr, 10);
    if (const char* s = r.get("AIFLAME_ATTACH_CLI_PID")) r.cli_pid = static_cast<pid_t>(std::atoi(s));
    if (!r.get("AIFLAME_OUTPUT")) return kAttachBadOptions;
    if (!driver_loaded()) {
      report(r.status, "refused no-driver no CUDA driver in the process (libcuda.so.1 is not loaded): it has made no "
                       "CUDA call yet, or is not a CUDA program; pass --wait to wait for one");
      return kAttachNoDriver;
    }
    {
      std::lock_guard<std::mutex> lock(g_mu);
      if (g_state != State::Idle) {
        report(r.status, "refused busy an aiflame recording is still running in this process: wait for it to end");
        return kAttachBusy;
      }
      g_state = State::Starting;
    }
    std::thread(session, std::move(r)).detach();
    return kAttachStarted;
  } catch (...) {
    return kAttachBadOptions;
  }
}
