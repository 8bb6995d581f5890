// finalize_profile on the demo recording: GPU lines and SASS mnemonics are appended as records (with a
// stand-in nvdisasm that prints the real nvdisasm listing of the demo cubin), and the report then
// names instructions from the stored records alone.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <set>

#include "attribute/frame_builder.h"
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

std::string fake_nvdisasm() {
  std::string dir = test::temp_path("bin");
  mkdir(dir.c_str(), 0700);
  std::string tool = dir + "/nvdisasm";
  test::write_file(tool, "#!/bin/sh\ncat " + source("tests/data/nvdisasm/demo_c.txt") + "\n");
  chmod(tool.c_str(), 0700);
  return tool;
}

TEST(FinalizeGpu, StoresLinesAndMnemonicsForEverySampledInstruction) {
  std::string path = copy_of_demo();
  std::vector<std::string> notes;
  auto before = finalize_profile(path, {true, fake_nvdisasm()}, &notes);
  ASSERT_TRUE(before.ok()) << before.error();
  EXPECT_TRUE(notes.empty());
  std::set<GpuPc> pcs;
  for (const auto& b : before->batches)
    for (const auto& s : b.samples) pcs.insert({s.cubin_crc, s.function, s.pc_offset});
  auto after = read_profile(path);
  ASSERT_TRUE(after.ok()) << after.error();
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

}  // namespace
}  // namespace aiflame
