#include "record/cupti/cupti_backend.h"

#include <cupti_activity_deprecated.h>
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "record/crash_report.h"
#include "record/debug_log.h"
#include "util/tsc_clock.h"
#include "util/hot_path.h"

namespace aiflame {
namespace {

CuptiBackend* g_backend = nullptr;

AIFLAME_HOT void CUPTIAPI callback_trampoline(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (g_backend) g_backend->on_callback(domain, cbid, data);
}

size_t g_activity_buffer_size = 4u << 20;  // MeasurementSwitches::activity_buffer_mb
bool g_zeroed_buffers = false;  // CUPTI told that buffers come zeroed (it then skips zeroing them)

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(g_zeroed_buffers ? std::calloc(1, g_activity_buffer_size)
                                                   : std::aligned_alloc(8, g_activity_buffer_size));
  *size = *buffer ? g_activity_buffer_size : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  if (g_backend && buffer) g_backend->on_activity_buffer(buffer, valid);
  std::free(buffer);
}

// Stream capture (CUDA graphs): while one is under way, a window must not open, since its
// cuCtxSynchronize ends the capture with an error (bench_kernels' graph mode exited 1 in windows mode).
constexpr CUpti_CallbackId kCaptureBegin[] = {
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,       CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz,
};
constexpr CUpti_CallbackId kCaptureEnd[] = {CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
                                            CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz};

bool is_one_of(CUpti_CallbackId id, std::span<const CUpti_CallbackId> ids) {
  for (CUpti_CallbackId i : ids)
    if (i == id) return true;
  return false;
}

constexpr CUpti_CallbackId kLaunchCallbacks[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,           CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

// CUPTI 12.x delivers kernel records as CUpti_ActivityKernel9, CUPTI 13 as CUpti_ActivityKernel10;
// every field aiflame reads sits at the same offset in both, so one reader serves both.
#define AIFLAME_SAME_OFFSET(f) \
  static_assert(offsetof(CUpti_ActivityKernel9, f) == offsetof(CUpti_ActivityKernel10, f), #f " moved");
AIFLAME_SAME_OFFSET(start)
AIFLAME_SAME_OFFSET(end)
AIFLAME_SAME_OFFSET(deviceId)
AIFLAME_SAME_OFFSET(contextId)
AIFLAME_SAME_OFFSET(streamId)
AIFLAME_SAME_OFFSET(gridX)
AIFLAME_SAME_OFFSET(blockZ)
AIFLAME_SAME_OFFSET(correlationId)
AIFLAME_SAME_OFFSET(name)
AIFLAME_SAME_OFFSET(graphId)
AIFLAME_SAME_OFFSET(graphNodeId)
AIFLAME_SAME_OFFSET(registersPerThread)
AIFLAME_SAME_OFFSET(staticSharedMemory)
AIFLAME_SAME_OFFSET(dynamicSharedMemory)
#undef AIFLAME_SAME_OFFSET

std::string fix_for(CUptiResult r) {
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      return "GPU sampling needs root, or the driver option NVreg_RestrictProfilingToAdminUsers=0";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return "another CUPTI tool (Nsight Systems/Compute, torch.profiler, a DCGM or kineto daemon) is attached to "
             "this process; run aiflame without it";
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
      return "this GPU or driver does not support continuous PC sampling (needs compute capability 7.0+)";
    default:
      return {};
  }
}

}  // namespace

std::unique_ptr<GpuBackend> make_cupti_backend(Recorder& rec, const RecordOptions& opt, std::string* why) {
  CuptiApi api;
  if (!load_cupti(&api, opt.cupti_path, why)) return nullptr;
  if (api.version < kCuptiApiMinimum) {
    *why = api.library_path + " has CUPTI API version " + std::to_string(api.version) +
           "; aiflame reads the records of CUDA 12.0 (API " + std::to_string(kCuptiApiMinimum) +
           ") and newer: run with a newer CUDA runtime or point AIFLAME_CUPTI at a newer libcupti";
    return nullptr;
  }
  if (api.version / 10000 > CUPTI_API_VERSION / 10000)
    std::fprintf(stderr, "aiflame: %s (CUPTI API %u) is newer than the CUPTI %d aiflame was built with; if kernel times "
                 "look wrong, rebuild aiflame against the newer CUDA headers\n",
                 api.library_path.c_str(), api.version, CUPTI_API_VERSION / 10000);
  debug("loaded %s (CUPTI API %u)", api.library_path.c_str(), api.version);
  return std::make_unique<CuptiBackend>(rec, std::move(api));
}

bool CuptiBackend::check(CUptiResult r, const char* call, const std::string& fix) {
  if (r == CUPTI_SUCCESS) return true;
  std::string f = fix.empty() ? fix_for(r) : fix;
  rec_.warn(std::string(call) + " failed: " + api_.result_string(r) + (f.empty() ? "" : "; " + f));
  return false;
}

bool CuptiBackend::start() {
  measure_ = rec_.options().measure;
  g_backend = this;
  CUptiResult r = api_.cuptiSubscribe(&subscriber_, callback_trampoline, nullptr);
  subscribe_result_ = r;
  if (r != CUPTI_SUCCESS) {
    check(r, "cuptiSubscribe");
    rec_.warn("nothing is recorded for this process; the program runs on unprofiled");
    g_backend = nullptr;
    return false;
  }
  check(api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED),
        "cuptiEnableCallback(CONTEXT_CREATED)");
  check(api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
        "cuptiEnableCallback(CONTEXT_DESTROY_STARTING)");
  check(api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED),
        "cuptiEnableCallback(MODULE_LOADED)");
  // Graph nodes: the stack that captured or added a kernel node goes beneath the replay's stack.
  node_type_ = reinterpret_cast<NodeTypeFn>(cuda_driver_symbol("cuGraphNodeGetType"));
  if (api_.cuptiGetGraphNodeId && api_.cuptiGetGraphId) {
    check(api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED),
          "cuptiEnableCallback(GRAPHNODE_CREATED)");
    check(api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED),
          "cuptiEnableCallback(GRAPHNODE_CLONED)");
  }
  const RecordOptions& o = rec_.options();
  const bool windows = o.pc_sampling && o.pc_mode == PcMode::Windows;
  if (windows)
    for (CUpti_CallbackId id : kCaptureBegin) check(api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id), "cuptiEnableCallback(capture)");
  if (windows)
    for (CUpti_CallbackId id : kCaptureEnd) check(api_.cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id), "cuptiEnableCallback(capture)");
  // On from the start in every mode: in windows mode the first window is due at once and opens at
  // the program's first launch (its start-up, not the loop it times); it switches them off.
  set_launch_callbacks(true);
  if (measure_.callback_ab && !windows) {
    // Kernel records cannot be switched on while PC sampling is enabled (CUPTI_ERROR_NOT_COMPATIBLE
    // on CUPTI 13.0): their A/B needs --no-pc-sampling, or sampling switched with them (=6, =7: they
    // come on before sampling is enabled and go off after it is disabled).
    const bool records_ok = !o.pc_sampling || (measure_.callback_ab & 4);
    if ((measure_.callback_ab & 2) && (!records_ok || !o.kernel_activity || !api_.cuptiActivityDisable)) {
      rec_.warn("AIFLAME_LAB=callback_ab=" + std::to_string(measure_.callback_ab) +
                ": kernel records are switched only with kernel records on, and either without PC sampling "
                "(--no-pc-sampling) or together with it (6, 7)");
      measure_.callback_ab &= ~2u;
    }
    if ((measure_.callback_ab & 4) && !o.pc_sampling) {
      rec_.warn("AIFLAME_LAB=callback_ab=" + std::to_string(measure_.callback_ab) + ": PC sampling is off, so it is not switched");
      measure_.callback_ab &= ~4u;
    }
    // 8: no launch callback at all (with 4, sampling's cost with nothing else per launch: its floor).
    if (measure_.callback_ab & 8) {
      measure_.callback_ab &= ~1u;
      set_launch_callbacks(false);
    }
    const uint64_t seed = static_cast<uint64_t>(getpid()) * 0x2545f4914f6cdd1dULL;
    if (measure_.callback_ab & 4)
      callback_ab_ = std::make_unique<CallbackAB>(seed, CallbackAB::kMinSamplingSliceNs, CallbackAB::kMaxSamplingSliceNs);
    else if (measure_.callback_ab & 3)
      callback_ab_ = std::make_unique<CallbackAB>(seed);
  }
  if (o.kernel_activity) {
    tune_activity_buffers();
    if (check(api_.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks") &&
        !(windows && measure_.win_toggle_activity && measure_.win_disable_between && api_.cuptiActivityDisable))
      set_kernel_records(true);
  }
  return true;
}

