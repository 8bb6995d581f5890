#include "flame/frame_name.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flame/flame_data.h"

namespace aiflame {
namespace {

TEST(FrameName, EqualNamesShareOneStoredString) {
  // A name no other test interns (the pool is process-wide: the frame builder's tests intern the
  // autograd engine's names).
  std::string built = std::string("frame_name_test::") + "only_here::thread_main";
  size_t before = FrameName::pool_size();
  FrameName a(built);
  FrameName b("frame_name_test::only_here::thread_main");
  EXPECT_EQ(a.data(), b.data());  // one copy
  EXPECT_EQ(FrameName::pool_size(), before + 1);
  EXPECT_TRUE(a == b);
  EXPECT_TRUE(a == "frame_name_test::only_here::thread_main");
  EXPECT_TRUE(a == built);
  EXPECT_FALSE(a == "frame_name_test::only_here");
  EXPECT_EQ(a.str(), built);
}

TEST(FrameName, OrdersByContentNotByAddress) {
  // Interned in reverse order, so the pool's addresses (deque order) run against the alphabet.
  std::vector<FrameName> names = {FrameName("zz_order_c"), FrameName("zz_order_b"), FrameName("zz_order_a")};
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names[0], "zz_order_a");
  EXPECT_EQ(names[1], "zz_order_b");
  EXPECT_EQ(names[2], "zz_order_c");
  EXPECT_LT(FrameName("zz_order_a"), std::string("zz_order_b"));
}

TEST(FrameName, KeepsNulAndInvalidUtf8AndLongNames) {
  std::string hostile("a\0b;\xff<&>", 8);
  FrameName n(hostile);
  EXPECT_EQ(n.size(), 8u);
  EXPECT_EQ(std::string(n), hostile);
  std::string long_name(100000, 'x');
  EXPECT_EQ(FrameName(long_name).size(), 100000u);
  EXPECT_TRUE(FrameName().empty());
  EXPECT_EQ(FrameName(), FrameName(""));
}

TEST(FrameName, FramesStayEightBytesOfNamePlusKind) {
  // The point of interning: a frame is a pointer and a kind, not a string.
  EXPECT_LE(sizeof(Frame), 16u);
  Frame f{"main (demo.cu:12)", FrameKind::Native};
  Frame g{std::string("main (demo.cu:12)"), FrameKind::Native};
  EXPECT_EQ(f, g);
  EXPECT_EQ(fmt::format("[{}]", f.name), "[main (demo.cu:12)]");
}

}  // namespace
}  // namespace aiflame
