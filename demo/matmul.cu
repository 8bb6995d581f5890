// aiflame's demo: one matrix product computed three ways, each launched from its own host function,
// like the SYCL example of Intel's AI flame graph. The naive kernel should be the widest tower, the
// shared-memory one narrower, the register-blocked one the narrowest.
//
// Usage: aiflame_demo_matmul [ITERATIONS=200] [N=2048]
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                    \
  do {                                                                              \
    cudaError_t e = (x);                                                            \
    if (e != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

// Each thread reads a whole row of A and column of B from global memory.
__global__ void matmul_basic(const float* a, const float* b, float* c, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n || col >= n) return;
  float sum = 0.f;
  for (int k = 0; k < n; k++) sum += a[row * n + k] * b[k * n + col];
  c[row * n + col] = sum;
}

constexpr int kTile = 32;

// Tiles of A and B staged in shared memory ("local access").
__global__ void matmul_local_access(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[kTile][kTile];
  __shared__ float tb[kTile][kTile];
  int row = blockIdx.y * kTile + threadIdx.y;
  int col = blockIdx.x * kTile + threadIdx.x;
  float sum = 0.f;
  for (int t = 0; t < n; t += kTile) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < kTile; k++) sum += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = sum;
}

constexpr int kBlock = 64;  // output tile per thread block
constexpr int kStep = 16;   // k-slice staged per iteration
constexpr int kPer = 4;     // outputs per thread in each dimension (16x16 threads x 4x4)

// Shared-memory tiles plus register blocking: each thread computes a 4x4 block of C.
__global__ void matmul_local_access_and_tiling(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[kStep][kBlock];  // transposed slice of A
  __shared__ float tb[kStep][kBlock];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row0 = blockIdx.y * kBlock, col0 = blockIdx.x * kBlock;
  int tid = ty * 16 + tx;
  float acc[kPer][kPer] = {};
  for (int t = 0; t < n; t += kStep) {
    for (int i = tid; i < kStep * kBlock; i += 256) {
      int r = i / kStep, k = i % kStep;  // A: 64 rows x 16 k
      ta[k][r] = a[(row0 + r) * n + t + k];
      int kk = i / kBlock, cc = i % kBlock;  // B: 16 k x 64 cols
      tb[kk][cc] = b[(t + kk) * n + col0 + cc];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kStep; k++) {
      float ra[kPer], rb[kPer];
#pragma unroll
      for (int i = 0; i < kPer; i++) ra[i] = ta[k][ty * kPer + i];
#pragma unroll
      for (int j = 0; j < kPer; j++) rb[j] = tb[k][tx * kPer + j];
#pragma unroll
      for (int i = 0; i < kPer; i++)
#pragma unroll
        for (int j = 0; j < kPer; j++) acc[i][j] += ra[i] * rb[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < kPer; i++)
    for (int j = 0; j < kPer; j++) c[(row0 + ty * kPer + i) * n + col0 + tx * kPer + j] = acc[i][j];
}

__attribute__((noinline)) void multiply_basic(const float* a, const float* b, float* c, int n) {
  dim3 block(16, 16), grid(n / 16, n / 16);
  matmul_basic<<<grid, block>>>(a, b, c, n);
  CHECK(cudaGetLastError());
}

__attribute__((noinline)) void multiply_local_access(const float* a, const float* b, float* c, int n) {
  dim3 block(kTile, kTile), grid(n / kTile, n / kTile);
  matmul_local_access<<<grid, block>>>(a, b, c, n);
  CHECK(cudaGetLastError());
}

__attribute__((noinline)) void multiply_local_access_and_tiling(const float* a, const float* b, float* c, int n) {
  dim3 block(16, 16), grid(n / kBlock, n / kBlock);
  matmul_local_access_and_tiling<<<grid, block>>>(a, b, c, n);
  CHECK(cudaGetLastError());
}

int main(int argc, char** argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
  int n = argc > 2 ? std::atoi(argv[2]) : 2048;
  if (iterations < 1 || n < kBlock || n % kBlock) {
    std::fprintf(stderr, "usage: %s [ITERATIONS>=1] [N, a multiple of %d]\n", argv[0], kBlock);
    return 2;
  }
  size_t bytes = sizeof(float) * n * n;
  std::vector<float> ha(n * n), hb(n * n);
  for (int i = 0; i < n * n; i++) {
    ha[i] = static_cast<float>((i * 7) % 13) / 13.f;
    hb[i] = static_cast<float>((i * 5) % 11) / 11.f;
  }
  float *a, *b, *c1, *c2, *c3;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMalloc(&c1, bytes));
  CHECK(cudaMalloc(&c2, bytes));
  CHECK(cudaMalloc(&c3, bytes));
  CHECK(cudaMemcpy(a, ha.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), bytes, cudaMemcpyHostToDevice));
  for (int it = 0; it < iterations; it++) {
    multiply_basic(a, b, c1, n);
    multiply_local_access(a, b, c2, n);
    multiply_local_access_and_tiling(a, b, c3, n);
  }
  CHECK(cudaDeviceSynchronize());
  std::vector<float> r1(n * n), r2(n * n), r3(n * n);
  CHECK(cudaMemcpy(r1.data(), c1, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(r2.data(), c2, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(r3.data(), c3, bytes, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int i = 0; i < n * n; i++)
    worst = std::fmax(worst, std::fmax(std::fabs(r1[i] - r2[i]), std::fabs(r1[i] - r3[i])) / (1.0 + std::fabs(r1[i])));
  std::printf("matmul demo: %d iterations of %dx%d, three kernels agree to %.2e\n", iterations, n, n, worst);
  return worst < 1e-3 ? 0 : 1;
}
