// NVIDIA backend: CUPTI callbacks (contexts, modules, launches), kernel activity records and
// continuous PC sampling, fed into the Recorder hub. Never throws; every CUPTI failure becomes one
// warning that names the fix, and the program runs on.
#pragma once
#include <atomic>
#include <chrono>
#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "record/measure/callback_ab.h"
#include "record/cupti/cupti_api.h"
#include "record/device_claim.h"
#include "record/gpu_backend.h"
#include "record/recorder.h"
#include "record/sampling_windows.h"

namespace aiflame {

// CUPTI's hardware buffer for continuous mode, MiB: pinned host memory, per context, that the GPU
// writes samples into and CUPTI's decode thread empties. CUPTI's default, 512 MiB, is what a fine
// period needs (the default period kept the same samples in 32 MiB), and it costs the program: every
// fork() copies its page table (a DataLoader worker's fork took 21 ms recorded against 11 plain, 16-18
// with 32 MiB, and bench/workloads/loader_train.py's loop ran 1.87-2.19 s against 1.44-1.55 s), and sampling's
// start and each Disable take time with its size (0.38 s at 512 MiB, 0.11 s at 32 MiB; H100).
// Measured need (hf_gpt2.py, H200, 2026-11-28): at --period 12, 512 MiB kept all 23.3 million samples
// and 32 MiB overflowed (1.5 million kept). The samples per drain halve with each step of the period
// and grow with the drain interval, so: 512 MiB at period 13 (a step of margin over the measured 12)
// and the default 10-ms interval, halved per step above it, scaled by interval / 10 ms, between
// 32 MiB (what windows mode uses) and 512. CUPTI's own period (0): its default.
constexpr uint32_t continuous_hw_buffer_mb(uint32_t period_log2, uint32_t interval_ms) {
  constexpr uint64_t kMin = 32, kMax = 512, kFullAt = 13;
  if (period_log2 <= kFullAt) return kMax;  // 0 (CUPTI's own period) included
  if (period_log2 - kFullAt >= 40) return kMin;
  const uint64_t mb = (kMax * (interval_ms ? interval_ms : 1) / 10) >> (period_log2 - kFullAt);
  return static_cast<uint32_t>(mb < kMin ? kMin : mb > kMax ? kMax : mb);
}

// Nanoseconds of the steady clock since t0 (the backend's own costs: windows, priming, switches).
inline uint64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

// True on the thread that runs CuptiBackend's own priming kernel, while it runs.
bool priming_on_this_thread();

// A function of the loaded libcuda by name, or null (not loaded, or a test without it).
void* cuda_driver_symbol(const char* name);

// The CUPTI backend for `rec`: loads libcupti (opt.cupti_path, or the search of load_cupti) and checks
// its version. Null with *why when it cannot be used.
std::unique_ptr<GpuBackend> make_cupti_backend(Recorder& rec, const RecordOptions& opt, std::string* why);

class CuptiBackend final : public GpuBackend, public SamplingWindowControl, public AttachControl {
 public:
  CuptiBackend(Recorder& rec, CuptiApi api) : rec_(rec), api_(std::move(api)) {}
  const char* name() const override { return "cupti"; }
  uint32_t version() const override { return api_.version; }
  std::span<const char* const> runtime_libraries() const override {
    static constexpr const char* kLibraries[] = {"libcupti.so", "libcuda.so"};
    return kLibraries;
  }
  uint64_t timestamp() const override {
    uint64_t ts = 0;
    if (api_.cuptiGetTimestamp) api_.cuptiGetTimestamp(&ts);
    return ts;
  }
  // Subscribes and enables callbacks and activity. False when nothing can be recorded (warned).
  bool start() override;
  void drain() override { drain_all(); }
  // Collector thread: drains the PC sampling buffers of every context.
  void drain_all();
  // At exit: final drain, disable sampling, flush activity.
  void stop() override;
  SamplingWindowControl* sampling_windows() override { return this; }
  // Windows mode: switches the launch callbacks back on when a window is due (when they are off
  // between windows); returns the nanoseconds until the next window is due. Called by the window
  // thread (and by tests).
  uint64_t tick_windows() override;
  // Windows mode: no window opens within this long of the launch callbacks coming back on
  // (callbacks_on_at_ says why).
  static constexpr uint64_t kCallbacksGraceNs = 1'000'000;
  // Windows mode: starts the thread that calls tick_windows(); stop() ends it.
  void start_window_thread() override;

  // Attach to a running program (cupti_attach.cpp). The contexts that existed before start() (their
  // CONTEXT_CREATED is long past): the devices' active primary contexts; sampling is enabled on each
  // with the context pushed on the attach thread.
  AttachControl* attach_control() override { return this; }
  size_t find_existing_contexts() override;
  std::string cannot_detach() const override;
  std::string start_refusal() const override;
  void attach_existing_contexts() override;
  // Contexts first seen in a launch callback (not primary ones): adopted here, off the launch path.
  void adopt_new_contexts() override;
  // Ends what start() began and detaches CUPTI (cuptiFinalize, at a driver call's exit as CUPTI
  // recommends, or from this thread when the program makes no call within 2 s); the program runs on.
  void detach() override;

