#include "record/levelzero/ze_backend.h"

#include <time.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <tuple>

#include "profile/records.h"
#include "record/debug_log.h"

namespace aiflame {
namespace {

// The backend the trampolines route to (one per process, like CUPTI's subscriber).
std::atomic<LevelZeroBackend*> g_backend{nullptr};

// Our own timestamp events, per context: a pool of this many, another when it runs out.
constexpr uint32_t kPoolEvents = 256;
// A sample more than this far past the closest kernel base below it belongs to no kernel we know.
constexpr uint64_t kMaxKernelBytes = 64ull << 20;

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Set on a thread while the backend runs there: the tracing layer calls our callbacks for the
// backend's own Level Zero calls too (an event reset, a streamer read), and those are not the
// program's.
thread_local bool t_in_backend = false;
struct InBackend {
  bool was = t_in_backend;
  InBackend() { t_in_backend = true; }
  ~InBackend() { t_in_backend = was; }
};

// The trampolines: nothing may leave them but a return.
#define AIFLAME_ZE_GUARD(body)                         \
  do {                                                 \
    LevelZeroBackend* b = g_backend.load();            \
    if (!b || t_in_backend) return;                    \
    InBackend in;                                      \
    try {                                              \
      body;                                            \
    } catch (...) {                                    \
    }                                                  \
  } while (0)

void on_context_create(ze_context_create_params_t* p, ze_result_t r, void*, void**) {
  if (r == ZE_RESULT_SUCCESS) AIFLAME_ZE_GUARD(b->context_created(*p->phDriver, **p->pphContext));
}
void on_context_destroy(ze_context_destroy_params_t* p, ze_result_t, void*, void**) {
  AIFLAME_ZE_GUARD(b->context_destroying(*p->phContext));
}
void on_module_create(ze_module_create_params_t* p, ze_result_t r, void*, void**) {
  if (r == ZE_RESULT_SUCCESS) AIFLAME_ZE_GUARD(b->module_created(*p->phDevice, **p->pphModule));
}
void on_kernel_create(ze_kernel_create_params_t* p, ze_result_t r, void*, void**) {
  if (r == ZE_RESULT_SUCCESS && *p->pdesc) AIFLAME_ZE_GUARD(b->kernel_created(*p->phModule, (*p->pdesc)->pKernelName, **p->pphKernel));
}
void on_list_create(ze_command_list_create_params_t* p, ze_result_t r, void*, void**) {
  if (r == ZE_RESULT_SUCCESS) AIFLAME_ZE_GUARD(b->list_created(*p->phContext, *p->phDevice, **p->pphCommandList, false));
}
void on_list_create_immediate(ze_command_list_create_immediate_params_t* p, ze_result_t r, void*, void**) {
  if (r == ZE_RESULT_SUCCESS) AIFLAME_ZE_GUARD(b->list_created(*p->phContext, *p->phDevice, **p->pphCommandList, true));
}
void on_list_destroy(ze_command_list_destroy_params_t* p, ze_result_t, void*, void**) {
  AIFLAME_ZE_GUARD(b->list_ending(*p->phCommandList, true));
}
void on_list_reset(ze_command_list_reset_params_t* p, ze_result_t, void*, void**) {
  AIFLAME_ZE_GUARD(b->list_ending(*p->phCommandList, false));
}
void on_launch_kernel(ze_command_list_append_launch_kernel_params_t* p, ze_result_t, void*, void**) {
  AIFLAME_ZE_GUARD(b->launch(ZeLaunchApi::Kernel, *p->phCommandList, *p->phKernel, *p->ppLaunchFuncArgs, p->phSignalEvent));
}
void on_launch_cooperative(ze_command_list_append_launch_cooperative_kernel_params_t* p, ze_result_t, void*, void**) {
  AIFLAME_ZE_GUARD(b->launch(ZeLaunchApi::Cooperative, *p->phCommandList, *p->phKernel, *p->ppLaunchFuncArgs, p->phSignalEvent));
}
void on_launch_indirect(ze_command_list_append_launch_kernel_indirect_params_t* p, ze_result_t, void*, void**) {
  // The group counts live in device memory: not read.
  AIFLAME_ZE_GUARD(b->launch(ZeLaunchApi::Indirect, *p->phCommandList, *p->phKernel, nullptr, p->phSignalEvent));
}
void on_launch_multiple(ze_command_list_append_launch_multiple_kernels_indirect_params_t* p, ze_result_t, void*, void**) {
  // One signal event for several kernels: their times cannot be told apart, so none is taken (the
  // launch keeps its stack; samples of these kernels are split over their other executions).
  AIFLAME_ZE_GUARD(b->launch(ZeLaunchApi::MultipleIndirect, *p->phCommandList,
                             *p->pnumKernels ? (*p->pphKernels)[0] : nullptr, nullptr, nullptr));
}
template <class P>
void on_launch_exit(P*, ze_result_t, void*, void**) {
  AIFLAME_ZE_GUARD(b->launch_exit());
}
void on_event_destroy(ze_event_destroy_params_t* p, ze_result_t, void*, void**) { AIFLAME_ZE_GUARD(b->event_ending(*p->phEvent)); }
void on_event_reset(ze_event_host_reset_params_t* p, ze_result_t, void*, void**) { AIFLAME_ZE_GUARD(b->event_ending(*p->phEvent)); }

std::string result_name(ze_result_t r) {
  switch (r) {
    case ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS: return "ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS";
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE: return "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE";
    case ZE_RESULT_ERROR_UNINITIALIZED: return "ZE_RESULT_ERROR_UNINITIALIZED";
    case ZE_RESULT_ERROR_NOT_AVAILABLE: return "ZE_RESULT_ERROR_NOT_AVAILABLE";
    case ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE: return "ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE";
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY: return "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY";
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY: return "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%x", static_cast<unsigned>(r));
      return buf;
    }
  }
}

