#include "record/record_options.h"

#include <cstdlib>
#include <cstring>
#include <functional>

namespace aiflame {
namespace {

using Lookup = const std::function<const char*(const char*)>&;

bool env_flag(Lookup get, const char* name, bool dflt) {
  const char* v = get(name);
  if (!v || !*v) return dflt;
  return !(std::strcmp(v, "0") == 0 || std::strcmp(v, "no") == 0 || std::strcmp(v, "off") == 0);
}

uint32_t env_uint(Lookup get, const char* name, uint32_t dflt, uint32_t lo, uint32_t hi) {
  const char* v = get(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  unsigned long x = std::strtoul(v, &end, 10);
  if (*end || x < lo || x > hi) return dflt;
  return static_cast<uint32_t>(x);
}

}  // namespace

RecordOptions record_options_from_env() { return record_options_from([](const char* n) { return std::getenv(n); }); }

RecordOptions record_options_from(const std::function<const char*(const char*)>& get) {
  RecordOptions o;
  if (const char* v = get("AIFLAME_OUTPUT"); v && *v) o.output = v;
  const char* p = get("AIFLAME_PERIOD");
  if (p && std::strcmp(p, "default") == 0) o.period_log2 = 0;
  else o.period_log2 = env_uint(get, "AIFLAME_PERIOD", kDefaultPeriodLog2, 5, 31);
  o.interval_ms = env_uint(get, "AIFLAME_INTERVAL_MS", 10, 1, 10000);
  if (const char* u = get("AIFLAME_UNWIND")) {
    if (std::strcmp(u, "always") == 0) o.unwind = UnwindPolicy::Always;
    else if (std::strcmp(u, "off") == 0) o.unwind = UnwindPolicy::Off;
  }
  o.unstable_sample = env_uint(get, "AIFLAME_UNSTABLE_SAMPLE", 1, 1, 1u << 20);
  o.python = env_flag(get, "AIFLAME_PYTHON", true);
  o.pc_sampling = env_flag(get, "AIFLAME_PC_SAMPLING", true);
  if (const char* m = get("AIFLAME_PC_MODE"); m && std::strcmp(m, "windows") == 0) o.pc_mode = PcMode::Windows;
  o.windows_per_s = env_uint(get, "AIFLAME_WINDOWS_PER_S", 100, 1, 10000);
  o.window_us = env_uint(get, "AIFLAME_WINDOW_US", 1000, 10, 1000000);
  o.kernel_activity = env_flag(get, "AIFLAME_ACTIVITY", true);
  o.keep_cubins = env_flag(get, "AIFLAME_CUBINS", true);
  o.quiet = env_flag(get, "AIFLAME_QUIET", false);
  o.activity_buffer_mb = env_uint(get, "AIFLAME_ACTIVITY_BUFFER_MB", o.activity_buffer_mb, 1, 4096);
  o.device_buffer_mb = env_uint(get, "AIFLAME_DEVICE_BUFFER_MB", 0, 1, 4096);
  o.activity_zeroed = env_flag(get, "AIFLAME_ACTIVITY_ZEROED", false);
  o.activity_flush_every = env_uint(get, "AIFLAME_ACTIVITY_FLUSH_EVERY", o.activity_flush_every, 0, 1u << 20);
  o.skip_launches = env_uint(get, "AIFLAME_SKIP_LAUNCHES", 0, 0, 2);
  return o;
}

}  // namespace aiflame
