// Settings of the injection library, passed by `aiflame record` through the environment.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "record/stack_capture.h"

namespace aiflame {

// Chosen by measurement on an H100 (bench/RESULTS.md): 2^22 cycles keeps gpt_train.py within budget
// while giving tens of thousands of samples per second on a busy GPU.
inline constexpr uint32_t kDefaultPeriodLog2 = 22;

// Continuous: sampling runs all the time, samples carry no launch id (CUPTI promises concurrent
// kernels; on the H100 kernels of concurrent streams still ran one at a time, bench/RESULTS.md).
// Windows: kernel-serialized sampling in short windows at launch boundaries; exact launch ids.
enum class PcMode : uint32_t { Continuous = 0, Windows = 1 };

struct RecordOptions {
  std::string output = "aiflame.data";  // the library writes OUTPUT.<pid>
  uint32_t period_log2 = kDefaultPeriodLog2;  // 0: CUPTI's own default period
  uint32_t interval_ms = 10;
  UnwindPolicy unwind = UnwindPolicy::Sampled;
  uint32_t unstable_sample = 1;  // sites still unstable after refining: unwind one launch in N
  bool python = true;
  bool pc_sampling = true;
  PcMode pc_mode = PcMode::Continuous;
  uint32_t windows_per_s = 100;
  uint32_t window_us = 1000;
  bool kernel_activity = true;
  bool keep_cubins = true;
  bool quiet = false;
  // Measurement switches for bench/storm_breakdown.sh (bench/RESULTS.md, "Launch storm"), not options
  // of `aiflame record`: the host buffer CUPTI fills with kernel records (MB), the device buffer (MB,
  // 0: CUPTI's), buffers handed over zeroed, cuptiActivityFlushAll every N drains (0: never), and
  // what the launch callback skips (1: everything, 2: all after the timestamp and context lookup).
  uint32_t activity_buffer_mb = 4;
  uint32_t device_buffer_mb = 0;
  bool activity_zeroed = false;
  uint32_t activity_flush_every = 10;
  uint32_t skip_launches = 0;
};

// AIFLAME_OUTPUT, AIFLAME_PERIOD, AIFLAME_INTERVAL_MS, AIFLAME_UNWIND=sampled|always|off, AIFLAME_UNSTABLE_SAMPLE=N,
// AIFLAME_PYTHON=0, AIFLAME_PC_SAMPLING=0,
// AIFLAME_PC_MODE=continuous|windows, AIFLAME_WINDOWS_PER_S=N, AIFLAME_WINDOW_US=N, AIFLAME_ACTIVITY=0, AIFLAME_CUBINS=0, AIFLAME_QUIET=1;
// measurement switches AIFLAME_ACTIVITY_BUFFER_MB, AIFLAME_DEVICE_BUFFER_MB, AIFLAME_ACTIVITY_ZEROED=1,
// AIFLAME_ACTIVITY_FLUSH_EVERY=N, AIFLAME_SKIP_LAUNCHES=1|2.
RecordOptions record_options_from_env();
// The same settings by name from `get` (attach passes them as text, not through the environment).
RecordOptions record_options_from(const std::function<const char*(const char*)>& get);

}  // namespace aiflame
