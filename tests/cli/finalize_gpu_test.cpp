// finalize_profile on the demo recording: GPU lines and SASS mnemonics are appended as records (with a
// stand-in nvdisasm that prints the real nvdisasm listing of the demo cubin), and the report then
// names instructions from the stored records alone.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "attribute/frame_builder.h"
#include "attribute/profile_flame.h"
#include "cli/finalize.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string source(const std::string& rel) { return std::string(AIFLAME_SOURCE_DIR) + "/" + rel; }

std::string copy_of_demo() {
  std::string path = test::temp_path("demo.aiflame");
  test::write_file(path, test::read_file(source("tests/data/demo_matmul_unfinalized.aiflame")));
  return path;
}

std::string fake_nvdisasm(const std::string& body = "cat " + source("tests/data/nvdisasm/demo_c.txt")) {
  std::string dir = test::temp_path("bin");
  mkdir(dir.c_str(), 0700);
  std::string tool = dir + "/nvdisasm";
  test::write_file(tool, "#!/bin/sh\n" + body + "\n");
  chmod(tool.c_str(), 0700);
  return tool;
}

std::set<GpuPc> sampled(const Profile& p) {
  std::set<GpuPc> pcs;
  for (const auto& b : p.batches)
    for (const auto& s : b.samples) pcs.insert({s.code_object_id, s.function, s.pc_offset});
  return pcs;
}

TEST(FinalizeGpu, StoresLinesAndMnemonicsForEverySampledInstruction) {
  std::string path = copy_of_demo();
  std::vector<std::string> notes;
  auto before = finalize_profile(path, {true, fake_nvdisasm()}, &notes);
  ASSERT_TRUE(before.ok()) << before.error();
  EXPECT_TRUE(notes.empty());
  EXPECT_TRUE(before->batches.empty());  // streamed from the file, not held
  auto after = read_profile(path);
  ASSERT_TRUE(after.ok()) << after.error();
  std::set<GpuPc> pcs = sampled(*after);
  ASSERT_GT(pcs.size(), 100u);
  EXPECT_EQ(after->gpu_lines.size(), pcs.size());
  EXPECT_EQ(after->gpu_sass.size(), pcs.size());
  for (const auto& [pc, frames] : after->gpu_lines) {
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].file, "/work/main/demo/matmul.cu");
  }
  // Again: nothing left to add, the file stays as it is.
  std::string bytes = test::read_file(path);
  ASSERT_TRUE(finalize_profile(path, {true, fake_nvdisasm()}).ok());
  EXPECT_EQ(test::read_file(path), bytes);

  // The report needs neither the cubin nor nvdisasm any more.
  for (auto& [crc, c] : after->cubins) c.image.clear();
  Symbolizer sym({});
  GpuSymbolizer gpu(*after, {true, ""});  // nvdisasm "missing": must not matter
  FrameOptions opt;
  opt.gpu = &gpu;
  FrameBuilder fb(*after, sym, opt);
  FlameData d = fb.build(attribute_samples(*after));
  bool saw_ffma = false;
  for (const auto& s : d.stacks) {
    const std::string& ins = s.frames[s.frames.size() - 2].name;
    EXPECT_NE(ins.find(" 0x"), std::string::npos) << ins;  // "MNEMONIC 0xoffset"
    if (ins.rfind("FFMA ", 0) == 0) saw_ffma = true;
    EXPECT_EQ(s.frames[s.frames.size() - 3].name.rfind("matmul.cu:", 0), 0u);
  }
  EXPECT_TRUE(saw_ffma);  // a matrix multiply spends samples on fused multiply-adds
  EXPECT_TRUE(gpu.notes().empty());
  std::remove(path.c_str());
}

TEST(FinalizeGpu, MissingOrFailingNvdisasmLeavesOffsetsAndOneNote) {
  std::string path = copy_of_demo();
  std::vector<std::string> notes;
  ASSERT_TRUE(finalize_profile(path, {true, ""}, &notes).ok());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("nvdisasm not found"), std::string::npos);
  auto after = read_profile(path);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->gpu_lines.empty());  // lines need no tool
  EXPECT_TRUE(after->gpu_sass.empty());
  std::remove(path.c_str());
}

