// Windows mode (--pc-mode windows, experimental): kernel-serialized PC sampling in short windows at
// launch boundaries, opened and closed on the launching thread, so that every sample carries its
// launch's id; and the priming of a context's sampling with a kernel of aiflame's own.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <string>

#include "record/cupti/cupti_backend.h"
#include "record/crash_report.h"
#include "record/debug_log.h"
#include "util/hot_path.h"
#include "util/tls_offsets.h"

namespace aiflame {
namespace {
// Set while prime_sampling() runs its own kernel on this thread: the backend's callbacks ignore that
// module and launch.
thread_local constinit bool t_priming = false;
AIFLAME_TLS_ENROLL(tls::kPriming, t_priming);

// aiflame's own kernel for prime_sampling(), as PTX that the driver compiles for the GPU at hand (PC
// sampling needs sm_70 or newer). It spins a few thousand iterations; the store behind a pointer
// that is null at run time keeps the loop from being compiled away.
constexpr char kPrimePtx[] = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry aiflame_prime(.param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, 0;
$L_spin:
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 4000;
  @%p1 bra $L_spin;
  ld.param.u64 %rd1, [out];
  setp.eq.u64 %p2, %rd1, 0;
  @%p2 bra $L_done;
  st.global.u32 [%rd1], %r1;
$L_done:
  ret;
}
)";

// AIFLAME_LAB=win_trace (MeasurementSwitches::win_trace): one line per window phase, stamped with
// CLOCK_MONOTONIC in microseconds and the thread id, written at once (a hung program prints no summary).
__attribute__((format(printf, 1, 2))) void win_trace_line(const char* fmt, ...) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "aiflame[win %ld.%06ld t%d]: %s\n", static_cast<long>(ts.tv_sec), ts.tv_nsec / 1000,
               static_cast<int>(gettid()), line);
}

}  // namespace

#define WIN_TRACE(...)                               \
  do {                                               \
    if (measure_.win_trace) win_trace_line(__VA_ARGS__); \
  } while (0)

bool priming_on_this_thread() { return *AIFLAME_TLS(tls::kPriming, t_priming); }  // at each launch callback

// Kernel-serialized sampling starts once per context, at the first launch inside a window, and that
// start cost 0.3-0.6 s on the H100 (bench/probes/window_toggle.cu at d9aa39d: every Enable pays it again, so
// sampling stays enabled between windows). Paid here, when the context is created, it falls in the
// program's CUDA start-up instead of its first window, which may be inside the work the user times:
// a window around one launch of aiflame's own kernel. False (the first window then pays) when a
// driver call fails.
bool CuptiBackend::prime_sampling(Context& c) {
  using LoadFn = CUresult (*)(CUmodule*, const void*);
  using GetFn = CUresult (*)(CUfunction*, CUmodule, const char*);
  using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                CUstream, void**, void**);
  using UnloadFn = CUresult (*)(CUmodule);
  using SyncFn = CUresult (*)();
  using PushFn = CUresult (*)(CUcontext);
  using PopFn = CUresult (*)(CUcontext*);
  static auto load = reinterpret_cast<LoadFn>(cuda_driver_symbol("cuModuleLoadData"));
  static auto get = reinterpret_cast<GetFn>(cuda_driver_symbol("cuModuleGetFunction"));
  static auto launch = reinterpret_cast<LaunchFn>(cuda_driver_symbol("cuLaunchKernel"));
  static auto unload = reinterpret_cast<UnloadFn>(cuda_driver_symbol("cuModuleUnload"));
  static auto sync = reinterpret_cast<SyncFn>(cuda_driver_symbol("cuCtxSynchronize"));
  static auto push = reinterpret_cast<PushFn>(cuda_driver_symbol("cuCtxPushCurrent_v2"));
  static auto pop = reinterpret_cast<PopFn>(cuda_driver_symbol("cuCtxPopCurrent_v2"));
  if (!load || !get || !launch || !unload || !sync || !push || !pop) return false;
  if (push(c.ctx) != CUDA_SUCCESS) return false;
  t_priming = true;
  bool ok = false;
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  if (load(&module, kPrimePtx) == CUDA_SUCCESS && get(&fn, module, "aiflame_prime") == CUDA_SUCCESS &&
      sync() == CUDA_SUCCESS) {
    CUpti_PCSamplingStartParams sp = {CUpti_PCSamplingStartParamsSize};
    sp.ctx = c.ctx;
    if (api_.cuptiPCSamplingStart(&sp) == CUPTI_SUCCESS) {
      unsigned long long out = 0;
      void* args[] = {&out};
      ok = launch(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr) == CUDA_SUCCESS;
      sync();
      CUpti_PCSamplingStopParams tp = {CUpti_PCSamplingStopParamsSize};
      tp.ctx = c.ctx;
      ok &= api_.cuptiPCSamplingStop(&tp) == CUPTI_SUCCESS;
      // The window's samples are aiflame's own: fetched (CUPTI wants every range fetched) and dropped.
      for (int guard = 0; guard < 100; guard++) {
        CUpti_PCSamplingGetDataParams gp = {CUpti_PCSamplingGetDataParamsSize};
        gp.ctx = c.ctx;
        gp.pcSamplingData = &c.buf.data;
        if (api_.cuptiPCSamplingGetData(&gp) != CUPTI_SUCCESS) break;
        c.buf.data.totalNumPcs = 0;
        if (c.buf.data.remainingNumPcs == 0) break;
      }
      if (c.range) c.range->data.totalNumPcs = 0;
    }
  }
  if (module) unload(module);
  t_priming = false;
  CUcontext popped = nullptr;
  pop(&popped);
  return ok;
}

