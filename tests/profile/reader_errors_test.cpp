#include <gtest/gtest.h>

#include <cstring>

#include "profile/profile.h"
#include "profile/profile_writer.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string small_profile() {
  std::string path = test::temp_path("small.aiflame");
  ProfileWriter w;
  std::string err;
  EXPECT_TRUE(w.open(path, false, &err)) << err;
  for (uint32_t i = 1; i <= 50; i++) w.add(StringRecord{i, "string number " + std::to_string(i)});
  w.add(EndRecord{});
  EXPECT_TRUE(w.close());
  std::string bytes = test::read_file(path);
  std::remove(path.c_str());
  return bytes;
}

TEST(ReaderErrors, EmptyFile) {
  auto r = parse_profile("", "f");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("empty file"), std::string::npos);
}

TEST(ReaderErrors, ForeignFile) {
  auto r = parse_profile("#!/bin/sh\necho hello world\n", "f");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("not an aiflame profile"), std::string::npos);
}

TEST(ReaderErrors, FutureVersionNamesTheFix) {
  std::string b = small_profile();
  uint32_t v = 99;
  std::memcpy(b.data() + 8, &v, 4);
  auto r = parse_profile(b, "f");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("version 99"), std::string::npos);
  EXPECT_NE(r.error().find("upgrade"), std::string::npos);
}

TEST(ReaderErrors, MissingFile) {
  auto r = read_profile("/nonexistent/dir/profile.aiflame");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("/nonexistent/dir/profile.aiflame"), std::string::npos);
}

// Every single-bit flip after the header is either caught as corruption or harmless; never a crash.
TEST(ReaderErrors, EveryBitFlipIsDetectedOrHarmless) {
  std::string good = small_profile();
  size_t detected = 0;
  for (size_t i = 16; i < good.size(); i++) {
    for (int bit = 0; bit < 8; bit++) {
      std::string b = good;
      b[i] = static_cast<char>(b[i] ^ (1 << bit));
      auto r = parse_profile(b, "f");
      if (!r.ok()) {
        detected++;
        EXPECT_EQ(r.error().find('\n'), std::string::npos);  // one line
      }
    }
  }
  // The chunk checksum catches payload flips; only flips that make the chunk look cut short pass
  // (reported as truncated). Nearly all flips must be reported.
  EXPECT_GT(detected, (good.size() - 16) * 8 * 9 / 10);
}

}  // namespace
}  // namespace aiflame
