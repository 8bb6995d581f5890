#include "input/iaprof_reader.h"

#include <gtest/gtest.h>

#include <sstream>

#include "input/flame_input.h"
#include "report/load_flame.h"
#include "output/folded_writer.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string data_path(const std::string& name) { return std::string(AIFLAME_SOURCE_DIR) + "/tests/data/" + name; }

std::string folded_of(const FlameData& d) {
  std::ostringstream out;
  FoldedWriter().write(d, out);
  return out.str();
}

// Golden folded output of the iaprof fixtures (hand-written to each version's printf formats, see
// docs/formats.md). AIFLAME_UPDATE_GOLDEN=1 rewrites them.
void check_golden(const std::string& fixture) {
  auto d = read_flame_input(data_path(fixture + ".txt"));
  ASSERT_TRUE(d.ok()) << d.error();
  std::string golden_path = data_path(fixture + ".folded");
  if (std::getenv("AIFLAME_UPDATE_GOLDEN")) test::write_file(golden_path, folded_of(*d));
  EXPECT_EQ(folded_of(*d), test::read_file(golden_path));
}

TEST(IaprofReader, CurrentFormatGolden) { check_golden("iaprof_current"); }
TEST(IaprofReader, IntervalFormatGolden) { check_golden("iaprof_interval"); }

TEST(IaprofReader, CurrentFormatFieldsAndTotals) {
  auto d = read_flame_input(data_path("iaprof_current.txt"));
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->total(), 10u + 3 + 7 + 1 + 20 + 2 + 4 + 1 + 5);
  EXPECT_EQ(d->process, "sycl_matmul");
  EXPECT_EQ(d->pid, 4242u);
  EXPECT_EQ(d->duration_ns, 10000000u);
  double timed = 0;
  for (const auto& t : d->timeline) timed += t.weight;
  EXPECT_EQ(timed, static_cast<double>(d->total()));
  std::string f = folded_of(*d);
  EXPECT_NE(f.find("sycl_matmul;4242;_start;__libc_start_main;main;multiply_basic;py::run:/app/bench.py;zeEnqueueKernel;-;"
                   "matmul.cpp_[G];matmul_basic_[G];mad (16|M0)_[g];active_[g];0x1f0_[g] 15\n"),
            std::string::npos) << f;
  EXPECT_NE(f.find(";[failed decode]_[g];tdr_[g];0x200_[g] 2\n"), std::string::npos) << f;
}

TEST(IaprofReader, IntervalFormatMatchesItsOwnStackStrings) {
  // The older format prints each sample's whole folded stack as a string; ours must equal it.
  auto d = read_flame_input(data_path("iaprof_interval.txt"));
  ASSERT_TRUE(d.ok()) << d.error();
  std::string f = folded_of(*d);
  EXPECT_NE(f.find("sycl_matmul;4242;_start;__libc_start_main;main;multiply_basic;zeEnqueueKernel;ioctl_[k];drm_ioctl_[k];-;"
                   "matmul.cpp_[G];matmul_basic_[G];mad (16|M0)_[g];send_[g];0x1f0_[g] 30\n"),
            std::string::npos) << f;
  EXPECT_EQ(d->total(), 49u);
}

TEST(IaprofReader, HostileInputIsOneErrorLine) {
  for (const char* bad : {"kernel\t0x1\t9\t1\t0\t0\t0\n",                     // undefined string id
                          "string\t1\tx\nkernel\t0x1\t1\n",                   // too few fields
                          "string\t1\tx\neustall\tzz\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\n",
                          "string\t1\tx\ne\t1\t1\t1f0\t-4\n",
                          "interval\t0\tnan\n",
                          "e\t0\t0\t0\t18446744073709551615\ne\t0\t0\t0\t1\n",
                          "frame\n"}) {
    auto d = parse_iaprof(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.error().find('\n'), std::string::npos);
  }
  auto skip = parse_iaprof("string\t1\tx\nfuture_record\t1\t2\ne\t0\t1\t10\t3\n");  // unknown records are skipped
  ASSERT_TRUE(skip.ok()) << skip.error();
  EXPECT_EQ(skip->total(), 3u);
}

TEST(FlameInput, DetectsEachFormatByContent) {
  EXPECT_EQ(detect_input_format(std::string("AIFLAME\0\1\0\0\0", 12)), InputFormat::Aiflame);
  EXPECT_EQ(detect_input_format("string\t1\tx\n"), InputFormat::Iaprof);
  EXPECT_EQ(detect_input_format("\ninterval_start\t0\t1.0\n"), InputFormat::Iaprof);
  EXPECT_EQ(detect_input_format("# c\na;b 3\n"), InputFormat::Folded);
  EXPECT_EQ(detect_input_format("hello, this is not a profile\n"), InputFormat::Unknown);
  auto bad = parse_flame_input("hello, this is not a profile\n", "x.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("not an aiflame profile"), std::string::npos);
  auto empty = parse_flame_input("", "e.aiflame");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().find("empty file"), std::string::npos);
  EXPECT_FALSE(read_flame_input("/nonexistent/x").ok());
  // Gzip'd folded input, and a cut-short gzip stream.
  auto gz = read_flame_input(std::string(AIFLAME_SOURCE_DIR) + "/docs/examples/gpt_train.folded.gz");
  ASSERT_TRUE(gz.ok()) << gz.error();
  EXPECT_GT(gz->total(), 0u);
  std::string cut = test::read_file(std::string(AIFLAME_SOURCE_DIR) + "/docs/examples/gpt_train.folded.gz").substr(0, 100);
  std::string path = test::temp_path("cut.gz");
  test::write_file(path, cut);
  auto c = read_flame_input(path);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("gzip"), std::string::npos);
  std::remove(path.c_str());
}

// aiflame profile -> folded (annotated and plain) -> report's reader: every stack and total exact.
TEST(FlameInput, ProfileFoldedReportRoundTrip) {
  for (const char* fixture : {"demo_matmul.aiflame", "gpt_train.aiflame"}) {
    auto d = read_flame_input(data_path(fixture));
    ASSERT_TRUE(d.ok()) << d.error();
    for (bool plain : {false, true}) {
      std::ostringstream out;
      FoldedWriter(FoldedOptions{plain}).write(*d, out);
      auto back = parse_flame_input(out.str(), "x.folded");
      ASSERT_TRUE(back.ok()) << back.error();
      EXPECT_EQ(back->total(), d->total()) << fixture;
      std::ostringstream again;
      FoldedWriter(FoldedOptions{plain}).write(*back, again);
      EXPECT_EQ(again.str(), out.str()) << fixture;
      if (!plain) {  // annotated: the GPU kinds come back exactly
        for (const auto& s : back->stacks)
          for (const auto& f : s.frames)
            if (f.kind == FrameKind::Stall) {
              EXPECT_EQ(&f, &s.frames.back());
            }
      }
    }
  }
}

}  // namespace
}  // namespace aiflame
