// Probe (issue #24): what does a launch cost inside a kernel-serialized PC sampling window, and why do
// aiflame's windows on training loops stay open ~100 ms for a handful of launches (bench/RESULTS.md)?
// Times, on one thread, each launch + cuCtxSynchronize + GetData drain, for 32 distinct kernels:
//   outside any window (sampling enabled, stopped) | window 1: each kernel's first sampled launch, then
//   its second | window 2: each kernel again | window 3: 32 launches of kernel 0 | Start and Stop.
// Usage: serialized_cost [PERIOD_LOG2 (0: CUPTI's default)] [ITERS (kernel length, default 200)]
// Build: nvcc -O2 -arch=sm_90 bench/probes/serialized_cost.cu -o sc -lcupti -lcuda -L$CUPTI -Xlinker -rpath=$CUPTI
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CU(x) do { CUptiResult r = (x); if (r != CUPTI_SUCCESS) { const char* s; cuptiGetResultString(r, &s); printf("CUPTI FAIL %s: %s\n", #x, s); } } while (0)
template <int N> __global__ void kern(float* a, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; float v = a[i] + N;
  for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f * __sinf(v + N);
  a[i] = v;
}
using K = void (*)(float*, int);
#define K4(b) kern<b>, kern<b + 1>, kern<b + 2>, kern<b + 3>
static K kernels[32] = {K4(0), K4(4), K4(8), K4(12), K4(16), K4(20), K4(24), K4(28)};
static CUcontext ctx;
static CUpti_PCSamplingData cfgbuf, out;
static unsigned long long samples;
static void drain() {
  for (int g = 0; g < 1000; g++) {
    CUpti_PCSamplingGetDataParams p = {CUpti_PCSamplingGetDataParamsSize}; p.ctx = ctx; p.pcSamplingData = &out;
    if (cuptiPCSamplingGetData(&p) != CUPTI_SUCCESS) break;
    for (size_t i = 0; i < out.totalNumPcs; i++) for (size_t k = 0; k < out.pPcData[i].stallReasonCount; k++) samples += out.pPcData[i].stallReason[k].samples;
    out.totalNumPcs = 0;
    if (!out.remainingNumPcs) break;
  }
}
static double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static float* a; static int iters = 200;
static double timed_launch(int k, bool in_window) {
  double t0 = now_us();
  kernels[k]<<<264, 256>>>(a, iters);
  cuCtxSynchronize();
  if (in_window) drain();
  return now_us() - t0;
}
static void report(const char* what, std::vector<double> v, unsigned long long s0) {
  std::sort(v.begin(), v.end());
  double sum = 0; for (double x : v) sum += x;
  printf("%-44s n=%2zu median %9.1f us  min %9.1f  max %9.1f  sum %9.1f  samples %llu\n", what, v.size(), v[v.size() / 2], v[0], v.back(), sum, samples - s0);
}
static double start() { double t0 = now_us(); cuCtxSynchronize(); CUpti_PCSamplingStartParams p = {CUpti_PCSamplingStartParamsSize}; p.ctx = ctx; CU(cuptiPCSamplingStart(&p)); return now_us() - t0; }
static double stop() { double t0 = now_us(); cuCtxSynchronize(); CUpti_PCSamplingStopParams p = {CUpti_PCSamplingStopParamsSize}; p.ctx = ctx; CU(cuptiPCSamplingStop(&p)); drain(); return now_us() - t0; }
int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int period = argc > 1 ? atoi(argv[1]) : 0; iters = argc > 2 ? atoi(argv[2]) : 200;
  cudaFree(0); cuCtxGetCurrent(&ctx);
  cudaMalloc(&a, 264 * 256 * sizeof(float)); cudaMemset(a, 0, 264 * 256 * sizeof(float));
  for (int k = 0; k < 32; k++) timed_launch(k, false);  // modules loaded, kernels warm, no CUPTI yet
  std::vector<double> plain; for (int k = 0; k < 32; k++) plain.push_back(timed_launch(k, false));
  CUpti_PCSamplingEnableParams pe = {CUpti_PCSamplingEnableParamsSize}; pe.ctx = ctx; CU(cuptiPCSamplingEnable(&pe));
  size_t nsr = 0; CUpti_PCSamplingGetNumStallReasonsParams p1 = {CUpti_PCSamplingGetNumStallReasonsParamsSize}; p1.ctx = ctx; p1.numStallReasons = &nsr; CU(cuptiPCSamplingGetNumStallReasons(&p1));
  std::vector<uint32_t> idx(nsr); std::vector<char*> names(nsr); for (auto& n : names) n = (char*)calloc(CUPTI_STALL_REASON_STRING_SIZE, 1);
  CUpti_PCSamplingGetStallReasonsParams p2 = {CUpti_PCSamplingGetStallReasonsParamsSize}; p2.ctx = ctx; p2.numStallReasons = nsr; p2.stallReasonIndex = idx.data(); p2.stallReasons = names.data(); CU(cuptiPCSamplingGetStallReasons(&p2));
  auto mk = [&](size_t npc) { CUpti_PCSamplingData d = {}; d.size = sizeof(d); d.collectNumPcs = npc; d.pPcData = (CUpti_PCSamplingPCData*)calloc(npc, sizeof(CUpti_PCSamplingPCData));
    for (size_t i = 0; i < npc; i++) { d.pPcData[i].size = sizeof(CUpti_PCSamplingPCData); d.pPcData[i].stallReason = (CUpti_PCSamplingStallReason*)calloc(nsr, sizeof(CUpti_PCSamplingStallReason)); } return d; };
  cfgbuf = mk(10000); out = mk(10000);
  std::vector<CUpti_PCSamplingConfigurationInfo> cfg; CUpti_PCSamplingConfigurationInfo c = {};
  c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON; c.attributeData.stallReasonData.stallReasonCount = nsr; c.attributeData.stallReasonData.pStallReasonIndex = idx.data(); cfg.push_back(c); c = {};
  c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER; c.attributeData.samplingDataBufferData.samplingDataBuffer = &cfgbuf; cfg.push_back(c); c = {};
  c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE; c.attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED; cfg.push_back(c); c = {};
  c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL; c.attributeData.enableStartStopControlData.enableStartStopControl = 1; cfg.push_back(c); c = {};
  if (period) { c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD; c.attributeData.samplingPeriodData.samplingPeriod = period; cfg.push_back(c); c = {}; }
  CUpti_PCSamplingConfigurationInfoParams pc = {CUpti_PCSamplingConfigurationInfoParamsSize}; pc.ctx = ctx; pc.numAttributes = cfg.size(); pc.pPCSamplingConfigurationInfo = cfg.data(); CU(cuptiPCSamplingSetConfigurationAttribute(&pc));
  printf("period %s, kernel iters %d\n", period ? argv[1] : "CUPTI default", iters);
  report("no CUPTI (sync after each)", plain, samples);
  std::vector<double> outside; unsigned long long s = samples;
  for (int k = 0; k < 32; k++) outside.push_back(timed_launch(k, false));
  report("enabled, stopped (outside windows)", outside, s);
  std::vector<double> first, second, again, same, starts, stops;
  starts.push_back(start()); s = samples;
  for (int k = 0; k < 32; k++) { first.push_back(timed_launch(k, true)); second.push_back(timed_launch(k, true)); }
  stops.push_back(stop());
  report("window 1: first sampled launch of each kernel", first, s);
  report("window 1: its second launch", second, samples);
  starts.push_back(start()); s = samples;
  for (int k = 0; k < 32; k++) again.push_back(timed_launch(k, true));
  stops.push_back(stop());
  report("window 2: each kernel again", again, s);
  starts.push_back(start()); s = samples;
  for (int k = 0; k < 32; k++) same.push_back(timed_launch(0, true));
  stops.push_back(stop());
  report("window 3: kernel 0, 32 times", same, s);
  report("Start (with cuCtxSynchronize)", starts, samples);
  report("Stop (with cuCtxSynchronize and drain)", stops, samples);
  std::vector<double> after; s = samples;
  for (int k = 0; k < 32; k++) after.push_back(timed_launch(k, false));
  report("after the windows, stopped", after, s);
  CUpti_PCSamplingDisableParams pd = {CUpti_PCSamplingDisableParamsSize}; pd.ctx = ctx; CU(cuptiPCSamplingDisable(&pd));
  return 0;
}