void CuptiBackend::close_window_locked(Context& c, uint64_t now) {
  const auto steady0 = std::chrono::steady_clock::now();
  uint64_t t0 = 0;
  api_.cuptiGetTimestamp(&t0);  // CUPTI's clock, as the controller's (a fake one in tests)
  WIN_TRACE("window %llu closing", (unsigned long long)c.windows->windows());
  synchronize(c);  // the window's last kernels end before Stop (NVIDIA's sample does the same)
  WIN_TRACE("closing: synchronized");
  CUpti_PCSamplingStopParams sp = {CUpti_PCSamplingStopParamsSize};
  sp.ctx = c.ctx;
  bool stopped = check(api_.cuptiPCSamplingStop(&sp), "cuptiPCSamplingStop");
  WIN_TRACE("closing: stopped (%s)", stopped ? "ok" : "failed");
  c.window_open.store(false, std::memory_order_release);
  rec_.add_window(now - c.windows->opened_at());
  c.last_drain = c.windows->opened_at();
  const RecordOptions& o = rec_.options();
  const bool toggle_activity = o.kernel_activity && measure_.win_toggle_activity && api_.cuptiActivityDisable &&
                               measure_.win_disable_between;  // open_window_locked says why
  if (measure_.win_toggle_callbacks) {
    set_launch_callbacks(false);
    WIN_TRACE("closing: launch callbacks off");
  }
  if (!stopped) {
    if (toggle_activity) set_kernel_records(false);
    return;
  }
  size_t before = c.range->data.totalNumPcs;
  drain_locked(c);  // moves the range's records from the configured buffer into c.buf
  if (c.windows->windows() <= 3)
    debug("window %llu stopped: configured buffer %zu PCs before GetData, %zu after",
          (unsigned long long)c.windows->windows(), before, c.range->data.totalNumPcs);
  if (measure_.win_disable_between) {
    CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize};
    dp.ctx = c.ctx;
    check(api_.cuptiPCSamplingDisable(&dp), "cuptiPCSamplingDisable");
    c.configured = false;
  }
  if (toggle_activity) set_kernel_records(false);
  // Closing (the wait for the window's last kernel, Stop, fetching) is the window's cost too; it
  // spaces the next window (the gap of this one was set when it closed).
  uint64_t t1 = 0;
  api_.cuptiGetTimestamp(&t1);
  c.windows->charge(t1 > t0 ? t1 - t0 : 0);
  close_ns_ += ns_since(steady0);
  WIN_TRACE("closed");
}