bool is_eu_stall_group(const char* name) {
  // compute-runtime names it "EuStallSampling"; Intel's notes call it "EU stall sampling".
  std::string s;
  for (const char* c = name; *c; c++)
    if (*c != ' ' && *c != '_') s += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
  return s == "eustallsampling";
}

}  // namespace

std::unique_ptr<GpuBackend> make_levelzero_backend(Recorder& rec, const RecordOptions& opt, std::string* why) {
  ZeApi api;
  if (!load_ze(&api, why)) return nullptr;
  // --period N is CUPTI's 2^N cycles per SM; EU-stall sampling takes a period in nanoseconds per
  // subslice, of which a GPU has several times an SM count's share: 2^(N-8) ns (the default 22: 16 us,
  // unitrace's order of magnitude). 0 (the backend's own default): 16 us too.
  const uint32_t n = opt.period_log2 ? std::clamp<uint32_t>(opt.period_log2, 8, 39) : kDefaultPeriodLog2;
  uint64_t period = std::min<uint64_t>(1ull << (n - 8), UINT32_MAX);
  return std::make_unique<LevelZeroBackend>(rec, api, static_cast<uint32_t>(period));
}

LevelZeroBackend::~LevelZeroBackend() {
  LevelZeroBackend* self = this;
  g_backend.compare_exchange_strong(self, nullptr);
}

