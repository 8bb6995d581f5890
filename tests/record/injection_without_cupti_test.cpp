// The injection library where no libcupti can be found: one line that names the fix, the program
// goes on, and the profile holds the process and that warning (so `aiflame report` can say why).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "profile/profile.h"
#include "test_util.h"

namespace aiflame {
namespace {

TEST(Injection, NoLibcuptiLeavesAnEmptyProfileThatSaysWhy) {
  std::string out = test::temp_path("nocupti");
  setenv("AIFLAME_OUTPUT", out.c_str(), 1);
  setenv("AIFLAME_CUPTI", "/nonexistent/libcupti.so.13", 1);
  setenv("AIFLAME_QUIET", "1", 1);
  setenv("AIFLAME_PERIOD", "fast", 1);  // a bad value: one warning naming it, kept in the profile
  void* lib = dlopen(AIFLAME_BINARY_DIR "/libaiflame_cupti.so", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init(), 1);  // 1: the driver goes on (0 would fail cuInit)
  unsetenv("AIFLAME_CUPTI");
  unsetenv("AIFLAME_OUTPUT");
  unsetenv("AIFLAME_QUIET");
  unsetenv("AIFLAME_PERIOD");
  std::string file = out + "." + std::to_string(getpid());
  auto p = read_profile(file);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_TRUE(p->process.has_value());
  EXPECT_EQ(p->process->pid, static_cast<uint32_t>(getpid()));
  ASSERT_EQ(p->warnings.size(), 2u);
  EXPECT_EQ(p->warnings[0], "AIFLAME_PERIOD=fast is not valid (it takes N in 5..31 (2^N cycles) or 'default'); the "
                            "default is used");
  EXPECT_NE(p->warnings[1].find("libcupti not found (tried /nonexistent/libcupti.so.13)"), std::string::npos)
      << p->warnings[1];  // the explicit path alone: no silent fallback to another copy
  EXPECT_NE(p->warnings[1].find("set AIFLAME_CUPTI="), std::string::npos);
  EXPECT_NE(p->warnings[1].find("runs on unprofiled"), std::string::npos);
  EXPECT_TRUE(p->launches.empty());
  EXPECT_FALSE(p->truncated);
  std::remove(file.c_str());
}

}  // namespace
}  // namespace aiflame
