#include "util/fork_guard.h"

#include <gtest/gtest.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "test_util.h"
#include "util/loaded_objects.h"

namespace aiflame {
namespace {

// A child forked while another thread of ours is inside dl_iterate_phdr iterates (and so may dlopen)
// all the same: the fork waited for the iteration to end. Without the guard the child inherits the
// loader's list lock held (glibc 2.36 does not reset it) and its dl_iterate_phdr never returns.
TEST(ForkGuard, AChildForkedWhileAnotherThreadIteratesTheLoadedObjectsIteratesThem) {
  std::atomic<bool> inside{false};
  std::thread iterating([&] {
    iterate_loaded_objects(
        [](dl_phdr_info*, size_t, void* p) -> int {
          static_cast<std::atomic<bool>*>(p)->store(true);
          std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the loader's lock held
          return 1;
        },
        &inside);
  });
  while (!inside.load()) std::this_thread::yield();
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(5);
    int objects = 0;
    dl_iterate_phdr(
        [](dl_phdr_info*, size_t, void* p) -> int {
          ++*static_cast<int*>(p);
          return 0;
        },
        &objects);
    _exit(objects > 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  iterating.join();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << test::child_ending(status);
}

std::mutex g_registered;
std::atomic<int> g_child_handlers{0};

// A registered mutex that another thread holds when the program forks is free in the child (the fork
// waited for it), and the child's handler ran there once, after the release.
TEST(ForkGuard, ARegisteredMutexHeldByAnotherThreadIsFreeInTheChild) {
  auto in_child = [] {
    if (g_registered.try_lock()) {  // released before the handler runs
      g_registered.unlock();
      g_child_handlers++;
    }
  };
  ASSERT_TRUE(hold_across_fork(&g_registered, in_child));
  ASSERT_TRUE(hold_across_fork(&g_registered, in_child));  // kept once (--gtest_repeat hung on a second)
  std::atomic<bool> held{false};
  std::thread holder([&] {
    std::lock_guard<std::mutex> lock(g_registered);
    held = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  });
  while (!held.load()) std::this_thread::yield();
  alarm(20);  // a prepare handler waiting for itself (the mutex taken twice) ends the test here
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(5);
    const bool free = g_registered.try_lock();
    _exit(!free ? 1 : g_child_handlers.load() != 1 ? 2 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  alarm(0);
  holder.join();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << test::child_ending(status) << " (1: held in the child; 2: its handler did not run once)";
  EXPECT_EQ(g_child_handlers.load(), 0);  // the parent's own count: the handler runs in children only
  std::lock_guard<std::mutex> free_in_the_parent(g_registered);
}

}  // namespace
}  // namespace aiflame
