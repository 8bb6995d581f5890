// Probe (issue #24): what does a launch cost inside a kernel-serialized PC sampling window, and why do
// aiflame's windows on training loops stay open ~100 ms for a handful of launches (bench/RESULTS.md)?
// Times, on one thread, each launch + cuCtxSynchronize + GetData drain, for 32 distinct kernels:
//   outside any window (sampling enabled, stopped) | window 1: each kernel's first sampled launch, then
//   its second | window 2: each kernel again | window 3: 32 launches of kernel 0 | Start and Stop.
// Usage: serialized_cost [PERIOD_LOG2 (0: CUPTI's default)] [ITERS (kernel length, default 200)]
// Build: nvcc -O2 -arch=sm_90 bench/probes/serialized_cost.cu -o sc -lcupti -lcuda -L$CUPTI -Xlinker -rpath=$CUPTI
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include "serialized_sampling.h"
template <int N> __global__ void kern(float* a, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; float v = a[i] + N;
  for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f * __sinf(v + N);
  a[i] = v;
}
using K = void (*)(float*, int);
#define K4(b) kern<b>, kern<b + 1>, kern<b + 2>, kern<b + 3>
static K kernels[32] = {K4(0), K4(4), K4(8), K4(12), K4(16), K4(20), K4(24), K4(28)};
static SerializedSampling sampling;
static double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static float* a; static int iters = 200;
static double timed_launch(int k, bool in_window) {
  double t0 = now_us();
  kernels[k]<<<264, 256>>>(a, iters);
  cuCtxSynchronize();
  if (in_window) sampling.drain();
  return now_us() - t0;
}
static void report(const char* what, std::vector<double> v, unsigned long long s0) {
  std::sort(v.begin(), v.end());
  double sum = 0; for (double x : v) sum += x;
  printf("%-44s n=%2zu median %9.1f us  min %9.1f  max %9.1f  sum %9.1f  samples %llu\n", what, v.size(), v[v.size() / 2], v[0], v.back(), sum, sampling.samples - s0);
}
static double start() { double t0 = now_us(); sampling.start(); return now_us() - t0; }
static double stop() { double t0 = now_us(); sampling.stop(); return now_us() - t0; }
int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int period = argc > 1 ? atoi(argv[1]) : 0; iters = argc > 2 ? atoi(argv[2]) : 200;
  cudaFree(0);
  CUcontext ctx; cuCtxGetCurrent(&ctx);
  cudaMalloc(&a, 264 * 256 * sizeof(float)); cudaMemset(a, 0, 264 * 256 * sizeof(float));
  for (int k = 0; k < 32; k++) timed_launch(k, false);  // modules loaded, kernels warm, no CUPTI yet
  std::vector<double> plain; for (int k = 0; k < 32; k++) plain.push_back(timed_launch(k, false));
  sampling.enable(ctx, period);
  printf("period %s, kernel iters %d\n", period ? argv[1] : "CUPTI default", iters);
  report("no CUPTI (sync after each)", plain, sampling.samples);
  std::vector<double> outside; unsigned long long s = sampling.samples;
  for (int k = 0; k < 32; k++) outside.push_back(timed_launch(k, false));
  report("enabled, stopped (outside windows)", outside, s);
  std::vector<double> first, second, again, same, starts, stops;
  starts.push_back(start()); s = sampling.samples;
  for (int k = 0; k < 32; k++) { first.push_back(timed_launch(k, true)); second.push_back(timed_launch(k, true)); }
  stops.push_back(stop());
  report("window 1: first sampled launch of each kernel", first, s);
  report("window 1: its second launch", second, sampling.samples);
  starts.push_back(start()); s = sampling.samples;
  for (int k = 0; k < 32; k++) again.push_back(timed_launch(k, true));
  stops.push_back(stop());
  report("window 2: each kernel again", again, s);
  starts.push_back(start()); s = sampling.samples;
  for (int k = 0; k < 32; k++) same.push_back(timed_launch(0, true));
  stops.push_back(stop());
  report("window 3: kernel 0, 32 times", same, s);
  report("Start (with cuCtxSynchronize)", starts, sampling.samples);
  report("Stop (with cuCtxSynchronize and drain)", stops, sampling.samples);
  std::vector<double> after; s = sampling.samples;
  for (int k = 0; k < 32; k++) after.push_back(timed_launch(k, false));
  report("after the windows, stopped", after, s);
  sampling.disable();
  return 0;
}
