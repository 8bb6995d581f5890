#include "util/tls_offsets.h"

#include <dlfcn.h>
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


// The same code in a dlopen'ed library, as the injection library is loaded: with a small TLS block
// glibc puts it in its static surplus and the variables are reached by offset on every thread; past
// the surplus its block is dynamic, nothing is learned, and every access is the ordinary one.
struct Module {
  void* h;
  int (*is_static)();
  int (*learn)();
  intptr_t (*offset)();
  int (*access_ok)(uint64_t);
  explicit Module(const char* path) : h(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    if (!h) return;
    is_static = reinterpret_cast<int (*)()>(dlsym(h, "aiflame_tlsmod_static"));
    learn = reinterpret_cast<int (*)()>(dlsym(h, "aiflame_tlsmod_learn"));
    offset = reinterpret_cast<intptr_t (*)()>(dlsym(h, "aiflame_tlsmod_offset"));
    access_ok = reinterpret_cast<int (*)(uint64_t)>(dlsym(h, "aiflame_tlsmod_access_ok"));
  }
  bool on_other_thread(uint64_t v) {
    bool ok = false;
    std::thread t([&] { ok = access_ok(v) == 1; });
    t.join();
    return ok;
  }
};

TEST(TlsOffsets, ALoadedLibraryReachesItsVariablesByOffsetWhereItsBlockIsStatic) {
  Module m(AIFLAME_TEST_TLS_OFFSETS_SMALL);
  ASSERT_NE(m.h, nullptr) << dlerror();
#if AIFLAME_TEST_TLSDESC
  // With TLS descriptors, as the injection library is built, glibc puts a small block in its static
  // surplus. (The sanitizer builds keep the default dialect, whose dlopen'ed blocks are dynamic.)
  ASSERT_EQ(m.is_static(), 1);
#endif
  std::thread born_before([] {});
  EXPECT_EQ(m.learn(), m.is_static());
  if (m.is_static())
    EXPECT_LT(m.offset(), 0);
  else
    EXPECT_EQ(m.offset(), 0);
  EXPECT_EQ(m.access_ok(11), 1);
  EXPECT_TRUE(m.on_other_thread(12));
  born_before.join();
  EXPECT_EQ(m.access_ok(13), 1);
}

TEST(TlsOffsets, ALoadedLibraryInADynamicTlsBlockKeepsTheOrdinaryAccess) {
  Module m(AIFLAME_TEST_TLS_OFFSETS_BIG);
  ASSERT_NE(m.h, nullptr) << dlerror();
  EXPECT_EQ(m.is_static(), 0);  // 16 KiB: past the surplus
  EXPECT_EQ(m.learn(), 0);
  EXPECT_EQ(m.offset(), 0);
  EXPECT_EQ(m.access_ok(21), 1);
  EXPECT_TRUE(m.on_other_thread(22));
}

}  // namespace
}  // namespace aiflame
