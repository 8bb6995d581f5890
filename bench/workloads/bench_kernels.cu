// Workloads for bench/overhead.sh and bench/accuracy.sh, one per mode. Each prints "loop_s X" (the
// time of its launch loop, synchronised) and what it launched.
//   storm N            one tiny kernel launched N times as fast as the CPU allows
//   threads T N        T host threads, each on its own stream, N launches of a short kernel each
//   grid B N [own]     kernel `work` on B blocks of 256 threads (200 iterations each), N times on one
//                      stream (the default one, or with `own` a non-blocking stream of its own): the
//                      per-kernel cost of PC sampling against the kernel's grid
//   graph R K          a CUDA graph of K kernels captured once from capture_step(), replayed R times
//   split MODE N       the attribution accuracy test: kernel `work` launched from path_a() and path_b()
//                      with a known 3:1 work split; MODE sequential (A A A B ...), streams (A on one
//                      stream, B on another, concurrently), size (A and B alternate, A's launches do 3x
//                      the work), thin (path_heavy's grid fills the GPU, path_light's few blocks run
//                      33x longer on another stream, stretching across the heavy ones; both with one
//                      block per SM so that samples follow work). Prints "truth path_a 0.75 path_b 0.25"
//                      (thin: "truth path_heavy 0.75 path_light 0.25"). Issue 65's modes, each
//                      printing its truth from the work it launched: fullfull (two full grids, the
//                      heavy one launched first), fullthin / thinfull (8 one-block-per-SM grids beside 4
//                      blocks as long as the round, either launched first), small (grids of 64 and 32
//                      blocks), blocksize (1,024- beside 64-thread blocks), regs (a register-heavy
//                      kernel), three (three streams, 3:2:1), graph (a CUDA graph, two parallel nodes)
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

__global__ void tiny(float* x) {
  if (threadIdx.x == 0) x[blockIdx.x] += 1.0f;
}

__global__ void work(float* x, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int k = 0; k < iters; k++) v = v * 1.0001f + 0.5f;
  x[i] = v;
}

// `work` with many values live across the loop: more registers per thread, so fewer blocks per SM
// (its registers are what the kernel record reports; the arrangement does not assume a number).
__global__ void __launch_bounds__(256) work_regs(float* x, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v[48];
#pragma unroll
  for (int j = 0; j < 48; j++) v[j] = x[i] + j;
  for (int k = 0; k < iters; k++) {
#pragma unroll
    for (int j = 0; j < 48; j++) v[j] = v[j] * 1.0001f + v[(j + 1) % 48] * 0.0001f;
  }
  float t = 0;
#pragma unroll
  for (int j = 0; j < 48; j++) t += v[j];
  x[i] = t;
}

__global__ void scale(float* x, int n, float f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * f;
}

__global__ void shift(float* x, int n, float f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] + f;
}

static float* buffer(int n) {
  float* p = nullptr;
  CHECK(cudaMalloc(&p, sizeof(float) * n));
  CHECK(cudaMemset(p, 0, sizeof(float) * n));
  return p;
}

using Clock = std::chrono::steady_clock;
static double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

static int storm(long n) {
  float* x = buffer(1024);
  tiny<<<1, 32>>>(x);
  CHECK(cudaDeviceSynchronize());
  auto t0 = Clock::now();
  for (long i = 0; i < n; i++) tiny<<<1, 32>>>(x);
  CHECK(cudaDeviceSynchronize());
  double s = since(t0);
  std::printf("launched %ld loop_s %.3f launches_per_s %.0f\n", n, s, n / s);
  return 0;
}

static int threads(int t, int n) {
  const int len = 1 << 16;
  std::vector<float*> bufs;
  for (int i = 0; i < t; i++) bufs.push_back(buffer(len));
  CHECK(cudaDeviceSynchronize());
  auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int i = 0; i < t; i++)
    pool.emplace_back([&, i] {
      cudaStream_t s;
      CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      for (int k = 0; k < n; k++) work<<<len / 256, 256, 0, s>>>(bufs[i], len, 200);
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaStreamDestroy(s));
    });
  for (auto& th : pool) th.join();
  double s = since(t0);
  std::printf("launched %ld loop_s %.3f launches_per_s %.0f\n", static_cast<long>(t) * n, s, t * n / s);
  return 0;
}

static int grid(int blocks, int n, bool own_stream) {
  const int len = blocks * 256;
  float* x = buffer(len);
  cudaStream_t st = nullptr;  // the legacy default stream, or one of its own (as `threads` uses)
  if (own_stream) CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  work<<<blocks, 256, 0, st>>>(x, len, 200);
  CHECK(cudaDeviceSynchronize());
  auto t0 = Clock::now();
  for (int k = 0; k < n; k++) work<<<blocks, 256, 0, st>>>(x, len, 200);
  CHECK(cudaDeviceSynchronize());
  double s = since(t0);
  std::printf("blocks %d stream %s launched %d loop_s %.3f us_per_kernel %.2f\n", blocks, own_stream ? "own" : "default", n,
              s, s * 1e6 / n);
  if (st) CHECK(cudaStreamDestroy(st));
  return 0;
}

