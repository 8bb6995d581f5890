// Probe (issue #24): is the one-time cost of a kernel-serialized window (~300 ms at the first sampled
// launch, bench/probes/serialized_cost.cu) paid once per context, or once per loaded module? PyTorch
// programs launch from hundreds of modules (libtorch_cuda's cubins, cuBLAS, cuDNN), and aiflame's
// windows on training loops stayed open ~100 ms for a few launches.
// Loads the cubin of one kernel (built beside this file: nvcc -cubin -arch=sm_90 -DKERNEL_ONLY) as
// N separate modules and times, inside one serialized window, the first and second launch in each.
// Usage: serialized_modules CUBIN [N=8] [PERIOD_LOG2 (0: CUPTI's default)]
#include <cuda.h>
extern "C" __global__ void modkern(float* a, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; float v = a[i];
  for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f * __sinf(v);
  a[i] = v;
}
#ifndef KERNEL_ONLY
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include "serialized_sampling.h"
static double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc < 2) { printf("usage: serialized_modules CUBIN [N] [PERIOD]\n"); return 2; }
  std::ifstream f(argv[1], std::ios::binary); std::string img((std::istreambuf_iterator<char>(f)), {});
  int n = argc > 2 ? atoi(argv[2]) : 8, period = argc > 3 ? atoi(argv[3]) : 0;
  cuInit(0); CUdevice dev; cuDeviceGet(&dev, 0); CUcontext ctx; cuDevicePrimaryCtxRetain(&ctx, dev); cuCtxSetCurrent(ctx);
  SerializedSampling sampling;
  CUdeviceptr a; cuMemAlloc(&a, 264 * 256 * 4); cuMemsetD32(a, 0, 264 * 256);
  std::vector<CUfunction> fn(n);
  for (int i = 0; i < n; i++) { CUmodule m; if (cuModuleLoadData(&m, img.data()) != CUDA_SUCCESS) { printf("module load failed\n"); return 1; } cuModuleGetFunction(&fn[i], m, "modkern"); }
  int iters = 200; void* args[] = {&a, &iters};
  auto launch = [&](int i) { double t0 = now_us(); cuLaunchKernel(fn[i], 264, 1, 1, 256, 1, 1, 0, 0, args, nullptr); cuCtxSynchronize(); sampling.drain(); return now_us() - t0; };
  for (int i = 0; i < n; i++) launch(i);  // warm, no CUPTI yet
  sampling.enable(ctx, period);
  for (int w = 1; w <= 2; w++) {
    sampling.start();
    for (int i = 0; i < n; i++) { unsigned long long s0 = sampling.samples; double t1 = launch(i), t2 = launch(i);
      printf("window %d module %d: first launch %10.1f us, second %8.1f us, samples %llu\n", w, i, t1, t2, sampling.samples - s0); }
    sampling.stop();
  }
  CUmodule late; cuModuleLoadData(&late, img.data()); CUfunction lf; cuModuleGetFunction(&lf, late, "modkern"); fn.push_back(lf);
  sampling.start();
  double t1 = launch(n), t2 = launch(n);
  printf("window 3, a module loaded after sampling was enabled: first launch %10.1f us, second %8.1f us\n", t1, t2);
  sampling.stop();
  sampling.disable();
  return 0;
}
#endif