uint64_t LevelZeroBackend::timestamp() const {
  // The host clock of zeDeviceGetGlobalTimestamps in Intel's driver on Linux.
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool LevelZeroBackend::check(ze_result_t r, const char* call, const std::string& fix) {
  if (r == ZE_RESULT_SUCCESS) return true;
  rec_.warn(std::string(call) + " failed (" + result_name(r) + ")" + (fix.empty() ? "" : "; " + fix));
  return false;
}

bool LevelZeroBackend::start() {
  InBackend in;
  // The options, read once: the callbacks read these copies.
  pc_sampling_ = rec_.options().pc_sampling;
  keep_images_ = rec_.options().keep_cubins;
  zel_tracer_desc_t desc{ZEL_STRUCTURE_TYPE_TRACER_EXP_DESC, nullptr, this};
  ze_result_t r = api_.zelTracerCreate(&desc, &tracer_);
  if (r != ZE_RESULT_SUCCESS) {
    check(r, "zelTracerCreate", "the Level Zero tracing layer is needed (ZE_ENABLE_TRACING_LAYER=1, which aiflame record sets); "
                                "nothing is recorded");
    return false;
  }
  g_backend = this;
  constexpr zel_tracer_reg_t pro = ZEL_REGISTER_PROLOGUE, epi = ZEL_REGISTER_EPILOGUE;
  bool ok = true;
  auto reg = [&](ze_result_t res) { ok = ok && res == ZE_RESULT_SUCCESS; };
  reg(api_.zelTracerContextCreateRegisterCallback(tracer_, epi, on_context_create));
  reg(api_.zelTracerContextDestroyRegisterCallback(tracer_, pro, on_context_destroy));
  reg(api_.zelTracerModuleCreateRegisterCallback(tracer_, epi, on_module_create));
  reg(api_.zelTracerKernelCreateRegisterCallback(tracer_, epi, on_kernel_create));
  reg(api_.zelTracerCommandListCreateRegisterCallback(tracer_, epi, on_list_create));
  reg(api_.zelTracerCommandListCreateImmediateRegisterCallback(tracer_, epi, on_list_create_immediate));
  reg(api_.zelTracerCommandListDestroyRegisterCallback(tracer_, pro, on_list_destroy));
  reg(api_.zelTracerCommandListResetRegisterCallback(tracer_, pro, on_list_reset));
  reg(api_.zelTracerCommandListAppendLaunchKernelRegisterCallback(tracer_, pro, on_launch_kernel));
  reg(api_.zelTracerCommandListAppendLaunchKernelRegisterCallback(tracer_, epi, on_launch_exit));
  reg(api_.zelTracerCommandListAppendLaunchCooperativeKernelRegisterCallback(tracer_, pro, on_launch_cooperative));
  reg(api_.zelTracerCommandListAppendLaunchCooperativeKernelRegisterCallback(tracer_, epi, on_launch_exit));
  reg(api_.zelTracerCommandListAppendLaunchKernelIndirectRegisterCallback(tracer_, pro, on_launch_indirect));
  reg(api_.zelTracerCommandListAppendLaunchKernelIndirectRegisterCallback(tracer_, epi, on_launch_exit));
  reg(api_.zelTracerCommandListAppendLaunchMultipleKernelsIndirectRegisterCallback(tracer_, pro, on_launch_multiple));
  reg(api_.zelTracerCommandListAppendLaunchMultipleKernelsIndirectRegisterCallback(tracer_, epi, on_launch_exit));
  reg(api_.zelTracerEventDestroyRegisterCallback(tracer_, pro, on_event_destroy));
  reg(api_.zelTracerEventHostResetRegisterCallback(tracer_, pro, on_event_reset));
  if (!ok || !check(api_.zelTracerSetEnabled(tracer_, true), "zelTracerSetEnabled", "nothing is recorded")) {
    if (!ok) rec_.warn("the Level Zero tracing layer refused a callback; nothing is recorded");
    g_backend = nullptr;
    api_.zelTracerDestroy(tracer_);
    tracer_ = nullptr;
    return false;
  }
  // The program's zeInit has just returned: a driver without devices is said now (the program will
  // find none either, and make no context for the backend to learn of).
  uint32_t drivers = 0, devices = 0;
  if (api_.zeDriverGet(&drivers, nullptr) == ZE_RESULT_SUCCESS && drivers) {
    std::vector<ze_driver_handle_t> hs(drivers);
    if (api_.zeDriverGet(&drivers, hs.data()) == ZE_RESULT_SUCCESS)
      for (ze_driver_handle_t h : hs) {
        uint32_t n = 0;
        if (api_.zeDeviceGet(h, &n, nullptr) == ZE_RESULT_SUCCESS) devices += n;
      }
  }
  if (devices == 0) rec_.warn("the Level Zero driver reports no devices; nothing is recorded");
  debug("levelzero: tracer enabled, EU-stall sampling period %u ns", period_ns_);
  return true;
}

LevelZeroBackend::Device* LevelZeroBackend::device_locked(ze_device_handle_t h) {
  auto& slot = devices_[h];
  if (!slot) {
    slot = std::make_unique<Device>();
    slot->index = static_cast<uint32_t>(devices_.size() - 1);
    slot->handle = h;
    ze_device_properties_t props{};
    props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;  // timerResolution in nanoseconds
    if (api_.zeDeviceGetProperties(h, &props) == ZE_RESULT_SUCCESS) {
      if (props.timerResolution) slot->ns_per_tick = static_cast<double>(props.timerResolution);
      if (props.kernelTimestampValidBits && props.kernelTimestampValidBits < 64)
        slot->tick_mask = (1ull << props.kernelTimestampValidBits) - 1;
    }
    uint64_t host = 0, dev = 0;
    if (api_.zeDeviceGetGlobalTimestamps(h, &host, &dev) == ZE_RESULT_SUCCESS) {
      slot->host0 = host;
      slot->device0 = dev & slot->tick_mask;
    } else {
      slot->host0 = timestamp();
    }
  }
  return slot.get();
}

uint64_t LevelZeroBackend::to_host_ns(const Device& d, uint64_t ticks) const {
  // Kernel timestamps count device ticks in kernelTimestampValidBits bits: the distance from the
  // reference pair, modulo the counter's width, then in nanoseconds (forward only: a kernel runs after
  // the context that launched it was created).
  uint64_t delta = (ticks - d.device0) & d.tick_mask;
  return d.host0 + static_cast<uint64_t>(static_cast<double>(delta) * d.ns_per_tick);
}

void LevelZeroBackend::context_created(ze_driver_handle_t driver, ze_context_handle_t ctx) {
  if (stopped_) return;
  std::lock_guard<std::mutex> l(mu_);
  if (!driver_) driver_ = driver;
  uint32_t n = 0;
  if (api_.zeDeviceGet(driver, &n, nullptr) != ZE_RESULT_SUCCESS || n == 0) {
    rec_.warn("the Level Zero driver reports no devices; nothing is sampled");
    return;
  }
  std::vector<ze_device_handle_t> devs(n);
  if (api_.zeDeviceGet(driver, &n, devs.data()) != ZE_RESULT_SUCCESS) return;
  for (uint32_t i = 0; i < n; i++) {
    Device& d = *device_locked(devs[i]);
    if (!d.sampling_tried) open_sampling_locked(d, ctx);
  }
}

void LevelZeroBackend::open_sampling_locked(Device& d, ze_context_handle_t ctx) {
  d.sampling_tried = true;
  if (!pc_sampling_) return;
  uint32_t n = 0;
  if (!check(api_.zetMetricGroupGet(d.handle, &n, nullptr), "zetMetricGroupGet",
             "metrics need ZET_ENABLE_METRICS=1 (aiflame record sets it); no EU-stall samples"))
    return;
  std::vector<zet_metric_group_handle_t> groups(n);
  if (n && api_.zetMetricGroupGet(d.handle, &n, groups.data()) != ZE_RESULT_SUCCESS) n = 0;
  for (uint32_t i = 0; i < n && !d.group; i++) {
    zet_metric_group_properties_t gp{};
    gp.stype = ZET_STRUCTURE_TYPE_METRIC_GROUP_PROPERTIES;
    if (api_.zetMetricGroupGetProperties(groups[i], &gp) != ZE_RESULT_SUCCESS) continue;
    if (is_eu_stall_group(gp.name) && (gp.samplingType & ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED)) d.group = groups[i];
  }
  if (!d.group) {
    rec_.warn("the Level Zero driver offers no \"EuStallSampling\" metric group (it needs Intel's compute-runtime with "
              "metrics, ZET_ENABLE_METRICS=1, and a GPU with EU-stall sampling); kernels and launches are recorded "
              "without GPU samples");
    return;
  }
  uint32_t m = 0;
  api_.zetMetricGet(d.group, &m, nullptr);
  std::vector<zet_metric_handle_t> metrics(m);
  std::vector<std::string> names;
  if (m && api_.zetMetricGet(d.group, &m, metrics.data()) == ZE_RESULT_SUCCESS)
    for (uint32_t i = 0; i < m; i++) {
      zet_metric_properties_t mp{};
      mp.stype = ZET_STRUCTURE_TYPE_METRIC_PROPERTIES;
      names.push_back(api_.zetMetricGetProperties(metrics[i], &mp) == ZE_RESULT_SUCCESS ? mp.name : "");
    }
  d.layout = eu_stall_layout(names);
  if (d.layout.ip_column < 0) {
    rec_.warn("the Level Zero \"EuStallSampling\" group has no IP metric; no EU-stall samples");
    d.group = nullptr;
    return;
  }
  const std::string paranoid =
      "EU-stall sampling needs the GPU's observation streams open to this user: sysctl dev.xe.observation_paranoid=0 "
      "(xe) or dev.i915.perf_stream_paranoid=0 (i915), or root; kernels and launches are recorded without GPU samples";
  if (!check(api_.zetContextActivateMetricGroups(ctx, d.handle, 1, &d.group), "zetContextActivateMetricGroups", paranoid)) {
    d.group = nullptr;
    return;
  }
  zet_metric_streamer_desc_t sd{ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, nullptr, 1u << 20, period_ns_};
  if (!check(api_.zetMetricStreamerOpen(ctx, d.handle, d.group, &sd, nullptr, &d.streamer), "zetMetricStreamerOpen", paranoid)) {
    d.streamer = nullptr;
    d.group = nullptr;
    return;
  }
  d.streamer_context = ctx;
  d.last_read = timestamp();
  if (!d.reasons_written) {
    d.reasons_written = true;
    StallReasonsRecord sr;
    sr.device = d.index;
    for (size_t i = 0; i < d.layout.reasons.size(); i++) sr.reasons.emplace_back(static_cast<uint32_t>(i), d.layout.reasons[i]);
    rec_.add_stall_reasons(sr);
  }
  debug("levelzero: EU-stall streamer open on device %u (%zu reasons)", d.index, d.layout.reasons.size());
}

void LevelZeroBackend::read_samples_locked(Device& d, uint64_t now) {
  if (!d.streamer) return;
  size_t size = 0;
  ze_result_t r = api_.zetMetricStreamerReadData(d.streamer, UINT32_MAX, &size, nullptr);
  if (r != ZE_RESULT_SUCCESS && r != ZE_RESULT_WARNING_DROPPED_DATA) {
    check(r, "zetMetricStreamerReadData", "EU-stall sampling stopped");
    close_sampling_locked(d);
    return;
  }
  std::vector<uint8_t> raw(size);
  bool dropped = r == ZE_RESULT_WARNING_DROPPED_DATA;
  if (size) {
    r = api_.zetMetricStreamerReadData(d.streamer, UINT32_MAX, &size, raw.data());
    if (r == ZE_RESULT_WARNING_DROPPED_DATA) dropped = true;
    else if (r != ZE_RESULT_SUCCESS) size = 0;
    raw.resize(size);
  }
  if (dropped)
    rec_.warn("the GPU's EU-stall buffer overflowed and samples were lost; record with a shorter --interval or a "
              "longer --period");
  // The batch's time is taken after the read: every report in it comes from a kernel that ran before.
  now = std::max(now, timestamp());
  if (raw.empty() && !dropped) return;
  std::vector<zet_typed_value_t> values;
  if (!raw.empty()) {
    uint32_t n = 0;
    if (check(api_.zetMetricGroupCalculateMetricValues(d.group, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, raw.size(),
                                                       raw.data(), &n, nullptr),
              "zetMetricGroupCalculateMetricValues") &&
        n) {
      values.resize(n);
      if (api_.zetMetricGroupCalculateMetricValues(d.group, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, raw.size(),
                                                   raw.data(), &n, values.data()) != ZE_RESULT_SUCCESS)
        n = 0;
      values.resize(n);
    }
  }
  PcBatchRecord b;
  b.timestamp = now;
  b.prev_timestamp = d.last_read;
  b.device = d.index;
  b.hardware_buffer_full = dropped;
  std::map<std::tuple<uint32_t, uint64_t, uint64_t, uint32_t>, uint64_t> merged;  // (kernel, object, offset, reason)
  uint64_t unknown = 0;
  for (const EuStallCount& c : decode_eu_stall_values(d.layout, values)) {
    auto it = by_ip_.upper_bound(c.ip);
    if (it == by_ip_.begin()) {
      unknown += c.count;
      continue;
    }
    --it;
    uint64_t off = ip_offset(it->first, c.ip);
    if (off >= kMaxKernelBytes) {
      unknown += c.count;
      continue;
    }
    merged[{it->second.name, it->second.code_object, off, c.reason}] += c.count;
  }
  uint64_t total = 0;
  for (const auto& [key, n] : merged) {
    PcSample s;
    s.function = std::get<0>(key);
    s.code_object_id = std::get<1>(key);
    s.pc_offset = std::get<2>(key);
    s.stall_reason = std::get<3>(key);
    s.count = static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX));
    total += s.count;
    b.samples.push_back(s);
  }
  b.total_samples = total;
  b.dropped_samples = unknown;
  d.last_read = now;
  rec_.add_sample_batch(b, total, b.samples.size());
}

