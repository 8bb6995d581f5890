// The CLI's reading of words as perf and py-spy read them (cli/cli_words.h), and --rate's mapping
// (cli/sampling_rate.h).
#include <gtest/gtest.h>

#include <cmath>

#include "cli/cli_words.h"
#include "cli/sampling_rate.h"

namespace aiflame {
namespace {

struct RecordLike {
  CLI::App app;
  std::string output;
  bool force = false;
  std::vector<std::string> command;
  RecordLike() {
    app.add_option("-o,--output", output);
    app.add_flag("-f,--force", force);
    app.add_option("command", command)->expected(-1);
  }
};

using W = std::vector<std::string>;

TEST(CliWords, TheFirstWordThatIsNoOptionStartsTheCommand) {
  RecordLike r;
  EXPECT_EQ(with_command_separator(r.app, W{"-o", "x", "python", "train.py", "--lr", "3"}),
            (W{"-o", "x", "--", "python", "train.py", "--lr", "3"}));
  EXPECT_EQ(with_command_separator(r.app, W{"-f", "--output=x", "-ox", "prog", "-f"}),
            (W{"-f", "--output=x", "-ox", "--", "prog", "-f"}));
  // An option's value is not the command, whatever it looks like.
  EXPECT_EQ(with_command_separator(r.app, W{"-o", "python", "prog"}), (W{"-o", "python", "--", "prog"}));
  // "--" given: unchanged.
  EXPECT_EQ(with_command_separator(r.app, W{"-o", "x", "--", "prog", "a"}), (W{"-o", "x", "--", "prog", "a"}));
  EXPECT_EQ(with_command_separator(r.app, W{"-o", "x"}), (W{"-o", "x"}));
}

TEST(CliWords, AnUnknownOptionIsNamedWithTheNearestKnownOne) {
  RecordLike r;
  r.app.name("record");
  EXPECT_EQ(unknown_option_message(r.app, W{"--ouput", "x", "--", "prog"}),
            "unknown option '--ouput' for `record` (did you mean --output?)");
  EXPECT_EQ(unknown_option_message(r.app, W{"--forse"}), "unknown option '--forse' for `record` (did you mean --force?)");
  EXPECT_EQ(unknown_option_message(r.app, W{"--rate=100", "--", "/bin/true"}), "unknown option '--rate' for `record`");
  // Known options, an option's value, and the command's own options are not unknown.
  EXPECT_EQ(unknown_option_message(r.app, W{"-o", "--weird-name", "-f", "--", "prog", "--bogus"}), "");
}

TEST(CliWords, EditDistance) {
  EXPECT_EQ(edit_distance("--output", "--output"), 0u);
  EXPECT_EQ(edit_distance("--ouput", "--output"), 1u);
  EXPECT_EQ(edit_distance("--otuput", "--output"), 1u);  // a swap of neighbours
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(SamplingRate, PeriodIsTheNearestPowerOfTwoOfClockOverRate) {
  // 1.98 GHz / 100 Hz = 1.98e7 cycles = 2^24.24: period 24, 118 samples/s per SM.
  EXPECT_EQ(period_log2_for_rate(100, 1.98e9), 24u);
  // Exactly 2^20 cycles.
  EXPECT_EQ(period_log2_for_rate(1e9 / 1048576.0, 1e9), 20u);
  // Within a factor of sqrt(2) either way: the rate the period gives.
  for (double hz : {10.0, 333.0, 1000.0, 47000.0}) {
    unsigned n = period_log2_for_rate(hz, 1.755e9);
    double got = 1.755e9 / std::ldexp(1.0, static_cast<int>(n));
    EXPECT_LE(got / hz, 1.4143) << hz;
    EXPECT_GE(got / hz, 1 / 1.4143) << hz;
  }
  // Clamped to what the hardware takes.
  EXPECT_EQ(period_log2_for_rate(1e12, 1.98e9), 5u);
  EXPECT_EQ(period_log2_for_rate(1e-6, 1.98e9), 31u);
}

}  // namespace
}  // namespace aiflame
