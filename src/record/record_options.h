// Settings of the injection library and their one description (the schema): every option's name, its
// environment variable, its `aiflame record` flag, its help line and how its value is parsed. The CLI
// registers its record flags from the schema and hands the values over in those variables; the
// library parses them here, in one place (record_options_from_env), once at start.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "record/stack_capture.h"

namespace aiflame {

// Chosen by measurement on an H100: 2^22 cycles keeps gpt_train.py within budget
// while giving tens of thousands of samples per second on a busy GPU.
inline constexpr uint32_t kDefaultPeriodLog2 = 22;
// Windows mode samples only inside short windows, so it samples densely there: at CUPTI's own period
// (0). Inside a kernel-serialized window a launch costs the program 0.8-0.9 ms at CUPTI's period and
// 0.4-0.55 ms at 2^18, but gives ~1,500 samples from a 13-us kernel against ~1-11 at 2^18
// (bench/probes/serialized_cost.cu at d9aa39d, H100, 2026-11-24). The 276-600 ms that once looked like the cost
// of a fine period is CUPTI's one-time start at a context's first sampled launch, paid at any period.
inline constexpr uint32_t kWindowsPeriodLog2 = 0;

// Continuous: sampling runs all the time, samples carry no launch id (CUPTI promises concurrent
// kernels; on the H100 kernels of concurrent streams still ran one at a time).
// Windows: kernel-serialized sampling in short windows at launch boundaries; exact launch ids.
enum class PcMode : uint32_t { Continuous = 0, Windows = 1 };

// The lab's switches (AIFLAME_LAB=name[=value],...; lab_option_schema): instruments of
// bench/storm_breakdown.sh and the launch path's measurements, and CUPTI settings kept for experiments,
// not options of `aiflame record` (its --help does not list them): read once at start like the options,
// never on the launch path. The host buffer CUPTI fills with kernel records (MB), the device buffer (MB, 0:
// CUPTI's), buffers handed over zeroed, cuptiActivityFlushAll every N drains (0: never), what the
// launch callback skips (1: everything, 2: all after the timestamp and context lookup), the
// stall-reason list and decode-thread sleep span configured (see cupti_pc_sampling.cpp for why not by
// default), and CUPTI's function-name strings freed at exit (for leak checkers).
struct MeasurementSwitches {
  uint32_t activity_buffer_mb = 4;
  uint32_t device_buffer_mb = 0;
  bool activity_zeroed = false;
  uint32_t activity_flush_every = 10;
  uint32_t skip_launches = 0;
  bool stall_config = false;
  uint32_t sleep_span_ms = 0;
  bool free_names = false;
  // Windows mode experiments (bench/windows_eval.sh at d9aa39d): launch callbacks and kernel records switched on
  // only while a window is open or due, and PC sampling disabled (not just stopped) between windows.
  // All three on by default: between windows CUPTI does no work per launch at all. Enabled PC
  // sampling, even stopped, ran the kernels of eight streams one at a time (threads 3-4x) and cost a
  // storm's launch ~1 us; AIFLAME_LAB=win_disable_between=0
  // keeps sampling enabled between windows (windows of one launch, primed at context creation).
  bool win_toggle_callbacks = true;
  bool win_toggle_activity = true;
  bool win_disable_between = true;
  // Windows mode: a window around a kernel of aiflame's own when a context is created, so that CUPTI's
  // one-time start of sampling (0.3-0.6 s, bench/probes/window_toggle.cu at d9aa39d) is paid there and not in
  // the program's first window; and, to measure the floor, no window at all.
  bool win_prime = true;
  // Windows mode: CUPTI's hardware buffer for samples, MB (0: CUPTI's default, 512 MB). Sampling's
  // start at a context's first sampled launch and each Disable take time with the buffer's size: a
  // Disable/Enable cycle cost 0.38 s at the default, 0.11 s at 32 MB, 0.10 s at 8 and 2 MB
  // (bench/probes/window_toggle.cu at d9aa39d, H100). 32 MB holds a window's samples.
  uint32_t hw_buffer_mb = 32;
  uint32_t continuous_hw_buffer_mb = 0;  // continuous mode: CUPTI's hardware buffer, MiB (0: continuous_hw_buffer_mb())
  bool win_never = false;
  // With win_never: launch callbacks off as well once sampling is enabled and primed, so that CUPTI
  // does nothing per launch but what enabled PC sampling itself costs (issue 24: the floor of any design
  // that keeps sampling enabled between windows; earlier floors kept callbacks and the capture on).
  bool win_never_nocb = false;
  // Windows mode: CUPTI's continuous collection mode with start/stop control instead of the
  // kernel-serialized one (samples carry no launch id then): what enabled sampling costs in that mode.
  bool win_continuous = false;
  // Windows mode: one stderr line per phase of every window (opener's wait for other threads,
  // synchronize, Start, fetch, Stop, callbacks off) and per wait of another thread, timestamped in
  // microseconds with the thread id: where a window's time goes while several threads launch.
  bool win_trace = false;
  // Windows mode: the wait for the GPU's queue before a window opens (cuCtxSynchronize) counts in the
  // window's cost, which spaces windows by the budget. In a GPU-bound program that wait is time the
  // GPU works anyway, and charging it spaced keep1's windows 2-3 s apart on gpt_train.py: 0
  // charges only the window from the synchronize's end.
  bool win_charge_sync = true;
  // Windows mode: a due window opens at the launch K after the first one the launch callbacks see, K
  // uniform in [0, N) (0: at the first). The first launch after a time is picked with a chance that
  // grows with the gap before it, so windows of one launch favoured the launch after a sync
  // (100% path_a in three of four 3:1 arrangements); K spreads the pick evenly over
  // the launches of any period shorter than N.
  uint32_t win_skip_max = 0;
  // Time each part of the launch path and print the breakdown when recording ends (capture_stats.h).
  bool capture_stats = false;
  bool verify_memos = false;  // a memo's stack against a full walk, at every launch that took one
  bool launch_ab = false;     // the launch path on and off in slices of one run (record/measure/launch_ab.h)
  // In slices of one run, 1 CUPTI's launch callbacks off and on, 2 its kernel records (without PC
  // sampling: CUPTI refuses them while sampling is enabled), 3 both, 4 continuous PC sampling in 2-4 s
  // slices (with 1 and 2 as chosen: 7 all three, as windows of continuous sampling would;
  // record/measure/callback_ab.h); +8 the launch callbacks off throughout
  uint32_t callback_ab = 0;
  // 1, the stack lines of each launch's likely memo timed (StackCapture::set_probe_lines); 2, the launch
  // path's parts run again at once after each launch and timed (Recorder::PhaseProbe); 3, each launch's
  // time counted into a histogram; 4, thread-local and global accesses timed before each launch
  // (record/measure/tls_probe.h)
  uint32_t capture_probe = 0;
  // 1, the autograd tracking on and off in alternate slices (Recorder::autograd_ab); 2, the capture's
  // predicted memo instead (StackCapture::capture's `predict`); 3, torch's thread-locals read in place
  // (AutogradTracker::before_capture's `in_place`); 4, Python's initialized flag and thread state read in
  // place (PythonFrames::capture's `in_place`); 5, the lean launch path (Recorder::launch_lean)
  uint32_t autograd_ab = 0;
  uint32_t autograd_light = 0;  // 1 the tracker without its tables, 2 nor its calls into torch
};

struct RecordOptions {
  std::string output = "aiflame.data";  // the library writes OUTPUT.<pid>
  uint32_t period_log2 = kDefaultPeriodLog2;  // 0: CUPTI's own default period (windows mode: kWindowsPeriodLog2 unless set)
  uint32_t interval_ms = 10;
  UnwindPolicy unwind = UnwindPolicy::Always;
  uint32_t unstable_sample = 1;  // sites still unstable after refining: unwind one launch in N
  bool python = true;
  bool pc_sampling = true;
  PcMode pc_mode = PcMode::Continuous;
  // Windows mode: each window enables sampling, holds up to window_launches launches of the thread
  // that opened it (or lasts window_us) and disables it again. Enable + Disable cost ~0.1 s with a 32 MB
  // hardware buffer and each launch inside ~0.4-1 ms (kernel-serialized), so a window holds many
  // launches to spread its fixed cost; the budget spaces windows to 2% of the run.
  uint32_t windows_per_s = 100;
  uint32_t window_us = 300000;
  uint32_t window_launches = 100;
  uint32_t window_budget_permille = 20;  // windows mode: the share of the run windows may take (20: 2%)
  bool kernel_activity = true;
  bool keep_cubins = true;
  bool autograd = true;  // the autograd tracking (record/autograd/autograd_tracker.h)
  bool quiet = false;
  std::string cupti_path;  // empty: search (see load_cupti)
  // Duty-cycled recording (record/duty_spec.h): a window of duty_window_ms every duty_period_ms (0: off),
  // at most duty_keep window profiles per process and duty_max_mb MB of them (0: no limit).
  uint32_t duty_window_ms = 0, duty_period_ms = 0;
  uint32_t duty_keep = 100, duty_max_mb = 2048;
  MeasurementSwitches measure;
};

// One option of the schema. `parse` sets the option from a value; false when the value is not one it
// takes (then `expected` says what it takes). `cli` is the `aiflame record` flag, or null for the
// library's own switches; a flag without a value ("--no-python") hands `flag_value` to the library.
struct RecordOptionSpec {
  const char* name;
  const char* env;
  const char* cli;
  const char* flag_value;  // null: the flag takes a value
  const char* expected;    // what values it takes, for help and warnings
  const char* help;
  bool (*parse)(RecordOptions&, std::string_view value);
};

std::span<const RecordOptionSpec> record_option_schema();
const RecordOptionSpec* find_record_option(std::string_view name);
// The lab's switches, each set by its name in AIFLAME_LAB (`env` is "AIFLAME_LAB" for all); a name
// without a value is set to 1.
std::span<const RecordOptionSpec> lab_option_schema();

// Environment variables of aiflame that are not options of the injection library (read by the CLI,
// the debug log or the tests); they draw no "unknown" warning.
std::span<const char* const> other_aiflame_variables();

// Parses every option of the schema from `lookup` (an environment), then AIFLAME_LAB. A bad value keeps
// the default and adds one line to *warnings naming the variable (or the lab switch) and the value; so
// does an AIFLAME_ variable of `names` that is neither an option nor another aiflame variable, and a
// name in AIFLAME_LAB that is not a lab switch.
RecordOptions parse_record_options(const std::function<const char*(const char*)>& lookup,
                                   const std::vector<std::string>& names, std::vector<std::string>* warnings);
// The same, from this process's environment.
RecordOptions record_options_from_env(std::vector<std::string>* warnings = nullptr);

// The launcher's rank variables (torchrun, Open MPI, PMI) of this process: -1 (or 0 for the world
// size) when none is set.
struct LauncherRanks {
  int32_t rank = -1, local_rank = -1, world_size = 0;
};
LauncherRanks launcher_ranks_from_env();

}  // namespace aiflame