void LevelZeroBackend::close_sampling_locked(Device& d) {
  if (d.streamer) api_.zetMetricStreamerClose(d.streamer);
  d.streamer = nullptr;
  d.group = nullptr;
}

void LevelZeroBackend::context_destroying(ze_context_handle_t ctx) {
  std::lock_guard<std::mutex> l(mu_);
  const uint64_t now = timestamp();
  for (auto& [h, d] : devices_)
    if (d->streamer && d->streamer_context == ctx) {
      read_samples_locked(*d, now);
      close_sampling_locked(*d);
    }
  // Launches of this context: what has signalled is read, the rest given up (their events go away).
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->ctx != ctx) {
      ++it;
      continue;
    }
    collect_locked(*it, true);
    it = pending_.erase(it);
  }
  for (auto it = lists_.begin(); it != lists_.end();) it = it->second.ctx == ctx ? lists_.erase(it) : std::next(it);
  auto p = pools_.find(ctx);
  if (p != pools_.end()) {
    // None of ours is pending any more (above), and the lists they were appended to are gone.
    for (ze_event_handle_t e : p->second.events) api_.zeEventDestroy(e);
    for (ze_event_pool_handle_t pool : p->second.pools) api_.zeEventPoolDestroy(pool);
    pools_.erase(p);
  }
  // A later context of the program opens the devices' streamers again.
  for (auto& [h, d] : devices_)
    if (!d->streamer) d->sampling_tried = false;
}

