// Probe (issue #24): what PC sampling costs a launch *between* windows, and can it be switched off
// there? aiflame's windows mode measured +3.8 us per launch of a storm between windows with sampling
// enabled (kernel-serialized, start/stop control, stopped), while cupti_launch_cost.cu measured
// +0.45 us for continuous mode with start/stop control, stopped. Disabling between windows looked
// like a hang in gpt_train.py: does each Enable re-pay the context's one-time 0.3-0.6 s start?
// Prints per-launch cost of an async storm of tiny kernels in each state, and each window's time.
// Usage: window_toggle [keep|toggle|hw] (which kind of window runs first; hw: toggle windows only)
//        [STORM (launches, 100000)] [HW_MB (CUPTI's hardware buffer, MB; 0: its default)]
// Build: nvcc -O2 -arch=sm_90 bench/probes/window_toggle.cu -o wt -lcupti -lcuda -L$CUPTI -Xlinker -rpath=$CUPTI
#include <cuda_runtime.h>
#include <chrono>
#include <cstring>
#include "serialized_sampling.h"
__global__ void tiny(float* a) { a[threadIdx.x] += 1.f; }
__global__ void work(float* a, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; float v = a[i];
  for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f * __sinf(v);
  a[i] = v;
}
static SerializedSampling sampling;
static float *a, *b;
static int storm_n = 100000;
static double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static void storm(const char* what) {
  double t0 = now_us();
  for (int i = 0; i < storm_n; i++) tiny<<<1, 32>>>(b);
  cudaDeviceSynchronize();
  printf("storm  %-48s %.3f us/launch\n", what, (now_us() - t0) / storm_n);
}
// One window of one 13-us kernel; toggle: Enable+configure before, Disable after.
static size_t hw_mb = 0;  // CUPTI's hardware buffer (0: its default)
static void window(const char* what, bool toggle, bool continuous = false) {
  double t0 = now_us();
  if (toggle) sampling.enable(sampling.ctx, 0, continuous, hw_mb);
  double t1 = now_us();
  unsigned long long s0 = sampling.samples;
  sampling.start();
  double t2 = now_us();
  work<<<264, 256>>>(a, 200);
  cuCtxSynchronize();
  sampling.drain();
  double t3 = now_us();
  sampling.stop();
  double t4 = now_us();
  if (toggle) sampling.disable();
  double t5 = now_us();
  printf("window %-40s total %10.1f us: enable %8.1f start %6.1f launch %9.1f stop %6.1f disable %8.1f samples %llu\n", what,
         t5 - t0, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, sampling.samples - s0);
}
int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  bool toggle_first = argc > 1 && !strcmp(argv[1], "toggle");
  if (argc > 2) storm_n = atoi(argv[2]);
  if (argc > 3) hw_mb = strtoul(argv[3], nullptr, 10);
  if (argc > 1 && !strcmp(argv[1], "hw")) {  // only toggle windows, with the hardware buffer given
    cudaFree(0);
    cuCtxGetCurrent(&sampling.ctx);
    cudaMalloc(&a, 264 * 256 * sizeof(float)); cudaMalloc(&b, 4096);
    work<<<264, 256>>>(a, 200); storm("warm-up"); storm("no CUPTI");
    printf("hardware buffer %zu MB\n", hw_mb);
    for (int i = 0; i < 4; i++) window("toggle (enable..disable)", true);
    storm("disabled after toggle windows");
    return 0;
  }
  cudaFree(0);
  CUcontext ctx; cuCtxGetCurrent(&ctx);
  sampling.ctx = ctx;
  cudaMalloc(&a, 264 * 256 * sizeof(float)); cudaMalloc(&b, 4096);
  cudaMemset(a, 0, 264 * 256 * sizeof(float));
  work<<<264, 256>>>(a, 200); storm("warm-up"); storm("no CUPTI");
  if (toggle_first) {
    for (int i = 0; i < 4; i++) window("toggle (enable..disable)", true);
    storm("disabled after toggle windows");
  }
  sampling.enable(ctx, 0);
  storm("serialized, enabled, never started");
  for (int i = 0; i < 4; i++) window("keep (enabled, start/stop)", false);
  storm("serialized, enabled, stopped after windows");
  sampling.disable();
  storm("disabled after serialized");
  for (int i = 0; i < 4; i++) window("toggle (enable..disable)", true);
  storm("disabled after toggle windows");
  sampling.enable(ctx, 0, true);
  storm("continuous+start/stop, enabled, stopped");
  for (int i = 0; i < 2; i++) window("continuous keep", false);
  storm("continuous+start/stop, stopped after windows");
  sampling.disable();
  storm("disabled after continuous");
  for (int i = 0; i < 2; i++) window("toggle serialized again", true);
  storm("no sampling at the end");
  return 0;
}
