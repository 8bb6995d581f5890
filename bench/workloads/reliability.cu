// Programs that try to break a profiler, one per mode, for bench/reliability.sh:
//   stress THREADS STREAMS SECONDS  host threads launching tiny kernels on their own streams
//   segv N | abort N                launch N kernels, then crash
//   fork N                          CUDA in the parent, a forked child that exits without CUDA
//   exec N                          launch N kernels, then run this program again (mode child) in a new process
//   child N                         launch N kernels
// Prints "launched <count>" before it ends (or crashes).
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

__global__ void tiny(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

__global__ void busy(float* x, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int k = 0; k < iters; k++) v = v * 1.0001f + 0.5f;
  x[i] = v;
}

static float* buffer(int n) {
  float* p = nullptr;
  if (cudaMalloc(&p, sizeof(float) * n) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc failed\n");
    std::exit(1);
  }
  cudaMemset(p, 0, sizeof(float) * n);
  return p;
}

__attribute__((noinline)) static void launch_some(int count) {
  const int n = 1 << 20;
  float* x = buffer(n);
  for (int i = 0; i < count; i++) busy<<<n / 256, 256>>>(x, n, 2000);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) std::printf("CUDA error: %s\n", cudaGetErrorString(e));
  std::printf("launched %d\n", count);
  std::fflush(stdout);
}

static int stress(int threads, int streams_per_thread, double seconds) {
  std::atomic<long> launched{0};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++) {
    pool.emplace_back([&, t] {
      const int n = 4096;
      float* x = buffer(n);
      std::vector<cudaStream_t> s(streams_per_thread);
      for (auto& st : s) cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
      long mine = 0;
      while (std::chrono::steady_clock::now() < deadline) {
        for (int k = 0; k < 64; k++) tiny<<<n / 256, 256, 0, s[(mine + k) % streams_per_thread]>>>(x, n);
        mine += 64;
        cudaStreamSynchronize(s[t % streams_per_thread]);
      }
      for (auto& st : s) cudaStreamSynchronize(st);
      launched += mine;
    });
  }
  for (auto& th : pool) th.join();
  std::printf("launched %ld\n", launched.load());
  return 0;
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  int n = argc > 2 ? std::atoi(argv[2]) : 100;
  if (mode == "stress") {
    int streams = argc > 3 ? std::atoi(argv[3]) : 16;
    double secs = argc > 4 ? std::atof(argv[4]) : 10;
    return stress(n, streams < 1 ? 1 : streams, secs);
  }
  if (mode == "segv" || mode == "abort") {
    launch_some(n);
    // Crash a moment later, as a real program would: the profiler has drained and flushed by then.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (mode == "abort") std::abort();
    std::raise(SIGSEGV);
    return 3;
  }
  if (mode == "fork") {
    launch_some(n);
    pid_t pid = fork();
    if (pid == 0) std::exit(0);  // a DataLoader-style worker: no CUDA, runs atexit handlers
    int status = 0;
    waitpid(pid, &status, 0);
    launch_some(n);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  if (mode == "exec") {
    launch_some(n);
    pid_t pid = fork();
    if (pid == 0) {
      std::string count = std::to_string(n);
      execl("/proc/self/exe", argv[0], "child", count.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  if (mode == "child") {
    launch_some(n);
    return 0;
  }
  std::fprintf(stderr, "usage: %s stress|segv|abort|fork|exec|child N [STREAMS SECONDS]\n", argv[0]);
  return 2;
}
