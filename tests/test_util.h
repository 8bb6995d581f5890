// Helpers shared by the tests: temporary files and a profile built in memory.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace aiflame::test {

// How a forked child ended, for a failure's message: "exit N", "signal N", or "signal 14 (hung)" where
// the child's own alarm() ended it.
inline std::string child_ending(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "signal " + std::to_string(WTERMSIG(status)) + (WTERMSIG(status) == SIGALRM ? " (hung)" : "");
  return "status " + std::to_string(status);
}

// Unique to this process even where a pid comes back: CI runs the test binaries twice (plain and under
// AddressSanitizer), one process per test, and a profile left by an earlier holder of the pid made a
// later test's exclusive create fail (stop 46: StackCapture.VerifiedMemosMatchTheFullWalk). The pid
// stays first, for temp_cleanup.cpp's prefix.
inline std::string temp_path(const std::string& name) {
  static int counter = 0;
  static const std::string nonce = std::to_string(std::random_device{}());
  return "/tmp/aiflame_test_" + std::to_string(getpid()) + "_" + nonce + "_" + std::to_string(counter++) + "_" +
         name;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

// The HTML report's packed numbers (pack_numbers in output/html_writer.h), unpacked as the page does:
// 5 bits per base-64 digit, low bits first, digit value 32 and up meaning "more digits follow".
inline std::vector<uint32_t> unpack_numbers(const std::string& s) {
  const std::string digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint32_t> out;
  uint32_t v = 0;
  int shift = 0;
  for (char c : s) {
    auto d = static_cast<uint32_t>(digits.find(c));
    v |= (d & 31) << shift;
    if (d & 32) {
      shift += 5;
    } else {
      out.push_back(v);
      v = 0;
      shift = 0;
    }
  }
  return out;
}

}  // namespace aiflame::test
