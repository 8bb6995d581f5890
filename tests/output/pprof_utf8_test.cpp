// pprof's strings are proto3 strings, UTF-8 only: a name that is not (read from a binary or a folded
// file) made libprotobuf print an ERROR line, even under -q, and a profile its parsers reject.
#include <gtest/gtest.h>

#include "input/folded_reader.h"
#include "output/pprof_writer.h"
#include "output/profile.pb.h"
#include "util/utf8.h"

namespace aiflame {
namespace {

TEST(PprofUtf8, NamesThatAreNotUtf8BecomeValidStringsThePprofParserTakes) {
  auto d = parse_folded("app;bad\xff\xfe" "name;caf\xc3\xa9;-;k\xc0\xaf;selected 3\n");
  ASSERT_TRUE(d.ok()) << d.error();
  testing::internal::CaptureStderr();
  std::string bytes = pprof_profile_bytes(*d);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(bytes));
  bool replaced = false, kept = false;
  for (const auto& s : p.string_table()) {
    EXPECT_TRUE(is_valid_utf8(s)) << s;
    replaced |= s == "bad\xEF\xBF\xBD\xEF\xBF\xBDname";
    kept |= s == "caf\xc3\xa9";
  }
  EXPECT_TRUE(replaced);
  EXPECT_TRUE(kept);
}

TEST(PprofUtf8, ValidUtf8RejectsOverlongSurrogatesAndCutSequences) {
  EXPECT_TRUE(is_valid_utf8("plain, caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x94\xa5"));
  for (const char* bad : {"\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\x80", "\xff"})
    EXPECT_FALSE(is_valid_utf8(bad)) << bad;
  EXPECT_EQ(valid_utf8("a\xe2\x82" "b"), "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");
}

}  // namespace
}  // namespace aiflame