void LevelZeroBackend::module_created(ze_device_handle_t device, ze_module_handle_t module) {
  if (stopped_) return;
  size_t size = 0;
  if (api_.zeModuleGetNativeBinary(module, &size, nullptr) != ZE_RESULT_SUCCESS || size == 0) return;
  std::string image(size, '\0');
  if (api_.zeModuleGetNativeBinary(module, &size, reinterpret_cast<uint8_t*>(image.data())) != ZE_RESULT_SUCCESS) return;
  image.resize(size);
  const uint64_t id = fnv1a(reinterpret_cast<const uint8_t*>(image.data()), image.size());
  std::lock_guard<std::mutex> l(mu_);
  const uint32_t dev = device_locked(device)->index;
  modules_[module] = {id, dev};
  if (!code_objects_.insert(id).second) return;
  CodeObjectRecord r;
  r.id = id;
  r.device = dev;
  if (keep_images_) r.image = std::move(image);
  rec_.add_code_object(r);
}

void LevelZeroBackend::kernel_created(ze_module_handle_t module, const char* name, ze_kernel_handle_t kernel) {
  if (stopped_ || !name) return;
  std::lock_guard<std::mutex> l(mu_);
  if (!base_address_looked_up_ && driver_) {
    base_address_looked_up_ = true;
    void* fn = nullptr;
    if (api_.zeDriverGetExtensionFunctionAddress(driver_, "zexKernelGetBaseAddress", &fn) == ZE_RESULT_SUCCESS && fn)
      base_address_ = reinterpret_cast<BaseAddressFn>(fn);
    else
      rec_.warn("the Level Zero driver has no zexKernelGetBaseAddress: EU-stall samples cannot be placed in kernels");
  }
  Kernel k;
  k.name = rec_.intern(name);
  auto m = modules_.find(module);
  if (m != modules_.end()) k.code_object = m->second.first;
  uint64_t base = 0;
  if (base_address_ && base_address_(kernel, &base) == ZE_RESULT_SUCCESS) {
    k.base_ip = ip_of_address(base);
    k.has_base = true;
    by_ip_[k.base_ip] = k;
  }
  kernels_[kernel] = k;
}

