// The CUPTI backend attached to a program that is already running (`aiflame record --pid`): the
// contexts made before CUPTI was there, and detaching so that the program runs on without CUPTI.
#include <chrono>
#include <cstdlib>
#include <thread>

#include "record/cupti/cupti_backend.h"
#include "record/debug_log.h"

namespace aiflame {
namespace {

using PushFn = CUresult (*)(CUcontext);
using PopFn = CUresult (*)(CUcontext*);

// CUPTI's PC-sampling calls name their context, but are made with it current as CUPTI's own samples do;
// pushing an existing context on our thread creates nothing and is undone at once.
struct ContextScope {
  explicit ContextScope(CUcontext ctx) {
    static auto push = reinterpret_cast<PushFn>(cuda_driver_symbol("cuCtxPushCurrent_v2"));
    static auto pop = reinterpret_cast<PopFn>(cuda_driver_symbol("cuCtxPopCurrent_v2"));
    pop_ = pop;
    pushed_ = push && pop && push(ctx) == CUDA_SUCCESS;
  }
  ~ContextScope() {
    CUcontext c = nullptr;
    if (pushed_) pop_(&c);
  }
  PopFn pop_ = nullptr;
  bool pushed_ = false;
};

// The devices' primary contexts that are active (PyTorch, JAX and the CUDA runtime use these). Retain
// and release at once: the reference count ends where it was, and no context is made (an inactive
// one is skipped, never retained). Without cuInit the count fails: no context.
std::vector<CUcontext> active_primary_contexts() {
  using CountFn = CUresult (*)(int*);
  using GetFn = CUresult (*)(CUdevice*, int);
  using StateFn = CUresult (*)(CUdevice, unsigned*, int*);
  using RetainFn = CUresult (*)(CUcontext*, CUdevice);
  using ReleaseFn = CUresult (*)(CUdevice);
  static auto count = reinterpret_cast<CountFn>(cuda_driver_symbol("cuDeviceGetCount"));
  static auto get = reinterpret_cast<GetFn>(cuda_driver_symbol("cuDeviceGet"));
  static auto state = reinterpret_cast<StateFn>(cuda_driver_symbol("cuDevicePrimaryCtxGetState"));
  static auto retain = reinterpret_cast<RetainFn>(cuda_driver_symbol("cuDevicePrimaryCtxRetain"));
  static auto release = reinterpret_cast<ReleaseFn>(cuda_driver_symbol("cuDevicePrimaryCtxRelease_v2"));
  std::vector<CUcontext> out;
  int n = 0;
  if (!count || !get || !state || !retain || !release || count(&n) != CUDA_SUCCESS) return out;
  for (int i = 0; i < n; i++) {
    CUdevice dev{};
    unsigned flags = 0;
    int active = 0;
    if (get(&dev, i) != CUDA_SUCCESS || state(dev, &flags, &active) != CUDA_SUCCESS || !active) continue;
    CUcontext ctx = nullptr;
    if (retain(&ctx, dev) != CUDA_SUCCESS) continue;
    release(dev);
    if (ctx) out.push_back(ctx);
  }
  return out;
}

}  // namespace

size_t CuptiBackend::find_existing_contexts() {
  existing_contexts_ = active_primary_contexts();
  return existing_contexts_.size();
}

std::string CuptiBackend::cannot_detach() const {
  return api_.cuptiFinalize ? std::string() : api_.library_path + " lacks cuptiFinalize, needed to detach";
}

std::string CuptiBackend::start_refusal() const {
  if (subscribe_result_ == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    return "cupti-busy another CUPTI client (Nsight Systems/Compute, torch.profiler, a DCGM or kineto "
           "daemon) is already subscribed in this process; stop it, or record when it is done";
  return "cupti cuptiSubscribe failed: " + api_.result_string(subscribe_result_);
}

void CuptiBackend::attach_existing_contexts() {
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    attach_mode_ = true;
  }
  for (CUcontext ctx : existing_contexts_) {
    ContextScope scope(ctx);
    context_created(ctx);
  }
}

void CuptiBackend::adopt_new_contexts() {
  std::set<CUcontext> pending;
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    pending.swap(pending_contexts_);
    for (auto it = pending.begin(); it != pending.end();)
      it = contexts_.count(*it) ? pending.erase(it) : std::next(it);
  }
  for (CUcontext ctx : pending) {
    if (stopped_.load()) return;
    debug("adopting a context first seen at a launch");
    ContextScope scope(ctx);
    context_created(ctx);
  }
}

// Called on a program thread at the exit of a driver call once detach() asked for it: sampling is
// stopped and CUPTI finalized here, where they race no other CUPTI or driver call of that thread.
// Stopping from the attach thread instead hung under a live PyTorch job on the H100
// (bench/attach_debug.sh at d9aa39d, 2026-11-24: the trace ends at "stopping: final drain, disable, activity
// flush" while the program launches on), as cuptiPCSamplingStop from a non-launching thread hung the
// program in windows mode (bench/probes/serialized_where.cu at d9aa39d).
void CuptiBackend::finalize_in_callback(const void* data) {
  auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (!cb || cb->callbackSite != CUPTI_API_EXIT) return;
  if (finalizing_.exchange(true)) return;
  debug("detaching on a program thread at a driver call's exit");
  stop();  // final drain, sampling disabled on every context, activity flushed
  if (api_.cuptiFinalize) api_.cuptiFinalize();
  debug("CUPTI finalized");
  finalized_.store(true);
}

void CuptiBackend::detach() {
  if (subscriber_ && api_.cuptiFinalize) {
    finalize_requested_.store(true);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!finalized_.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!finalizing_.exchange(true)) {
      // No driver call in 2 s: the program is idle (or between phases); nothing races us.
      debug("no driver call within 2 s: detaching from the attach thread");
      stop();
      api_.cuptiUnsubscribe(subscriber_);
      api_.cuptiFinalize();
      finalized_.store(true);
    }
    while (!finalized_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } else {
    stop();
    if (subscriber_) api_.cuptiUnsubscribe(subscriber_);
  }
  subscriber_ = nullptr;
  unhook();
  // CUPTI delivers no record after cuptiFinalize: the function-name strings it handed over are ours.
  {
    std::lock_guard<std::mutex> lock(names_mu_);
    for (char* name : function_names_) std::free(name);
    function_names_.clear();
  }
  std::lock_guard<std::mutex> lock(contexts_mu_);
  claims_.clear();  // the next recording (or another process) may sample these GPUs
}

}  // namespace aiflame
