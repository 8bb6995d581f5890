// The option schema of the injection library: every option parsed in one place, bad values and unknown
// variables named in one warning line each, the lab's switches read from one variable, AIFLAME_LAB.
#include "record/record_options.h"

#include <gtest/gtest.h>

#include "record/stack_capture.h"

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

// The lab's switches of bench/storm_breakdown.sh: read from AIFLAME_LAB, by name, like the options.
TEST(RecordOptions, LabSwitchesFromTheEnvironment) {
  RecordOptions d = record_options_from_env();
  EXPECT_EQ(d.measure.activity_buffer_mb, 4u);
  EXPECT_EQ(d.measure.activity_flush_every, 10u);
  EXPECT_EQ(d.measure.skip_launches, 0u);
  setenv("AIFLAME_LAB",
         "activity_buffer_mb=32,device_buffer_mb=64,activity_zeroed,activity_flush_every=0,skip_launches=2,sleep_span_ms=10",
         1);
  RecordOptions o = record_options_from_env();
  EXPECT_EQ(o.measure.activity_buffer_mb, 32u);
  EXPECT_EQ(o.measure.device_buffer_mb, 64u);
  EXPECT_TRUE(o.measure.activity_zeroed);
  EXPECT_EQ(o.measure.activity_flush_every, 0u);
  EXPECT_EQ(o.measure.skip_launches, 2u);
  EXPECT_EQ(o.measure.sleep_span_ms, 10u);
  setenv("AIFLAME_LAB", "activity_buffer_mb=0,skip_launches=3", 1);  // out of range: the defaults, and a warning each
  std::vector<std::string> warnings;
  RecordOptions bad = record_options_from_env(&warnings);
  EXPECT_EQ(bad.measure.activity_buffer_mb, 4u);
  EXPECT_EQ(bad.measure.skip_launches, 0u);
  EXPECT_EQ(warnings.size(), 2u);
  unsetenv("AIFLAME_LAB");
}

// The in-run A/B modes of the launch path: 4 (Python's state read in place) and 5 (the lean path).
TEST(RecordOptions, TheAutogradAbTakesOneToFive) {
  setenv("AIFLAME_LAB", "autograd_ab=4", 1);
  EXPECT_EQ(record_options_from_env().measure.autograd_ab, 4u);
  setenv("AIFLAME_LAB", "autograd_ab=5", 1);  // the launch path without the measurements' branches
  EXPECT_EQ(record_options_from_env().measure.autograd_ab, 5u);
  setenv("AIFLAME_LAB", "autograd_ab=6", 1);
  EXPECT_EQ(record_options_from_env().measure.autograd_ab, 0u);  // out of range: the default, with a warning
  unsetenv("AIFLAME_LAB");
}

// The capture probes: 4 (thread-local accesses timed, record/measure/tls_probe.h) is the last.
TEST(RecordOptions, TheCaptureProbeTakesOneToFour) {
  EXPECT_EQ(record_options_from_env().measure.capture_probe, 0u);
  setenv("AIFLAME_LAB", "capture_probe=4", 1);
  EXPECT_EQ(record_options_from_env().measure.capture_probe, 4u);
  setenv("AIFLAME_LAB", "capture_probe=5", 1);
  EXPECT_EQ(record_options_from_env().measure.capture_probe, 0u);  // out of range: the default, with a warning
  unsetenv("AIFLAME_LAB");
}

// Several lab switches in one variable, a name alone meaning 1; an unknown name and a bad value each
// named in one line, the others still set.
TEST(RecordOptions, LabSwitchesAreNamedInOneVariable) {
  std::vector<std::string> warnings;
  RecordOptions o = parse({{"AIFLAME_LAB", "capture_stats,stall_config,free_names,callback_ab=3,nosuch,launch_ab=maybe"}},
                          &warnings);
  EXPECT_TRUE(o.measure.capture_stats);
  EXPECT_TRUE(o.measure.stall_config);
  EXPECT_TRUE(o.measure.free_names);
  EXPECT_EQ(o.measure.callback_ab, 3u);
  EXPECT_FALSE(o.measure.launch_ab);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], "AIFLAME_LAB: nosuch is not a lab switch; it is ignored");
  EXPECT_EQ(warnings[1], "AIFLAME_LAB: launch_ab=maybe is not valid (launch_ab takes 0 or 1); the default is used");
}

// The lab is not a user option: none of its switches is in the schema that `aiflame record` registers
// its flags and variables from, and the old variables of the switches now in the lab are unknown.
TEST(RecordOptions, LabSwitchesAreNotOptions) {
  std::set<std::string> names;
  for (const auto& s : record_option_schema()) names.insert(s.name);
  for (const auto& l : lab_option_schema()) {
    EXPECT_FALSE(names.count(l.name)) << l.name;
    EXPECT_EQ(l.cli, nullptr) << l.name;
    EXPECT_STREQ(l.env, "AIFLAME_LAB") << l.name;
  }
  std::vector<std::string> warnings;
  parse({{"AIFLAME_CAPTURE_STATS", "1"}}, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "AIFLAME_CAPTURE_STATS=1 is not an aiflame option; it is ignored");
}

// AIFLAME_AUTOGRAD=0 turns the autograd tracking off, and is an option like the others (it was obeyed
// and yet warned about as "not an aiflame option").
TEST(RecordOptions, AutogradOffIsAnOption) {
  std::vector<std::string> warnings;
  EXPECT_TRUE(parse({}, &warnings).autograd);
  EXPECT_FALSE(parse({{"AIFLAME_AUTOGRAD", "0"}}, &warnings).autograd);
  EXPECT_TRUE(warnings.empty()) << warnings[0];
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
                           {"AIFLAME_LAB", "stall_config=1,free_names"}},
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
