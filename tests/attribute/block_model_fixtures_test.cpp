// The block-scheduler model on the 3:1 recordings of tests/data (H100, bench_kernels split MODE),
// which were recorded before kernel records kept registers and shared memory: the test gives each
// kernel row what bench_kernels launched (256 threads a block; thin: 150 KB of shared memory a
// block) and the device an H100's SM limits, then checks the attributed split of kernel `work`
// against the truth, 75% for path_a (path_heavy), within issue 65's 2 points. The recorded
// timings are the hardware's; only the launch shapes are supplied. Measured (standalone, this
// commit): streams 75.71% (75.06% by the older rule), thin 74.43% (74.70%), sequential 75.00%, size
// 74.98%.
#include <gtest/gtest.h>

#include <string>

#include "attribute/frame_builder.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string data_path(const std::string& name) { return std::string(AIFLAME_SOURCE_DIR) + "/tests/data/" + name; }

// path_a's share of `work`'s samples with the model (or, with_limits false, with the file as it is).
double heavy_share(const std::string& fixture, uint32_t shared, bool with_limits, const char* heavy,
                   double* estimated = nullptr) {
  auto r = read_profile(data_path(fixture));
  EXPECT_TRUE(r.ok()) << r.error();
  if (!r.ok()) return -1;
  Profile& p = *r;
  if (with_limits) {
    for (auto& d : p.stall_reasons) {
      if (!d.sm_count) d.sm_count = 132;  // split_streams, _sequential and _size predate it too
      d.max_threads_per_sm = 2048, d.max_blocks_per_sm = 32, d.registers_per_sm = 65536;
      d.shared_per_sm = 233472, d.shared_reserved_per_block = 1024;
    }
    for (size_t i = 0; i < p.kernels.size(); i++) {
      p.kernels[i].threads = 256;
      p.kernels[i].registers = 16;
      p.kernels[i].shared = shared;
    }
  }
  AttributionResult res = attribute_samples(p);
  if (estimated) *estimated = res.stats.estimated / static_cast<double>(res.stats.samples);
  Symbolizer sym(p.modules);
  FrameBuilder fb(p, sym, {});
  FlameData d = fb.build(res);
  double total = 0, a = 0;
  for (const auto& s : d.stacks) {
    bool work = false, on_heavy = false;
    for (const auto& f : s.frames) {
      work |= f.kind == FrameKind::GpuKernel && f.name.str().rfind("work", 0) == 0;
      on_heavy |= f.name.str() == heavy || f.name.str().rfind(std::string(heavy) + "(", 0) == 0;
    }
    if (!work) continue;
    total += static_cast<double>(s.count);
    if (on_heavy) a += static_cast<double>(s.count);
  }
  return total > 0 ? a / total : -1;
}

TEST(BlockModelFixtures, TwoStreamsWithinTwoPoints) {
  double est = 0;
  EXPECT_NEAR(heavy_share("split_streams.aiflame", 0, true, "path_a", &est), 0.75, 0.02);
  EXPECT_GT(est, 0.5);  // the two paths' executions share windows: most samples are the model's
}

TEST(BlockModelFixtures, ThinWithinTwoPoints) {
  EXPECT_NEAR(heavy_share("split_thin.aiflame", 150 * 1024, true, "path_heavy"), 0.75, 0.02);
}

TEST(BlockModelFixtures, SequentialAndSizeWithinTwoPoints) {
  EXPECT_NEAR(heavy_share("split_sequential.aiflame", 0, true, "path_a"), 0.75, 0.02);
  EXPECT_NEAR(heavy_share("split_size.aiflame", 0, true, "path_a"), 0.75, 0.02);
}

// Without the limits the files read as they always did (the goldens of tests/cli/device_fixtures_test.sh).
TEST(BlockModelFixtures, WithoutLimitsTheOlderRuleReadsAsBefore) {
  EXPECT_NEAR(heavy_share("split_thin.aiflame", 0, false, "path_heavy"), 0.7470, 0.0005);
}

}  // namespace
}  // namespace aiflame
