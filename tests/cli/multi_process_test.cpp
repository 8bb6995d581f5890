// Several processes of one job: directory inputs, per-process rows (GPU busy as a union of kernel
// intervals) and the root frames chosen by --group-by.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "attribute/frame_builder.h"
#include "cli/input_files.h"
#include "cli/process_table.h"
#include "test_util.h"

namespace aiflame {
namespace {

KernelRecord kernel(uint32_t device, uint64_t start, uint64_t end) {
  KernelRecord k;
  k.device = device;
  k.start = start;
  k.end = end;
  return k;
}

TEST(ProcessTable, BusyTimeCountsOverlappingKernelsOnce) {
  Profile p;
  ProcessRecord pr;
  pr.pid = 7;
  pr.rank = 1;
  pr.start_timestamp = 1000;
  p.process = pr;
  EndRecord e;
  e.timestamp = 11000;
  p.end = e;
  // 1000..11000 ns: busy 2000..4000 (two overlapping kernels) and 6000..7000.
  p.kernels = {kernel(0, 2000, 3500), kernel(0, 3000, 4000), kernel(0, 6000, 7000)};
  ProcessRow r = process_row(p, AttributionStats{}, "x");
  EXPECT_EQ(r.rank, 1);
  EXPECT_NEAR(r.seconds, 10000e-9, 1e-12);
  EXPECT_NEAR(r.busy_seconds, 3000e-9, 1e-12);
  EXPECT_NEAR(r.busy_fraction(), 0.3, 1e-9);
  EXPECT_EQ(r.devices, std::vector<uint32_t>{0});
}

TEST(ProcessTable, PrintsRanksInOrderAndTheImbalance) {
  ProcessRow a, b, launcher;
  a.rank = 1; a.pid = 20; a.seconds = 10; a.busy_seconds = 5; a.samples = 10; a.kernels = 3;
  b.rank = 0; b.pid = 30; b.seconds = 10; b.busy_seconds = 9; b.samples = 5; b.kernels = 3;
  launcher.pid = 10; launcher.seconds = 12;  // torchrun's agent: CUDA initialised, no kernels
  std::ostringstream out;
  print_process_table({a, b, launcher}, out);
  std::string s = out.str();
  EXPECT_LT(s.find("rank 0 (pid 30)"), s.find("rank 1 (pid 20)"));
  EXPECT_NE(s.find("3 processes, 15 GPU samples in all; GPU busy from 50.0% (rank 1) to 90.0% (rank 0)"),
            std::string::npos) << s;
}

TEST(InputFiles, ADirectoryStandsForTheProfilesInIt) {
  namespace fs = std::filesystem;
  fs::path dir = test::temp_path("job");
  fs::create_directories(dir);
  fs::copy_file(std::string(AIFLAME_SOURCE_DIR) + "/tests/data/demo_matmul.aiflame", dir / "run.data.20", fs::copy_options::overwrite_existing);
  fs::copy_file(std::string(AIFLAME_SOURCE_DIR) + "/tests/data/demo_matmul.aiflame", dir / "run.data.10", fs::copy_options::overwrite_existing);
  std::ofstream(dir / "notes.txt") << "not a profile\n";
  auto r = expand_inputs({dir.string(), "other.folded"});
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0], (dir / "run.data.10").string());
  EXPECT_EQ((*r)[1], (dir / "run.data.20").string());
  EXPECT_EQ((*r)[2], "other.folded");
  fs::remove(dir / "run.data.10");
  fs::remove(dir / "run.data.20");
  auto none = expand_inputs({dir.string()});
  EXPECT_FALSE(none.ok());
  fs::remove_all(dir);
}

// One sample on device 1 of rank 3: what each --group-by puts at the root.
std::vector<std::string> roots(GroupBy g, int32_t rank) {
  Profile p;
  ProcessRecord pr;
  pr.pid = 99;
  pr.rank = rank;
  pr.command = "/usr/bin/python3 train.py";
  pr.interval_ms = 10;
  p.process = pr;
  p.strings = {{1, "_Z1kv"}};
  PcBatchRecord b;
  b.device = 1;
  b.timestamp = 100;
  b.samples = {{1, 0, 0x10, 0, 4, 0}};
  p.batches = {b};
  AttributionResult res = attribute_samples(p);
  Symbolizer sym(p.modules);
  FrameOptions o;
  o.group_by = g;
  FrameBuilder fb(p, sym, o);
  FlameData d = fb.build(res);
  // The one process's row, its stacks pointing at it.
  EXPECT_EQ(d.processes.size(), 1u);
  EXPECT_EQ(d.processes.at(0).pid, 99u);
  EXPECT_EQ(d.processes.at(0).rank, rank);
  EXPECT_EQ(d.processes.at(0).name, "python3");
  EXPECT_EQ(d.processes.at(0).samples, 4u);
  EXPECT_EQ(d.stacks.at(0).process, 0u);
  std::vector<std::string> n;
  for (const auto& f : d.stacks.at(0).frames) {
    if (f.kind == FrameKind::Unattributed) break;
    n.push_back(f.name);
  }
  return n;
}

TEST(GroupBy, ChoosesTheRootFrames) {
  EXPECT_EQ(roots(GroupBy::Process, 3), (std::vector<std::string>{"python3", "99"}));
  EXPECT_EQ(roots(GroupBy::Rank, 3), (std::vector<std::string>{"rank 3"}));
  EXPECT_EQ(roots(GroupBy::Rank, -1), (std::vector<std::string>{"python3", "99"}));  // not distributed
  EXPECT_EQ(roots(GroupBy::Device, 3), (std::vector<std::string>{"GPU 1"}));
  EXPECT_EQ(roots(GroupBy::None, 3), std::vector<std::string>{});
}

}  // namespace
}  // namespace aiflame