// cuCtxSynchronize on this thread with c's context current (the launching thread has it already;
// the collector and the exit path push it).
uint64_t CuptiBackend::synchronize(Context& c) {
  using SyncFn = CUresult (*)();
  using CtxFn = CUresult (*)(CUcontext*);
  using PushFn = CUresult (*)(CUcontext);
  static auto sync = reinterpret_cast<SyncFn>(cuda_driver_symbol("cuCtxSynchronize"));
  static auto get = reinterpret_cast<CtxFn>(cuda_driver_symbol("cuCtxGetCurrent"));
  static auto push = reinterpret_cast<PushFn>(cuda_driver_symbol("cuCtxPushCurrent_v2"));
  static auto pop = reinterpret_cast<CtxFn>(cuda_driver_symbol("cuCtxPopCurrent_v2"));
  if (!sync) return 0;
  auto t0 = std::chrono::steady_clock::now();
  CUcontext cur = nullptr;
  bool pushed = false;
  if (get && get(&cur) == CUDA_SUCCESS && cur != c.ctx && push && pop) pushed = push(c.ctx) == CUDA_SUCCESS;
  sync();
  if (pushed) {
    CUcontext popped = nullptr;
    pop(&popped);
  }
  const uint64_t ns = ns_since(t0);
  sync_ns_ += ns;
  return ns;
}

bool CuptiBackend::open_window_locked(Context& c, uint64_t now) {
  const RecordOptions& o = rec_.options();
  // The wait for the GPU's queue (and Enable between windows) is the window's cost: it is inside
  // its length, which began before this call.
  const uint64_t waited = synchronize(c);  // CUPTI starts a range only on an idle GPU
  if (!measure_.win_charge_sync) c.windows->discount(waited);
  WIN_TRACE("opening: synchronized");
  // Kernel records can be switched on only while PC sampling is disabled (CUPTI 13.0 refuses
  // otherwise with CUPTI_ERROR_NOT_COMPATIBLE, on the H100): so only where windows enable it.
  const bool toggle_activity = o.kernel_activity && measure_.win_toggle_activity && api_.cuptiActivityDisable;
  if (toggle_activity && !c.configured) set_kernel_records(true);
  if (!c.configured && !enable_sampling_again_locked(c)) return false;
  CUpti_PCSamplingStartParams sp = {CUpti_PCSamplingStartParamsSize};
  sp.ctx = c.ctx;
  if (c.windows->windows() < 3) debug("window %llu opens on context %u", (unsigned long long)c.windows->windows(), c.context_id);
  if (!check(api_.cuptiPCSamplingStart(&sp), "cuptiPCSamplingStart", "GPU samples are off for this context")) {
    c.enabled = false;
    CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize};
    dp.ctx = c.ctx;
    api_.cuptiPCSamplingDisable(&dp);
    return false;
  }
  (void)now;
  c.window_open.store(true, std::memory_order_release);
  WIN_TRACE("opening: started");
  return true;
}

namespace {
pid_t this_thread_id() {
  static thread_local pid_t id = static_cast<pid_t>(gettid());
  return id;
}
}  // namespace