// nvdisasm answered but named none of the sampled instructions: empty names are stored, and a report
// with nvdisasm at hand does not run it again for them.
TEST(FinalizeGpu, InstructionsNvdisasmDidNotNameAreStoredSoTheReportDoesNotAskAgain) {
  std::string path = copy_of_demo();
  auto before = finalize_profile(path, {true, fake_nvdisasm("printf 'other:\\n/*0000*/ NOP ;\\n'")});
  ASSERT_TRUE(before.ok()) << before.error();
  auto after = read_profile(path);
  ASSERT_TRUE(after.ok()) << after.error();
  std::set<GpuPc> pcs = sampled(*after);
  ASSERT_FALSE(pcs.empty());
  ASSERT_EQ(after->gpu_sass.size(), pcs.size());
  for (const auto& [pc, m] : after->gpu_sass) EXPECT_EQ(m, "");
  std::string ran = test::temp_path("ran");
  GpuSymbolizer gpu(*after, {true, fake_nvdisasm("touch " + ran + "; cat " + source("tests/data/nvdisasm/demo_c.txt"))});
  for (const GpuPc& pc : pcs) EXPECT_EQ(gpu.mnemonic(pc), "");
  EXPECT_FALSE(std::ifstream(ran).good()) << "nvdisasm ran again";
  std::remove(path.c_str());
}

// Out of time at record end: nothing is stored, so a later report may still derive the names.
TEST(FinalizeGpu, SassNotReachedInTheBudgetIsLeftForTheReport) {
  std::string path = copy_of_demo();
  std::vector<std::string> notes;
  FinalizeStats stats;
  ASSERT_TRUE(finalize_profile(path, {true, fake_nvdisasm("exec sleep 30")}, &notes, &stats, 300).ok());
  EXPECT_EQ(notes.size(), 1u);
  auto after = read_profile(path);
  ASSERT_TRUE(after.ok()) << after.error();
  EXPECT_TRUE(after->gpu_sass.empty());
  EXPECT_FALSE(after->gpu_lines.empty());
  GpuSymbolizer gpu(*after, {true, fake_nvdisasm()});
  EXPECT_FALSE(gpu.mnemonic(*sampled(*after).begin()).empty());
  std::remove(path.c_str());
}

// A report meeting instructions without stored names runs nvdisasm once per sampled kernel, restricted
// to it (PyTorch cubins hold hundreds of kernels), and gives up on a tool that ran out of time.
TEST(GpuSymbolizerLazy, OneRestrictedRunPerKernelAndOneWaitForAHungTool) {
  auto p = read_profile(source("tests/data/demo_matmul_unfinalized.aiflame"));
  ASSERT_TRUE(p.ok()) << p.error();
  std::string log = test::temp_path("args.log");
  GpuSymbolizer gpu(*p, {true, fake_nvdisasm("echo \"$1 $2 $3\" >> " + log + "; cat " +
                                             source("tests/data/nvdisasm/demo_c.txt"))});
  std::set<std::string> kernels;
  for (const GpuPc& pc : sampled(*p)) {
    EXPECT_FALSE(gpu.mnemonic(pc).empty());
    kernels.insert(p->str(pc.function));
  }
  ASSERT_EQ(kernels.size(), 3u);
  std::string runs = test::read_file(log);
  EXPECT_EQ(std::count(runs.begin(), runs.end(), '\n'), 3) << runs;
  for (const char* fun : {"-c -fun 16\n", "-c -fun 17\n", "-c -fun 18\n"}) EXPECT_NE(runs.find(fun), std::string::npos) << runs;

  std::string hung_log = test::temp_path("hung.log");
  GpuSymbolizerOptions opt{true, fake_nvdisasm("echo run >> " + hung_log + "; exec sleep 30")};
  opt.timeout_ms = 300;
  GpuSymbolizer hung(*p, opt);
  for (const GpuPc& pc : sampled(*p)) EXPECT_EQ(hung.mnemonic(pc), "");
  EXPECT_EQ(test::read_file(hung_log), "run\n");
  EXPECT_EQ(hung.notes().size(), 1u);
}

// A report of a profile without stored names (here: the demo as recorded, before finalize) asks nvdisasm
// once for all its sampled kernels, restricted to them, before streaming the batches.
TEST(ReportNvdisasm, OneRunForAllUnnamedKernelsOfACubin) {
  std::string log = test::temp_path("args.log");
  GpuSymbolizerOptions gpu{true, fake_nvdisasm("echo \"$1 $2 $3\" >> " + log + "; cat " +
                                               source("tests/data/nvdisasm/demo_c.txt"))};
  auto r = flame_from_profile_file(source("tests/data/demo_matmul_unfinalized.aiflame"), FrameOptions{}, gpu);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(test::read_file(log), "-c -fun 16,17,18\n");
  EXPECT_TRUE(r->gpu_notes.empty());
  size_t named = 0;
  for (const auto& st : r->flame.stacks)
    if (st.frames.size() >= 2 && st.frames[st.frames.size() - 2].name.str().rfind("FFMA ", 0) == 0) named += st.count;
  EXPECT_GT(named, 0u);
}

}  // namespace
}  // namespace aiflame
