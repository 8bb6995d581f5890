// Report throughput: a synthetic profile (synthetic_profile.h) through read -> attribute -> frame build
// -> folded stacks, whole and stage by stage. Items are PC records, so items_per_second is the
// "PC records per second into folded stacks" figure. AIFLAME_BENCH_SECONDS sets the simulated run's
// length (default 20 s: 800,000 PC records).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <streambuf>

#include "attribute/attribution.h"
#include "attribute/frame_builder.h"
#include "attribute/profile_flame.h"
#include "output/folded_writer.h"
#include "profile/profile.h"
#include "symbolize/symbolizer.h"
#include "synthetic_profile.h"

namespace aiflame::bench {
namespace {

// Counts what a writer writes and drops it.
class CountingBuf : public std::streambuf {
 public:
  uint64_t bytes = 0;
 protected:
  std::streamsize xsputn(const char*, std::streamsize n) override { bytes += static_cast<uint64_t>(n); return n; }
  int_type overflow(int_type c) override { bytes++; return c; }
};

struct Fixture {
  std::string path;
  SyntheticCounts counts;
  Fixture() {
    path = "/tmp/aiflame_report_bench_" + std::to_string(getpid()) + ".aiflame";
    SyntheticShape shape;
    if (const char* s = std::getenv("AIFLAME_BENCH_SECONDS")) shape.seconds = std::atof(s);
    std::string error;
    if (!write_synthetic_profile(path, shape, &counts, &error)) {
      std::fprintf(stderr, "report_bench: %s\n", error.c_str());
      std::exit(1);
    }
  }
  ~Fixture() { std::remove(path.c_str()); }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void set_counters(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * fixture().counts.pc_records));
  state.counters["pc_records"] = static_cast<double>(fixture().counts.pc_records);
  state.counters["file_MB"] = static_cast<double>(fixture().counts.file_bytes) / 1e6;
}

FlameData build_flame(const Profile& p, const AttributionResult& res) {
  Symbolizer sym(p.modules);
  FrameBuilder fb(p, sym, FrameOptions{.times = false});  // what the folded report builds
  return fb.build(res);
}

// What `aiflame report FILE -o x.folded` does: the streaming path, then the folded writer.
void BM_ReportFolded(benchmark::State& state) {
  for (auto _ : state) {
    auto r = flame_from_profile_file(fixture().path, FrameOptions{.times = false});
    if (!r) state.SkipWithError(r.error().c_str());
    FlameData d = std::move(r->flame);
    CountingBuf buf;
    std::ostream out(&buf);
    FoldedWriter().write(d, out);
    benchmark::DoNotOptimize(buf.bytes);
  }
  set_counters(state);
}
BENCHMARK(BM_ReportFolded)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_StageRead(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(read_profile(fixture().path));
  set_counters(state);
}
BENCHMARK(BM_StageRead)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_StageAttribute(benchmark::State& state) {
  auto p = read_profile(fixture().path);
  size_t attributed = 0;
  for (auto _ : state) attributed = attribute_samples(*p).samples.size();
  set_counters(state);
  state.counters["attributed_samples"] = static_cast<double>(attributed);  // PC records split over launches
}
BENCHMARK(BM_StageAttribute)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_StageFrameBuild(benchmark::State& state) {
  auto p = read_profile(fixture().path);
  AttributionResult res = attribute_samples(*p);
  for (auto _ : state) benchmark::DoNotOptimize(build_flame(*p, res));
  set_counters(state);
}
BENCHMARK(BM_StageFrameBuild)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_StageFoldedWrite(benchmark::State& state) {
  auto p = read_profile(fixture().path);
  FlameData d = build_flame(*p, attribute_samples(*p));
  for (auto _ : state) {
    CountingBuf buf;
    std::ostream out(&buf);
    FoldedWriter().write(d, out);
    benchmark::DoNotOptimize(buf.bytes);
  }
  set_counters(state);
  state.counters["stacks"] = static_cast<double>(d.stacks.size());  // distinct folded lines
}
BENCHMARK(BM_StageFoldedWrite)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace aiflame::bench

BENCHMARK_MAIN();
