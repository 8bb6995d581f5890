// The option schema of the injection library: every option parsed in one place, bad values and unknown
// variables named in one warning line each, measurement switches read like the options.
#include "record/record_options.h"

#include <gtest/gtest.h>

#include "record/stack_capture.h"
#include "record/unwind/object_table.h"

#include <map>
#include <set>

namespace aiflame {
namespace {

RecordOptions parse(const std::map<std::string, std::string>& env, std::vector<std::string>* warnings) {
  std::vector<std::string> names;
  for (const auto& [k, v] : env) names.push_back(k);
  return parse_record_options(
      [&env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      names, warnings);
}

// Defaults written twice, in the options and in the component they set (which tests and benchmarks use
// without options): the same.
TEST(RecordOptions, DefaultsAgreeWithTheComponentsOwn) {
  const RecordOptions d;
  EXPECT_EQ(d.measure.memo_history, static_cast<uint32_t>(StackCapture::kDefaultMemoHistory));
  EXPECT_EQ(d.measure.cfi_readahead, static_cast<uint32_t>(unwind::ObjectTable::kDefaultReadahead));
  std::vector<std::string> warnings;
  const RecordOptions parsed = parse({}, &warnings);
  EXPECT_EQ(parsed.measure.memo_history, d.measure.memo_history);
  EXPECT_EQ(parsed.measure.cfi_readahead, d.measure.cfi_readahead);
  EXPECT_TRUE(parsed.measure.memo_context);
}

// The measurement switches of bench/storm_breakdown.sh: read from the environment like the options.
TEST(RecordOptions, MeasurementSwitchesFromTheEnvironment) {
  RecordOptions d = record_options_from_env();
  EXPECT_EQ(d.measure.activity_buffer_mb, 4u);
  EXPECT_EQ(d.measure.activity_flush_every, 10u);
  EXPECT_EQ(d.measure.skip_launches, 0u);
  EXPECT_TRUE(d.measure.autograd_defer);  // resolved off the launch path unless AIFLAME_AUTOGRAD_DEFER=0
  setenv("AIFLAME_ACTIVITY_BUFFER_MB", "32", 1);
  setenv("AIFLAME_DEVICE_BUFFER_MB", "64", 1);
  setenv("AIFLAME_ACTIVITY_ZEROED", "1", 1);
  setenv("AIFLAME_ACTIVITY_FLUSH_EVERY", "0", 1);
  setenv("AIFLAME_SKIP_LAUNCHES", "2", 1);
  setenv("AIFLAME_SLEEP_SPAN_MS", "10", 1);
  RecordOptions o = record_options_from_env();
  EXPECT_EQ(o.measure.activity_buffer_mb, 32u);
  EXPECT_EQ(o.measure.device_buffer_mb, 64u);
  EXPECT_TRUE(o.measure.activity_zeroed);
  EXPECT_EQ(o.measure.activity_flush_every, 0u);
  EXPECT_EQ(o.measure.skip_launches, 2u);
  EXPECT_EQ(o.measure.sleep_span_ms, 10u);
  setenv("AIFLAME_ACTIVITY_BUFFER_MB", "0", 1);  // out of range: the defaults, and a warning each
  setenv("AIFLAME_SKIP_LAUNCHES", "3", 1);
  std::vector<std::string> warnings;
  RecordOptions bad = record_options_from_env(&warnings);
  EXPECT_EQ(bad.measure.activity_buffer_mb, 4u);
  EXPECT_EQ(bad.measure.skip_launches, 0u);
  EXPECT_EQ(warnings.size(), 2u);
  for (const char* v : {"AIFLAME_ACTIVITY_BUFFER_MB", "AIFLAME_DEVICE_BUFFER_MB", "AIFLAME_ACTIVITY_ZEROED",
                        "AIFLAME_ACTIVITY_FLUSH_EVERY", "AIFLAME_SKIP_LAUNCHES", "AIFLAME_SLEEP_SPAN_MS"})
    unsetenv(v);
}

// The Python walk's prefetch (an A/B of bench/capture_variants_gpu.sh's nopf, at d9aa39d): on unless set to 0.
TEST(RecordOptions, ThePythonPrefetchIsOnUnlessSwitchedOff) {
  EXPECT_TRUE(record_options_from_env().measure.py_prefetch);
  setenv("AIFLAME_PY_PREFETCH", "0", 1);
  EXPECT_FALSE(record_options_from_env().measure.py_prefetch);
  setenv("AIFLAME_PY_PREFETCH", "1", 1);
  EXPECT_TRUE(record_options_from_env().measure.py_prefetch);
  unsetenv("AIFLAME_PY_PREFETCH");
}

// Python's state read in place (record/py_runtime_fields.h), and the A/B mode that alternates it.
TEST(RecordOptions, PythonsStateInPlaceIsOnUnlessSwitchedOffAndHasItsAbMode) {
  EXPECT_TRUE(record_options_from_env().measure.py_state);
  setenv("AIFLAME_PY_STATE", "0", 1);
  EXPECT_FALSE(record_options_from_env().measure.py_state);
  unsetenv("AIFLAME_PY_STATE");
  setenv("AIFLAME_AUTOGRAD_AB", "4", 1);
  EXPECT_EQ(record_options_from_env().measure.autograd_ab, 4u);
  setenv("AIFLAME_AUTOGRAD_AB", "5", 1);  // the launch path without the measurements' branches
  EXPECT_EQ(record_options_from_env().measure.autograd_ab, 5u);
  setenv("AIFLAME_AUTOGRAD_AB", "6", 1);
  EXPECT_EQ(record_options_from_env().measure.autograd_ab, 0u);  // out of range: the default, with a warning
  unsetenv("AIFLAME_AUTOGRAD_AB");
}

// The capture probes: 4 (thread-local accesses timed, record/tls_probe.h) is the last.
TEST(RecordOptions, TheCaptureProbeTakesOneToFour) {
  EXPECT_EQ(record_options_from_env().measure.capture_probe, 0u);
  setenv("AIFLAME_CAPTURE_PROBE", "4", 1);
  EXPECT_EQ(record_options_from_env().measure.capture_probe, 4u);
  setenv("AIFLAME_CAPTURE_PROBE", "5", 1);
  EXPECT_EQ(record_options_from_env().measure.capture_probe, 0u);  // out of range: the default, with a warning
  unsetenv("AIFLAME_CAPTURE_PROBE");
}

TEST(RecordOptions, EveryOptionFromItsVariable) {
  std::vector<std::string> warnings;
  RecordOptions o = parse({{"AIFLAME_OUTPUT", "/tmp/x"},
                           {"AIFLAME_PERIOD", "default"},
                           {"AIFLAME_INTERVAL_MS", "50"},
                           {"AIFLAME_UNWIND", "off"},
                           {"AIFLAME_UNSTABLE_SAMPLE", "8"},
                           {"AIFLAME_PYTHON", "0"},
                           {"AIFLAME_CUBINS", "no"},
                           {"AIFLAME_PC_SAMPLING", "off"},
                           {"AIFLAME_PC_MODE", "windows"},
                           {"AIFLAME_WINDOWS_PER_S", "7"},
                           {"AIFLAME_WINDOW_US", "20"},
                           {"AIFLAME_ACTIVITY", "0"},
                           {"AIFLAME_QUIET", "1"},
                           {"AIFLAME_CUPTI", "/opt/libcupti.so"},
                           {"AIFLAME_STALL_CONFIG", "1"},
                           {"AIFLAME_FREE_NAMES", "1"},
                           {"AIFLAME_FULL_UNWIND", "1"}},
                          &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings[0];
  EXPECT_EQ(o.output, "/tmp/x");
  EXPECT_EQ(o.period_log2, 0u);
  EXPECT_EQ(o.interval_ms, 50u);
  EXPECT_EQ(o.unwind, UnwindPolicy::Off);
  EXPECT_EQ(o.unstable_sample, 8u);
  EXPECT_FALSE(o.python);
  EXPECT_FALSE(o.keep_cubins);
  EXPECT_FALSE(o.pc_sampling);
  EXPECT_EQ(o.pc_mode, PcMode::Windows);
  EXPECT_EQ(o.windows_per_s, 7u);
  EXPECT_EQ(o.window_us, 20u);
  EXPECT_FALSE(o.kernel_activity);
  EXPECT_TRUE(o.quiet);
  EXPECT_EQ(o.cupti_path, "/opt/libcupti.so");
  EXPECT_TRUE(o.measure.stall_config);
  EXPECT_TRUE(o.measure.free_names);
  EXPECT_TRUE(o.measure.full_unwind);
}

// A bad value used to become the default without a word (record_options.cpp:71 before #21).
TEST(RecordOptions, BadValueKeepsTheDefaultAndNamesTheOptionAndTheValue) {
  std::vector<std::string> warnings;
  RecordOptions o = parse({{"AIFLAME_PERIOD", "fast"}, {"AIFLAME_UNWIND", "sometimes"}, {"AIFLAME_INTERVAL_MS", "5ms"}},
                          &warnings);
  EXPECT_EQ(o.period_log2, kDefaultPeriodLog2);
  EXPECT_EQ(o.unwind, UnwindPolicy::Always);
  EXPECT_EQ(o.interval_ms, 10u);
  ASSERT_EQ(warnings.size(), 3u);
  std::set<std::string> got(warnings.begin(), warnings.end());
  EXPECT_TRUE(got.count("AIFLAME_PERIOD=fast is not valid (it takes N in 5..31 (2^N cycles) or 'default'); the "
                        "default is used"))
      << warnings[0];
  for (const auto& w : warnings) EXPECT_EQ(w.find('\n'), std::string::npos);
  EXPECT_EQ(warnings[1].rfind("AIFLAME_INTERVAL_MS=5ms is not valid", 0), 0u) << warnings[1];
  EXPECT_EQ(warnings[2].rfind("AIFLAME_UNWIND=sometimes is not valid", 0), 0u) << warnings[2];
}

TEST(RecordOptions, UnknownAiflameVariableIsNamedOthersAreNot) {
  std::vector<std::string> warnings;
  parse({{"AIFLAME_PERIDO", "20"}, {"AIFLAME_DEBUG", "1"}, {"AIFLAME_LIB", "/x.so"}, {"HOME", "/root"}}, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "AIFLAME_PERIDO=20 is not an aiflame option; it is ignored");
}

// One description: names, variables and flags are each unique, and every flag is one the CLI can
// register (a flag without a value hands the library a value it parses).
TEST(RecordOptions, SchemaEntriesAreUniqueAndFlagValuesParse) {
  std::set<std::string> names, envs, flags;
  for (const auto& s : record_option_schema()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_TRUE(envs.insert(s.env).second) << s.env;
    EXPECT_TRUE(std::string(s.env).starts_with("AIFLAME_")) << s.env;
    if (s.cli) {
      EXPECT_TRUE(flags.insert(s.cli).second) << s.cli;
    }
    if (s.flag_value) {
      RecordOptions o;
      EXPECT_TRUE(s.parse(o, s.flag_value)) << s.name;
    }
    EXPECT_EQ(find_record_option(s.name), &s);
  }
  for (const char* other : other_aiflame_variables()) EXPECT_FALSE(envs.count(other)) << other;
}

}  // namespace
}  // namespace aiflame
