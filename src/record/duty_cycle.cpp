#include "record/duty_cycle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "record/attach.h"
#include "record/debug_log.h"
#include "record/duty_spec.h"
#include "record/gpu_backend.h"
#include "record/recorder.h"
#include "record/unwind/object_table.h"
#include "util/hot_pages.h"

namespace aiflame {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int64_t realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Window {
  Recorder* rec = nullptr;
  GpuBackend* backend = nullptr;
  AttachControl* control = nullptr;
  uint64_t seq = 0;
  unsigned retry = 0;
  std::string file;
  int64_t start_ns = 0;
  Clock::time_point begun, opened;  // the opening's start and end
  double prepare_ms = 0, subscribe_ms = 0, enable_ms = 0;
  // From the taps (a module-load callback on a program thread, the collector's batches).
  std::mutex mu;
  std::map<uint64_t, CodeObjectRecord> loaded;  // code objects loaded in this window, with their images
  std::set<uint64_t> sampled;                   // code objects this window's samples name
};

std::mutex g_mu;  // the open window and the exit
Window* g_open = nullptr;
bool g_exiting = false;
pid_t g_owner = 0;  // the process that runs the cycle: a child forked without exec has no window of its own
// Closed windows, deleted at the next opening: by then (a period later) no callback of their
// subscription can still be running on a program thread.
std::vector<Window*> g_retired;
// Code objects of earlier windows kept in DIR/.cubins.<pid>/<id>: id -> device.
std::map<uint64_t, uint32_t> g_carried;

std::string store_dir(const std::string& dir) { return dir + "/.cubins." + std::to_string(getpid()); }
std::string store_path(const std::string& dir, uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "/%016" PRIx64, id);
  return store_dir(dir) + buf;
}

void append_log(const std::string& dir, const std::string& line) {
  std::string path = dir + "/windows." + std::to_string(getpid()) + ".log";
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  std::string l = line + "\n";
  (void)!write(fd, l.data(), l.size());
  close(fd);
}

void delete_window(Window* w) {
  delete w->backend;  // it reports to the recorder: first
  delete w->rec;
  delete w;
}

// Opens window `seq` (under g_mu). Null when none could open now; *why says why, *again whether a
// later try may succeed (no context yet, another CUPTI client) rather than never.
Window* open_window(const DutyRun& run, uint64_t seq, unsigned retry, std::string* why, bool* again) {
  *again = true;
  for (Window* old : g_retired) delete_window(old);
  g_retired.clear();
  const auto t0 = Clock::now();
  const std::string& dir = run.opt.output;
  RecordOptions opt = run.opt;
  opt.output = duty_window_prefix(dir, seq);
  auto w = std::make_unique<Window>();
  w->seq = seq;
  w->retry = retry;
  w->file = opt.output + "." + std::to_string(getpid());
  auto rec = std::make_unique<Recorder>();
  std::string err;
  std::unique_ptr<GpuBackend> backend = make_gpu_backend(*rec, opt, &err);
  if (!backend) return *why = err, *again = false, nullptr;
  AttachControl* control = backend->attach_control();
  if (!control) return *why = std::string("the ") + backend->name() + " backend cannot detach", *again = false, nullptr;
  if (control->find_existing_contexts() == 0) return *why = "no-context", nullptr;
  if (std::string e = control->cannot_detach(); !e.empty()) return *why = e, *again = false, nullptr;
  ProcessRecord p = injection_process_record(opt);
  p.backend = backend->name();
  p.backend_version = backend->version();
  p.start_timestamp = backend->timestamp();
  w->start_ns = p.start_realtime_ns;
  if (!rec->start(opt, p, &err)) return *why = "output " + err, nullptr;
  rec->stacks().init(opt.unwind, opt.python, opt.unwind == UnwindPolicy::Sampled ? opt.unstable_sample : 1);
  if (seq == 1 && retry == 0)
    for (const auto& warning : run.warnings) rec->warn(warning);
  injection_skip_own_frames(rec->stacks());
  rec->start_autograd(opt);
  rec->write_modules_if_changed();
  Window* raw = w.get();
  rec->on_code_object = [raw](const CodeObjectRecord& r) {
    std::lock_guard<std::mutex> lock(raw->mu);
    raw->loaded.emplace(r.id, r);
  };
  rec->on_sample_batch = [raw](const PcBatchRecord& b) {
    std::lock_guard<std::mutex> lock(raw->mu);
    for (const auto& s : b.samples) raw->sampled.insert(s.code_object_id);
  };
  hot_pages_stock();
  const auto t1 = Clock::now();
  if (!backend->start()) {
    *why = control->start_refusal();
    (void)backend.release();  // its callbacks may be registered: leaked, as attach.cpp does
    rec->on_code_object = nullptr;
    rec->on_sample_batch = nullptr;
    rec->finish(0);
    std::remove(w->file.c_str());
    (void)rec.release();  // the leaked backend holds it
    return nullptr;
  }
  const auto t2 = Clock::now();
  control->attach_existing_contexts();
  if (SamplingWindowControl* sw = backend->sampling_windows()) sw->start_window_thread();
  const auto t3 = Clock::now();
  GpuBackend* b = backend.get();
  rec->start_collector([b, control] {
    b->drain();
    control->adopt_new_contexts();
  });
  w->prepare_ms = ms_between(t0, t1);
  w->subscribe_ms = ms_between(t1, t2);
  w->enable_ms = ms_between(t2, t3);
  w->begun = t0;
  w->opened = t3;
  w->rec = rec.release();
  w->backend = backend.release();
  w->control = control;
  return w.release();
}

