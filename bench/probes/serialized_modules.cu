// Probe (issue #24): is the one-time cost of a kernel-serialized window (~300 ms at the first sampled
// launch, bench/probes/serialized_cost.cu) paid once per context, or once per loaded module? PyTorch
// programs launch from hundreds of modules (libtorch_cuda's cubins, cuBLAS, cuDNN), and aiflame's
// windows on training loops stayed open ~100 ms for a few launches.
// Loads the cubin of one kernel (built beside this file: nvcc -cubin -arch=sm_90 -DKERNEL_ONLY) as
// N separate modules and times, inside one serialized window, the first and second launch in each.
// Usage: serialized_modules CUBIN [N=8] [PERIOD_LOG2 (0: CUPTI's default)]
#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>
extern "C" __global__ void modkern(float* a, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; float v = a[i];
  for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f * __sinf(v);
  a[i] = v;
}
#ifndef KERNEL_ONLY
#define CU(x) do { CUptiResult r = (x); if (r != CUPTI_SUCCESS) { const char* s; cuptiGetResultString(r, &s); printf("CUPTI FAIL %s: %s\n", #x, s); } } while (0)
static double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static CUcontext ctx; static CUpti_PCSamplingData cfgbuf, out; static unsigned long long samples;
static void drain() {
  for (int g = 0; g < 1000; g++) {
    CUpti_PCSamplingGetDataParams p = {CUpti_PCSamplingGetDataParamsSize}; p.ctx = ctx; p.pcSamplingData = &out;
    if (cuptiPCSamplingGetData(&p) != CUPTI_SUCCESS) break;
    for (size_t i = 0; i < out.totalNumPcs; i++) for (size_t k = 0; k < out.pPcData[i].stallReasonCount; k++) samples += out.pPcData[i].stallReason[k].samples;
    out.totalNumPcs = 0; if (!out.remainingNumPcs) break;
  }
}
int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc < 2) { printf("usage: serialized_modules CUBIN [N] [PERIOD]\n"); return 2; }
  std::ifstream f(argv[1], std::ios::binary); std::string img((std::istreambuf_iterator<char>(f)), {});
  int n = argc > 2 ? atoi(argv[2]) : 8, period = argc > 3 ? atoi(argv[3]) : 0;
  cuInit(0); CUdevice dev; cuDeviceGet(&dev, 0); cuDevicePrimaryCtxRetain(&ctx, dev); cuCtxSetCurrent(ctx);
  CUdeviceptr a; cuMemAlloc(&a, 264 * 256 * 4); cuMemsetD32(a, 0, 264 * 256);
  std::vector<CUfunction> fn(n);
  for (int i = 0; i < n; i++) { CUmodule m; if (cuModuleLoadData(&m, img.data()) != CUDA_SUCCESS) { printf("module load failed\n"); return 1; } cuModuleGetFunction(&fn[i], m, "modkern"); }
  int iters = 200; void* args[] = {&a, &iters};
  auto launch = [&](int i) { double t0 = now_us(); cuLaunchKernel(fn[i], 264, 1, 1, 256, 1, 1, 0, 0, args, nullptr); cuCtxSynchronize(); drain(); return now_us() - t0; };
  for (int i = 0; i < n; i++) launch(i);  // warm, no CUPTI yet
  CUpti_PCSamplingEnableParams pe = {CUpti_PCSamplingEnableParamsSize}; pe.ctx = ctx; CU(cuptiPCSamplingEnable(&pe));
  size_t nsr = 0; CUpti_PCSamplingGetNumStallReasonsParams p1 = {CUpti_PCSamplingGetNumStallReasonsParamsSize}; p1.ctx = ctx; p1.numStallReasons = &nsr; CU(cuptiPCSamplingGetNumStallReasons(&p1));
  std::vector<uint32_t> idx(nsr); std::vector<char*> names(nsr); for (auto& s : names) s = (char*)calloc(CUPTI_STALL_REASON_STRING_SIZE, 1);
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
  for (int w = 1; w <= 2; w++) {
    cuCtxSynchronize(); CUpti_PCSamplingStartParams st = {CUpti_PCSamplingStartParamsSize}; st.ctx = ctx; CU(cuptiPCSamplingStart(&st));
    for (int i = 0; i < n; i++) { unsigned long long s0 = samples; double t1 = launch(i), t2 = launch(i);
      printf("window %d module %d: first launch %10.1f us, second %8.1f us, samples %llu\n", w, i, t1, t2, samples - s0); }
    cuCtxSynchronize(); CUpti_PCSamplingStopParams sp = {CUpti_PCSamplingStopParamsSize}; sp.ctx = ctx; CU(cuptiPCSamplingStop(&sp)); drain();
  }
  CUmodule late; cuModuleLoadData(&late, img.data()); CUfunction lf; cuModuleGetFunction(&lf, late, "modkern"); fn.push_back(lf);
  cuCtxSynchronize(); CUpti_PCSamplingStartParams st = {CUpti_PCSamplingStartParamsSize}; st.ctx = ctx; CU(cuptiPCSamplingStart(&st));
  double t1 = launch(n), t2 = launch(n);
  printf("window 3, a module loaded after sampling was enabled: first launch %10.1f us, second %8.1f us\n", t1, t2);
  cuCtxSynchronize(); CUpti_PCSamplingStopParams sp = {CUpti_PCSamplingStopParamsSize}; sp.ctx = ctx; CU(cuptiPCSamplingStop(&sp)); drain();
  CUpti_PCSamplingDisableParams pd = {CUpti_PCSamplingDisableParamsSize}; pd.ctx = ctx; CU(cuptiPCSamplingDisable(&pd));
  return 0;
}
#endif
