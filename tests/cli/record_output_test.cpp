// record's output naming (src/cli/record_output.h): nothing that is not a regular file this user may
// write, present before the run, is ever moved or replaced; a taken name gives FILE-N, never a loss.
// Device nodes are mknod copies in a temporary directory (root only), never the real /dev entries.
#include "cli/record_output.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace aiflame {
namespace {

namespace fs = std::filesystem;

struct Dir {
  std::string path = test::temp_path("record_output");
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
  std::string operator/(const std::string& n) const { return path + "/" + n; }
};

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

bool is_fifo(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

TEST(RecordOutput, AFifoOrDeviceAtTheOutputIsRefusedAndALinkToo) {
  Dir d;
  ASSERT_EQ(mkfifo((d / "fifo").c_str(), 0600), 0);
  EXPECT_NE(record_output_refusal(d / "fifo").find("is a FIFO, not a regular file"), std::string::npos);
  if (geteuid() == 0) {
    ASSERT_EQ(mknod((d / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);  // a copy of /dev/null
    EXPECT_NE(record_output_refusal(d / "null").find("a character device"), std::string::npos);
  }
  ASSERT_EQ(symlink((d / "nowhere").c_str(), (d / "link").c_str()), 0);
  EXPECT_NE(record_output_refusal(d / "link").find("symbolic link"), std::string::npos);
  write(d / "file", "x");
  EXPECT_EQ(record_output_refusal(d / "file"), "");
  EXPECT_EQ(record_output_refusal(d / "absent"), "");
}

TEST(RecordOutput, TheFileThereAtTheStartIsMovedToOld) {
  Dir d;
  write(d / "p", "previous");
  Publish p = plan_publish(d / "tmp", d / "p");
  write(d / "tmp", "new");
  ASSERT_EQ(publish_profile(p, false), 1);
  EXPECT_EQ(test::read_file(d / "p"), "new");
  EXPECT_EQ(test::read_file(d / "p.old"), "previous");
  EXPECT_EQ(std::string(p.published), d / "p");
}

TEST(RecordOutput, AProfileNamedMeanwhileByAnotherRunIsKept) {
  Dir d;
  Publish a = plan_publish(d / "a.tmp", d / "p");
  Publish b = plan_publish(d / "b.tmp", d / "p");
  Publish c = plan_publish(d / "c.tmp", d / "p");
  for (const char* n : {"a.tmp", "b.tmp", "c.tmp"}) write(d / n, n);
  EXPECT_EQ(publish_profile(a, false), 1);
  EXPECT_EQ(publish_profile(b, true), 2);  // --force replaces only what was there at the start
  EXPECT_EQ(publish_profile(c, false), 2);
  EXPECT_EQ(test::read_file(d / "p"), "a.tmp");
  EXPECT_EQ(std::string(b.published), d / "p-2");
  EXPECT_EQ(test::read_file(d / "p-2"), "b.tmp");
  EXPECT_EQ(test::read_file(d / "p-3"), "c.tmp");
  EXPECT_FALSE(fs::exists(d / "p.old"));
}

TEST(RecordOutput, ForceReplacesTheFileThereAtTheStart) {
  Dir d;
  write(d / "p", "previous");
  Publish p = plan_publish(d / "tmp", d / "p");
  write(d / "tmp", "new");
  ASSERT_EQ(publish_profile(p, true), 1);
  EXPECT_EQ(test::read_file(d / "p"), "new");
  EXPECT_FALSE(fs::exists(d / "p.old"));
}

// A FIFO (or, as root, a device node) put at the name or at NAME.old while the program ran.
TEST(RecordOutput, WhatIsNotARegularFileIsNeverMovedNorReplaced) {
  for (bool force : {false, true}) {
    Dir d;
    Publish p = plan_publish(d / "tmp", d / "p");
    write(d / "tmp", "new");
    ASSERT_EQ(mkfifo((d / "p").c_str(), 0600), 0);
    ASSERT_EQ(publish_profile(p, force), 2) << force;
    EXPECT_TRUE(is_fifo(d / "p"));
    EXPECT_EQ(test::read_file(d / "p-2"), "new");
    EXPECT_FALSE(fs::exists(d / "p.old"));
  }
  {
    Dir d;
    write(d / "p", "previous");
    ASSERT_EQ(mkfifo((d / "p.old").c_str(), 0600), 0);
    Publish p = plan_publish(d / "tmp", d / "p");
    write(d / "tmp", "new");
    ASSERT_EQ(publish_profile(p, false), 2);
    EXPECT_TRUE(is_fifo(d / "p.old"));
    EXPECT_EQ(test::read_file(d / "p"), "previous");
    EXPECT_EQ(test::read_file(d / "p-2"), "new");
  }
  if (geteuid() == 0) {
    Dir d;
    Publish p = plan_publish(d / "tmp", d / "full");
    write(d / "tmp", "new");
    ASSERT_EQ(mknod((d / "full").c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);  // a copy of /dev/full
    ASSERT_EQ(publish_profile(p, true), 2);
    struct stat st;
    ASSERT_EQ(lstat((d / "full").c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(st.st_rdev, makedev(1, 7));
  }
}

// The check itself; its status: 0 when the read-only file was left as it was.
int read_only_file_is_not_moved() {
  Dir d;
  write(d / "p", "read-only");
  chmod((d / "p").c_str(), 0444);
  Publish p = plan_publish(d / "tmp", d / "p");
  write(d / "tmp", "new");
  if (publish_profile(p, false) != 2) return 1;
  return test::read_file(d / "p") == "read-only" ? 0 : 2;
}

TEST(RecordOutput, AFileThisUserMayNotWriteIsNotMoved) {
  if (geteuid() != 0) {
    EXPECT_EQ(read_only_file_is_not_moved(), 0);
    return;
  }
  // Root may write every file: the check runs in a child as the unprivileged user nobody (65534),
  // as CI runs as root.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    _exit(read_only_file_is_not_moved());
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: not refused, 2: the file was changed, 3: could not become nobody";
}

}  // namespace
}  // namespace aiflame