// A window belongs to the thread that opened it: its launches are the window's, and only it fetches
// and closes. Another thread that launches while it is open waits here, at its launch's entry, until
// it closes (at most kWindowWaitLimit): with eight threads launching on eight streams into one
// kernel-serialized window, the program hung on the H100 within two windows,
// while one thread's windows never did. Its wait is the window's cost to it, about one launch's
// ~1 ms in a window. Tried and reverted: once the owner had been idle 5 ms (blocked on this thread, as
// backward() on autograd's engine), launching into the window for the rest of it without waiting:
// a 28-s gpt_train.py run then kept 14 GPU samples of 60 window launches (the other thread's kernels
// ran in the kernel-serialized range with nobody fetching after them) and eight threads on eight
// streams hung, 2 of 2.
bool CuptiBackend::window_enter(Context& c, uint64_t now) {
  for (;;) {
    if (c.window_open.load(std::memory_order_seq_cst)) {
      if (c.window_owner.load(std::memory_order_relaxed) == this_thread_id()) {
        window_launches_++;
        return true;
      }
      // The owner may not launch again soon (its work done, or blocked on this thread: backward()
      // waits for autograd's engine thread): after 50 ms this thread launches into the window without
      // taking it over. A thread other than the opener that closed the window (Stop, Disable) while
      // the others launched hung eight threads on eight streams on the H100, as a
      // Stop from another thread hung bench/probes/serialized_where.cu at d9aa39d.
      const auto limit = std::chrono::milliseconds(50);
      auto t0 = std::chrono::steady_clock::now(), t = t0;
      while (c.window_open.load(std::memory_order_acquire) && t - t0 < limit) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        t = std::chrono::steady_clock::now();
      }
      window_waits_++;
      window_wait_ns_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t - t0).count());
      WIN_TRACE("waited %.3f ms at a launch entry for the window of t%d: %s",
                std::chrono::duration<double, std::milli>(t - t0).count(),
                static_cast<int>(c.window_owner.load(std::memory_order_relaxed)),
                c.window_open.load(std::memory_order_acquire) ? "still open, launching into it" : "closed");
      if (c.window_open.load(std::memory_order_acquire)) return true;  // waited its limit: into the window
      continue;  // closed: this launch is counted, or opens the next window
    }
    // Not within kCallbacksGraceNs of the launch callbacks coming back on: a launch that entered its
    // driver call while they were off was never counted in, and its kernel could fall into the window.
    const uint64_t on_at = callbacks_on_at_.load(std::memory_order_acquire);  // 0: never switched back on
    const bool probed = on_at == 0 || now >= on_at + kCallbacksGraceNs;
    if (!probed) note_launcher(c);
    if (c.windows->due(now) && !measure_.win_never && captures_.load(std::memory_order_acquire) == 0 && probed &&
        !skip_before_window(c)) {
      // (No window while a stream capture is under way: its cuCtxSynchronize would break the capture.)
      // Never wait for the lock in a launch callback: another thread is opening or closing a window.
      std::unique_lock<std::mutex> lock(c.mu, std::try_to_lock);
      if (lock.owns_lock() && c.enabled && !c.window_open.load() && c.windows->decide(now) == SamplingWindows::Action::Open) {
        if (c.others_launching.load(std::memory_order_acquire) && on_at != 0) {
          // Several threads launched in the callbacks' first millisecond: no window this time.
          c.windows->cancel(now);
          if (measure_.win_toggle_callbacks) set_launch_callbacks(false);
          windows_skipped_.fetch_add(1, std::memory_order_relaxed);
          WIN_TRACE("window skipped: other threads launched since the callbacks came on");
          return false;
        }
        if (!open_window(c, now)) return false;
        window_launches_++;
        return true;
      }
    }
    if (count_launch_in(c)) {  // outside any window, counted until its exit
      launches_outside_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  }
}

// AIFLAME_LAB=win_skip_max=N: a due window passes over K launches first, K uniform in [0, N) and drawn
// afresh for each window (record_options.h says why). Windows open only while one thread launches, so
// the count is kept with relaxed atomics.
bool CuptiBackend::skip_before_window(Context& c) {
  const uint32_t n = measure_.win_skip_max;
  if (n <= 1) return false;
  int64_t left = c.skip_left.load(std::memory_order_relaxed);
  if (left < 0) {
    uint64_t rng = skip_rng_.load(std::memory_order_relaxed);  // (no thread-local: the TLS budget)
    left = static_cast<int64_t>(random53(rng) % n);
    skip_rng_.store(rng, std::memory_order_relaxed);
  }
  c.skip_left.store(left - 1, std::memory_order_relaxed);  // -1 after the launch that opens: drawn anew
  return left > 0;
}