  // Entry points for CUPTI (static trampolines route here).
  void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
  void on_activity_buffer(uint8_t* buffer, size_t valid_size);

 private:
  // A sampling-data buffer of CUPTI's shape: records, each with room for every stall reason.
  struct PcBuffer {
    CUpti_PCSamplingData data{};
    std::vector<CUpti_PCSamplingPCData> pcs;
    std::vector<std::vector<CUpti_PCSamplingStallReason>> reasons;
    void init(size_t entries, size_t stall_reasons);
  };
  struct Context {
    CUcontext ctx = nullptr;
    uint32_t device = 0;
    uint32_t context_id = 0;
    std::mutex mu;  // GetData, Disable and the buffer are used from several threads
    PcBuffer buf;  // what GetData fills
    // Windows mode: the buffer given to CUPTI at configuration, a different one. At the end of a range
    // (Stop, or a kernel in serialized mode) CUPTI puts the range's records there and GetData moves them
    // into `buf`; with one buffer for both, GetData emptied it first and every window came back empty.
    std::unique_ptr<PcBuffer> range;
    std::vector<uint32_t> reason_index;  // CUPTI may keep pointing at it after configuration
    std::set<uint32_t> duplicate_reasons;  // "X_not_issued": a subset of X, not counted in totals
    uint64_t last_drain = 0;
    bool enabled = false;
    std::unique_ptr<SamplingWindows> windows;  // windows mode only
    // Windows mode: a window is open (read without the lock on every launch exit).
    std::atomic<bool> window_open{false};
    // The thread that opened the open window (its kernel-serialized range belongs to that thread's
    // launches; the others wait at their launch entry until it closes).
    std::atomic<pid_t> window_owner{0};
    uint32_t window_count = 0;  // the owner's launches in the open window
    std::atomic<int64_t> skip_left{-1};  // skip_before_window: launches still to pass over (-1: none drawn)
    // Windows mode: the launches of other threads between their entry (past window_enter) and their
    // exit, in the low 32 bits, under an epoch in the high 32 that moves on each time the launch
    // callbacks are switched back on (a launch whose exit was never delivered, the callbacks having
    // gone off meanwhile, then no longer counts). A window opens only once this count is 0 and every
    // later launch of another thread waits at its entry: a kernel of another thread inside a
    // kernel-serialized range is never fetched after, and that hung eight threads on eight streams on
    // the H100. One word, so that counting and the epoch's reset cannot interleave.
    std::atomic<uint64_t> launches_out{0};
    bool configured = false;  // PC sampling enabled and configured (win_disable_between re-enables per window)
    // Windows mode: the threads seen launching in the launch callbacks' first millisecond after they
    // came back on (the first one's id; set when another one launched too). With several launching
    // threads no window opens: under eight threads on eight streams a window's cuptiPCSamplingStop
    // hung even with that millisecond's grace, since a launch
    // blocked in its driver call (a full launch queue) outlasts any grace.
    std::atomic<pid_t> probe_tid{0};
    std::atomic<bool> others_launching{false};
  };
  void context_created(CUcontext ctx);
  void stream_capture(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  void finalize_in_callback(const void* data);  // detach(): the first driver-call exit finalizes CUPTI
  void unhook();  // the static trampolines stop routing to this backend
  void context_destroying(CUcontext ctx);
  void module_loaded(const CUpti_ModuleResourceData* m, CUcontext ctx);
  void graph_node(const CUpti_GraphData* g, bool cloned);
  bool enable_sampling(Context& c);
  bool configure_sampling(Context& c);
  bool prime_sampling(Context& c);
  // Windows mode, on the launching thread: opens a window at a launch's entry when one is due, and at
  // a launch's exit fetches the window's samples and closes it when its time is up.
  // True when the launch runs inside a window (its kernel is sampled).
  bool window_enter(Context& c, uint64_t now);
  void window_exit(CUcontext ctx);
  bool open_window_locked(Context& c, uint64_t now);
  // window_enter's parts: a window's opening by this thread (others held back first), and counting
  // this thread's launch in or out of Context::launches_out (false: a window is open or opening).
  bool open_window(Context& c, uint64_t now);
  bool skip_before_window(Context& c);  // true: this due window waits for a later launch
  bool count_launch_in(Context& c);
  void count_launch_out(Context& c);
  void note_launcher(Context& c);
  void set_launch_callbacks(bool on);
  void set_kernel_records(bool on);  // CONCURRENT_KERNEL activity records on or off
  void callback_ab_tick();  // AIFLAME_LAB=callback_ab: the collector's switch, when due
  void switch_sampling(bool on);  // AIFLAME_LAB=callback_ab=4: continuous PC sampling disabled or enabled again
  void switch_sampling_at_launch();  // ... by the launching thread, when the collector asked for it
  static void print_ab_switch(uint64_t start, uint64_t done, bool on);  // the line bench/callback_ab.py reads
  uint64_t synchronize(Context& c);  // returns the nanoseconds it took
  bool claim_device(uint32_t device);
  void drain(Context& c);
  void disable_sampling_locked(Context& c);  // under c.mu: Disable, and what it flushed taken as a batch
  bool enable_sampling_again_locked(Context& c);  // under c.mu: Enable and configure; false: sampling given up
  void drain_locked(Context& c);
  void close_window_locked(Context& c, uint64_t now);
  Context* context_of(CUcontext ctx);
  void disable(Context& c);
  bool check(CUptiResult r, const char* call, const std::string& fix = {});
  void tune_activity_buffers();
  void take_batch(Context& c, CUpti_PCSamplingData& d, uint64_t now);

  Recorder& rec_;
  CuptiApi api_;
  // The measurement switches, copied once in start(): the launch callback reads no options. Not in
  // the constructor: the library makes its backend before it starts the Recorder with the options
  // (injection.cpp), and a copy taken there held the defaults, so that no switch ever took effect.
  MeasurementSwitches measure_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::mutex contexts_mu_;
  std::map<CUcontext, std::unique_ptr<Context>> contexts_;
  std::mutex cubins_mu_;
  std::set<uint64_t> cubins_seen_;
  std::mutex names_mu_;
  std::set<char*> function_names_;  // CUPTI shares these strings between records (see stop())
  bool sampling_failed_ = false;
  std::atomic<bool> stopped_{false};  // after stop(): late callbacks and buffers are ignored
  using NodeTypeFn = CUresult (*)(CUgraphNode, CUgraphNodeType*);
  NodeTypeFn node_type_ = nullptr;  // libcuda's cuGraphNodeGetType, when the program loaded libcuda
  unsigned drains_ = 0;
  std::map<uint32_t, std::unique_ptr<DeviceClaim>> claims_;  // per device ordinal, under contexts_mu_
  std::atomic<bool> launch_callbacks_on_{true};
  std::unique_ptr<CallbackAB> callback_ab_;  // AIFLAME_LAB=callback_ab, continuous mode; the collector's
  std::atomic<int> sampling_switch_{0};        // AIFLAME_LAB=callback_ab=4: 1 off, 2 on, asked of the next launch's exit
  // Windows mode: when the window thread last switched the launch callbacks back on (CUPTI's clock).
  // A launch that entered its driver call while they were off has no entry callback, so it is not in
  // Context::launches_out, and a window opened at once could take its kernel: on the H100 eight
  // threads on eight streams then hung in cuptiPCSamplingStop, or one launch in a window took 16 s.
  // No window opens until kCallbacksGraceNs later: a launch's
  // driver call takes microseconds, so those launches have left it by then.
  std::atomic<uint64_t> callbacks_on_at_{0};
  std::atomic<int64_t> captures_{0};  // stream captures under way (windows wait for none)
  std::atomic<uint64_t> sync_ns_{0}, window_launches_{0}, prime_ns_{0}, window_waits_{0}, window_wait_ns_{0};
  std::atomic<uint64_t> window_cancels_{0};  // windows given up: other threads' launches did not end in time
  std::atomic<uint64_t> skip_rng_{0x9E3779B97F4A7C15ull};  // skip_before_window's draws
  std::atomic<uint64_t> windows_skipped_{0};  // due windows not opened: several threads were launching
  // Where windows mode's time goes on the launching threads (the summary's windows line): switching
  // the launch callbacks, launch callbacks delivered outside any window, and the owner's opening
  // (wait for others, synchronize, Start), fetching at its launch exits and closing (synchronize,
  // Stop, fetch, callbacks off).
  std::atomic<uint64_t> toggles_{0}, toggle_ns_{0}, launches_outside_{0}, open_ns_{0}, fetch_ns_{0}, close_ns_{0};
  std::thread window_thread_;
  std::atomic<bool> window_thread_stop_{false};
  std::vector<std::unique_ptr<Context>> retired_;  // replaced contexts, never freed while running
  // Attach (cupti_attach.cpp): unknown contexts seen at launches, under contexts_mu_; detach's handshake.
  bool attach_mode_ = false;
  std::set<CUcontext> pending_contexts_;
  std::vector<CUcontext> existing_contexts_;  // find_existing_contexts()
  CUptiResult subscribe_result_ = CUPTI_SUCCESS;
  std::atomic<bool> finalize_requested_{false}, finalizing_{false}, finalized_{false};
  // Validates context_of's per-thread cache: unique per backend (tests create several at one
  // address) and bumped when a context is replaced.
  std::atomic<uint64_t> generation_{next_generation() << 32};
  static uint64_t next_generation() {
    static std::atomic<uint64_t> g{0};
    return ++g;
  }
};

}  // namespace aiflame