// The code objects this window sampled that loaded in an earlier one: written into its profile from
// the store; its own new ones go into the store.
void carry_code_objects(const std::string& dir, Window& w) {
  std::map<uint64_t, CodeObjectRecord> loaded;
  std::set<uint64_t> sampled;
  {
    std::lock_guard<std::mutex> lock(w.mu);
    loaded.swap(w.loaded);
    sampled.swap(w.sampled);
  }
  for (uint64_t id : sampled) {
    if (loaded.count(id)) continue;
    auto it = g_carried.find(id);
    if (it == g_carried.end()) continue;
    std::ifstream in(store_path(dir, id), std::ios::binary);
    if (!in) continue;
    CodeObjectRecord r;
    r.id = id;
    r.device = it->second;
    r.image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    w.rec->add_code_object(r);
  }
  for (auto& [id, r] : loaded) {
    if (g_carried.count(id) || r.image.empty()) continue;
    mkdir(store_dir(dir).c_str(), 0755);
    std::string path = store_path(dir, id), tmp = path + ".tmp";
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(r.image.data(), static_cast<std::streamsize>(r.image.size()));
    out.close();
    if (out && rename(tmp.c_str(), path.c_str()) == 0) g_carried[id] = r.device;
    else std::remove(tmp.c_str());
  }
}

struct Closed {
  uint64_t launches = 0, kernels = 0, samples = 0;
};

// Closes `w` (under g_mu): detached from the vendor library (`finalize`), or only stopped at exit.
Closed close_window(const DutyRun& run, Window* w, bool finalize, bool silent) {
  const auto t0 = Clock::now();
  const double length_ms = ms_between(w->opened, t0);
  w->rec->stop_collector();
  uint64_t end = w->backend->timestamp();  // before the detach: a CUPTI call after cuptiFinalize would start CUPTI again
  if (finalize) w->control->detach();
  else w->backend->stop();
  w->rec->on_code_object = nullptr;
  w->rec->on_sample_batch = nullptr;
  if (run.opt.keep_cubins) carry_code_objects(run.opt.output, *w);
  Closed c;
  c.launches = w->rec->launch_totals().launches;
  c.kernels = w->rec->counters().kernels;
  c.samples = w->rec->counters().samples;
  w->rec->finish(end);
  // The unwinder's builder thread (started with the stack capture): no launch walks a stack until the next window.
  if (finalize) unwind::ObjectTable::instance().stop_builder();
  const double close_ms = ms_between(t0, Clock::now());
  auto mono = [](Clock::time_point t) {
    return static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  };
  // begun/opened/closing/closed: the steady clock (CLOCK_MONOTONIC), to line the window up with a
  // program's own step times.
  char line[640];
  std::snprintf(line, sizeof line,
                "window seq=%" PRIu64 " retry=%u file=%s start=%" PRId64 " prepare_ms=%.1f subscribe_ms=%.1f "
                "enable_ms=%.1f close_ms=%.1f length_ms=%.1f launches=%" PRIu64 " kernels=%" PRIu64
                " samples=%" PRIu64 " silent=%d begun=%lld opened=%lld closing=%lld closed=%lld",
                w->seq, w->retry, w->file.substr(w->file.rfind('/') + 1).c_str(), w->start_ns, w->prepare_ms,
                w->subscribe_ms, w->enable_ms, close_ms, length_ms, c.launches, c.kernels, c.samples, silent ? 1 : 0,
                mono(w->begun), mono(w->opened), mono(t0), mono(Clock::now()));
  append_log(run.opt.output, line);
  debug("duty: %s", line);
  if (finalize) g_retired.push_back(w);  // at exit the process ends: nothing to free
  return c;
}

// Sleeps until `until`, polling should_stop; false (with *reason) when the cycle is to end.
bool wait_until(const DutyRun& run, Clock::time_point until, std::string* reason) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(g_mu);
      if (g_exiting) return *reason = "exit", false;
    }
    if (run.should_stop && run.should_stop(reason)) return false;
    auto now = Clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(std::min<Clock::duration>(until - now, std::chrono::milliseconds(50)));
  }
}

