#include "record/record_options.h"

#include <cstdlib>
#include <cstring>

namespace aiflame {
namespace {

bool env_flag(const char* name, bool dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  return !(std::strcmp(v, "0") == 0 || std::strcmp(v, "no") == 0 || std::strcmp(v, "off") == 0);
}

uint32_t env_uint(const char* name, uint32_t dflt, uint32_t lo, uint32_t hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  unsigned long x = std::strtoul(v, &end, 10);
  if (*end || x < lo || x > hi) return dflt;
  return static_cast<uint32_t>(x);
}

}  // namespace

RecordOptions record_options_from_env() {
  RecordOptions o;
  if (const char* v = std::getenv("AIFLAME_OUTPUT"); v && *v) o.output = v;
  const char* p = std::getenv("AIFLAME_PERIOD");
  if (p && std::strcmp(p, "default") == 0) o.period_log2 = 0;
  else o.period_log2 = env_uint("AIFLAME_PERIOD", kDefaultPeriodLog2, 5, 31);
  o.interval_ms = env_uint("AIFLAME_INTERVAL_MS", 10, 1, 10000);
  if (const char* u = std::getenv("AIFLAME_UNWIND")) {
    if (std::strcmp(u, "always") == 0) o.unwind = UnwindPolicy::Always;
    else if (std::strcmp(u, "off") == 0) o.unwind = UnwindPolicy::Off;
  }
  o.unstable_sample = env_uint("AIFLAME_UNSTABLE_SAMPLE", 1, 1, 1u << 20);
  o.python = env_flag("AIFLAME_PYTHON", true);
  o.pc_sampling = env_flag("AIFLAME_PC_SAMPLING", true);
  if (const char* m = std::getenv("AIFLAME_PC_MODE"); m && std::strcmp(m, "windows") == 0) o.pc_mode = PcMode::Windows;
  // Windows mode has a period of its own (record_options.h).
  if (o.pc_mode == PcMode::Windows && !(p && *p)) o.period_log2 = kWindowsPeriodLog2;
  o.windows_per_s = env_uint("AIFLAME_WINDOWS_PER_S", 100, 1, 10000);
  o.window_us = env_uint("AIFLAME_WINDOW_US", 1000, 10, 10000000);
  o.window_budget_permille = env_uint("AIFLAME_WINDOW_BUDGET_PERMILLE", o.window_budget_permille, 0, 1000);
  o.kernel_activity = env_flag("AIFLAME_ACTIVITY", true);
  o.keep_cubins = env_flag("AIFLAME_CUBINS", true);
  o.quiet = env_flag("AIFLAME_QUIET", false);
  o.activity_buffer_mb = env_uint("AIFLAME_ACTIVITY_BUFFER_MB", o.activity_buffer_mb, 1, 4096);
  o.device_buffer_mb = env_uint("AIFLAME_DEVICE_BUFFER_MB", 0, 1, 4096);
  o.activity_zeroed = env_flag("AIFLAME_ACTIVITY_ZEROED", false);
  o.activity_flush_every = env_uint("AIFLAME_ACTIVITY_FLUSH_EVERY", o.activity_flush_every, 0, 1u << 20);
  o.skip_launches = env_uint("AIFLAME_SKIP_LAUNCHES", 0, 0, 2);
  o.win_toggle_callbacks = env_flag("AIFLAME_WIN_TOGGLE_CB", false);
  o.win_toggle_activity = env_flag("AIFLAME_WIN_TOGGLE_ACT", false);
  o.win_disable_between = env_flag("AIFLAME_WIN_DISABLE_BETWEEN", false);
  return o;
}

}  // namespace aiflame
