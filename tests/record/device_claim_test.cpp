// The per-GPU claim that keeps a second recorded process from enabling PC sampling on a GPU another
// one samples: exclusive while held, names its holder, released on close and at the holder's exit.
#include "record/device_claim.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "test_util.h"

namespace aiflame {
namespace {

std::string fresh_dir() {
  std::string d = test::temp_path("claims");
  mkdir(d.c_str(), 0700);
  return d;
}

TEST(DeviceClaim, ExclusiveWhileHeldAndNamesTheHolder) {
  std::string dir = fresh_dir();
  DeviceClaim a, b;
  ASSERT_TRUE(a.claim("0000:18:00.0", dir));
  EXPECT_FALSE(b.claim("0000:18:00.0", dir));
  EXPECT_EQ(b.holder(), getpid());
  EXPECT_TRUE(b.claim("0000:2a:00.0", dir));  // another GPU is free
  a.release();
  EXPECT_TRUE(b.claim("0000:18:00.0", dir));
}

TEST(DeviceClaim, AnExecdChildSeesTheParentsClaimAndItEndsWithTheParent) {
  std::string dir = fresh_dir();
  DeviceClaim parent;
  ASSERT_TRUE(parent.claim("gpu0", dir));
  // The lock file is not inherited across exec: a child that execs a shell cannot take it while the
  // parent lives. flock(1) stands in for the child's own claim.
  std::string cmd = "exec 9<>'" + dir + "/aiflame-pc-sampling-gpu0.lock' && flock -n 9";
  int status = system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // a process that claims and exits without releasing
    DeviceClaim c;
    _exit(c.claim("gpu1", dir) ? 0 : 1);
  }
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  DeviceClaim after;
  EXPECT_TRUE(after.claim("gpu1", dir));  // the exited holder's lock is gone
}

TEST(DeviceClaim, OddCharactersInTheKeyStayInsideTheDirectory) {
  std::string dir = fresh_dir();
  DeviceClaim a;
  ASSERT_TRUE(a.claim("../../x y", dir));
  struct stat st;
  EXPECT_EQ(stat((dir + "/aiflame-pc-sampling-.._.._x_y.lock").c_str(), &st), 0);
}

TEST(DeviceClaim, AnUnwritableDirectoryDoesNotStopSampling) {
  DeviceClaim a;
  EXPECT_TRUE(a.claim("gpu0", "/nonexistent/dir"));
}

}  // namespace
}  // namespace aiflame
