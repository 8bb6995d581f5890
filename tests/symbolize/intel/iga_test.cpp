// Intel instruction names: iga64's listing, the zebin's kernels and platform, and iga64 itself on the
// test's GPU binary (tests/record/levelzero/kernels.asm, assembled at build time) when it is there.
#include "symbolize/intel/iga.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace aiflame {
namespace {

TEST(IgaListing, OffsetsAndMnemonicsPredicatesSkipped) {
  auto m = parse_iga_listing(
      "L0:\n"
      "/* [0000]  */         mov (16|M0)   r10.0<1>:f    r2.0<1;1,0>:f\n"
      "/* [0010]  */  (W&f0.0) send.ugm (16|M0)  r20  r30  null:0  0x0  0x08200580\n"
      "/* [00a0]  */         sync.nop    null  {Compacted}\n"
      "/* [zz]  */ bad line\n"
      "garbage\n");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0x0], "mov");
  EXPECT_EQ(m[0x10], "send.ugm");
  EXPECT_EQ(m[0xa0], "sync.nop");
}

TEST(IgaListing, NotElfHasNoKernels) {
  uint32_t core = 7;
  EXPECT_EQ(zebin_kernel_code("not an elf", "kernel_a"), "");
  EXPECT_EQ(zebin_iga_platform("not an elf", &core), "");
  EXPECT_EQ(core, 0u);
}

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The binary tests/CMakeLists.txt builds when libze-dev, GNU as and iga64 are there.
TEST(IgaListing, TheTestZebinsKernelsAndPlatform) {
  const std::string image = read_file(AIFLAME_BINARY_DIR "/tests/ze_kernels.zebin");
  if (image.empty()) GTEST_SKIP() << "no tests/ze_kernels.zebin (needs libze-dev and libigc-tools)";
  EXPECT_EQ(zebin_kernel_code(image, "kernel_a").size(), 0x50u);
  EXPECT_EQ(zebin_kernel_code(image, "kernel_c"), "");
  uint32_t core = 0;
  EXPECT_EQ(zebin_iga_platform(image, &core), "12p5");
  EXPECT_EQ(core, 0x0c05u);
  const std::string tool = find_iga64();
  if (tool.empty()) GTEST_SKIP() << iga64_not_found_note();
  auto names = iga_disassemble(tool, "12p5", zebin_kernel_code(image, "kernel_b"), 20000);
  ASSERT_TRUE(names) << names.error();
  EXPECT_EQ((*names)[0x00], "mov");
  EXPECT_EQ((*names)[0x10], "add");
  EXPECT_EQ((*names)[0x20], "mul");
  EXPECT_EQ((*names)[0x30], "and");
  EXPECT_EQ((*names)[0x40], "nop");
}

}  // namespace
}  // namespace aiflame
