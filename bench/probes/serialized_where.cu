// Probe (issue #24): where may a kernel-serialized PC sampling window be started and stopped from?
// NVIDIA's pattern (shared/reference/pc_sampling_serialized.cu) starts and stops on the main thread
// outside any callback; a profiler must do it from inside CUPTI's launch callbacks or another thread.
// usage: serialized_where START STOP [flags]
//   START: main | drv_enter | drv_exit_prev | thread      STOP: main | drv_exit | thread
//   flags (comma list): act (CONCURRENT_KERNEL records on), period (period 2^19), nostall (no stall-reason
//   list in the configuration), drain (GetData at every launch exit while a window is open), nosync,
//   flush (another thread calls cuptiActivityFlushAll(0) every 5 ms, as a collector thread does)
// Prints samples per path (3:1 truth), samples without correlation id, elapsed time.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>
#define CU(x) do { CUptiResult r = (x); if (r != CUPTI_SUCCESS) { const char* s; cuptiGetResultString(r, &s); printf("  CUPTI FAIL %s: %s\n", #x, s); } } while (0)
__global__ void work(float* a, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; float v = a[i];
  for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f * __sinf(v);
  a[i] = v;
}
static std::mutex mu;
static std::map<uint32_t, int> corr_to_path;
static thread_local int current_path = -1;
static CUcontext ctx;
static const char *start_at, *stop_at;
static bool f_drain, f_nosync;
static std::atomic<int> want_start{0}, want_stop{0}, open_{0};
static CUpti_PCSamplingData cfgbuf, out;
static uint64_t tot, recs, zero_corr; static std::map<int, uint64_t> per_path; static int getdata_calls;
static void consume(CUpti_PCSamplingData& d) {
  recs += d.totalNumPcs;
  for (size_t i = 0; i < d.totalNumPcs; i++) { auto& p = d.pPcData[i]; uint64_t s = 0;
    for (size_t k = 0; k < p.stallReasonCount; k++) s += p.stallReason[k].samples;
    tot += s; if (!p.correlationId) zero_corr += s; auto it = corr_to_path.find(p.correlationId); per_path[it == corr_to_path.end() ? -1 : it->second] += s; }
  d.totalNumPcs = 0;
}
static void drain() {
  for (int guard = 0; guard < 1000; guard++) { CUpti_PCSamplingGetDataParams g = {CUpti_PCSamplingGetDataParamsSize}; g.ctx = ctx; g.pcSamplingData = &out; getdata_calls++;
    CUptiResult r = cuptiPCSamplingGetData(&g); if (r != CUPTI_SUCCESS) { const char* s; cuptiGetResultString(r, &s); printf("  getdata: %s\n", s); break; }
    consume(out); if (!out.remainingNumPcs) break; }
}
static void do_start() { if (!f_nosync) cuCtxSynchronize(); CUpti_PCSamplingStartParams st = {CUpti_PCSamplingStartParamsSize}; st.ctx = ctx; CU(cuptiPCSamplingStart(&st)); open_ = 1; }
static void do_stop() { if (!f_nosync) cuCtxSynchronize(); CUpti_PCSamplingStopParams sp = {CUpti_PCSamplingStopParamsSize}; sp.ctx = ctx; CU(cuptiPCSamplingStop(&sp)); open_ = 0; drain(); }
static void CUPTIAPI on_cb(void*, CUpti_CallbackDomain d, CUpti_CallbackId id, const void* info) {
  if (d != CUPTI_CB_DOMAIN_DRIVER_API) return;
  auto* ci = (const CUpti_CallbackData*)info;
  std::lock_guard<std::mutex> l(mu);
  if (ci->callbackSite == CUPTI_API_ENTER) {
    if (current_path >= 0) corr_to_path[ci->correlationId] = current_path;
    if (!strcmp(start_at, "drv_enter") && want_start.exchange(0)) do_start();
  } else {
    if (open_ && f_drain) drain();
    if (!strcmp(stop_at, "drv_exit") && open_ && want_stop.exchange(0)) do_stop();
    if (!strcmp(start_at, "drv_exit_prev") && want_start.exchange(0)) do_start();
  }
}
static void CUPTIAPI buf_req(uint8_t** b, size_t* s, size_t* m) { *b = (uint8_t*)aligned_alloc(8, 1 << 20); *s = 1 << 20; *m = 0; }
static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t* b, size_t, size_t) { free(b); }
int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  start_at = argc > 1 ? argv[1] : "main"; stop_at = argc > 2 ? argv[2] : "main"; const char* flags = argc > 3 ? argv[3] : "";
  bool f_act = strstr(flags, "act"), f_period = strstr(flags, "period"), f_nostall = strstr(flags, "nostall");
  f_drain = strstr(flags, "drain"); f_nosync = strstr(flags, "nosync");
  printf("== start %s stop %s flags '%s'\n", start_at, stop_at, flags);
  CUpti_SubscriberHandle sub; CU(cuptiSubscribe(&sub, on_cb, nullptr));
  CU(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  CU(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz));
  if (f_act) { CU(cuptiActivityRegisterCallbacks(buf_req, buf_done)); CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)); }
  cudaFree(0); cuCtxGetCurrent(&ctx);
  CUpti_PCSamplingEnableParams pe = {CUpti_PCSamplingEnableParamsSize}; pe.ctx = ctx; CU(cuptiPCSamplingEnable(&pe));
  size_t nsr = 0; CUpti_PCSamplingGetNumStallReasonsParams p1 = {CUpti_PCSamplingGetNumStallReasonsParamsSize}; p1.ctx = ctx; p1.numStallReasons = &nsr; CU(cuptiPCSamplingGetNumStallReasons(&p1));
  std::vector<uint32_t> idx(nsr); std::vector<char*> names(nsr); for (auto& n : names) n = (char*)calloc(CUPTI_STALL_REASON_STRING_SIZE, 1);
  CUpti_PCSamplingGetStallReasonsParams p2 = {CUpti_PCSamplingGetStallReasonsParamsSize}; p2.ctx = ctx; p2.numStallReasons = nsr; p2.stallReasonIndex = idx.data(); p2.stallReasons = names.data(); CU(cuptiPCSamplingGetStallReasons(&p2));
  auto mk = [&](size_t npc) { CUpti_PCSamplingData d = {}; d.size = sizeof(d); d.collectNumPcs = npc; d.pPcData = (CUpti_PCSamplingPCData*)calloc(npc, sizeof(CUpti_PCSamplingPCData));
    for (size_t i = 0; i < npc; i++) { d.pPcData[i].size = sizeof(CUpti_PCSamplingPCData); d.pPcData[i].stallReason = (CUpti_PCSamplingStallReason*)calloc(nsr, sizeof(CUpti_PCSamplingStallReason)); } return d; };
  cfgbuf = mk(10000); out = mk(10000);
  std::vector<CUpti_PCSamplingConfigurationInfo> cfg; CUpti_PCSamplingConfigurationInfo c = {};
  if (!f_nostall) { c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON; c.attributeData.stallReasonData.stallReasonCount = nsr; c.attributeData.stallReasonData.pStallReasonIndex = idx.data(); cfg.push_back(c); c = {}; }
  c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER; c.attributeData.samplingDataBufferData.samplingDataBuffer = &cfgbuf; cfg.push_back(c); c = {};
  c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE; c.attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED; cfg.push_back(c); c = {};
  c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL; c.attributeData.enableStartStopControlData.enableStartStopControl = 1; cfg.push_back(c); c = {};
  if (f_period) { c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD; c.attributeData.samplingPeriodData.samplingPeriod = 19; cfg.push_back(c); c = {}; }
  CUpti_PCSamplingConfigurationInfoParams pc = {CUpti_PCSamplingConfigurationInfoParamsSize}; pc.ctx = ctx; pc.numAttributes = cfg.size(); pc.pPCSamplingConfigurationInfo = cfg.data(); CU(cuptiPCSamplingSetConfigurationAttribute(&pc));
  float* a; cudaMalloc(&a, 2 * 1024 * 256 * sizeof(float)); cudaMemset(a, 0, 2 * 1024 * 256 * sizeof(float));
  cudaStream_t s1; cudaStreamCreate(&s1);
  std::atomic<bool> quit{false};
  std::thread th, flusher;
  if (strstr(flags, "flush"))
    flusher = std::thread([&] { while (!quit) { cuptiActivityFlushAll(0); std::this_thread::sleep_for(std::chrono::milliseconds(5)); } });
  if (!strcmp(start_at, "thread") || !strcmp(stop_at, "thread"))
    th = std::thread([&] { while (!quit) { { std::lock_guard<std::mutex> l(mu);
        if (!strcmp(start_at, "thread") && want_start.exchange(0)) { cuCtxPushCurrent(ctx); do_start(); CUcontext x; cuCtxPopCurrent(&x); }
        if (!strcmp(stop_at, "thread") && open_ && want_stop.exchange(0)) { cuCtxPushCurrent(ctx); do_stop(); CUcontext x; cuCtxPopCurrent(&x); } }
      std::this_thread::sleep_for(std::chrono::microseconds(200)); } });
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < 100; r++) {
    bool window = r % 10 == 0;
    if (window) { if (!strcmp(start_at, "main")) { std::lock_guard<std::mutex> l(mu); do_start(); } else want_start = 1; }
    if (!strcmp(start_at, "thread") && window) while (want_start) std::this_thread::yield();
    for (int i = 0; i < 3; i++) { current_path = 0; work<<<1024, 256, 0, s1>>>(a, 2000); }
    if (window) want_stop = 1;  // drv_exit: the next launch's exit closes the window
    current_path = 1; work<<<1024, 256, 0, s1>>>(a + 1024 * 256, 2000); current_path = -1;
    if (window && !strcmp(stop_at, "main")) { std::lock_guard<std::mutex> l(mu); do_stop(); }
    if (window && !strcmp(stop_at, "thread")) while (open_) std::this_thread::yield();
  }
  cudaDeviceSynchronize(); { std::lock_guard<std::mutex> l(mu); if (open_) do_stop(); drain(); }
  quit = true; if (th.joinable()) th.join(); if (flusher.joinable()) flusher.join();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CUpti_PCSamplingDisableParams pd = {CUpti_PCSamplingDisableParamsSize}; pd.ctx = ctx; CU(cuptiPCSamplingDisable(&pd));
  consume(cfgbuf);
  printf("  RESULT start=%s stop=%s flags=%s elapsed %.1f ms samples %lu in %lu PCs, zero-corr %lu, getdata %d", start_at, stop_at, flags, ms, tot, recs, zero_corr, getdata_calls);
  for (auto& [k, v] : per_path) printf(" path%d %.1f%%", k, 100.0 * v / (tot ? tot : 1));
  printf("\n");
  return 0;
}