// A window is silent when its program launched at least kSilentLaunches kernels but no sample came by
// the check: CUPTI's sampling enabled again after a cuptiFinalize stayed silent for the rest of the
// run in 5 of 15 runs on the H100 (issue 70); a fresh subscription is the recovery. Fewer launches
// prove nothing: a program's first window, during its set-up, had 7 launches and no sample by its
// middle, and 192 samples by its end (hf_gpt2.py on the H100, bench/RESULTS.md).
constexpr uint64_t kSilentLaunches = 500;
bool is_silent(const Window& w) {
  const RecordOptions& o = w.rec->options();
  if (!o.pc_sampling || w.rec->counters().sampling_declined) return false;
  return w.rec->launch_totals().launches >= kSilentLaunches && w.rec->counters().samples == 0;
}

}  // namespace

std::string run_duty_cycle(DutyRun run) {
  const std::string& dir = run.opt.output;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_owner = getpid();
  }
  mkdir(dir.c_str(), 0755);
  char head[256];
  std::snprintf(head, sizeof head, "duty window_ms=%u period_ms=%u start=%" PRId64 " keep=%u max_mb=%u",
                run.opt.duty_window_ms, run.opt.duty_period_ms, realtime_ns(), run.opt.duty_keep, run.opt.duty_max_mb);
  append_log(dir, head);
  const auto window = std::chrono::milliseconds(run.opt.duty_window_ms);
  const auto period = std::chrono::milliseconds(run.opt.duty_period_ms);
  // The check for silent sampling: the middle of the window, between 0.3 s and 5 s in.
  const auto check_after = std::min<Clock::duration>(
      std::clamp<Clock::duration>(window / 2, std::chrono::milliseconds(300), std::chrono::seconds(5)), window);
  // The period jittered by up to +-10%, so that windows do not lock onto a program's own period (an
  // evaluation every N steps).
  uint64_t rng = static_cast<uint64_t>(realtime_ns()) ^ (static_cast<uint64_t>(getpid()) << 32);
  auto jittered = [&] {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    double f = 0.9 + 0.2 * static_cast<double>(rng % 10001) / 10000.0;
    return std::chrono::duration_cast<Clock::duration>(period * f);
  };
  uint64_t seq = 0;
  std::string reason, last_refusal;
  auto next = Clock::now();  // the first window as soon as the program has a context
  for (;;) {
    if (!wait_until(run, next, &reason)) return reason;
    const auto scheduled = Clock::now();
    Window* w = nullptr;
    unsigned retry = 0;
    bool give_up = false;
    for (;;) {
      std::string why;
      bool again = true;
      {
        std::lock_guard<std::mutex> lock(g_mu);
        if (g_exiting) return "exit";
        w = open_window(run, seq + 1, retry, &why, &again);
        if (w) g_open = w;
      }
      if (!w) {
        if (!again) {
          append_log(dir, "stopped " + why);
          return "refused " + why;
        }
        if (why != last_refusal) append_log(dir, "waiting " + why);
        last_refusal = why;
        // No context yet (the program has not made its first CUDA call that creates one), or another
        // CUPTI client: tried again every 200 ms, the window's time not counted.
        if (!wait_until(run, Clock::now() + std::chrono::milliseconds(200), &reason)) return reason;
        continue;
      }
      last_refusal.clear();
      seq++;
      bool stop = !wait_until(run, w->opened + check_after, &reason);
      bool silent = false;
      if (!stop && retry < 2) {
        std::lock_guard<std::mutex> lock(g_mu);
        if (g_open == w && is_silent(*w)) silent = true;
      }
      if (!stop && !silent) stop = !wait_until(run, w->opened + window, &reason);
      {
        std::lock_guard<std::mutex> lock(g_mu);
        if (g_open != w) return "exit";  // closed by duty_cycle_at_exit
        close_window(run, w, /*finalize=*/true, silent);
        g_open = nullptr;
        rotate_duty_files(dir, getpid(), run.opt.duty_keep, uint64_t{run.opt.duty_max_mb} << 20);
      }
      if (stop) return reason;
      if (!silent) break;
      retry++;
      give_up = retry > 2;
      if (give_up) break;
    }
    next = scheduled + jittered();
  }
}

void duty_cycle_at_exit() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (getpid() != g_owner) return;
  g_exiting = true;
  if (!g_open) return;
  DutyRun run;
  run.opt = g_open->rec->options();
  // The window's recorder options name its file's prefix; the directory is above it.
  run.opt.output = run.opt.output.substr(0, run.opt.output.rfind('/'));
  close_window(run, g_open, /*finalize=*/false, /*silent=*/false);
  g_open = nullptr;
  rotate_duty_files(run.opt.output, getpid(), run.opt.duty_keep, uint64_t{run.opt.duty_max_mb} << 20);
}

}  // namespace aiflame
