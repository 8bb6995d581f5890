// SASS of sampled kernels at record end: nvdisasm restricted to the sampled kernels by their symbol
// indices in the demo cubin recorded on the H100, a tool that refuses --function, the time budget, and
// kernels never disassembled twice. Stand-in tools log their arguments and print real nvdisasm output.
#include "symbolize/nvidia/sass_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <sstream>

#include "profile/profile.h"
#include "test_util.h"

namespace aiflame {
namespace {

constexpr const char* kTiling = "_Z30matmul_local_access_and_tilingPKfS0_Pfi";
constexpr const char* kLocal = "_Z19matmul_local_accessPKfS0_Pfi";
constexpr const char* kBasic = "_Z12matmul_basicPKfS0_Pfi";

std::string demo_cubin() {
  auto p = read_profile(std::string(AIFLAME_SOURCE_DIR) + "/tests/data/demo_matmul_unfinalized.aiflame");
  EXPECT_TRUE(p.ok());
  return p.ok() && !p->cubins.empty() ? p->cubins.begin()->second.image : std::string();
}

std::string listing_path() { return std::string(AIFLAME_SOURCE_DIR) + "/tests/data/nvdisasm/demo_c.txt"; }

// A stand-in nvdisasm that appends its arguments (cubin path left out) to `log`, then runs `body`.
std::string fake_tool(const std::string& log, const std::string& body) {
  std::string dir = test::temp_path("bin");
  mkdir(dir.c_str(), 0700);
  std::string path = dir + "/nvdisasm";
  test::write_file(path, "#!/bin/sh\nargs=\"\"\nfor a in \"$@\"; do case $a in *.cubin) ;; *) args=\"$args $a\";; esac; done\n"
                         "echo \"$args\" >> " + log + "\n" + body + "\n");
  chmod(path.c_str(), 0700);
  return path;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(test::read_file(path));
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(FunctionSymbols, IndicesOfTheDemoKernelsInItsSymbolTable) {
  std::string cubin = demo_cubin();
  // readelf -s on the cubin: 16 tiling, 17 local_access, 18 basic.
  EXPECT_EQ(function_symbols(cubin, {kBasic, kTiling}), (std::vector<size_t>{16, 18}));
  EXPECT_EQ(function_symbols(cubin, {kLocal}), (std::vector<size_t>{17}));
  EXPECT_TRUE(function_symbols(cubin, {"_Z7missingv"}).empty());
  EXPECT_TRUE(function_symbols("not an elf image", {kBasic}).empty());
}

TEST(SassCache, DisassemblesOnlyTheSampledKernels) {
  std::string cubin = demo_cubin(), log = test::temp_path("args.log");
  std::string tool = fake_tool(log, "cat " + listing_path());
  SassCache cache;
  std::vector<std::string> notes;
  cache.derive(tool, {{0x91dc1da9, {cubin, {kBasic, kTiling}, 10}}}, 10000, 2, notes);
  EXPECT_TRUE(notes.empty()) << notes.front();
  EXPECT_EQ(lines_of(log), (std::vector<std::string>{" -c -fun 16,18"}));
  ASSERT_NE(cache.mnemonic(0x91dc1da9, kBasic, 0x70), nullptr);
  EXPECT_EQ(*cache.mnemonic(0x91dc1da9, kBasic, 0x70), "IMAD");
  EXPECT_EQ(*cache.mnemonic(0x91dc1da9, kTiling, 0xd0), "HFMA2.MMA");
  // The listing also named local_access (the stand-in ignores -fun), but it was not asked for.
  EXPECT_EQ(cache.mnemonic(0x91dc1da9, kLocal, 0x0), nullptr);
  EXPECT_TRUE(cache.tried(0x91dc1da9, kBasic));
  EXPECT_TRUE(cache.answered(0x91dc1da9, kBasic));
  EXPECT_FALSE(cache.tried(0x91dc1da9, kLocal));
  EXPECT_FALSE(cache.answered(0x91dc1da9, kLocal));
  EXPECT_EQ(cache.stats().cubins, 1u);
  EXPECT_EQ(cache.stats().kernels, 2u);

  // A second profile of the same recording (another rank): only the kernel not asked for yet runs.
  cache.derive(tool, {{0x91dc1da9, {cubin, {kBasic, kLocal}, 5}}}, 10000, 2, notes);
  EXPECT_EQ(lines_of(log), (std::vector<std::string>{" -c -fun 16,18", " -c -fun 17"}));
  EXPECT_EQ(*cache.mnemonic(0x91dc1da9, kLocal, 0x0), parse_nvdisasm(test::read_file(listing_path()))[kLocal][0x0]);
  cache.derive(tool, {{0x91dc1da9, {cubin, {kBasic, kLocal, kTiling}, 5}}}, 10000, 2, notes);
  EXPECT_EQ(lines_of(log).size(), 2u);
}

TEST(SassCache, AToolThatRefusesFunctionGetsTheWholeCubin) {
  std::string cubin = demo_cubin(), log = test::temp_path("args.log");
  std::string tool = fake_tool(log, "[ \"$2\" = -fun ] && { echo 'unknown option' >&2; exit 1; }\ncat " + listing_path());
  SassCache cache;
  std::vector<std::string> notes;
  cache.derive(tool, {{1, {cubin, {kBasic}, 1}}}, 10000, 1, notes);
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(lines_of(log), (std::vector<std::string>{" -c -fun 18", " -c"}));
  EXPECT_EQ(cache.stats().whole_runs, 1u);
  EXPECT_EQ(*cache.mnemonic(1, kBasic, 0x1f0), "BRA");
}

TEST(SassCache, AKernelMissingFromTheSymbolTableGetsTheWholeCubin) {
  std::string cubin = demo_cubin(), log = test::temp_path("args.log");
  SassCache cache;
  std::vector<std::string> notes;
  cache.derive(fake_tool(log, "cat " + listing_path()), {{1, {cubin, {kBasic, "_Z7missingv"}, 1}}}, 10000, 1, notes);
  EXPECT_EQ(lines_of(log), (std::vector<std::string>{" -c"}));
  EXPECT_EQ(*cache.mnemonic(1, kBasic, 0x70), "IMAD");
  EXPECT_EQ(cache.mnemonic(1, "_Z7missingv", 0x0), nullptr);
}

TEST(SassCache, TheBudgetBoundsTheWholePassAndSaysWhatWasLeft) {
  std::string cubin = demo_cubin(), log = test::temp_path("args.log");
  // Each run hangs; one thread, 300 ms for three cubins: the first is killed at the limit, the others
  // are never started.
  SassCache cache;
  std::vector<std::string> notes;
  cache.derive(fake_tool(log, "exec sleep 30"),
               {{1, {cubin, {kBasic}, 1}}, {2, {cubin, {kBasic}, 50}}, {3, {cubin, {kBasic}, 2}}}, 300, 1, notes);
  EXPECT_EQ(lines_of(log).size(), 1u);  // no whole-cubin retry after a timeout
  EXPECT_EQ(cache.stats().cubins, 0u);
  EXPECT_EQ(cache.stats().cubins_left, 2u);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("no answer"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("SASS of 2 cubin(s) not derived within --sass-timeout"), std::string::npos) << notes[1];
  EXPECT_TRUE(cache.tried(2, kBasic));  // not tried again in this recording
  EXPECT_FALSE(cache.answered(2, kBasic));  // but not stored as nameless: a report may try
  EXPECT_FALSE(cache.answered(1, kBasic));
}

// No run starts with less than kMinRunMs of the budget left: a budget below it starts none (the
// remainder after a run killed at the deadline is the same case, above).
TEST(SassCache, NoRunStartsWithLessThanTheMinimumLeft) {
  std::string cubin = demo_cubin(), log = test::temp_path("args.log");
  SassCache cache;
  std::vector<std::string> notes;
  cache.derive(fake_tool(log, "cat " + listing_path()), {{1, {cubin, {kBasic}, 1}}, {2, {cubin, {kBasic}, 2}}},
               SassCache::kMinRunMs - 1, 1, notes);
  EXPECT_TRUE(lines_of(log).empty());
  EXPECT_EQ(cache.stats().cubins_left, 2u);
  // With enough left, the same work runs.
  SassCache enough;
  enough.derive(fake_tool(log, "cat " + listing_path()), {{1, {cubin, {kBasic}, 1}}}, 10000, 1, notes);
  EXPECT_EQ(enough.stats().cubins, 1u);
}

TEST(SassCache, MostSampledCubinFirst) {
  std::string cubin = demo_cubin(), log = test::temp_path("args.log");
  SassCache cache;
  std::vector<std::string> notes;
  cache.derive(fake_tool(log, "cat " + listing_path()),
               {{1, {cubin, {kBasic}, 1}}, {2, {cubin, {kLocal}, 50}}, {3, {cubin, {kTiling}, 2}}}, 10000, 1, notes);
  EXPECT_EQ(lines_of(log), (std::vector<std::string>{" -c -fun 17", " -c -fun 16", " -c -fun 18"}));
}

TEST(SassCache, NoToolIsOneNote) {
  SassCache cache;
  std::vector<std::string> notes;
  std::string cubin = demo_cubin();
  cache.derive("", {{1, {cubin, {kBasic}, 1}}, {2, {cubin, {kBasic}, 1}}}, 1000, 2, notes);
  EXPECT_EQ(notes, std::vector<std::string>{nvdisasm_not_found_note()});
  EXPECT_EQ(cache.mnemonic(1, kBasic, 0x70), nullptr);
}

}  // namespace
}  // namespace aiflame
