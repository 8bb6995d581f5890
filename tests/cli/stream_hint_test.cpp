// The --no-pc-sampling hint: it names programs of short kernels on streams that take turns with the GPU
// mostly idle (the pattern continuous PC sampling serializes), and stays quiet for the recorded
// workloads in tests/data, which it does not slow down that way.
#include "cli/stream_hint.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace aiflame {
namespace {

// n kernels of `duration` ns, kernel i starting at 1 ms + start(i) on stream stream(i).
template <class Start, class Stream>
Profile kernels_at(size_t n, uint64_t duration, Start start, Stream stream) {
  Profile p;
  for (size_t i = 0; i < n; i++) {
    KernelRow k;
    k.start = 1'000'000 + start(i);
    k.end = k.start + duration;
    k.stream = static_cast<uint32_t>(stream(i));
    p.kernels.push_back(k);
  }
  return p;
}

// n kernels of `duration` ns, round-robin over `streams` streams, one starting every `every` ns.
Profile kernels(size_t n, uint32_t streams, uint64_t duration, uint64_t every) {
  return kernels_at(n, duration, [&](size_t i) { return i * every; }, [&](size_t i) { return 7 + i % streams; });
}

TEST(StreamHint, ShortKernelsOfStreamsTakingTurnsOnAnIdleGpu) {
  // As recorded from `aiflame_bench_kernels threads 8 2000`: 1.8 us kernels, one every 12 us.
  auto s = serialized_streams(kernels(16000, 8, 1800, 12000));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->kernels, 16000u);
  EXPECT_EQ(s->streams, 8u);
  EXPECT_DOUBLE_EQ(s->shared_windows, 1.0);
  EXPECT_DOUBLE_EQ(s->overlap, 1.0);
  EXPECT_DOUBLE_EQ(s->median_us, 1.8);
  EXPECT_NEAR(s->busy_share, 1800.0 / 12000, 1e-3);
  std::string line = serialized_streams_hint(*s);
  EXPECT_NE(line.find("16000 short kernels (median 1.8 us) on 8 streams"), std::string::npos) << line;
  EXPECT_NE(line.find("--no-pc-sampling"), std::string::npos) << line;
}

TEST(StreamHint, QuietOtherwise) {
  EXPECT_FALSE(serialized_streams(kernels(16000, 1, 1800, 12000)));    // one stream
  EXPECT_FALSE(serialized_streams(kernels(16000, 8, 100000, 400000)));  // long kernels
  EXPECT_FALSE(serialized_streams(kernels(16000, 8, 1800, 2000)));      // the GPU busy 90%
  EXPECT_FALSE(serialized_streams(kernels(900, 8, 1800, 12000)));       // too few to tell
  // Serialized as recorded on the H100 (t.aiflame of `threads 8 20000`): each stream's queue is worked
  // through in runs of about 30 kernels, so kernels rarely follow another stream's, yet every
  // millisecond holds several streams.
  Profile serialized = kernels_at(16000, 1800, [](size_t i) { return i * 12000; }, [](size_t i) { return i / 30 % 8; });
  auto s = serialized_streams(serialized);
  ASSERT_TRUE(s.has_value());
  EXPECT_GT(s->shared_windows, 0.9);
  // Kernels of two streams running side by side (as without sampling): concurrency works, no hint,
  // though everything else matches (short kernels, an idle GPU, both streams in every millisecond).
  EXPECT_FALSE(serialized_streams(kernels_at(16000, 1800, [](size_t i) { return i / 2 * 24000; },
                                            [](size_t i) { return i % 2; })));
  // Two streams, but in long runs of one stream each: not launched side by side.
  EXPECT_FALSE(serialized_streams(kernels_at(4000, 1800, [](size_t i) { return i * 12000; },
                                            [](size_t i) { return i < 2000 ? 1 : 2; })));
  EXPECT_FALSE(serialized_streams(Profile{}));
}

TEST(StreamHint, NotForTheRecordedWorkloads) {
  namespace fs = std::filesystem;
  const fs::path data = fs::path(AIFLAME_SOURCE_DIR) / "tests" / "data";
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(data)) {
    const std::string name = e.path().filename().string();
    if (name.find(".aiflame") != std::string::npos && name.find("unfinalized") == std::string::npos) files.push_back(e.path());
  }
  ASSERT_GE(files.size(), 8u);
  for (const auto& f : files) {
    auto p = read_profile(f.string(), BatchReading::Skip);
    ASSERT_TRUE(p.ok()) << f << ": " << p.error();
    auto s = serialized_streams(*p);
    EXPECT_FALSE(s.has_value()) << f << ": " << (s ? serialized_streams_hint(*s) : "");
  }
}

}  // namespace
}  // namespace aiflame