// The activity-buffer measurement switches (MeasurementSwitches, bench/storm_breakdown.sh).
void CuptiBackend::tune_activity_buffers() {
  const MeasurementSwitches& o = measure_;
  g_activity_buffer_size = size_t{o.activity_buffer_mb} << 20;
  if (!api_.cuptiActivitySetAttribute) return;
  if (o.activity_zeroed) {
    uint8_t one = 1;
    size_t n = sizeof(one);
    g_zeroed_buffers = check(api_.cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &n, &one),
                             "cuptiActivitySetAttribute(ZEROED_OUT_ACTIVITY_BUFFER)");
  }
  if (o.device_buffer_mb) {
    size_t d = size_t{o.device_buffer_mb} << 20, n = sizeof(d);
    check(api_.cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &n, &d),
          "cuptiActivitySetAttribute(DEVICE_BUFFER_SIZE)");
  }
}

AIFLAME_HOT void CuptiBackend::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  // Detaching (`record --pid`): the first driver call's exit stops sampling and finalizes CUPTI here,
  // on the program's own thread (cupti_attach.cpp says why).
  if (finalize_requested_.load(std::memory_order_relaxed)) {
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) finalize_in_callback(data);
    return;
  }
  if (stopped_.load(std::memory_order_relaxed)) return;  // the profile is closed (process exit)
  if (priming_on_this_thread()) return;  // aiflame's own kernel (prime_sampling)
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    auto* cb = static_cast<const CUpti_CallbackData*>(data);
    if (is_one_of(cbid, kCaptureBegin) || is_one_of(cbid, kCaptureEnd)) {
      stream_capture(cbid, cb);
      return;
    }
    if (cb->callbackSite != CUPTI_API_ENTER) {
      // The clock, for the call's duration (the trace's launch slices), read only for a recorded launch.
      rec_.on_launch_exit([](const void* self) { return static_cast<const CuptiBackend*>(self)->timestamp(); }, this);
      if (rec_.options().pc_mode == PcMode::Windows) window_exit(cb->context);
      if (sampling_switch_.load(std::memory_order_relaxed)) switch_sampling_at_launch();  // AIFLAME_LAB=callback_ab=4
      return;
    }
    // MeasurementSwitches::skip_launches (bench/storm_breakdown.sh): 1 measures CUPTI's callback
    // alone, 2 adds the timestamp and context lookup.
    const uint32_t skip = measure_.skip_launches;
    if (skip == 1) return;
    if (rec_.launch_ab_off(reinterpret_cast<uint64_t>(cb->symbolName))) return;  // AIFLAME_LAB=launch_ab: a slice without the launch path
    uint64_t ts = 0;
    api_.cuptiGetTimestamp(&ts);
    Context* c = context_of(cb->context);
    if (skip == 2) {
      asm volatile("" ::"r"(c), "r"(ts));
      return;
    }
    // Windows mode with the launch callbacks switched on only around windows: a launch outside any
    // window (the callbacks' grace period, a window given up) is not recorded, since no sample can
    // name it; so it costs what the callback costs and no stack.
    if (c && c->windows && !window_enter(*c, ts) && measure_.win_toggle_callbacks) return;
    rec_.on_launch(cbid, cb->correlationId, reinterpret_cast<uint64_t>(cb->symbolName), ts, c ? c->device : kNoDevice);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RESOURCE) return;
  auto* res = static_cast<const CUpti_ResourceData*>(data);
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED: context_created(res->context); break;
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: context_destroying(res->context); break;
    case CUPTI_CBID_RESOURCE_MODULE_LOADED:
      module_loaded(static_cast<const CUpti_ModuleResourceData*>(res->resourceDescriptor), res->context);
      break;
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED:
      graph_node(static_cast<const CUpti_GraphData*>(res->resourceDescriptor), cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
      break;
    default: break;
  }
}

