// `--duty W/P`: the values it takes and refuses, and the rotation of window profiles in the directory.
#include "record/duty_spec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "record/record_options.h"

namespace aiflame {
namespace {

TEST(DutySpec, TakesWindowAndPeriodWithUnits) {
  DutySpec d;
  ASSERT_TRUE(parse_duty_spec("2s/60s", &d));
  EXPECT_EQ(d.window_ms, 2000u);
  EXPECT_EQ(d.period_ms, 60000u);
  ASSERT_TRUE(parse_duty_spec("500ms/1m", &d));
  EXPECT_EQ(d.window_ms, 500u);
  EXPECT_EQ(d.period_ms, 60000u);
  ASSERT_TRUE(parse_duty_spec("1.5/1h", &d));  // a bare number is seconds
  EXPECT_EQ(d.window_ms, 1500u);
  EXPECT_EQ(d.period_ms, 3600000u);
  ASSERT_TRUE(parse_duty_spec("on", &d));
  EXPECT_EQ(d.window_ms, kDefaultDutyWindowMs);
  EXPECT_EQ(d.period_ms, kDefaultDutyPeriodMs);
  ASSERT_TRUE(parse_duty_spec("off", &d));
  EXPECT_EQ(d.period_ms, 0u);
}

TEST(DutySpec, RefusesWhatIsNotAWindowAndALongerPeriod) {
  DutySpec d;
  for (const char* bad : {"", "2s", "2s/", "/60s", "2x/60s", "-1s/60s", "50ms/1s", "2s/3s", "1s/25h", "2s/60s/1",
                          "nan/60s", "1e3/60s", "2 s/60s"})
    EXPECT_FALSE(parse_duty_spec(bad, &d)) << bad;
  EXPECT_TRUE(parse_duty_spec("2s/60", &d));  // a bare number is seconds
}

TEST(DutySpec, TheOptionSchemaParsesIt) {
  std::vector<std::string> warnings;
  RecordOptions o = parse_record_options(
      [](const char* n) -> const char* { return std::string(n) == "AIFLAME_DUTY" ? "2s/60s" : nullptr; }, {"AIFLAME_DUTY"},
      &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(o.duty_window_ms, 2000u);
  EXPECT_EQ(o.duty_period_ms, 60000u);
  o = parse_record_options([](const char* n) -> const char* { return std::string(n) == "AIFLAME_DUTY" ? "2s/3s" : nullptr; },
                           {"AIFLAME_DUTY"}, &warnings);
  EXPECT_EQ(o.duty_period_ms, 0u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("AIFLAME_DUTY"), std::string::npos);
}

class DutyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/aiflame-duty-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  void write(uint64_t seq, int pid, size_t bytes) {
    std::ofstream(duty_window_prefix(dir_, seq) + "." + std::to_string(pid)) << std::string(bytes, 'x');
  }
  std::vector<uint64_t> seqs(int pid) {
    std::vector<uint64_t> out;
    for (const auto& f : duty_window_files(dir_, pid)) out.push_back(f.seq);
    return out;
  }
  std::string dir_;
};

TEST_F(DutyFiles, NamesSortInTimeOrder) {
  EXPECT_EQ(duty_window_prefix("/d", 7), "/d/window-000007");
  EXPECT_LT(duty_window_prefix("/d", 99), duty_window_prefix("/d", 100));
}

TEST_F(DutyFiles, KeepsTheNewestByCountAndLeavesOtherProcessesAlone) {
  for (uint64_t s = 1; s <= 12; s++) write(s, 100, 10);
  write(1, 200, 10);
  std::ofstream(dir_ + "/windows.100.log") << "x";
  std::ofstream(dir_ + "/window-notanumber.100") << "x";
  auto deleted = rotate_duty_files(dir_, 100, 3, 0);
  EXPECT_EQ(deleted.size(), 9u);
  EXPECT_EQ(seqs(100), (std::vector<uint64_t>{10, 11, 12}));
  EXPECT_EQ(seqs(200), (std::vector<uint64_t>{1}));
  EXPECT_EQ(access((dir_ + "/windows.100.log").c_str(), F_OK), 0);
  EXPECT_EQ(access((dir_ + "/window-notanumber.100").c_str(), F_OK), 0);
}

TEST_F(DutyFiles, KeepsTheNewestBySizeButAlwaysOne) {
  for (uint64_t s = 1; s <= 5; s++) write(s, 100, 1000);
  rotate_duty_files(dir_, 100, 0, 2500);
  EXPECT_EQ(seqs(100), (std::vector<uint64_t>{4, 5}));
  rotate_duty_files(dir_, 100, 0, 10);  // smaller than one window: the newest stays
  EXPECT_EQ(seqs(100), (std::vector<uint64_t>{5}));
  rotate_duty_files(dir_, 100, 0, 0);
  EXPECT_EQ(seqs(100), (std::vector<uint64_t>{5}));
}

}  // namespace
}  // namespace aiflame
