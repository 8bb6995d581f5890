// The nvdisasm listing parser on real nvdisasm 13.0 outputs of the demo cubin, and the runner against
// stand-in tools that answer, fail or hang.
#include "symbolize/nvidia/nvdisasm.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>

#include "test_util.h"

namespace aiflame {
namespace {

std::string fixture(const std::string& name) {
  return test::read_file(std::string(AIFLAME_SOURCE_DIR) + "/tests/data/nvdisasm/" + name);
}

constexpr const char* kTiling = "_Z30matmul_local_access_and_tilingPKfS0_Pfi";
constexpr const char* kLocal = "_Z19matmul_local_accessPKfS0_Pfi";
constexpr const char* kBasic = "_Z12matmul_basicPKfS0_Pfi";

TEST(NvdisasmParser, ReadsEveryInstructionOfTheDemoCubin) {
  SassListing l = parse_nvdisasm(fixture("demo_c.txt"));
  ASSERT_EQ(l.size(), 3u);
  // One 16-byte instruction per offset over each kernel's .size (from the listing's own .size lines:
  // .L_x_20 etc. are the kernels' ends; 0x2500, 0x800, 0xd80 in the cubin's section table).
  EXPECT_EQ(l[kTiling].size(), 0x2500u / 16);
  EXPECT_EQ(l[kLocal].size(), 0x800u / 16);
  EXPECT_EQ(l[kBasic].size(), 0xd80u / 16);
  EXPECT_EQ(l[kTiling][0x0], "LDC");
  EXPECT_EQ(l[kTiling][0x40], "ULDC.64");
  EXPECT_EQ(l[kTiling][0xc0], "BRA");  // "@P0 BRA `(.L_x_0)": the guard is not the mnemonic
  EXPECT_EQ(l[kTiling][0xd0], "HFMA2.MMA");
  EXPECT_EQ(l[kBasic][0x70], "IMAD");
  EXPECT_EQ(l[kBasic][0x1f0], "BRA");  // "@!P0 BRA"
  for (const auto& [fn, ins] : l)
    for (const auto& [off, m] : ins) {
      EXPECT_EQ(off % 16, 0u) << fn;
      EXPECT_FALSE(m.empty());
      EXPECT_TRUE(m.find_first_of(" ;,@") == std::string::npos) << m;
    }
}

TEST(NvdisasmParser, LineInfoAndLifeRangeVariantsReadTheSame) {
  SassListing plain = parse_nvdisasm(fixture("demo_c.txt"));
  EXPECT_EQ(parse_nvdisasm(fixture("demo_c_g_gi.txt")), plain);
  SassListing plr = parse_nvdisasm(fixture("demo_c_g_gi_plr_head.txt"));  // first instructions only
  ASSERT_EQ(plr.count(kTiling), 1u);
  ASSERT_GT(plr[kTiling].size(), 10u);
  for (const auto& [off, m] : plr[kTiling]) EXPECT_EQ(m, plain[kTiling][off]) << off;
}

TEST(NvdisasmParser, SkipsWhatIsNotAnInstruction) {
  EXPECT_TRUE(parse_nvdisasm("").empty());
  EXPECT_TRUE(parse_nvdisasm("/*0010*/ FFMA R1, R2, R3, R4 ;\n").empty());  // before any kernel label
  SassListing l = parse_nvdisasm("k:\n/*0000*/ NOP ;\n/*zz*/ BAD ;\n/*0010*/ @P0 ;\n/*0020*/ 123 ;\n.L_x_1:\n/*0030*/ EXIT ;\n");
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l["k"], (std::map<uint64_t, std::string>{{0x0, "NOP"}, {0x30, "EXIT"}}));
}

// A stand-in nvdisasm: a shell script in a fresh directory.
std::string fake_tool(const std::string& body) {
  std::string dir = test::temp_path("bin");
  mkdir(dir.c_str(), 0700);
  std::string path = dir + "/nvdisasm";
  test::write_file(path, "#!/bin/sh\n" + body + "\n");
  chmod(path.c_str(), 0700);
  return path;
}

TEST(NvdisasmRunner, RunsTheToolOnACopyOfTheImage) {
  std::string listing_path = std::string(AIFLAME_SOURCE_DIR) + "/tests/data/nvdisasm/demo_c.txt";
  std::string seen = test::temp_path("seen.cubin");
  // The tool must get "-c FILE", FILE holding the image's bytes.
  std::string tool = fake_tool("[ \"$1\" = -c ] || exit 9\ncp \"$2\" " + seen + "\ncat " + listing_path);
  std::string image("\x7f" "ELF\0binary\xff", 12);
  auto l = disassemble(tool, image);
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_EQ(*l, parse_nvdisasm(fixture("demo_c.txt")));
  EXPECT_EQ(test::read_file(seen), image);
}

TEST(NvdisasmRunner, FailuresAreOneLine) {
  auto failed = disassemble(fake_tool("echo 'nvdisasm fatal : bad elf' >&2; exit 3"), "x");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().find("exit status 3"), std::string::npos) << failed.error();
  auto silent = disassemble(fake_tool("exit 0"), "x");
  ASSERT_FALSE(silent.ok());
  EXPECT_NE(silent.error().find("no instructions"), std::string::npos) << silent.error();
  auto missing = disassemble("/nonexistent/nvdisasm", "x");
  ASSERT_FALSE(missing.ok());
  for (const auto* e : {&failed, &silent, &missing}) EXPECT_EQ(e->error().find('\n'), std::string::npos);
}

TEST(NvdisasmRunner, AToolThatHangsIsKilledAtTheLimit) {
  auto t0 = std::chrono::steady_clock::now();
  auto hung = disassemble(fake_tool("exec sleep 30"), "x", 300);
  ASSERT_FALSE(hung.ok());
  EXPECT_NE(hung.error().find("no answer"), std::string::npos) << hung.error();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  // Closing its output does not end the wait: the tool still gets only what is left of the limit.
  t0 = std::chrono::steady_clock::now();
  auto closed = disassemble(fake_tool("exec >&-; sleep 30"), "x", 300);
  ASSERT_FALSE(closed.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST(NvdisasmFinder, ExplicitPathThenPath) {
  EXPECT_EQ(find_nvdisasm("/nonexistent/nvdisasm"), "");
  std::string tool = fake_tool("exit 0");
  EXPECT_EQ(find_nvdisasm(tool), tool);
  std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  std::string dir = tool.substr(0, tool.rfind('/'));
  setenv("PATH", ("/nonexistent:" + dir).c_str(), 1);
  EXPECT_EQ(find_nvdisasm(), tool);
  setenv("PATH", old_path.c_str(), 1);
}

}  // namespace
}  // namespace aiflame
