#include "record/unwind/thread_stack.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

namespace aiflame::unwind {
namespace {

StackBounds glibc_stack() {
  StackBounds b;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return b;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
    b.lo = reinterpret_cast<uint64_t>(addr);
    b.hi = b.lo + size;
  }
  pthread_attr_destroy(&attr);
  return b;
}

uint64_t sp_here() { return reinterpret_cast<uint64_t>(__builtin_frame_address(0)); }

// Runs body in a child process (on the calling thread) and expects it to exit 0.
template <class F>
void in_child(F body) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(body() ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(ThreadStack, TheMainThreadsStackEndsWhereGlibcSaysWithoutReadingTheMappings) {
  ASSERT_EQ(gettid(), getpid()) << "gtest runs its tests on the main thread";
  const StackBounds ours = main_thread_stack(), glibc = glibc_stack();
  ASSERT_NE(glibc.hi, 0u);
  EXPECT_EQ(ours.hi, glibc.hi);
  // glibc also clips the bottom at the mapping below; ours is RLIMIT_STACK below the top.
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_STACK, &rl), 0);
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur <= (rlim_t{1} << 30)) {
    EXPECT_EQ(ours.lo, ours.hi - rl.rlim_cur);
  }
  EXPECT_LE(ours.lo, glibc.lo);
  EXPECT_LE(ours.lo, sp_here());
  EXPECT_LT(sp_here(), ours.hi);
  EXPECT_EQ(find_thread_stack().hi, glibc.hi);
}

TEST(ThreadStack, AnotherThreadGetsGlibcsBoundsOfItsOwnStack) {
  StackBounds main_on_thread{1, 1}, found, glibc;
  uint64_t sp = 0;
  std::thread([&] {
    main_on_thread = main_thread_stack();
    found = find_thread_stack();
    glibc = glibc_stack();
    sp = sp_here();
  }).join();
  EXPECT_EQ(main_on_thread.hi, 0u);
  ASSERT_NE(glibc.hi, 0u);
  EXPECT_EQ(found.lo, glibc.lo);
  EXPECT_EQ(found.hi, glibc.hi);
  EXPECT_TRUE(sp >= found.lo && sp < found.hi);
}

TEST(ThreadStack, AThreadThatForkedIsNotTakenForTheMainThreadInTheChild) {
  // In the child the forking thread is the only one (gettid() == getpid()), on its own stack.
  std::thread([] {
    in_child([] {
      if (gettid() != getpid()) return false;
      const StackBounds m = main_thread_stack(), f = find_thread_stack(), g = glibc_stack();
      const uint64_t sp = sp_here();
      return m.hi == 0 && f.lo == g.lo && f.hi == g.hi && sp >= f.lo && sp < f.hi;
    });
  }).join();
}

TEST(ThreadStack, AnUnlimitedStackTakesGlibcsBounds) {
  in_child([] {
    rlimit rl{};
    if (getrlimit(RLIMIT_STACK, &rl) != 0) return false;
    rl.rlim_cur = RLIM_INFINITY;
    if (rl.rlim_max != RLIM_INFINITY) return true;  // cannot raise it here: nothing to check
    if (setrlimit(RLIMIT_STACK, &rl) != 0) return false;
    const StackBounds m = main_thread_stack(), f = find_thread_stack(), g = glibc_stack();
    return m.hi == 0 && f.hi == g.hi && f.lo == g.lo;
  });
}

}  // namespace
}  // namespace aiflame::unwind
