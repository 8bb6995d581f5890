// PC sampling of one CUDA context: enabling and configuring it, draining CUPTI's buffer into batch
// records. The windows mode's sampling windows are in cupti_windows.cpp.
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

constexpr size_t kPcBufferEntries = 10000;

}  // namespace

// libcuda's own functions. The CUDA runtime linked statically loads libcuda privately (RTLD_LOCAL),
// so the global namespace may not have them; the loaded copy is asked by name without loading it.
void* cuda_driver_symbol(const char* name) {
  if (void* f = dlsym(RTLD_DEFAULT, name)) return f;
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  return lib ? dlsym(lib, name) : nullptr;
}

namespace {
// The CUdevice of a device ordinal through libcuda's cuDeviceGet (false: libcuda not loaded, or no
// such device).
bool cu_device(uint32_t ordinal, CUdevice* dev) {
  using DeviceGetFn = CUresult (*)(CUdevice*, int);
  static auto device_get = reinterpret_cast<DeviceGetFn>(cuda_driver_symbol("cuDeviceGet"));
  return device_get && device_get(dev, static_cast<int>(ordinal)) == CUDA_SUCCESS;
}
}  // namespace

// The GPU's PCI bus id names it across processes (ordinals change with CUDA_VISIBLE_DEVICES). Without
// libcuda's functions (tests) there is nothing to claim.
bool CuptiBackend::claim_device(uint32_t device) {
  using BusIdFn = CUresult (*)(char*, int, CUdevice);
  static auto bus_id = reinterpret_cast<BusIdFn>(cuda_driver_symbol("cuDeviceGetPCIBusId"));
  if (!bus_id) return true;
  std::lock_guard<std::mutex> lock(contexts_mu_);
  if (claims_.count(device)) return claims_[device] != nullptr;
  CUdevice dev{};
  char id[64] = {};
  if (!cu_device(device, &dev) || bus_id(id, sizeof id - 1, dev) != CUDA_SUCCESS) return true;
  auto claim = std::make_unique<DeviceClaim>();
  if (!claim->claim(id)) {
    rec_.warn("GPU " + std::to_string(device) + " (" + id + ") is already PC-sampled by process " +
              std::to_string(claim->holder()) +
              " (CUPTI samples a GPU for one process at a time); this process records its launches and kernel "
              "times without GPU samples there");
    claims_[device] = nullptr;
    rec_.note_sampling_declined();
    return false;
  }
  claims_[device] = std::move(claim);
  return true;
}

