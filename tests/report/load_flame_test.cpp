// The one path from inputs to a picture (report/load_flame.h), and `aiflame diff` on it: two runs of
// one program compare stack by stack (issue #26 item 1: by pid they shared 0 of 1,523 lines).
#include "report/load_flame.h"

#include <gtest/gtest.h>

#include "output/diff_writer.h"

namespace aiflame {
namespace {

std::string data_path(const std::string& name) { return std::string(AIFLAME_SOURCE_DIR) + "/tests/data/" + name; }

FlameData load(const std::vector<std::string>& files, GroupBy group_by) {
  LoadOptions o;
  o.frames.group_by = group_by;
  o.frames.times = false;
  o.gpu = {};  // no nvdisasm: the finalized profile's stored mnemonics, none for the unfinalized one
  std::vector<std::string> paths;
  for (const auto& f : files) paths.push_back(data_path(f));
  auto d = load_flame(paths, o);
  EXPECT_TRUE(d.ok()) << d.error();
  return d.ok() ? std::move(d->data) : FlameData{};
}

TEST(Diff, TwoRecordingsOfOneProgramShareTheirStacks) {
  FlameData a = load({"demo_matmul.aiflame"}, GroupBy::Program);
  FlameData b = load({"demo_matmul_unfinalized.aiflame"}, GroupBy::Program);
  ASSERT_GT(a.total(), 0u);
  ASSERT_GT(b.total(), 0u);
  DiffShare s = diff_share(make_diff(a, b));
  EXPECT_GE(s.before, 0.9);  // measured: 96.0% and 95.1%
  EXPECT_GE(s.after, 0.9);
  EXPECT_GE(s.kernels_before, s.before);
  // Matched by instruction offset: the unfinalized profile names no mnemonics here, the diff shows
  // the finalized one's names.
  bool named = false;
  for (const auto& st : make_diff(a, b).stacks)
    for (const auto& f : st.frames) named |= f.kind == FrameKind::GpuInstruction && f.name.str().find(' ') != std::string::npos;
  EXPECT_TRUE(named);
  // By process (program and pid) the two recordings share nothing: their pids differ.
  DiffShare by_pid = diff_share(make_diff(load({"demo_matmul.aiflame"}, GroupBy::Process),
                                          load({"demo_matmul_unfinalized.aiflame"}, GroupBy::Process)));
  EXPECT_EQ(by_pid.before, 0.0);
  EXPECT_LT(by_pid.before, kLittleShared);
}

TEST(Diff, TwoRanksOfOneJobShareTheirStacks) {
  FlameData r0 = load({"ddp/ddp.aiflame.607"}, GroupBy::Program);
  FlameData r1 = load({"ddp/ddp.aiflame.608"}, GroupBy::Program);
  DiffShare s = diff_share(make_diff(r0, r1));
  // Up to the kernel the ranks ran the same code (by pid: 0 shared). Their instruction and stall
  // leaves differ more (about 1,800 samples each over many leaves: 31% shared).
  EXPECT_GE(s.kernels_before, 0.9) << s.kernels_before;
  EXPECT_GE(s.kernels_after, 0.9) << s.kernels_after;
  EXPECT_GT(s.before, 0.2) << s.before;
  DiffShare by_rank = diff_share(make_diff(load({"ddp/ddp.aiflame.607"}, GroupBy::Rank),
                                           load({"ddp/ddp.aiflame.608"}, GroupBy::Rank)));
  EXPECT_EQ(by_rank.kernels_before, 0.0);
}

// Several inputs make one picture, as report draws them: the samples of each, summed.
TEST(LoadFlame, SeveralInputsMergeIntoOnePicture) {
  FlameData r0 = load({"ddp/ddp.aiflame.607"}, GroupBy::Rank);
  FlameData r1 = load({"ddp/ddp.aiflame.608"}, GroupBy::Rank);
  FlameData both = load({"ddp/ddp.aiflame.607", "ddp/ddp.aiflame.608"}, GroupBy::Rank);
  EXPECT_EQ(both.total(), r0.total() + r1.total());
  EXPECT_EQ(both.summary.processes, 2u);
  // A folded input and a profile in one picture.
  FlameData mixed = load({"demo_matmul.aiflame", "demo_matmul.folded"}, GroupBy::Process);
  EXPECT_EQ(mixed.total(), 2 * load({"demo_matmul.aiflame"}, GroupBy::Process).total());
}

// The filters and the folding of library runs are steps of the pipeline, for report and diff alike.
TEST(LoadFlame, FiltersNameWhatMatchesNothing) {
  LoadOptions o;
  o.frames.times = false;
  o.gpu = {};
  auto all = load_flame({data_path("demo_matmul.aiflame")}, o);
  ASSERT_TRUE(all.ok()) << all.error();
  EXPECT_TRUE(all->unmatched.empty());
  EXPECT_EQ(all->filter_warning(), "");
  auto f = make_flame_filter("", "", "selected,bogus", "", "");
  ASSERT_TRUE(f.ok()) << f.error();
  o.filter = *f;
  auto some = load_flame({data_path("demo_matmul.aiflame")}, o);
  ASSERT_TRUE(some.ok()) << some.error();
  EXPECT_GT(some->data.total(), 0u);
  EXPECT_LT(some->data.total(), all->data.total());
  EXPECT_FALSE(some->filtered_out);
  ASSERT_EQ(some->unmatched.size(), 1u);
  EXPECT_NE(some->unmatched[0].find("--stalls bogus"), std::string::npos) << some->unmatched[0];
  EXPECT_EQ(some->filter_warning().rfind("a filter matched no sample: --stalls bogus", 0), 0u) << some->filter_warning();
  o.filter = *make_flame_filter("", "", "bogus", "", "");
  auto none = load_flame({data_path("demo_matmul.aiflame")}, o);
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_EQ(none->data.total(), 0u);
  EXPECT_TRUE(none->filtered_out);
  EXPECT_EQ(none->filter_warning().rfind("the filters matched no sample", 0), 0u) << none->filter_warning();
}

TEST(LoadFlame, FoldsLibraryRunsWhenAsked) {
  auto frames = [](bool fold) {
    LoadOptions o;
    o.frames.times = false;
    o.gpu = {};
    o.fold_runs = fold;
    auto d = load_flame({data_path("gpt_train.aiflame")}, o);
    EXPECT_TRUE(d.ok()) << d.error();
    size_t n = 0, folded = 0;
    for (const auto& s : d->data.stacks)
      for (const auto& f : s.frames) n++, folded += f.name.str().find(" frames]") != std::string::npos;
    return std::pair{n, folded};
  };
  auto [kept, none] = frames(false);
  auto [fewer, some] = frames(true);
  EXPECT_EQ(none, 0u);
  EXPECT_GT(some, 0u);
  EXPECT_LT(fewer, kept);
}

TEST(LoadFlame, ErrorsNameTheFile) {
  LoadOptions o;
  auto missing = load_flame({"/nonexistent/x.aiflame"}, o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/x.aiflame"), std::string::npos) << missing.error();
}

}  // namespace
}  // namespace aiflame
