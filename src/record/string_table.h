// Interns strings for the profile: each distinct string is written once as a String record.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "profile/profile_writer.h"

namespace aiflame {

class StringTable {
 public:
  explicit StringTable(ProfileWriter& w) : writer_(w) {}
  uint32_t intern(std::string_view s);

 private:
  ProfileWriter& writer_;
  std::mutex mu_;
  std::unordered_map<std::string, uint32_t> ids_;
};

}  // namespace aiflame