// The kernels of one step, launched into a capturing stream: their launch stack is this function's.
__attribute__((noinline)) static void capture_step(cudaStream_t s, float* x, int n, int k) {
  for (int i = 0; i < k; i++) {
    if (i % 2) scale<<<n / 256, 256, 0, s>>>(x, n, 0.999f);
    else shift<<<n / 256, 256, 0, s>>>(x, n, 0.001f);
  }
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) static void replay_loop(cudaGraphExec_t exec, cudaStream_t s, int r) {
  for (int i = 0; i < r; i++) CHECK(cudaGraphLaunch(exec, s));
}

static int graph(int r, int k) {
  const int n = 1 << 18;
  float* x = buffer(n);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  capture_step(s, x, n, k);
  CHECK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  auto t0 = Clock::now();
  replay_loop(exec, s, r);
  CHECK(cudaStreamSynchronize(s));
  double sec = since(t0);
  std::printf("launched %ld graph kernels in %d replays loop_s %.3f\n", static_cast<long>(r) * k, r, sec);
  return 0;
}

// The two call paths of the accuracy test. noinline keeps each a frame of its own, and the empty
// asm after the launch stops the compiler from turning the launch into a tail call (which would
// leave path_a/path_b off the stack).
__attribute__((noinline)) void path_a(float* x, int n, int iters, cudaStream_t s) {
  work<<<n / 256, 256, 0, s>>>(x, n, iters);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void path_b(float* x, int n, int iters, cudaStream_t s) {
  work<<<n / 256, 256, 0, s>>>(x, n, iters);
  asm volatile("" ::: "memory");
}

// The long-but-thin arrangement (issue #24): one kernel from two host functions on two streams, 3:1
// work. Every block asks for 150 KB of shared memory, so one block runs per SM in both paths and the
// two paths issue alike on every SM they hold: their samples follow their work (blocks x iterations).
__attribute__((noinline)) void path_heavy(float* x, int blocks, int iters, int smem, cudaStream_t s) {
  work<<<blocks, 256, smem, s>>>(x, blocks * 256, iters);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void path_light(float* x, int blocks, int iters, int smem, cudaStream_t s) {
  work<<<blocks, 256, smem, s>>>(x, blocks * 256, iters);
  asm volatile("" ::: "memory");
}

static int split_thin(int rounds, cudaStream_t sa, cudaStream_t sb) {
  const int smem = 150 * 1024, iters = 20000, light_blocks = 4;
  CHECK(cudaFuncSetAttribute(work, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // Per round: three heavy launches of `sms` blocks x iters, one light launch of light_blocks blocks
  // doing as much as one heavy launch (sms * iters in all): 3:1.
  const int light_iters = static_cast<int>(static_cast<long>(sms) * iters / light_blocks);
  float* xa = buffer(sms * 256);
  float* xb = buffer(light_blocks * 256);
  auto t0 = Clock::now();
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < 3; i++) path_heavy(xa, sms, iters, smem, sa);
    path_light(xb, light_blocks, light_iters, smem, sb);
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("split thin rounds %d loop_s %.3f truth path_heavy 0.75 path_light 0.25\n", rounds, since(t0));
  return 0;
}

// Issue 65's arrangements: one kernel from path_a(), path_b() (and path_c()) on streams of their own,
// each launch's work counted by construction (blocks x threads x iterations; work_regs does 48
// values an iteration in every path alike). A round's launches start together: every stream waits for
// the others' launches of the round before its next, so each arrangement holds for the whole run.
struct Launch {
  int blocks, threads, iters, smem;
  bool regs;  // work_regs instead of work
};
static void launch(const Launch& l, float* x, cudaStream_t s) {
  if (l.regs) work_regs<<<l.blocks, l.threads, l.smem, s>>>(x, l.blocks * l.threads, l.iters);
  else work<<<l.blocks, l.threads, l.smem, s>>>(x, l.blocks * l.threads, l.iters);
}
__attribute__((noinline)) void path_a(const Launch& l, float* x, cudaStream_t s) {
  launch(l, x, s);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void path_b(const Launch& l, float* x, cudaStream_t s) {
  launch(l, x, s);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void path_c(const Launch& l, float* x, cudaStream_t s) {
  launch(l, x, s);
  asm volatile("" ::: "memory");
}
static double work_of(const Launch& l) { return double(l.blocks) * l.threads * l.iters; }

// paths[i] launches[i] times a round, on stream i; `first` names the path the host launches first.
static int split_arranged(const char* mode, int rounds, const std::vector<Launch>& paths, const std::vector<int>& times,
                          int first) {
  void (*const fn[3])(const Launch&, float*, cudaStream_t) = {path_a, path_b, path_c};
  const int n = static_cast<int>(paths.size());
  std::vector<cudaStream_t> st(n);
  std::vector<cudaEvent_t> done(n);
  std::vector<float*> x(n);
  for (int i = 0; i < n; i++) {
    CHECK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
    x[i] = buffer(paths[i].blocks * paths[i].threads);
  }
  for (const Launch& l : paths)
    if (l.smem > 48 * 1024) CHECK(cudaFuncSetAttribute(work, cudaFuncAttributeMaxDynamicSharedMemorySize, l.smem));
  auto t0 = Clock::now();
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < n; k++) {
      int i = (first + k) % n;
      for (int j = 0; j < times[i]; j++) fn[i](paths[i], x[i], st[i]);
      CHECK(cudaEventRecord(done[i], st[i]));
    }
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        if (i != j) CHECK(cudaStreamWaitEvent(st[i], done[j], 0));
  }
  CHECK(cudaDeviceSynchronize());
  double total = 0;
  for (int i = 0; i < n; i++) total += times[i] * work_of(paths[i]);
  std::printf("split %s rounds %d loop_s %.3f truth", mode, rounds, since(t0));
  const char* names[3] = {"path_a", "path_b", "path_c"};
  for (int i = 0; i < n; i++) std::printf(" %s %.6f", names[i], times[i] * work_of(paths[i]) / total);
  std::printf("\n");
  return 0;
}

// A CUDA graph whose two parallel branches run `work` from path_a() (3x the iterations) and path_b(),
// captured once and replayed: the nodes' launch stacks are those of their capture.
static int split_graph(int rounds) {
  const Launch a{1024, 256, 3 * 20000, 0, false}, b{1024, 256, 20000, 0, false};
  float* xa = buffer(a.blocks * a.threads);
  float* xb = buffer(b.blocks * b.threads);
  cudaStream_t s, side;
  cudaEvent_t fork, join;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CHECK(cudaEventRecord(fork, s));
  CHECK(cudaStreamWaitEvent(side, fork, 0));
  path_a(a, xa, s);
  path_b(b, xb, side);
  CHECK(cudaEventRecord(join, side));
  CHECK(cudaStreamWaitEvent(s, join, 0));
  CHECK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  auto t0 = Clock::now();
  for (int r = 0; r < rounds; r++) CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  std::printf("split graph rounds %d loop_s %.3f truth path_a 0.750000 path_b 0.250000\n", rounds, since(t0));
  return 0;
}

// The arrangement of each mode (iterations sized for about 0.1-1 ms a launch on an H100).
static int split_new(const char* mode, int rounds) {
  const int sms = [] { int v = 0; CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0)); return v; }();
  const int big = 150 * 1024;  // one block per SM: thin grids issue like the full one beside them
  const std::string m = mode;
  if (m == "fullfull")  // two full grids, the heavy one launched first (read 62% before the model)
    return split_arranged(mode, rounds, {{1024, 256, 3 * 20000, 0, false}, {1024, 256, 20000, 0, false}}, {1, 1}, 0);
  if (m == "fullthin")  // heavy: 8 grids of one block per SM; light: 4 blocks as long as the round
    return split_arranged(mode, rounds, {{sms, 256, 10000, big, false}, {4, 256, sms * 10000 * 8 / 12, big, false}}, {8, 1}, 0);
  if (m == "thinfull")  // the same, the thin grid launched first
    return split_arranged(mode, rounds, {{sms, 256, 10000, big, false}, {4, 256, sms * 10000 * 8 / 12, big, false}}, {8, 1}, 1);
  if (m == "small")  // grids smaller than the GPU, side by side: 64 + 32 of its SMs
    return split_arranged(mode, rounds, {{64, 256, 3 * 40000, big, false}, {32, 256, 2 * 40000, big, false}}, {1, 1}, 0);
  if (m == "blocksize")  // 1,024-thread blocks beside 64-thread blocks
    return split_arranged(mode, rounds, {{256, 1024, 3 * 20000, 0, false}, {4096, 64, 20000, 0, false}}, {1, 1}, 0);
  if (m == "regs")  // a register-heavy kernel: fewer blocks per SM
    return split_arranged(mode, rounds, {{1024, 256, 3 * 2000, 0, true}, {1024, 256, 2000, 0, true}}, {1, 1}, 0);
  if (m == "three")  // three streams, 3 : 2 : 1
    return split_arranged(mode, rounds,
                          {{1024, 256, 3 * 20000, 0, false}, {1024, 256, 2 * 20000, 0, false}, {1024, 256, 20000, 0, false}},
                          {1, 1, 1}, 0);
  if (m == "graph") return split_graph(rounds);
  return -1;
}

static int split(const char* mode, int rounds) {
  if (int r = split_new(mode, rounds); r >= 0) return r;
  // About 0.4 ms per launch on an H100 with these sizes: many launches per 10 ms drain window.
  const int n = 1 << 20, iters = 40000;
  float* xa = buffer(n);
  float* xb = buffer(n);
  cudaStream_t sa, sb;
  CHECK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
  if (!std::strcmp(mode, "thin")) return split_thin(rounds, sa, sb);
  auto t0 = Clock::now();
  if (!std::strcmp(mode, "sequential")) {
    for (int r = 0; r < rounds; r++) {
      for (int i = 0; i < 3; i++) path_a(xa, n, iters, sa);
      path_b(xa, n, iters, sa);  // same stream as A: strictly interleaved in time
    }
  } else if (!std::strcmp(mode, "streams")) {
    for (int r = 0; r < rounds; r++) {
      for (int i = 0; i < 3; i++) path_a(xa, n, iters, sa);
      path_b(xb, n, iters, sb);  // its own stream: runs beside A's kernels
    }
  } else if (!std::strcmp(mode, "size")) {
    for (int r = 0; r < rounds; r++) {
      path_a(xa, n, 3 * iters, sa);
      path_b(xa, n, iters, sa);
    }
  } else {
    std::fprintf(stderr, "unknown split mode '%s' (sequential, streams, size, thin, fullfull, fullthin, thinfull, small, "
                 "blocksize, regs, three, graph)\n", mode);
    return 2;
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("split %s rounds %d loop_s %.3f truth path_a 0.75 path_b 0.25\n", mode, rounds, since(t0));
  return 0;
}

// One process driving every GPU: kernel `work` is launched from gpu_even() on even devices and from
// gpu_odd() on odd ones, twice the work on even devices, each GPU on its own stream so that they run
// at once. The report must keep the devices apart (--group-by device) with each device's samples
// under its own call path.
__attribute__((noinline)) void gpu_even(float* x, int n, int iters, cudaStream_t s) {
  work<<<n / 256, 256, 0, s>>>(x, n, iters);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void gpu_odd(float* x, int n, int iters, cudaStream_t s) {
  work<<<n / 256, 256, 0, s>>>(x, n, iters);
  asm volatile("" ::: "memory");
}

static int multigpu(int rounds) {
  int devices = 0;
  CHECK(cudaGetDeviceCount(&devices));
  const int n = 1 << 20, iters = 20000;
  std::vector<float*> x(devices);
  std::vector<cudaStream_t> s(devices);
  for (int d = 0; d < devices; d++) {
    CHECK(cudaSetDevice(d));
    x[d] = buffer(n);
    CHECK(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking));
  }
  auto t0 = Clock::now();
  for (int r = 0; r < rounds; r++)
    for (int d = 0; d < devices; d++) {
      CHECK(cudaSetDevice(d));
      if (d % 2 == 0) gpu_even(x[d], n, 2 * iters, s[d]);
      else gpu_odd(x[d], n, iters, s[d]);
    }
  for (int d = 0; d < devices; d++) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaDeviceSynchronize());
  }
  std::printf("multigpu devices %d rounds %d loop_s %.3f truth even 2 odd 1\n", devices, rounds, since(t0));
  return 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  auto arg = [&](int i, long dflt) { return argc > i ? std::atol(argv[i]) : dflt; };
  if (!std::strcmp(mode, "storm")) return storm(arg(2, 1000000));
  if (!std::strcmp(mode, "threads")) return threads(static_cast<int>(arg(2, 8)), static_cast<int>(arg(3, 20000)));
  if (!std::strcmp(mode, "grid"))
    return grid(static_cast<int>(arg(2, 256)), static_cast<int>(arg(3, 20000)), argc > 4 && !std::strcmp(argv[4], "own"));
  if (!std::strcmp(mode, "graph")) return graph(static_cast<int>(arg(2, 20000)), static_cast<int>(arg(3, 10)));
  if (!std::strcmp(mode, "split")) return split(argc > 2 ? argv[2] : "sequential", static_cast<int>(arg(3, 1000)));
  if (!std::strcmp(mode, "multigpu")) return multigpu(static_cast<int>(arg(2, 200)));
  std::fprintf(stderr, "usage: %s storm N | threads T N | grid B N [own] | graph R K | split sequential|streams|size|thin ROUNDS | multigpu ROUNDS\n",
               argv[0]);
  return 2;
}