namespace {
// A device attribute (0: libcuda not loaded, or the driver does not know it).
uint32_t device_attribute(uint32_t device, CUdevice_attribute a) {
  using AttributeFn = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  static auto attribute = reinterpret_cast<AttributeFn>(cuda_driver_symbol("cuDeviceGetAttribute"));
  CUdevice dev{};
  int n = 0;
  if (!attribute || !cu_device(device, &dev) || attribute(&n, a, dev) != CUDA_SUCCESS || n <= 0) return 0;
  return static_cast<uint32_t>(n);
}
// What attribution's block-scheduler model places blocks against: the SMs and each SM's limits.
void device_limits(uint32_t device, StallReasonsRecord& sr) {
  sr.sm_count = device_attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  sr.max_threads_per_sm = device_attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  sr.max_blocks_per_sm = device_attribute(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  sr.registers_per_sm = device_attribute(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  sr.shared_per_sm = device_attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  sr.shared_reserved_per_block = device_attribute(device, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
}
}  // namespace

bool CuptiBackend::enable_sampling(Context& c) {
  CUpti_PCSamplingEnableParams en = {CUpti_PCSamplingEnableParamsSize};
  en.ctx = c.ctx;
  if (!check(api_.cuptiPCSamplingEnable(&en), "cuptiPCSamplingEnable")) {
    sampling_failed_ = true;
    rec_.warn("GPU PC sampling is off; launches and kernel times are still recorded");
    return false;
  }
  size_t n = 0;
  CUpti_PCSamplingGetNumStallReasonsParams np = {CUpti_PCSamplingGetNumStallReasonsParamsSize};
  np.ctx = c.ctx;
  np.numStallReasons = &n;
  if (!check(api_.cuptiPCSamplingGetNumStallReasons(&np), "cuptiPCSamplingGetNumStallReasons")) return false;
  std::vector<uint32_t>& idx = c.reason_index;
  idx.assign(n, 0);
  std::vector<std::vector<char>> names(n, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE));
  std::vector<char*> name_ptrs(n);
  for (size_t i = 0; i < n; i++) name_ptrs[i] = names[i].data();
  CUpti_PCSamplingGetStallReasonsParams sp = {CUpti_PCSamplingGetStallReasonsParamsSize};
  sp.ctx = c.ctx;
  sp.numStallReasons = n;
  sp.stallReasonIndex = idx.data();
  sp.stallReasons = name_ptrs.data();
  if (!check(api_.cuptiPCSamplingGetStallReasons(&sp), "cuptiPCSamplingGetStallReasons")) return false;
  StallReasonsRecord sr;
  sr.device = c.device;
  device_limits(c.device, sr);
  for (size_t i = 0; i < n; i++) {
    sr.reasons.emplace_back(idx[i], std::string(names[i].data()));
    if (sr.reasons.back().second.ends_with("_not_issued")) c.duplicate_reasons.insert(idx[i]);
  }
  rec_.add_stall_reasons(sr);

  bool windows = rec_.options().pc_mode == PcMode::Windows;
  c.buf.init(kPcBufferEntries, n);
  if (windows) {
    c.range = std::make_unique<PcBuffer>();
    c.range->init(kPcBufferEntries, n);
  }
  if (!configure_sampling(c)) return false;
  if (windows)
    c.windows = std::make_unique<SamplingWindows>(rec_.options().windows_per_s, rec_.options().window_us,
                                                  reinterpret_cast<uintptr_t>(c.ctx) ^ static_cast<uint64_t>(getpid()),
                                                  rec_.options().window_budget_permille / 1000.0);
  if (windows && measure_.win_prime && !measure_.win_disable_between) {
    auto t0 = std::chrono::steady_clock::now();
    bool primed = prime_sampling(c);
    uint64_t ns = ns_since(t0);
    prime_ns_ += ns;
    debug("context %u: sampling primed %s in %.1f ms", c.context_id, primed ? "" : "(failed)", ns / 1e6);
  }
  // The floor (measurement): sampling enabled and primed, nothing else per launch.
  if (windows && measure_.win_never && measure_.win_never_nocb) set_launch_callbacks(false);
  if (windows && measure_.win_disable_between) {
    CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize};
    dp.ctx = c.ctx;
    check(api_.cuptiPCSamplingDisable(&dp), "cuptiPCSamplingDisable");
    c.configured = false;
  }
  return true;
}

bool CuptiBackend::configure_sampling(Context& c) {
  bool windows = rec_.options().pc_mode == PcMode::Windows;
  size_t n = c.reason_index.size();
  std::vector<uint32_t>& idx = c.reason_index;
  std::vector<CUpti_PCSamplingConfigurationInfo> cfg;
  auto add = [&](CUpti_PCSamplingConfigurationAttributeType t) -> CUpti_PCSamplingConfigurationInfo& {
    cfg.push_back({});
    cfg.back().attributeType = t;
    return cfg.back();
  };
  // Neither the stall-reason list nor CUPTI's decode-thread sleep span is configured by default: with
  // both set, CUPTI 13.0 crashed inside cuptiPCSamplingGetData (strdup of a null name) after 0.4-1
  // million launches of gpt_train.py, three times in three runs; with the sleep span alone (10 ms) it
  // crashed once after 1.66 million launches (and ran 2.6 million cleanly once); with both at CUPTI's
  // defaults 4.8 million launches ran cleanly. AIFLAME_LAB=stall_config and
  // AIFLAME_LAB=sleep_span_ms=N set them for experiments (MeasurementSwitches).
  // Windows mode sets it, as NVIDIA's start/stop sample and Parca's library do (kernel-serialized
  // sampling with start/stop delivered samples that way on the H100, bench/probes/serialized_where.cu at d9aa39d).
  if (windows || measure_.stall_config)
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON).attributeData.stallReasonData = {n, idx.data()};
  add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
      .attributeData.samplingDataBufferData.samplingDataBuffer = windows ? &c.range->data : &c.buf.data;
  add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE).attributeData.collectionModeData.collectionMode =
      windows && !measure_.win_continuous ? CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED
                                          : CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  if (windows)
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL)
        .attributeData.enableStartStopControlData.enableStartStopControl = 1;
  const RecordOptions& o = rec_.options();
  const uint32_t mb = windows                             ? measure_.hw_buffer_mb
                      : measure_.continuous_hw_buffer_mb ? measure_.continuous_hw_buffer_mb
                                                         : continuous_hw_buffer_mb(o.period_log2, o.interval_ms);
  if (mb)
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE).attributeData.hardwareBufferSizeData.hardwareBufferSize =
        size_t{mb} << 20;
  if (const uint32_t span_ms = measure_.sleep_span_ms)
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN)
        .attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan = span_ms;
  if (o.period_log2)
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD).attributeData.samplingPeriodData.samplingPeriod =
        o.period_log2;
  CUpti_PCSamplingConfigurationInfoParams cp = {CUpti_PCSamplingConfigurationInfoParamsSize};
  cp.ctx = c.ctx;
  cp.numAttributes = cfg.size();
  cp.pPCSamplingConfigurationInfo = cfg.data();
  if (!check(api_.cuptiPCSamplingSetConfigurationAttribute(&cp), "cuptiPCSamplingSetConfigurationAttribute")) {
    CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize};
    dp.ctx = c.ctx;
    api_.cuptiPCSamplingDisable(&dp);
    return false;
  }
  c.configured = true;
  return true;
}

