// The registry of output formats (output/formats.cpp): every line gives a writer of its name, every
// extension leads back to its format, and the help text lists them all.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "output/writer.h"

namespace aiflame {
namespace {

TEST(OutputFormats, EveryRegistryLineIsComplete) {
  std::set<std::string_view> names, extensions;
  std::string help = output_formats_help();
  ASSERT_GE(output_formats().size(), 8u);
  for (const auto& f : output_formats()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    auto w = make_writer(f.name);
    ASSERT_NE(w, nullptr) << f.name;
    EXPECT_EQ(w->format(), f.name);
    EXPECT_FALSE(f.help.empty()) << f.name;
    EXPECT_NE(help.find(std::string(f.name) + " ("), std::string::npos) << f.name;
    ASSERT_FALSE(f.extensions.empty()) << f.name;
    for (std::string_view ext : f.extensions) {
      EXPECT_TRUE(extensions.insert(ext).second) << ext;
      EXPECT_EQ(format_from_path("out" + std::string(ext)), f.name) << ext;
      EXPECT_NE(help.find(std::string(ext)), std::string::npos) << ext;
    }
  }
  EXPECT_EQ(writer_formats().size(), names.size());
}

// The longest extension wins: ".heatmap.svg" is not an SVG flame graph.
TEST(OutputFormats, LongestExtensionWins) {
  EXPECT_EQ(format_from_path("run.heatmap.svg"), "heatmap");
  EXPECT_EQ(format_from_path("run.svg"), "svg");
  EXPECT_EQ(format_from_path("run.pdf"), "");
}

// --plain reaches the folded writer through the registry (it was a special case in report).
TEST(OutputFormats, PlainOptionReachesTheFoldedWriter) {
  FlameData d;
  d.stacks.push_back({FrameList({{"main", FrameKind::Native}, {"k", FrameKind::GpuKernel}}), 3});
  std::ostringstream annotated, plain;
  make_writer("folded")->write(d, annotated);
  make_writer("folded", WriterOptions{.plain = true})->write(d, plain);
  EXPECT_EQ(annotated.str(), "main;k_[G] 3\n");
  EXPECT_EQ(plain.str(), "main;k 3\n");
}

// The pictures fold runs of unsymbolized library frames by default, the interchange formats keep
// every frame (issue #26 item 7); the column of the registry says which, and the help names them.
TEST(OutputFormats, FoldDefaultIsARegistryColumn) {
  std::set<std::string> folding;
  for (const auto& f : output_formats())
    if (folds_runs_by_default(f.name)) folding.insert(std::string(f.name));
  EXPECT_EQ(folding, (std::set<std::string>{"html", "speedscope", "svg"}));
  EXPECT_FALSE(folds_runs_by_default("no-such-format"));
  std::string help = fold_runs_help();
  EXPECT_NE(help.find("on for svg, speedscope, html; off for text, folded, pprof, trace, flamescope, heatmap"),
            std::string::npos)
      << help;
}

// The trace alone asks for the launching threads (its CPU tracks): a second pass over the launches.
TEST(OutputFormats, OnlyTheTraceReadsLaunchThreads) {
  for (const auto& f : output_formats()) EXPECT_EQ(make_writer(f.name)->uses_launch_threads(), f.name == "trace") << f.name;
}

}  // namespace
}  // namespace aiflame