void LevelZeroBackend::list_created(ze_context_handle_t ctx, ze_device_handle_t device, ze_command_list_handle_t list,
                                    bool immediate) {
  if (stopped_) return;
  std::lock_guard<std::mutex> l(mu_);
  List& li = lists_[list];
  li.ctx = ctx;
  li.device = device_locked(device);
  li.immediate = immediate;
  li.used_events.clear();
}

void LevelZeroBackend::list_ending(ze_command_list_handle_t list, bool destroyed) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = lists_.find(list);
  if (it == lists_.end()) return;
  // Its launches that ran are read now; ours that never ran go back to their pool.
  for (auto p = pending_.begin(); p != pending_.end();) {
    if (p->list != list) {
      ++p;
      continue;
    }
    collect_locked(*p, true);
    p = pending_.erase(p);
  }
  for (ze_event_handle_t e : it->second.used_events) {
    api_.zeEventHostReset(e);
    pools_[it->second.ctx].free.push_back(e);
  }
  it->second.used_events.clear();
  if (destroyed) lists_.erase(it);
}

ze_event_handle_t LevelZeroBackend::our_event_locked(ze_context_handle_t ctx) {
  EventPool& p = pools_[ctx];
  if (!p.free.empty()) {
    ze_event_handle_t e = p.free.back();
    p.free.pop_back();
    return e;
  }
  if (!p.pool || p.next == kPoolEvents) {
    ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr,
                            ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, kPoolEvents};
    ze_event_pool_handle_t pool = nullptr;
    if (!check(api_.zeEventPoolCreate(ctx, &pd, 0, nullptr, &pool), "zeEventPoolCreate", "kernels have no times"))
      return nullptr;
    p.pool = pool;  // the previous, full pool lives on with its events
    p.pools.push_back(pool);
    p.next = 0;
  }
  ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, p.next++, 0, ZE_EVENT_SCOPE_FLAG_HOST};
  ze_event_handle_t e = nullptr;
  if (!check(api_.zeEventCreate(p.pool, &ed, &e), "zeEventCreate", "kernels have no times")) return nullptr;
  p.events.push_back(e);
  return e;
}