// Counts the stream captures under way: one more at a capture's begin (before it starts, so that no
// window opens in between; undone when the call failed), one less when it ends.
AIFLAME_COLD void CuptiBackend::stream_capture(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  const bool begin = is_one_of(cbid, kCaptureBegin);
  const bool failed = cb->callbackSite == CUPTI_API_EXIT && cb->functionReturnValue &&
                      *static_cast<const CUresult*>(cb->functionReturnValue) != CUDA_SUCCESS;
  if (begin && cb->callbackSite == CUPTI_API_ENTER) captures_.fetch_add(1, std::memory_order_acq_rel);
  bool undo = begin ? failed : cb->callbackSite == CUPTI_API_EXIT;
  if (!undo) return;
  int64_t n = captures_.load(std::memory_order_acquire);
  while (n > 0 && !captures_.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel)) {
  }
}

void CuptiBackend::unhook() {
  if (g_backend == this) g_backend = nullptr;
}

AIFLAME_COLD void CuptiBackend::context_created(CUcontext ctx) {
  auto c = std::make_unique<Context>();
  c->ctx = ctx;
  api_.cuptiGetDeviceId(ctx, &c->device);
  api_.cuptiGetContextId(ctx, &c->context_id);
  api_.cuptiGetTimestamp(&c->last_drain);
  debug("context created; enabling PC sampling");
  if (rec_.options().pc_sampling && !sampling_failed_ && claim_device(c->device)) c->enabled = enable_sampling(*c);
  debug("context %u created on device %u, PC sampling %s", c->context_id, c->device, c->enabled ? "on" : "off");
  std::lock_guard<std::mutex> lock(contexts_mu_);
  // A new context at a destroyed one's address: the old one is kept (the collector and the per-thread
  // lookup cache may still point at it). Every new context invalidates the per-thread caches.
  if (auto& slot = contexts_[ctx]) retired_.push_back(std::move(slot));
  contexts_[ctx] = std::move(c);
  generation_.fetch_add(1, std::memory_order_release);
}

