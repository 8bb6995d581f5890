// Helpers shared by the tests: temporary files and a profile built in memory.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace aiflame::test {

inline std::string temp_path(const std::string& name) {
  static int counter = 0;
  return "/tmp/aiflame_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" + name;
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

}  // namespace aiflame::test
