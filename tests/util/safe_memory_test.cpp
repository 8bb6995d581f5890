#include "util/safe_memory.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>


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
  // A read after the failed ones gets its own bytes.
  uint64_t w = 0, x = 0x1122334455667788ull;
  EXPECT_TRUE(safe_copy(&x, &w, sizeof w));
  EXPECT_EQ(w, x);
}

// After fork() the child reads its own memory, not its parent's (a pid kept from before the fork
// would read the parent's).
TEST(SafeMemory, AForkedChildReadsItsOwnMemory) {
  uint64_t x = 7, y = 0;
  ASSERT_TRUE(safe_copy(&x, &y, sizeof y));
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipefd[0]);
    x = 0xc41d;
    uint64_t got = 0;
    bool ok = safe_copy(&x, &got, sizeof got);
    (void)!write(pipefd[1], &got, sizeof got);
    _exit(ok ? 0 : 1);
  }
  close(pipefd[1]);
  uint64_t from_child = 0;
  EXPECT_EQ(read(pipefd[0], &from_child, sizeof from_child), static_cast<ssize_t>(sizeof from_child));
  close(pipefd[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(from_child, 0xc41du) << "the child read its parent's memory";
}

}  // namespace
}  // namespace aiflame