void CuptiBackend::context_destroying(CUcontext ctx) {
  std::unique_ptr<Context> c;
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    auto it = contexts_.find(ctx);
    if (it == contexts_.end()) return;
    debug("context %u is being destroyed", it->second->context_id);
    disable(*it->second);
    // Kept alive (not erased): the collector may hold a pointer; disabled contexts are skipped.
  }
  if (api_.cuptiActivityFlushAll) api_.cuptiActivityFlushAll(0);
}

void CuptiBackend::module_loaded(const CUpti_ModuleResourceData* m, CUcontext ctx) {
  if (!m || !m->pCubin || m->cubinSize == 0) return;
  CUpti_GetCubinCrcParams p = {CUpti_GetCubinCrcParamsSize};
  p.cubinSize = m->cubinSize;
  p.cubin = m->pCubin;
  if (!check(api_.cuptiGetCubinCrc(&p), "cuptiGetCubinCrc")) return;
  {
    std::lock_guard<std::mutex> lock(cubins_mu_);
    if (!cubins_seen_.insert(p.cubinCrc).second) return;
  }
  CodeObjectRecord rec;
  rec.id = p.cubinCrc;  // CUPTI names a code object by its CRC
  api_.cuptiGetDeviceId(ctx, &rec.device);
  if (rec_.options().keep_cubins) rec.image.assign(m->pCubin, m->cubinSize);
  rec_.add_code_object(rec);
}