void CuptiBackend::PcBuffer::init(size_t entries, size_t stall_reasons) {
  pcs.assign(entries, CUpti_PCSamplingPCData{});
  reasons.assign(entries, std::vector<CUpti_PCSamplingStallReason>(stall_reasons));
  for (size_t i = 0; i < entries; i++) {
    pcs[i].size = sizeof(CUpti_PCSamplingPCData);
    pcs[i].stallReason = reasons[i].data();
  }
  data = {};
  data.size = sizeof(CUpti_PCSamplingData);
  data.collectNumPcs = entries;
  data.pPcData = pcs.data();
}

// Converts what the sampling buffer holds into one batch record for the Recorder and returns the
// buffer to CUPTI.
void CuptiBackend::take_batch(Context& c, CUpti_PCSamplingData& d, uint64_t now) {
  PcBatchRecord b;
  b.timestamp = now;
  b.prev_timestamp = c.last_drain;
  b.device = c.device;
  b.context = c.context_id;
  b.total_samples = d.totalSamples;
  b.dropped_samples = d.droppedSamples;
  b.hardware_buffer_full = d.hardwareBufferFull != 0;
  bool has_correlation = api_.version >= kCuptiApiWithPcCorrelation;
  uint64_t counted = 0;
  for (size_t i = 0; i < d.totalNumPcs; i++) {
    CUpti_PCSamplingPCData& pc = d.pPcData[i];
    uint32_t fn = rec_.intern(pc.functionName ? pc.functionName : "[unknown kernel]");
    if (pc.functionName) {
      // The same string may back many records (and activity records): free once, at the end.
      std::lock_guard<std::mutex> lock(names_mu_);
      function_names_.insert(pc.functionName);
    }
    for (size_t k = 0; k < pc.stallReasonCount; k++) {
      if (!pc.stallReason[k].samples) continue;
      PcSample s;
      s.function = fn;
      s.code_object_id = pc.cubinCrc;
      s.pc_offset = pc.pcOffset;
      s.stall_reason = pc.stallReason[k].pcSamplingStallReasonIndex;
      s.count = pc.stallReason[k].samples;
      s.correlation_id = has_correlation ? pc.correlationId : 0;
      if (!c.duplicate_reasons.count(s.stall_reason)) counted += s.count;
      b.samples.push_back(s);
    }
  }
  rec_.add_sample_batch(b, counted, d.totalNumPcs);
  d.totalNumPcs = 0;
}

void CuptiBackend::drain(Context& c) {
  // Windows mode: data is fetched on the launching threads (CUPTI wants a flush after every range).
  if (c.windows) return;
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.enabled || !c.configured) return;  // not configured: switched off by AIFLAME_LAB=callback_ab=4
  drain_locked(c);
}

void CuptiBackend::drain_locked(Context& c) {
  for (int guard = 0; guard < 1000; guard++) {
    CUpti_PCSamplingGetDataParams gp = {CUpti_PCSamplingGetDataParamsSize};
    gp.ctx = c.ctx;
    gp.pcSamplingData = &c.buf.data;
    CUptiResult r = api_.cuptiPCSamplingGetData(&gp);
    if (r != CUPTI_SUCCESS) {
      if (r == CUPTI_ERROR_OUT_OF_MEMORY) {
        rec_.warn("the GPU's sampling buffer overflowed and samples were lost; use a larger --period or a shorter --interval");
      } else {
        // Anything else does not heal (CUPTI_ERROR_UNKNOWN when another process samples the GPU):
        // stop asking, keep recording launches and kernels.
        check(r, "cuptiPCSamplingGetData", "GPU samples of this context stop; launches and kernel times are still recorded");
        c.enabled = false;
      }
      break;
    }
    uint64_t now = 0;
    api_.cuptiGetTimestamp(&now);
    CUpti_PCSamplingData& d = c.buf.data;
    size_t remaining = d.remainingNumPcs;
    debug("GetData ctx %u: %zu PCs, %zu remaining, %llu samples, %llu dropped", c.context_id, d.totalNumPcs, remaining,
          (unsigned long long)d.totalSamples, (unsigned long long)d.droppedSamples);
    if (d.totalNumPcs > 0 || d.droppedSamples > 0) take_batch(c, d, now);
    if (remaining == 0) {
      c.last_drain = now;
      break;
    }
  }
}

