// Probe (issue #24, twelfth session): can a kernel-serialized PC sampling window open and close on a
// busy GPU, without draining its queue? In windows mode the opener's cuCtxSynchronize waited 1.0-2.2 s
// for the queue of the 3:1 test (bench/RESULTS.md, "keep1 with the queue's wait left out"), so a run
// got 2-5 windows. Here a queue of Q long kernels (tag 0) is enqueued; then, with or without
// cuCtxSynchronize before Start and before Stop, one window around one launch (tag 1); then K more
// launches after the window (tag 2). Prints how long Start, the window's launch, Stop and the launches
// after it took on the CPU, what was still queued, and the samples per tag: are the window's samples
// there, and do kernels outside the window give none?
// usage: serialized_busy MODE [Q=100] [K=20]   MODE: sync (NVIDIA's way: the reference) | nosync |
//        nosync-stopsync (no sync before Start, cuCtxSynchronize before Stop)
// build: nvcc -O2 -arch=sm_90 serialized_busy.cu -o serialized_busy -lcupti -lcuda (with -L and -rpath of
//        CUPTI's lib directory)
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "serialized_sampling.h"

__global__ void work(float* a, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = a[i];
  for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f * __sinf(v);
  a[i] = v;
}

static std::mutex mu;
static std::map<uint32_t, int> corr_tag;  // correlation id: tag
static int current_tag = -1;

static void CUPTIAPI on_cb(void*, CUpti_CallbackDomain d, CUpti_CallbackId, const void* info) {
  if (d != CUPTI_CB_DOMAIN_DRIVER_API) return;
  auto* ci = static_cast<const CUpti_CallbackData*>(info);
  if (ci->callbackSite != CUPTI_API_ENTER || current_tag < 0) return;
  std::lock_guard<std::mutex> l(mu);
  corr_tag[ci->correlationId] = current_tag;
}

// Milliseconds fn() took on the CPU.
template <class F>
static double ms_of(F&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  const char* mode = argc > 1 ? argv[1] : "nosync";
  const int queue = argc > 2 ? atoi(argv[2]) : 100, after = argc > 3 ? atoi(argv[3]) : 20;
  const bool sync_start = !strcmp(mode, "sync");
  const bool sync_stop = !strcmp(mode, "sync") || !strcmp(mode, "nosync-stopsync");
  CUpti_SubscriberHandle sub;
  CU(cuptiSubscribe(&sub, on_cb, nullptr));
  CU(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  CU(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz));
  cudaFree(0);
  CUcontext ctx;
  cuCtxGetCurrent(&ctx);
  SerializedSampling s;
  s.enable(ctx, 0, false, 32);
  float* a;
  const int n = 1024 * 256;
  cudaMalloc(&a, 3 * n * sizeof(float));
  cudaMemset(a, 0, 3 * n * sizeof(float));
  cudaStream_t st;
  cudaStreamCreate(&st);
  // A first window, NVIDIA's way, pays CUPTI's one-time start (0.3-0.6 s) outside what is timed.
  s.start();
  work<<<1024, 256, 0, st>>>(a, 2000);
  s.stop();
  const unsigned long long primed = s.samples;
  s.samples = 0;
  // The window's kernel alone, NVIDIA's way: how many samples one such launch gives.
  current_tag = 9;
  s.start();
  work<<<1024, 256, 0, st>>>(a + n, 2000);
  s.stop();
  const unsigned long long alone = s.samples;
  s.samples = 0;
  // GetData until empty, each record's samples counted under its launch's tag (-1: an id no launch of
  // this probe had).
  std::map<int, unsigned long long> per_tag;
  auto fetch = [&] {
    for (int g = 0; g < 1000; g++) {
      CUpti_PCSamplingGetDataParams p = {CUpti_PCSamplingGetDataParamsSize};
      p.ctx = ctx;
      p.pcSamplingData = &s.out;
      if (cuptiPCSamplingGetData(&p) != CUPTI_SUCCESS) break;
      std::lock_guard<std::mutex> l(mu);
      for (size_t i = 0; i < s.out.totalNumPcs; i++) {
        unsigned long long k = 0;
        for (size_t r = 0; r < s.out.pPcData[i].stallReasonCount; r++) k += s.out.pPcData[i].stallReason[r].samples;
        auto it = corr_tag.find(s.out.pPcData[i].correlationId);
        per_tag[it == corr_tag.end() ? -1 : it->second] += k;
      }
      s.out.totalNumPcs = 0;
      if (!s.out.remainingNumPcs) break;
    }
  };
  // The queue: Q long kernels (about 5 ms each on an H100).
  current_tag = 0;
  for (int i = 0; i < queue; i++) work<<<1024, 256, 0, st>>>(a, 50000);
  const double sync1 = ms_of([&] { if (sync_start) cuCtxSynchronize(); });
  CUpti_PCSamplingStartParams sp = {CUpti_PCSamplingStartParamsSize};
  sp.ctx = ctx;
  const double start_ms = ms_of([&] { CU(cuptiPCSamplingStart(&sp)); });
  current_tag = 1;
  const double launch_ms = ms_of([&] { work<<<1024, 256, 0, st>>>(a + n, 2000); });
  const bool queue_busy = cudaStreamQuery(st) == cudaErrorNotReady;
  const double sync2 = ms_of([&] { if (sync_stop) cuCtxSynchronize(); });
  CUpti_PCSamplingStopParams pp = {CUpti_PCSamplingStopParamsSize};
  pp.ctx = ctx;
  const double stop_ms = ms_of([&] { CU(cuptiPCSamplingStop(&pp)); });
  const double drain_ms = ms_of(fetch);
  unsigned long long at_stop = 0;
  for (auto& [t, k] : per_tag) at_stop += k;
  current_tag = 2;
  const double after_ms = ms_of([&] { for (int i = 0; i < after; i++) work<<<1024, 256, 0, st>>>(a + 2 * n, 2000); });
  const bool still_busy = cudaStreamQuery(st) == cudaErrorNotReady;
  const double sync3 = ms_of([] { cuCtxSynchronize(); });
  fetch();
  printf("== %s: queue %d long kernels, %d launches after the window\n", mode, queue, after);
  printf("  priming window %llu samples; the window's kernel alone (NVIDIA's way) %llu samples\n", primed, alone);
  printf("  cuCtxSynchronize before Start %.2f ms, Start %.3f ms, the window's launch %.3f ms (queue still busy after it: %s)\n",
         sync1, start_ms, launch_ms, queue_busy ? "yes" : "no");
  printf("  cuCtxSynchronize before Stop %.2f ms, Stop %.3f ms, GetData %.3f ms (%llu samples by then)\n", sync2, stop_ms,
         drain_ms, at_stop);
  printf("  %d launches after the window %.3f ms (queue still busy: %s), final cuCtxSynchronize %.2f ms\n", after, after_ms,
         still_busy ? "yes" : "no", sync3);
  printf("  RESULT %s samples by tag (0: the queue, 1: the window's launch, 2: after the window, -1: unknown id):", mode);
  for (auto& [t, k] : per_tag) printf(" tag%d %llu", t, k);
  printf("\n");
  s.disable();
  return 0;
}