void LevelZeroBackend::launch(ZeLaunchApi api, ze_command_list_handle_t list, ze_kernel_handle_t kernel,
                              const ze_group_count_t* groups, ze_event_handle_t* signal) {
  if (stopped_) return;
  const uint32_t correlation = next_correlation_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t ts = timestamp();
  Pending p;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto li = lists_.find(list);
    auto k = kernels_.find(kernel);
    p.correlation_id = correlation;
    p.list = list;
    if (li != lists_.end()) {
      p.ctx = li->second.ctx;
      p.immediate = li->second.immediate;
      p.device = li->second.device->index;
    }
    if (k != kernels_.end()) p.name = k->second.name;
    if (groups) {
      p.grid[0] = static_cast<int32_t>(groups->groupCountX);
      p.grid[1] = static_cast<int32_t>(groups->groupCountY);
      p.grid[2] = static_cast<int32_t>(groups->groupCountZ);
    }
    if (signal && li != lists_.end() && k != kernels_.end()) {
      if (*signal) {
        p.event = *signal;
      } else if (ze_event_handle_t e = our_event_locked(p.ctx)) {
        // The tracing layer passes the prologue's parameters on: the kernel signals our event.
        *signal = e;
        p.event = e;
        p.ours = true;
        if (!p.immediate) li->second.used_events.push_back(e);
      }
      if (p.event) pending_.push_back(p);
    }
  }
  rec_.on_launch(static_cast<uint32_t>(api), correlation, reinterpret_cast<uint64_t>(kernel), ts, p.device);
}

