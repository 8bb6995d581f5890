/* libaiflame_ze_preload.so: how the injection library reaches a Level Zero program. `aiflame record`
 * preloads this (LD_PRELOAD); it defines zeInit (and zeInitDrivers), calls the loader's own, and after
 * the program's first successful call opens the injection library (CUDA_INJECTION64_PATH, which
 * record sets for CUDA anyway) and calls aiflame_levelzero_initialize().
 *
 * Why a preloaded interposer rather than the others: the Level Zero loader loads only its own layers
 * (validation, tracing) and drivers (ZE_ENABLE_ALT_DRIVERS replaces the real ones), and has nothing
 * like CUDA's injection variable; preloading the injection library itself would load its
 * dependencies and start it in every process of the command (shells, compilers), while this object
 * needs only libc and does nothing until a program initializes Level Zero. The backend must start
 * after the loader has initialized (its tracer needs the tracing layer loaded) and before the
 * program's first module, context or launch: right after zeInit returns is both.
 *
 * It reaches every call that goes through the dynamic linker (a program or library linked with
 * libze_loader, SYCL's Level Zero adapter included); a program that dlopens the loader and calls
 * dlsym(handle, "zeInit") passes by it and is not recorded. C, no sanitizer runtime, nothing but
 * libc and libdl: it is loaded into every program of the command. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*init_fn)(uint32_t);
typedef int (*init_drivers_fn)(uint32_t*, void*, void*);

#define ZE_SUCCESS 0
#define ZE_UNSUPPORTED_FEATURE 0x78000003 /* ZE_RESULT_ERROR_UNSUPPORTED_FEATURE */

static void start_aiflame(void) {
  static int started;
  if (__atomic_exchange_n(&started, 1, __ATOMIC_ACQ_REL)) return;
  const char* lib = getenv("CUDA_INJECTION64_PATH");
  if (!lib || !*lib) return;
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "aiflame: cannot load %s for Level Zero (%s); the program runs on unprofiled\n", lib, dlerror());
    return;
  }
  int (*init)(void) = (int (*)(void))dlsym(h, "aiflame_levelzero_initialize");
  if (init) init();
}

__attribute__((visibility("default"))) int zeInit(uint32_t flags) {
  static init_fn real;
  if (!real) real = (init_fn)dlsym(RTLD_NEXT, "zeInit");
  if (!real) return ZE_UNSUPPORTED_FEATURE;
  int r = real(flags);
  if (r == ZE_SUCCESS) start_aiflame();
  return r;
}

__attribute__((visibility("default"))) int zeInitDrivers(uint32_t* count, void* drivers, void* desc) {
  static init_drivers_fn real;
  if (!real) real = (init_drivers_fn)dlsym(RTLD_NEXT, "zeInitDrivers");
  if (!real) return ZE_UNSUPPORTED_FEATURE;
  int r = real(count, drivers, desc);
  if (r == ZE_SUCCESS && drivers) start_aiflame();
  return r;
}
