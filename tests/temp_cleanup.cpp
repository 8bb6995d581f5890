// Removes what temp_path() handed out (test_util.h) once every test of the binary has run, so that
// repeated runs do not fill /tmp with the recorder tests' fake binaries, claims and profiles.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace aiflame::test {
namespace {

class TempCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    const std::string prefix = "aiflame_test_" + std::to_string(getpid()) + "_";
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/tmp", ec)) {
      if (e.path().filename().string().rfind(prefix, 0) != 0) continue;
      std::error_code rm;
      std::filesystem::remove_all(e.path(), rm);
    }
  }
};

[[maybe_unused]] ::testing::Environment* const kCleanup = ::testing::AddGlobalTestEnvironment(new TempCleanup);

}  // namespace
}  // namespace aiflame::test
