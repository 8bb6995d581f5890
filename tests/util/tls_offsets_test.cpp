#include "util/tls_offsets.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <future>
#include <memory>
#include <thread>

namespace aiflame {
namespace {

thread_local constinit uint64_t t_a = 0;
AIFLAME_TLS_ENROLL(tls::kTestA, t_a);
thread_local constinit char t_b[24] = {};
AIFLAME_TLS_ENROLL(tls::kTestB, t_b);

uint64_t* a_by_offset() { return AIFLAME_TLS(tls::kTestA, t_a); }
char (*b_by_offset())[24] { return AIFLAME_TLS(tls::kTestB, t_b); }

struct Relearn {  // leaves the offsets learned for the tests after this one, whatever happened
  ~Relearn() {
    tls::forget_for_tests();
    tls::learn();
  }
};

// The test executable's thread-locals are in static TLS (an executable's always are).
TEST(TlsOffsets, AVariableByOffsetIsItsOwnAddressOnEveryThread) {
  Relearn relearn;
  tls::forget_for_tests();
  EXPECT_EQ(tls::g_offsets.at[tls::kTestA].load(), 0);
  EXPECT_EQ(a_by_offset(), &t_a);  // not learned: the ordinary access
  // A thread that exists before the offsets are learned, and one made after.
  std::promise<void> learned;
  std::shared_future<void> go = learned.get_future().share();
  bool before_ok = false, after_ok = false;
  std::thread before([&] {
    go.wait();
    before_ok = a_by_offset() == &t_a && b_by_offset() == &t_b;
    *a_by_offset() = 7;  // this thread's own
  });
  ASSERT_TRUE(tls::learn());
  EXPECT_LT(tls::g_offsets.at[tls::kTestA].load(), 0);  // below the thread pointer
  EXPECT_NE(tls::g_offsets.at[tls::kTestA].load(), tls::g_offsets.at[tls::kTestB].load());
  learned.set_value();
  before.join();
  std::thread after([&] { after_ok = a_by_offset() == &t_a && b_by_offset() == &t_b && *a_by_offset() == 0; });
  after.join();
  EXPECT_TRUE(before_ok);
  EXPECT_TRUE(after_ok);
  EXPECT_EQ(a_by_offset(), &t_a);
  EXPECT_EQ(b_by_offset(), &t_b);
  EXPECT_EQ(t_a, 0u);  // the other thread wrote its own
}

// Addresses that are not a static block's: above the thread pointer, at another offset on the new
// thread than on the learning one, or one address for both (a dynamic TLS block comes from malloc).
// Nothing is learned then, and every access stays the ordinary one.
uintptr_t g_learning_tp = 0;
TEST(TlsOffsets, AVariableOutsideStaticTlsLeavesEveryAccessOrdinary) {
  Relearn relearn;
  static auto heap = std::make_unique<uint64_t>(0);
  g_learning_tp = tls::thread_pointer();
  const tls::AddressOf probes[] = {
      []() -> void* { return reinterpret_cast<void*>(tls::thread_pointer() + 64); },
      []() -> void* {
        const uintptr_t tp = tls::thread_pointer();
        return reinterpret_cast<void*>(tp - 64 - (tp == g_learning_tp ? 0 : 8));
      },
      []() -> void* { return heap.get(); },
  };
  for (tls::AddressOf probe : probes) {
    EXPECT_FALSE(tls::learn_for_tests(tls::kTestB, probe));
    for (int s = 0; s < tls::kSlots; s++) EXPECT_EQ(tls::g_offsets.at[s].load(), 0) << s;
    EXPECT_EQ(b_by_offset(), &t_b);
    EXPECT_EQ(a_by_offset(), &t_a);
  }
  // The same probe at the variable's own place is learned (the checks above are the probes').
  EXPECT_TRUE(tls::learn_for_tests(tls::kTestB, []() -> void* { return &t_b; }));
  EXPECT_EQ(b_by_offset(), &t_b);
}

}  // namespace
}  // namespace aiflame
