// NVIDIA backend: CUPTI callbacks (contexts, modules, launches), kernel activity records and
// continuous PC sampling, fed into the Recorder hub. Never throws; every CUPTI failure becomes one
// warning that names the fix, and the program runs on.
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "record/cupti/cupti_api.h"
#include "record/device_claim.h"
#include "record/recorder.h"
#include "record/sampling_windows.h"

namespace aiflame {

// A function of the loaded libcuda by name, or null (not loaded, or a test without it).
void* cuda_driver_symbol(const char* name);

class CuptiBackend {
 public:
  CuptiBackend(Recorder& rec, CuptiApi api) : rec_(rec), api_(std::move(api)) {}
  // Subscribes and enables callbacks and activity. False when nothing can be recorded (warned).
  bool start();
  // Collector thread: drains the PC sampling buffers of every context.
  void drain_all();
  // At exit: final drain, disable sampling, flush activity.
  void stop();
  // Windows mode: opens and closes sampling windows on every context whose time has come; returns
  // the nanoseconds until the next window event. Called by the window thread (and by tests).
  uint64_t tick_windows();
  // Windows mode: starts the thread that calls tick_windows(); stop() ends it.
  void start_window_thread();

  // Attach to a running program (cupti_attach.cpp). The contexts that existed before start() (their
  // CONTEXT_CREATED is long past): sampling is enabled on each with the context pushed on this thread.
  void attach_contexts(const std::vector<CUcontext>& contexts);
  // Contexts first seen in a launch callback (not primary ones): adopted here, off the launch path.
  void adopt_pending_contexts();
  // Ends what start() began and detaches CUPTI (cuptiFinalize, at a driver call's exit as CUPTI
  // recommends, or from this thread when the program makes no call within 2 s); the program runs on.
  void detach();
  CUptiResult subscribe_result() const { return subscribe_result_; }

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
  };
  void context_created(CUcontext ctx);
  void finalize_in_callback(const void* data);  // detach(): the first driver-call exit finalizes CUPTI
  void unhook();  // the static trampolines stop routing to this backend
  void context_destroying(CUcontext ctx);
  void module_loaded(const CUpti_ModuleResourceData* m, CUcontext ctx);
  void graph_node(const CUpti_GraphData* g, bool cloned);
  bool enable_sampling(Context& c);
  bool claim_device(uint32_t device);
  void drain(Context& c);
  void drain_locked(Context& c);
  void close_window_locked(Context& c, uint64_t now);
  Context* context_of(CUcontext ctx);
  void disable(Context& c);
  bool check(CUptiResult r, const char* call, const std::string& fix = {});
  void tune_activity_buffers();
  PcBatchRecord take_batch(Context& c, CUpti_PCSamplingData& d, uint64_t now);

  Recorder& rec_;
  CuptiApi api_;
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
  std::thread window_thread_;
  std::atomic<bool> window_thread_stop_{false};
  std::vector<std::unique_ptr<Context>> retired_;
  // Attach (cupti_attach.cpp): unknown contexts seen at launches, under contexts_mu_; detach's handshake.
  bool attach_mode_ = false;
  std::set<CUcontext> pending_contexts_;
  CUptiResult subscribe_result_ = CUPTI_SUCCESS;
  std::atomic<bool> finalize_requested_{false}, finalizing_{false}, finalized_{false};  // replaced contexts, never freed while running
  // Validates context_of's per-thread cache: unique per backend (tests create several at one
  // address) and bumped when a context is replaced.
  std::atomic<uint64_t> generation_{next_generation() << 32};
  static uint64_t next_generation() {
    static std::atomic<uint64_t> g{0};
    return ++g;
  }
};

}  // namespace aiflame