void CuptiBackend::graph_node(const CUpti_GraphData* g, bool cloned) {
  if (!g || !g->node) return;
  PhaseScope phase(Phase::LaunchCallback);
  CUgraphNodeType type;
  // Only kernel nodes run kernels; the driver call is cheap and made once per node.
  if (node_type_ && node_type_(g->node, &type) == CUDA_SUCCESS && type != CU_GRAPH_NODE_TYPE_KERNEL)
    return;
  GraphNodeRecord r;
  if (api_.cuptiGetGraphNodeId(g->node, &r.node_id) != CUPTI_SUCCESS) return;
  uint32_t graph = 0;
  if (g->graph && api_.cuptiGetGraphId(g->graph, &graph) == CUPTI_SUCCESS) r.graph_id = graph;
  if (cloned) {
    if (!g->originalNode || api_.cuptiGetGraphNodeId(g->originalNode, &r.original_node_id) != CUPTI_SUCCESS) return;
  } else {
    r.stack_id = rec_.graph_node_stack(r.node_id);
  }
  rec_.add_graph_node(r);
}

void CuptiBackend::on_activity_buffer(uint8_t* buffer, size_t valid) {
  if (stopped_.load()) return;  // delivered during the process's exit, after the profile was closed
  PhaseScope phase(Phase::ActivityBuffer);
  debug("activity buffer: %zu bytes", valid);
  CUpti_Activity* r = nullptr;
  while (api_.cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && r->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
    KernelRecord kr;
    kr.correlation_id = k->correlationId;
    kr.start = k->start;
    kr.end = k->end;
    kr.device = k->deviceId;
    kr.context = k->contextId;
    kr.stream = k->streamId;
    kr.name = rec_.intern(k->name ? k->name : "[unknown kernel]");
    kr.grid[0] = k->gridX; kr.grid[1] = k->gridY; kr.grid[2] = k->gridZ;
    kr.block[0] = k->blockX; kr.block[1] = k->blockY; kr.block[2] = k->blockZ;
    kr.graph_id = k->graphId;
    kr.graph_node_id = k->graphNodeId;
    kr.registers = k->registersPerThread;
    kr.static_shared = k->staticSharedMemory > 0 ? static_cast<uint32_t>(k->staticSharedMemory) : 0;
    kr.dynamic_shared = k->dynamicSharedMemory > 0 ? static_cast<uint32_t>(k->dynamicSharedMemory) : 0;
    rec_.add_kernel(kr);
  }
}

void CuptiBackend::set_launch_callbacks(bool on) {
  const auto t0 = std::chrono::steady_clock::now();
  for (CUpti_CallbackId id : kLaunchCallbacks)
    check(api_.cuptiEnableCallback(on ? 1 : 0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id), "cuptiEnableCallback(launch)");
  launch_callbacks_on_.store(on, std::memory_order_release);
  toggles_++;
  toggle_ns_ += ns_since(t0);
}

