// Probe (issue #24): do kernel records switched on around a sampling window take the later windows'
// samples away? In a 28-s gpt_train.py run in windows mode (sampling enabled and disabled per window,
// CONCURRENT_KERNEL records switched on before each cuptiPCSamplingEnable) the windows after the
// first delivered 14 samples in all, where the same windows without records gave 750-1,500 samples a
// launch (bench/RESULTS.md, "Recorder v2: the third session"). Each mode runs WINDOWS windows of
// LAUNCHES launches of one kernel, each window Enable (+ configure), Start, launches (GetData after
// each), Stop, GetData, Disable, and prints per window its samples and the kernel records CUPTI
// delivered (flushed after the window).
// Usage: window_records MODE [WINDOWS=6] [LAUNCHES=5]
//   none       no kernel records
//   ck         CONCURRENT_KERNEL on before Enable, off after Disable (aiflame's windows mode today)
//   ck-always  CONCURRENT_KERNEL on once before the first window, never off
//   k          KERNEL (serialized kernel records) on before Enable, off after Disable
//   k-always   KERNEL on once before the first window
//   ck-first   CONCURRENT_KERNEL on before Enable for the first window only
// Build: nvcc -O2 -arch=sm_90 bench/probes/window_records.cu -o window_records -lcupti -lcuda -L$CUPTI
#include <cuda_runtime.h>
#include <chrono>
#include <cstring>
#include <string>
#include "serialized_sampling.h"

__global__ void work(float* a, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = a[i];
  for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f * __sinf(v);
  a[i] = v;
}

static unsigned long long g_records = 0;
static void CUPTIAPI requested(uint8_t** buf, size_t* size, size_t* max) {
  *size = 1 << 20;
  *buf = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max = 0;
}
static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) g_records++;
  free(buf);
}
static double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  const std::string mode = argc > 1 ? argv[1] : "ck";
  const int windows = argc > 2 ? atoi(argv[2]) : 6, launches = argc > 3 ? atoi(argv[3]) : 5;
  const bool kind_kernel = mode == "k" || mode == "k-always";
  const CUpti_ActivityKind kind = kind_kernel ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  const bool always = mode == "ck-always" || mode == "k-always";
  const bool per_window = mode == "ck" || mode == "k";
  CU(cuptiActivityRegisterCallbacks(requested, completed));
  cudaFree(0);
  CUcontext ctx;
  cuCtxGetCurrent(&ctx);
  SerializedSampling s;
  s.ctx = ctx;
  float* a;
  cudaMalloc(&a, 264 * 256 * sizeof(float));
  cudaMemset(a, 0, 264 * 256 * sizeof(float));
  work<<<264, 256>>>(a, 200);
  cudaDeviceSynchronize();
  if (always) CU(cuptiActivityEnable(kind));
  for (int w = 0; w < windows; w++) {
    const double t0 = now_ms();
    const bool records = per_window || (mode == "ck-first" && w == 0);
    if (records) CU(cuptiActivityEnable(kind));
    s.enable(ctx, 0, false, 32);
    const unsigned long long s0 = s.samples;
    s.start();
    for (int i = 0; i < launches; i++) {
      work<<<264, 256>>>(a, 200);
      s.drain();
    }
    s.stop();
    s.disable();
    if (records) CU(cuptiActivityDisable(kind));
    const unsigned long long r0 = g_records;
    CU(cuptiActivityFlushAll(1));
    printf("mode %-9s window %d: %8llu samples, %3llu kernel records, %7.1f ms\n", mode.c_str(), w, s.samples - s0,
           g_records - r0, now_ms() - t0);
  }
  return 0;
}