void CuptiBackend::drain_all() {
  if (callback_ab_) callback_ab_tick();  // AIFLAME_LAB=callback_ab (record/measure/callback_ab.h)
  std::vector<Context*> all;
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    for (auto& [ctx, c] : contexts_) all.push_back(c.get());
  }
  for (Context* c : all) drain(*c);
  // Kernel records otherwise wait for a full 4 MB buffer; a run cut short would lose them.
  const uint32_t every = measure_.activity_flush_every;
  bool window_open = false;
  for (Context* c : all) window_open |= c->window_open.load();
  // Not while a window is open: kernel-serialized sampling is kept to the launching thread's calls.
  if (rec_.options().kernel_activity && every && ++drains_ % every == 0 && !window_open) api_.cuptiActivityFlushAll(0);
}

// AIFLAME_LAB=callback_ab=4 (record/measure/callback_ab.h), continuous mode, on a launching thread at a launch's
// exit (switch_sampling_at_launch): off drains the context and disables sampling (Disable flushes what
// CUPTI still held into the configured buffer); on enables and configures it again. A context whose
// sampling failed stays as it is.
void CuptiBackend::switch_sampling(bool on) {
  std::vector<Context*> all;
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    for (auto& [ctx, c] : contexts_) all.push_back(c.get());
  }
  for (Context* cp : all) {
    Context& c = *cp;
    std::lock_guard<std::mutex> lock(c.mu);
    if (!c.enabled || c.windows || c.configured == on) continue;
    if (!on) {
      drain_locked(c);
      if (c.enabled) disable_sampling_locked(c);  // (not enabled: GetData failed and gave the context up)
      continue;
    }
    enable_sampling_again_locked(c);
  }
}

// Under c.mu: PC sampling enabled and configured again after a Disable; false, with the context's
// sampling given up, if CUPTI refused either.
bool CuptiBackend::enable_sampling_again_locked(Context& c) {
  CUpti_PCSamplingEnableParams en = {CUpti_PCSamplingEnableParamsSize};
  en.ctx = c.ctx;
  if (check(api_.cuptiPCSamplingEnable(&en), "cuptiPCSamplingEnable") && configure_sampling(c)) return true;
  c.enabled = false;
  return false;
}

void CuptiBackend::disable(Context& c) {
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.enabled) return;
  if (c.windows && c.window_open.load()) {
    uint64_t now = 0;
    api_.cuptiGetTimestamp(&now);
    c.windows->decide(now + (1ull << 62));  // closes it
    close_window_locked(c, now);
  } else if (!c.windows && c.configured) {
    drain_locked(c);
  }
  c.enabled = false;
  if (c.configured) disable_sampling_locked(c);
}

// Under c.mu: PC sampling disabled on c, and what Disable flushed into the configured buffer (what
// CUPTI still held) taken as a batch.
void CuptiBackend::disable_sampling_locked(Context& c) {
  CUpti_PCSamplingData& configured = c.range ? c.range->data : c.buf.data;
  configured.totalNumPcs = 0;
  CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize};
  dp.ctx = c.ctx;
  check(api_.cuptiPCSamplingDisable(&dp), "cuptiPCSamplingDisable");
  c.configured = false;
  if (configured.totalNumPcs > 0) {
    uint64_t now = 0;
    api_.cuptiGetTimestamp(&now);
    take_batch(c, configured, now);
  }
}


// The context a launch runs in, looked up once per thread and context (contexts are never freed).
AIFLAME_HOT CuptiBackend::Context* CuptiBackend::context_of(CUcontext ctx) {
  struct Cache {
    const CuptiBackend* backend = nullptr;
    uint64_t generation = 0;
    CUcontext ctx = nullptr;
    Context* c = nullptr;
  };
  static thread_local Cache cache;
  uint64_t gen = generation_.load(std::memory_order_acquire);
  if (cache.backend != this || cache.generation != gen || cache.ctx != ctx) {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    auto it = contexts_.find(ctx);
    cache = {this, gen, ctx, it == contexts_.end() ? nullptr : it->second.get()};
    if (attach_mode_ && ctx && it == contexts_.end()) pending_contexts_.insert(ctx);  // adopted off the launch path
  }
  return cache.c;
}

}  // namespace aiflame
