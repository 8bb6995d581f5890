#include "cli/sampling_rate.h"

#include <dlfcn.h>

#include <cmath>

namespace aiflame {

unsigned period_log2_for_rate(double hz, double clock_hz) {
  if (!(hz > 0) || !(clock_hz > 0)) return 22;
  double n = std::round(std::log2(clock_hz / hz));
  if (n < 5) n = 5;
  if (n > 31) n = 31;
  return static_cast<unsigned>(n);
}

double device_sm_clock_hz(std::string* where) {
  // The driver API's own entry points, opened at run time as the injection library does: the CLI does
  // not link libcuda (it runs where there is none).
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return 0;
  using Init = int (*)(unsigned);
  using Get = int (*)(int*, int);
  using Attr = int (*)(int*, int, int);
  using Name = int (*)(char*, int, int);
  auto init = reinterpret_cast<Init>(dlsym(h, "cuInit"));
  auto get = reinterpret_cast<Get>(dlsym(h, "cuDeviceGet"));
  auto attr = reinterpret_cast<Attr>(dlsym(h, "cuDeviceGetAttribute"));
  auto name = reinterpret_cast<Name>(dlsym(h, "cuDeviceGetName"));
  constexpr int kClockRate = 13;  // CU_DEVICE_ATTRIBUTE_CLOCK_RATE, in kHz
  int dev = 0, khz = 0;
  double hz = 0;
  if (init && get && attr && init(0) == 0 && get(&dev, 0) == 0 && attr(&khz, kClockRate, dev) == 0 && khz > 0) {
    hz = khz * 1e3;
    char buf[256] = {};
    if (where) *where = name && name(buf, sizeof buf - 1, dev) == 0 ? std::string(buf) : "device 0";
  }
  // libcuda stays loaded: unloading an initialised driver is not supported.
  return hz;
}

}  // namespace aiflame
