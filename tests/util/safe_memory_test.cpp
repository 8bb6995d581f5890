#include "util/safe_memory.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <thread>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace aiflame {
namespace {

constexpr size_t kPage = 4096;

// Two pages, the second unmapped: a read that runs into it must stop, never fault.
struct HalfMapped {
  char* base = nullptr;
  HalfMapped() {
    void* p = mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = static_cast<char*>(p);
    for (size_t i = 0; i < kPage; i++) base[i] = static_cast<char>(i * 7 + 1);
    munmap(base + kPage, kPage);
  }
  ~HalfMapped() { munmap(base, kPage); }
};

TEST(SafeMemory, CopiesScatteredRangesInOrder) {
  std::vector<uint64_t> src(1000);
  for (size_t i = 0; i < src.size(); i++) src[i] = i * 0x9e3779b97f4a7c15ull;
  // Three remote pieces into two local ones of other sizes: one stream.
  iovec remote[3] = {{&src[10], 8 * 5}, {&src[500], 8 * 100}, {&src[3], 8}};
  std::vector<uint64_t> a(50), b(56);
  iovec local[2] = {{a.data(), 8 * a.size()}, {b.data(), 8 * b.size()}};
  ASSERT_EQ(safe_read(local, 2, remote, 3), static_cast<ssize_t>(8 * 106));
  EXPECT_EQ(last_safe_read_path(), SafeReadPath::Pipe);
  std::vector<uint64_t> want;
  for (int i = 10; i < 15; i++) want.push_back(src[i]);
  for (int i = 500; i < 600; i++) want.push_back(src[i]);
  want.push_back(src[3]);
  std::vector<uint64_t> got(a);
  got.insert(got.end(), b.begin(), b.end());
  EXPECT_EQ(got, want);
}

TEST(SafeMemory, StopsAtUnmappedMemory) {
  HalfMapped m;
  std::vector<char> out(2 * kPage, 0);
  // Starting in the mapped page: only the whole page before the hole comes back.
  iovec local{out.data(), 2 * kPage}, remote{m.base, 2 * kPage};
  EXPECT_EQ(safe_read(&local, 1, &remote, 1), static_cast<ssize_t>(kPage));
  EXPECT_EQ(std::memcmp(out.data(), m.base, kPage), 0);
  // Starting in the hole: nothing.
  iovec hole{m.base + kPage, 64};
  EXPECT_EQ(safe_read(&local, 1, &hole, 1), -1);
  EXPECT_FALSE(safe_copy(m.base + kPage - 8, out.data(), 16));  // straddles the hole
  uint64_t v = 0;
  EXPECT_TRUE(safe_copy(m.base + 8, &v, sizeof v));
  EXPECT_EQ(std::memcmp(&v, m.base + 8, sizeof v), 0);
  EXPECT_FALSE(safe_copy(nullptr, &v, sizeof v));
  // The failed reads left nothing behind in the pipe: the next read gets its own bytes.
  uint64_t w = 0, x = 0x1122334455667788ull;
  EXPECT_TRUE(safe_copy(&x, &w, sizeof w));
  EXPECT_EQ(w, x);
}

// A program that closes our pipe and opens its own file under the same number must not get our copies
// written into it, nor have its data read; the reader makes a new pipe.
TEST(SafeMemory, NeverUsesDescriptorsTheProgramTookOver) {
  uint64_t x = 42, y = 0;
  ASSERT_TRUE(safe_copy(&x, &y, sizeof y));
  int rfd = -1, wfd = -1;
  safe_read_fds_for_test(&rfd, &wfd);
  ASSERT_GE(rfd, 0);
  ASSERT_GE(wfd, 0);
  char path_w[] = "/tmp/aiflame_safe_memory_w_XXXXXX";
  char path_r[] = "/tmp/aiflame_safe_memory_r_XXXXXX";
  int fw = mkstemp(path_w), fr = mkstemp(path_r);
  ASSERT_GE(fw, 0);
  ASSERT_GE(fr, 0);
  ASSERT_EQ(write(fr, "program data", 12), 12);
  ASSERT_EQ(lseek(fr, 0, SEEK_SET), 0);
  // The program's files now sit at our numbers.
  ASSERT_EQ(dup2(fw, wfd), wfd);
  ASSERT_EQ(dup2(fr, rfd), rfd);
  uint64_t secret = 0x5ec7e75ec7e7ull, got = 0;
  EXPECT_TRUE(safe_copy(&secret, &got, sizeof got));
  EXPECT_EQ(got, secret);
  struct stat st;
  ASSERT_EQ(fstat(wfd, &st), 0);
  EXPECT_EQ(st.st_size, 0) << "our copy went into the program's file";
  EXPECT_EQ(lseek(rfd, 0, SEEK_CUR), 0) << "the program's file was read";
  int nr = -1, nw = -1;
  safe_read_fds_for_test(&nr, &nw);
  EXPECT_NE(nr, rfd);
  EXPECT_NE(nw, wfd);
  close(rfd);
  close(wfd);
  close(fw);
  close(fr);
  unlink(path_w);
  unlink(path_r);
}

// After fork() the child makes its own pipe: parent and child reading at once never mix their bytes.
TEST(SafeMemory, AForkedChildReadsThroughItsOwnPipe) {
  uint64_t x = 7, y = 0;
  ASSERT_TRUE(safe_copy(&x, &y, sizeof y));
  int prfd = -1, pwfd = -1;
  safe_read_fds_for_test(&prfd, &pwfd);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<uint64_t> mine(512, 0xc41dull), out(512);
    bool ok = true;
    for (int i = 0; i < 2000 && ok; i++) ok = safe_copy(mine.data(), out.data(), 8 * out.size()) && out == mine;
    int crfd = -1, cwfd = -1;
    safe_read_fds_for_test(&crfd, &cwfd);
    _exit(ok && crfd != prfd ? 0 : 1);
  }
  std::vector<uint64_t> mine(512, 0x9a4e47ull), out(512);
  bool ok = true;
  for (int i = 0; i < 2000 && ok; i++) ok = safe_copy(mine.data(), out.data(), 8 * out.size()) && out == mine;
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(ok);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// fork() while another thread reads: the child's copy of the reader's lock must be free, or its first
// read (the autograd tracker's, in a forked worker) waits forever.
TEST(SafeMemory, AChildForkedDuringAReadCanRead) {
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    std::vector<uint64_t> src(1024, 3), out(1024);
    while (!stop.load()) safe_copy(src.data(), out.data(), 8 * out.size());
  });
  bool all_exited = true;
  for (int k = 0; k < 50 && all_exited; k++) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      uint64_t x = 5, y = 0;
      _exit(safe_copy(&x, &y, sizeof y) && y == 5 ? 0 : 1);
    }
    int status = 0;
    pid_t done = 0;
    for (int ms = 0; ms < 5000 && (done = waitpid(child, &status, WNOHANG)) == 0; ms++) usleep(1000);
    if (done != child) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      all_exited = false;
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
  }
  stop = true;
  reader.join();
  EXPECT_TRUE(all_exited) << "a forked child hung in its first read";
}

TEST(SafeMemory, LargeReadsGoThroughProcessVm) {
  std::vector<char> src(kSafeReadMax + 1, 'q'), out(src.size());
  iovec local{out.data(), out.size()}, remote{src.data(), src.size()};
  EXPECT_EQ(safe_read(&local, 1, &remote, 1), static_cast<ssize_t>(src.size()));
  EXPECT_EQ(last_safe_read_path(), SafeReadPath::ProcessVm);
  EXPECT_EQ(out, src);
}

}  // namespace
}  // namespace aiflame
