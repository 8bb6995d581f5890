// GPU source lines from cubin line tables: the demo cubin recorded on the H100 (checked line by line
// against real nvdisasm -g output of the same cubin) and cubins nvcc builds in the test build.
#include "symbolize/nvidia/cubin_lines.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "profile/profile.h"
#include "symbolize/nvidia/nvdisasm.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string demo_cubin() {
  auto p = read_profile(std::string(AIFLAME_SOURCE_DIR) + "/tests/data/demo_matmul_unfinalized.aiflame");
  EXPECT_TRUE(p.ok());
  EXPECT_EQ(p->cubins.size(), 1u);
  return p->cubins.begin()->second.image;
}

// Every instruction of the demo's three kernels gets the line nvdisasm -g prints above it.
TEST(CubinLines, DemoCubinMatchesNvdisasmLineAnnotations) {
  auto lines = CubinLines::read(demo_cubin());
  ASSERT_TRUE(lines.ok()) << lines.error();
  ASSERT_TRUE(lines->has_lines());
  std::istringstream listing(test::read_file(std::string(AIFLAME_SOURCE_DIR) + "/tests/data/nvdisasm/demo_c_g_gi.txt"));
  std::regex file_line(R"re(//## File "([^"]+)", line (\d+)\s*$)re"), ins(R"(^\s*/\*([0-9a-f]{4,})\*/)"),
      label(R"(^(_Z\w+):\s*$)");
  std::string line, function, file;
  unsigned expected = 0;
  size_t checked = 0;
  while (std::getline(listing, line)) {
    std::smatch m;
    if (std::regex_search(line, m, label)) {
      function = m[1];
      expected = 0;
    } else if (std::regex_search(line, m, file_line)) {
      file = m[1];
      expected = static_cast<unsigned>(std::stoul(m[2]));
    } else if (!function.empty() && expected && std::regex_search(line, m, ins)) {
      uint64_t off = std::stoull(m[1], nullptr, 16);
      auto frames = lines->lookup(function, off);
      ASSERT_EQ(frames.size(), 1u) << function << "+" << off;  // the demo inlines nothing
      EXPECT_EQ(frames[0].file, file);
      EXPECT_EQ(frames[0].line, expected) << function << "+0x" << std::hex << off;
      EXPECT_EQ(frames[0].function, "");
      checked++;
    }
  }
  EXPECT_EQ(checked, (0x2500u + 0x800u + 0xd80u) / 16);
}

TEST(CubinLines, UnknownKernelsAndOffsetsHaveNoLine) {
  auto lines = CubinLines::read(demo_cubin());
  ASSERT_TRUE(lines.ok());
  EXPECT_TRUE(lines->lookup("_Z7missingv", 0).empty());
  EXPECT_TRUE(lines->lookup("_Z12matmul_basicPKfS0_Pfi", 0xd80).empty());  // one past its end
  EXPECT_FALSE(lines->lookup("_Z12matmul_basicPKfS0_Pfi", 0xd70).empty());
}

TEST(CubinLines, NotElfIsAnError) {
  EXPECT_FALSE(CubinLines::read("").ok());
  EXPECT_FALSE(CubinLines::read("definitely not an ELF image").ok());
}

#ifdef AIFLAME_TEST_CUBIN_DIR
std::string built_cubin(const std::string& name) {
  std::string bytes = test::read_file(std::string(AIFLAME_TEST_CUBIN_DIR) + "/" + name);
  EXPECT_FALSE(bytes.empty()) << name;
  return bytes;
}

std::string chain(const std::vector<GpuSourceFrame>& frames) {
  std::string s;
  for (const auto& f : frames) {
    std::string file = f.file.substr(f.file.rfind('/') + 1);
    s += (s.empty() ? "" : " > ") + (f.function.empty() ? "" : f.function + "@") + file + ":" + std::to_string(f.line);
  }
  return s;
}

// tests/data/gpu/inline_kernels.cu: outer() inlines inner(), twice_inlined() inlines outer(). Every
// instruction's chain must run from the kernel's own line through each inlined call, and the call
// sites must be the lines of the source that call them.
TEST(CubinLines, InlinedDeviceFunctionsFromANvccBuiltCubin) {
  auto lines = CubinLines::read(built_cubin("inline_kernels.cubin"));
  ASSERT_TRUE(lines.ok()) << lines.error();
  std::set<std::string> twice, once;
  for (uint64_t off = 0; off < 0x1000; off += 16) {
    auto t = lines->lookup("_Z13twice_inlinedPfi", off);
    if (!t.empty()) twice.insert(chain(t));
    auto o = lines->lookup("_Z12once_inlinedPf", off);
    if (!o.empty()) once.insert(chain(o));
  }
  // Every chain that reaches inner() does so from the line that calls it.
  for (const auto& c : twice) {
    SCOPED_TRACE(c);
    EXPECT_EQ(c.rfind("inline_kernels.cu:1", 0), 0u);  // starts at a line of the kernel (11..14)
    if (c.find("_Z5outerf@") != std::string::npos) {
      EXPECT_NE(c.find("inline_kernels.cu:13 > _Z5outerf@"), std::string::npos);
    }
    if (c.find("_Z5innerf@") != std::string::npos) {
      EXPECT_NE(c.find("_Z5outerf@inline_kernels.cu:8 > _Z5innerf@inline_kernels.cu:5"), std::string::npos);
    }
  }
  EXPECT_EQ(twice.count("inline_kernels.cu:13 > _Z5outerf@inline_kernels.cu:8 > _Z5innerf@inline_kernels.cu:5"), 1u);
  EXPECT_EQ(twice.count("inline_kernels.cu:13 > _Z5outerf@inline_kernels.cu:9"), 1u);
  EXPECT_EQ(once.count("inline_kernels.cu:16 > _Z5innerf@inline_kernels.cu:5"), 1u);
  for (const auto& c : once) EXPECT_EQ(c.find("outer"), std::string::npos) << c;
}

TEST(CubinLines, CubinWithoutLineInfoHasNoLines) {
  auto lines = CubinLines::read(built_cubin("inline_kernels_nolines.cubin"));
  ASSERT_TRUE(lines.ok()) << lines.error();
  EXPECT_FALSE(lines->has_lines());
  EXPECT_TRUE(lines->lookup("_Z13twice_inlinedPfi", 0).empty());
}
#endif

}  // namespace
}  // namespace aiflame
