// Inlined native functions from DWARF: a library built with -g -O1 (elf_fixture_inline.cpp) whose
// exported function has two levels inlined into it; the return address taken in the innermost one
// must read outer -> middle -> innermost, each with its line.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "record/module_map.h"
#include "symbolize/symbolizer.h"

namespace aiflame {
namespace {

uint32_t line_of(const std::string& marker) {
  std::ifstream in(std::string(AIFLAME_SOURCE_DIR) + "/tests/symbolize/elf_fixture_inline.cpp");
  std::string text;
  for (uint32_t n = 1; std::getline(in, text); n++)
    if (text.find("// " + marker) != std::string::npos) return n;
  return 0;
}

TEST(NativeLines, InlinedFunctionsReadOutermostFirstWithTheirLines) {
  void* lib = dlopen((std::string(AIFLAME_ELF_FIXTURE_DIR) + "/libelf_fixture_inline.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto outer = reinterpret_cast<uint64_t (*)(int)>(dlsym(lib, "elf_inline_outer"));
  ASSERT_NE(outer, nullptr);
  uint64_t ra = outer(3);
  Symbolizer sym(read_loaded_modules());
  NativeSymbol s = sym.lookup(ra);
  EXPECT_EQ(s.function, "elf_inline_outer");
  ASSERT_EQ(s.levels.size(), 3u);
  EXPECT_EQ(s.levels[0], (SourceFrame{"elf_inline_outer", "elf_fixture_inline.cpp", line_of("MARK_OUTER")}));
  EXPECT_EQ(s.levels[1], (SourceFrame{"fixture::middle(int)", "elf_fixture_inline.cpp", line_of("MARK_MIDDLE")}));
  EXPECT_EQ(s.levels[2], (SourceFrame{"fixture::innermost(int)", "elf_fixture_inline.cpp", line_of("MARK_INNER")}));
  EXPECT_NE(line_of("MARK_INNER"), 0u);
}

TEST(NativeLines, AFunctionWithoutInliningIsOneLevelWithItsLine) {
  void* lib = dlopen((std::string(AIFLAME_ELF_FIXTURE_DIR) + "/libelf_fixture_inline.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  // elf_inline_return_address's own first instruction: no inlined scope covers it.
  auto f = reinterpret_cast<uint64_t>(dlsym(lib, "elf_inline_return_address"));
  ASSERT_NE(f, 0u);
  Symbolizer sym(read_loaded_modules());
  NativeSymbol s = sym.lookup(f + 1);
  EXPECT_EQ(s.function, "elf_inline_return_address");
  ASSERT_EQ(s.levels.size(), 1u);
  EXPECT_EQ(s.levels[0].file, "elf_fixture_inline.cpp");
  EXPECT_GT(s.levels[0].line, 0u);
}

}  // namespace
}  // namespace aiflame