void CuptiBackend::set_kernel_records(bool on) {
  if (on)
    check(api_.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)");
  else
    check(api_.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityDisable(CONCURRENT_KERNEL)");
}

void CuptiBackend::callback_ab_tick() {
  const uint64_t now = TscClock::mono_ns();
  bool on = true;
  if (!callback_ab_->tick(now, &on)) return;
  if (measure_.callback_ab & 4) {
    // PC sampling is switched by the program's next launch, not here: disabled and enabled from the
    // collector, hf_gpt2.py, resnet_train.py, timm_train.py and gpt_train.py all hung within 1-3 cycles
    // (H200, CUPTI 13.0). What is switched with it (+1 the launch callbacks, +2 the
    // kernel records) comes on here, before sampling, and goes off at that launch, after it; with the
    // launch callbacks off (+8) they come on until then, to carry the switch.
    if (on && (measure_.callback_ab & 2)) set_kernel_records(true);
    if (on || (measure_.callback_ab & 8)) set_launch_callbacks(true);
    sampling_switch_.store(on ? 2 : 1, std::memory_order_release);
    return;  // switch_sampling_at_launch prints it
  }
  if (measure_.callback_ab & 1) set_launch_callbacks(on);
  if (measure_.callback_ab & 2) set_kernel_records(on);
  print_ab_switch(now, TscClock::mono_ns(), on);
}

// Both ends of an A/B switch, CLOCK_MONOTONIC ns: bench/callback_ab.py counts a step that overlaps
// [start, done] for neither kind.
void CuptiBackend::print_ab_switch(uint64_t start, uint64_t done, bool on) {
  std::fprintf(stderr, "aiflame: callback A/B %llu %llu %s\n", static_cast<unsigned long long>(start),
               static_cast<unsigned long long>(done), on ? "on" : "off");
}

// AIFLAME_LAB=callback_ab=4: the switch the collector asked for, on the launching thread at a launch's
// exit (one thread takes it). Switching off, the records (+2) and the launch callbacks (+1) follow
// sampling; with +8 the launch callbacks go off again after either switch.
void CuptiBackend::switch_sampling_at_launch() {
  const int want = sampling_switch_.exchange(0, std::memory_order_acq_rel);
  if (!want) return;
  const uint64_t now = TscClock::mono_ns();
  switch_sampling(want == 2);
  if (want == 1 && (measure_.callback_ab & 2)) set_kernel_records(false);
  if ((measure_.callback_ab & 8) || (want == 1 && (measure_.callback_ab & 1))) set_launch_callbacks(false);
  print_ab_switch(now, TscClock::mono_ns(), want == 2);
}

void CuptiBackend::stop() {
  debug("stopping: final drain, disable, activity flush");
  window_thread_stop_.store(true);
  if (window_thread_.joinable()) window_thread_.join();
  std::vector<Context*> all;
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    for (auto& [ctx, c] : contexts_) all.push_back(c.get());
  }
  for (Context* c : all) disable(*c);
  debug("sampling disabled on %zu context(s); flushing kernel records", all.size());
  if (rec_.options().kernel_activity) api_.cuptiActivityFlushAll(1);
  debug("kernel records flushed");
  stopped_.store(true);
  if (rec_.options().pc_mode == PcMode::Windows && !rec_.options().quiet)
    std::fprintf(stderr, "aiflame: windows: %llu windows, %.1f ms open, %.1f ms in cuCtxSynchronize, %llu launches inside windows, "
                 "%.1f ms priming sampling at context creation, %llu launches of other threads waited %.1f ms, %llu windows "
                 "given up, %llu skipped (several threads launching)\n",
          (unsigned long long)rec_.counters().windows.load(), rec_.counters().window_ns.load() / 1e6, sync_ns_.load() / 1e6,
          (unsigned long long)window_launches_.load(), prime_ns_.load() / 1e6,
          (unsigned long long)window_waits_.load(), window_wait_ns_.load() / 1e6, (unsigned long long)window_cancels_.load(),
          (unsigned long long)windows_skipped_.load());
  if (rec_.options().pc_mode == PcMode::Windows && !rec_.options().quiet)
    std::fprintf(stderr, "aiflame: windows' costs: %llu launch-callback switches took %.2f ms, %llu launch callbacks outside "
                 "windows, opening %.2f ms, fetching %.2f ms, closing %.2f ms\n",
                 (unsigned long long)toggles_.load(), toggle_ns_.load() / 1e6, (unsigned long long)launches_outside_.load(),
                 open_ns_.load() / 1e6, fetch_ns_.load() / 1e6, close_ns_.load() / 1e6);
  size_t dropped = 0;
  if (api_.cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) rec_.add_dropped_records(dropped);
  if (attach_mode_) return;  // detach() frees the function names after cuptiFinalize
  // CUPTI's function-name strings are the user's to free, but they may also back activity records
  // that CUPTI delivers after this point (context teardown runs after atexit); the process is
  // exiting, so they are left to it. AIFLAME_LAB=free_names (MeasurementSwitches::free_names) frees
  // them here (for leak checkers).
  std::lock_guard<std::mutex> lock(names_mu_);
  debug("%zu distinct function-name strings from CUPTI", function_names_.size());
  if (measure_.free_names)
    for (char* name : function_names_) std::free(name);
  function_names_.clear();
}

}  // namespace aiflame
