// Probe (issue #24, seventh session): what PC sampling enabled but stopped costs on the GPU itself.
// With launch callbacks off and no kernel records, sampling kept enabled cost nothing on gpt_train.py
// and resnet_train.py but 1.2-1.3x on hf_gpt2.py and 4x on eight threads on eight streams
// (bench/RESULTS.md). Is it a GPU-side cost per kernel boundary, or lost kernel concurrency?
// Measured with CUDA events around GPU-bound work, so the CPU's launch cost is out of the figures:
//   chain  N kernels of ~2/10/50 us back to back on one stream, replayed from a CUDA graph (the CPU
//          is far ahead): GPU time per kernel
//   pair   the same 1-block kernels spread over two streams, where they can run side by side:
//          elapsed over the one-stream time of the same work (0.5: fully concurrent, 1.0: one at a time)
// in each state: no CUPTI, kernel-serialized enabled (stopped), continuous enabled (stopped), after
// Disable. Usage: enabled_gpu_cost [N=2000]
// Build: nvcc -O2 -arch=sm_90 bench/probes/enabled_gpu_cost.cu -o egc -lcupti -lcuda -L$CUPTI -Xlinker -rpath=$CUPTI
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdlib>
#include <vector>
#include "serialized_sampling.h"
__global__ void spin(float* a, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; float v = a[i];
  for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f;
  a[i] = v;
}
static SerializedSampling sampling;
static float* a;
static int n = 2000;
// GPU ms of one replay of a graph of n launches of spin<<<blocks, 128>>>(iters) on one stream.
static float chain_ms(int blocks, int iters) {
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaGraph_t g; cudaGraphExec_t e;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int i = 0; i < n; i++) spin<<<blocks, 128, 0, s>>>(a, iters);
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&e, g, 0);
  cudaEvent_t t0, t1; cudaEventCreate(&t0); cudaEventCreate(&t1);
  std::vector<float> ms;
  for (int r = 0; r < 5; r++) {
    cudaEventRecord(t0, s); cudaGraphLaunch(e, s); cudaEventRecord(t1, s); cudaEventSynchronize(t1);
    float m; cudaEventElapsedTime(&m, t0, t1); ms.push_back(m);
  }
  cudaGraphExecDestroy(e); cudaGraphDestroy(g); cudaStreamDestroy(s);
  std::sort(ms.begin(), ms.end());
  return ms[2];
}
// Two streams of n/2 one-block launches each (async from the CPU, started together) against one
// stream of all n: elapsed ratio.
static float pair_ratio(int iters) {
  cudaStream_t s[2]; for (auto& x : s) cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking);
  cudaEvent_t t0, t1, j; cudaEventCreate(&t0); cudaEventCreate(&t1); cudaEventCreate(&j);
  auto run = [&](int streams) {
    cudaDeviceSynchronize();
    cudaEventRecord(t0, s[0]);
    cudaStreamWaitEvent(s[1], t0);
    for (int i = 0; i < n; i++) spin<<<1, 32, 0, s[streams == 2 ? i % 2 : 0]>>>(a, iters);
    cudaEventRecord(j, s[1]); cudaStreamWaitEvent(s[0], j);
    cudaEventRecord(t1, s[0]); cudaEventSynchronize(t1);
    float m; cudaEventElapsedTime(&m, t0, t1); return m;
  };
  run(1); float one = run(1), two = run(2);
  for (auto& x : s) cudaStreamDestroy(x);
  return two / one;
}
static void measure(const char* state) {
  printf("%-34s chain us/kernel: 1 block 2k iters %.2f, 132 blocks 10k %.2f, 1056 blocks 10k %.2f; two streams %.2f\n", state,
         chain_ms(1, 2000) * 1000 / n, chain_ms(132, 10000) * 1000 / n, chain_ms(1056, 10000) * 1000 / n, pair_ratio(20000));
}
int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc > 1) n = atoi(argv[1]);
  cudaFree(0);
  CUcontext ctx; cuCtxGetCurrent(&ctx);
  cudaMalloc(&a, 1056 * 128 * sizeof(float)); cudaMemset(a, 0, 1056 * 128 * sizeof(float));
  measure("warm-up");
  measure("no CUPTI");
  sampling.enable(ctx, 0);
  measure("serialized, enabled, never started");
  sampling.start(); spin<<<132, 128>>>(a, 1000); cuCtxSynchronize(); sampling.stop();
  measure("serialized, stopped after a window");
  sampling.disable();
  measure("disabled");
  sampling.enable(ctx, 0, true);
  measure("continuous, enabled, never started");
  sampling.disable();
  measure("disabled again");
  return 0;
}