namespace {
// This thread's launch counted in a context's launches_out, and under which epoch.
struct CountedLaunch {
  const void* context = nullptr;  // null: none
  uint32_t epoch = 0;
};
thread_local CountedLaunch t_counted;
}  // namespace

bool CuptiBackend::count_launch_in(Context& c) {
  // A count left from a launch whose exit never came (the callbacks went off meanwhile): this launch
  // takes it over if its epoch is current, else it was dropped when the epoch moved on.
  uint64_t s = c.launches_out.load(std::memory_order_seq_cst);
  for (;;) {
    const uint32_t epoch = static_cast<uint32_t>(s >> 32);
    if (t_counted.context == &c && t_counted.epoch == epoch) break;
    if (c.launches_out.compare_exchange_weak(s, s + 1, std::memory_order_seq_cst)) {
      t_counted = {&c, epoch};
      break;
    }
  }
  // An opener stores window_open before it reads the count; this thread adds itself before it reads
  // window_open: one of the two sees the other (sequentially consistent), so no launch of another
  // thread is left running into a window unnoticed.
  if (!c.window_open.load(std::memory_order_seq_cst)) return true;
  count_launch_out(c);
  return false;
}

void CuptiBackend::count_launch_out(Context& c) {
  if (t_counted.context != &c) return;
  uint64_t s = c.launches_out.load(std::memory_order_seq_cst);
  while (static_cast<uint32_t>(s >> 32) == t_counted.epoch && static_cast<uint32_t>(s) > 0 &&
         !c.launches_out.compare_exchange_weak(s, s - 1, std::memory_order_seq_cst)) {
  }
  t_counted = {};
}

// Under c.mu, the window just decided open: other threads' later launches now wait at their entry,
// and the window opens once the launches already past their entry have ended (a launch takes
// microseconds; after 2 ms the window is given up, so that a count left by a thread that went away
// costs windows, never a hang).
bool CuptiBackend::open_window(Context& c, uint64_t now) {
  const auto steady0 = std::chrono::steady_clock::now();
  WIN_TRACE("window %llu opening", (unsigned long long)c.windows->windows());
  count_launch_out(c);  // this thread's own count, if one was left (it is at a launch's entry)
  c.window_owner.store(this_thread_id(), std::memory_order_relaxed);
  c.window_count = 0;
  c.window_open.store(true, std::memory_order_seq_cst);
  const auto limit = std::chrono::milliseconds(2);
  const auto t0 = std::chrono::steady_clock::now();
  while (static_cast<uint32_t>(c.launches_out.load(std::memory_order_seq_cst)) != 0) {
    if (std::chrono::steady_clock::now() - t0 > limit) {
      c.window_open.store(false, std::memory_order_seq_cst);
      c.windows->cancel(now);
      if (window_cancels_.fetch_add(1, std::memory_order_relaxed) < 3)
        debug("window given up: launches of other threads did not end within 2 ms");
      WIN_TRACE("opening given up: %u launches of other threads still out after 2 ms",
                static_cast<uint32_t>(c.launches_out.load()));
      open_ns_ += ns_since(steady0);
      return false;
    }
    std::this_thread::yield();
  }
  WIN_TRACE("opening: other threads' launches out");
  const bool opened = open_window_locked(c, now);
  if (!opened) c.window_open.store(false, std::memory_order_seq_cst);
  open_ns_ += ns_since(steady0);
  return opened;
}

// A launch seen in the launch callbacks' first millisecond (at its entry or exit, since one that
// entered while they were off shows only its exit): the context's launching threads are noted, and a
// second one marks the context as launched into by several threads.
void CuptiBackend::note_launcher(Context& c) {
  const pid_t self = this_thread_id();
  pid_t seen = 0;
  if (c.probe_tid.compare_exchange_strong(seen, self, std::memory_order_acq_rel) || seen == self) return;
  c.others_launching.store(true, std::memory_order_release);
}