bool LevelZeroBackend::collect_locked(Pending& p, bool final) {
  if (api_.zeEventQueryStatus(p.event) != ZE_RESULT_SUCCESS) {
    if (final) release_locked(p);
    return final;
  }
  ze_kernel_timestamp_result_t t{};
  ze_result_t r = api_.zeEventQueryKernelTimestamp(p.event, &t);
  if (r == ZE_RESULT_SUCCESS) {
    const Device* d = nullptr;
    for (const auto& [h, dev] : devices_)
      if (dev->index == p.device) d = dev.get();
    KernelRecord k;
    k.correlation_id = p.correlation_id;
    k.device = p.device;
    k.name = p.name;
    k.start = d ? to_host_ns(*d, t.global.kernelStart) : t.global.kernelStart;
    k.end = d ? to_host_ns(*d, t.global.kernelEnd) : t.global.kernelEnd;
    std::copy(p.grid, p.grid + 3, k.grid);
    rec_.add_kernel(k);
  } else if (!p.ours) {
    // The program's own event, from a pool without kernel timestamps.
    untimed_++;
    rec_.add_dropped_records(1);
    rec_.warn("kernels that signal the program's own events from pools without ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP "
              "have no times; their samples go to the kernel's other executions");
  }
  release_locked(p);
  return true;
}

void LevelZeroBackend::release_locked(const Pending& p) {
  // Ours from an immediate list go back to the pool at once; a regular list's stay appended to it
  // (it may run again) until the list is reset or destroyed.
  if (p.ours && p.immediate) {
    api_.zeEventHostReset(p.event);
    pools_[p.ctx].free.push_back(p.event);
  }
}

void LevelZeroBackend::event_ending(ze_event_handle_t event) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = pending_.begin(); it != pending_.end(); ++it)
    if (it->event == event && !it->ours) {
      collect_locked(*it, true);
      pending_.erase(it);
      return;
    }
}

void LevelZeroBackend::drain() {
  if (stopped_) return;
  InBackend in;
  std::lock_guard<std::mutex> l(mu_);
  const uint64_t now = timestamp();
  for (auto& [h, d] : devices_) read_samples_locked(*d, now);
  for (auto it = pending_.begin(); it != pending_.end();) it = collect_locked(*it, false) ? pending_.erase(it) : std::next(it);
}

void LevelZeroBackend::stop() {
  if (stopped_.exchange(true)) return;
  InBackend in;
  if (tracer_) api_.zelTracerSetEnabled(tracer_, false);
  std::lock_guard<std::mutex> l(mu_);
  const uint64_t now = timestamp();
  for (auto it = pending_.begin(); it != pending_.end();) it = collect_locked(*it, false) ? pending_.erase(it) : std::next(it);
  for (auto& [h, d] : devices_) {
    read_samples_locked(*d, now);
    // At exit the driver may be torn down already (its static destructors ran): the streamer is
    // left to the process's end rather than closed into a dead driver.
  }
  if (!pending_.empty()) rec_.add_dropped_records(pending_.size());
}

}  // namespace aiflame
