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

}  // namespace

void CuptiBackend::attach_contexts(const std::vector<CUcontext>& contexts) {
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    attach_mode_ = true;
  }
  for (CUcontext ctx : contexts) {
    ContextScope scope(ctx);
    context_created(ctx);
  }
}

void CuptiBackend::adopt_pending_contexts() {
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

// Called on a program thread at the exit of a driver call once detach() asked for it: CUPTI's
// recommended place for cuptiFinalize (it then races no other CUPTI call of that thread).
void CuptiBackend::finalize_in_callback(const void* data) {
  auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (!cb || cb->callbackSite != CUPTI_API_EXIT) return;
  if (finalizing_.exchange(true)) return;
  if (api_.cuptiFinalize) api_.cuptiFinalize();
  finalized_.store(true);
}

void CuptiBackend::detach() {
  stop();  // final drain, sampling disabled on every context, activity flushed; callbacks now record nothing
  if (subscriber_ && api_.cuptiFinalize) {
    finalize_requested_.store(true);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!finalized_.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!finalizing_.exchange(true)) {
      // No driver call in 2 s: the program is idle (or between phases); nothing races us.
      debug("no launch within 2 s: finalizing CUPTI from the attach thread");
      api_.cuptiUnsubscribe(subscriber_);
      api_.cuptiFinalize();
      finalized_.store(true);
    }
    while (!finalized_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } else if (subscriber_) {
    api_.cuptiUnsubscribe(subscriber_);
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
