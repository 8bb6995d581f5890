// PC sampling of one CUDA context: enabling and configuring it, draining CUPTI's buffer into batch
// records, and in windows mode opening and closing kernel-serialized sampling windows.
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

// AIFLAME_WIN_TRACE (MeasurementSwitches::win_trace): one line per window phase, stamped with
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
// start cost 0.3-0.6 s on the H100 (bench/probes/window_toggle.cu: every Enable pays it again, so
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
  // defaults 4.8 million launches ran cleanly (bench/RESULTS.md). AIFLAME_STALL_CONFIG=1 and
  // AIFLAME_SLEEP_SPAN_MS=N set them for experiments (MeasurementSwitches).
  // Windows mode sets it, as NVIDIA's start/stop sample and Parca's library do (kernel-serialized
  // sampling with start/stop delivered samples that way on the H100, bench/probes/serialized_where.cu).
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
  if (!c.enabled || !c.configured) return;  // not configured: switched off by AIFLAME_CALLBACK_AB=4
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
  if (callback_ab_) callback_ab_tick();  // AIFLAME_CALLBACK_AB (record/callback_ab.h)
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

// AIFLAME_CALLBACK_AB=4 (record/callback_ab.h), continuous mode, on a launching thread at a launch's
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
// kernel-serialized window, the program hung on the H100 within two windows (bench/RESULTS.md),
// while one thread's windows never did. Its wait is the window's cost to it, about one launch's
// ~1 ms in a window. Tried and reverted: once the owner had been idle 5 ms (blocked on this thread, as
// backward() on autograd's engine), launching into the window for the rest of it without waiting:
// a 28-s gpt_train.py run then kept 14 GPU samples of 60 window launches (the other thread's kernels
// ran in the kernel-serialized range with nobody fetching after them) and eight threads on eight
// streams hung, 2 of 2 (bench/RESULTS.md, "Recorder v2: the fourth session").
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
      // the others launched hung eight threads on eight streams on the H100 (bench/RESULTS.md), as a
      // Stop from another thread hung bench/probes/serialized_where.cu.
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

// AIFLAME_WIN_SKIP_MAX=N: a due window passes over K launches first, K uniform in [0, N) and drawn
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
  // short split and demo runs one launch of samples in all: bench/RESULTS.md.)
  bool full = ++c->window_count >= rec_.options().window_launches;
  if (c->windows->decide(now, full) == SamplingWindows::Action::Close) close_window_locked(*c, now);
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
  // launching one hung the program (bench/probes/serialized_where.cu, start and stop on a thread).
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