void CuptiBackend::window_exit(CUcontext ctx) {
  Context* c = context_of(ctx);
  if (!c || !c->windows) return;
  count_launch_out(*c);
  if (!c->window_open.load(std::memory_order_acquire)) {
    const uint64_t on_at = callbacks_on_at_.load(std::memory_order_acquire);
    if (on_at != 0) {
      uint64_t now = 0;
      api_.cuptiGetTimestamp(&now);
      if (now < on_at + kCallbacksGraceNs) note_launcher(*c);
    }
    return;
  }
  if (c->window_owner.load(std::memory_order_relaxed) != this_thread_id()) return;  // window_enter says why
  std::unique_lock<std::mutex> lock(c->mu, std::try_to_lock);  // never waits in a callback
  if (!lock.owns_lock() || !c->enabled || !c->window_open.load()) return;
  const auto steady0 = std::chrono::steady_clock::now();
  drain_locked(*c);  // serialized sampling wants its data fetched after every kernel
  fetch_ns_ += ns_since(steady0);
  WIN_TRACE("launch exit %u in the window: fetched", c->window_count + 1);
  uint64_t now = 0;
  api_.cuptiGetTimestamp(&now);
  // (A context's first window of one launch, to pay CUPTI's start in the program's start-up, left the
  // short split and demo runs one launch of samples in all.)
  bool full = ++c->window_count >= rec_.options().window_launches;
  if (c->windows->decide(now, full) == SamplingWindows::Action::Close) close_window_locked(*c, now);
}

// Windows mode, on the window thread: windows open and close on launching threads (window_enter,
// window_exit); this thread switches the launch callbacks back on when a window is due (when they are
// off between windows).
uint64_t CuptiBackend::tick_windows() {
  std::vector<Context*> all;
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    for (auto& [ctx, c] : contexts_)
      if (c->windows) all.push_back(c.get());
  }
  uint64_t next = 10'000'000;  // look again within 10 ms for new contexts
  uint64_t now = 0;
  api_.cuptiGetTimestamp(&now);
  bool due = false;
  // An open window is never closed from here: cuptiPCSamplingStop from a thread other than the
  // launching one hung the program (bench/probes/serialized_where.cu at d9aa39d, start and stop on a thread).
  // A window whose program stopped launching stays open at no cost until the next launch or exit.
  for (Context* c : all) {
    if (!c->enabled || c->window_open.load()) continue;
    uint64_t at = c->windows->next_event();
    if (now >= at) due = true;
    else next = std::min(next, at - now);
  }
  if (due && measure_.win_toggle_callbacks && !measure_.win_never && !launch_callbacks_on_.load()) {
    // While the callbacks are off no launch is counted in or out: counts left by launches whose exit
    // went undelivered are dropped with a new epoch before they come on again.
    for (Context* c : all) {
      uint64_t st = c->launches_out.load(std::memory_order_seq_cst);
      while (!c->launches_out.compare_exchange_weak(st, ((st >> 32) + 1) << 32, std::memory_order_seq_cst)) {
      }
      c->probe_tid.store(0, std::memory_order_relaxed);
      c->others_launching.store(false, std::memory_order_release);
    }
    set_launch_callbacks(true);
    uint64_t on_at = 0;
    api_.cuptiGetTimestamp(&on_at);
    callbacks_on_at_.store(on_at, std::memory_order_release);
    WIN_TRACE("launch callbacks on: a window is due");
  }
  return next;
}

void CuptiBackend::start_window_thread() {
  // The thread's only job is turning launch callbacks back on, so it runs only when they go off.
  if (rec_.options().pc_mode != PcMode::Windows || !rec_.options().pc_sampling || !measure_.win_toggle_callbacks) return;
  window_thread_ = std::thread([this] {
    set_phase(Phase::Collector);
    while (!window_thread_stop_.load(std::memory_order_relaxed)) {
      uint64_t wait = std::clamp<uint64_t>(tick_windows(), 200'000, 10'000'000);
      std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    }
  });
}

}  // namespace aiflame
