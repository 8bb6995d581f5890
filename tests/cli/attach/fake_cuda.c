/* A stand-in for libcuda.so.1 (SONAME libcuda.so.1) for the attach tests on machines without a GPU:
 * one device whose primary context is active (FAKE_CUDA_CONTEXT_AFTER_MS=N: only N ms after loading),
 * and fake_launch(), which the target calls as if it launched a kernel: it hands the launch to the
 * fake CUPTI's subscriber, if one is there, as the driver would. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static char fake_context;
static struct timespec loaded;

__attribute__((constructor)) static void on_load(void) { clock_gettime(CLOCK_MONOTONIC, &loaded); }

static int context_active(void) {
  const char* after = getenv("FAKE_CUDA_CONTEXT_AFTER_MS");
  if (!after) return 1;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  long ms = (now.tv_sec - loaded.tv_sec) * 1000 + (now.tv_nsec - loaded.tv_nsec) / 1000000;
  return ms >= atol(after);
}

CUresult cuDriverGetVersion(int* v) { *v = 13000; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice* d, int ordinal) { *d = ordinal; return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }
CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned* flags, int* active) {
  (void)d;
  *flags = 0;
  *active = context_active();
  return CUDA_SUCCESS;
}
static int refcount = 1;
CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) { (void)d; refcount++; *c = (CUcontext)&fake_context; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; refcount--; return CUDA_SUCCESS; }
CUresult cuCtxPushCurrent_v2(CUcontext c) { (void)c; return CUDA_SUCCESS; }
CUresult cuCtxPopCurrent_v2(CUcontext* c) { *c = (CUcontext)&fake_context; return CUDA_SUCCESS; }
int fake_primary_refcount(void) { return refcount; }

/* The driver's cuInit loads CUDA_INJECTION64_PATH and calls its InitializeInjection once; the fake
 * does the same at the first launch, so that `aiflame record -- CMD` runs its injection library here. */
static void init_injection(void) {
  static int done;
  if (done) return;
  done = 1;
  const char* path = getenv("CUDA_INJECTION64_PATH");
  if (!path || !*path) return;
  void* lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  int (*init)(void) = lib ? (int (*)(void))dlsym(lib, "InitializeInjection") : NULL;
  if (init) init();
}

int fake_launch(void) {
  init_injection();
  void (*fire)(void*) = (void (*)(void*))dlsym(RTLD_DEFAULT, "fake_cupti_launch");
  if (fire) fire(&fake_context);
  return refcount;
}
