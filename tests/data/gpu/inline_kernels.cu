// Built into a cubin by the test build (nvcc -cubin -arch=sm_90 -lineinfo) when nvcc is present:
// two kernels, one of which inlines a device function into another inlined one. The line numbers
// are asserted by tests/symbolize/cubin_lines_test.cpp: keep them in place.
__device__ __forceinline__ float inner(float x) {
  return sqrtf(x) * 2.0f;  // line 5
}
__device__ __forceinline__ float outer(float x) {
  float y = inner(x + 1.0f);  // line 8
  return y * y;
}
__global__ void twice_inlined(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = outer(a[i]);  // line 13
}
__global__ void once_inlined(float* a) {
  a[threadIdx.x] = inner(a[threadIdx.x]);  // line 16
}
