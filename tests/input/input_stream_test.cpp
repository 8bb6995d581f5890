// Inputs streamed, never read whole: pipes, FIFOs, gzip, overlong lines, and a folded file read
// through a pipe giving the same picture as the file.
#include "input/input_stream.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <thread>

#include "input/flame_input.h"
#include "report/load_flame.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string source(const std::string& rel) { return std::string(AIFLAME_SOURCE_DIR) + "/" + rel; }

// A writer thread feeding `data` into a pipe; the reader gets /proc/self/fd/N, as `<(cat x)` gives.
struct PipeFeed {
  explicit PipeFeed(std::string data) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    read_fd = fds[0];
    writer = std::thread([fd = fds[1], d = std::move(data)] {
      for (size_t p = 0; p < d.size();) {
        ssize_t w = write(fd, d.data() + p, d.size() - p);
        if (w <= 0) break;
        p += static_cast<size_t>(w);
      }
      close(fd);
    });
  }
  ~PipeFeed() {
    writer.join();
    close(read_fd);
  }
  std::string path() const { return "/proc/self/fd/" + std::to_string(read_fd); }
  int read_fd;
  std::thread writer;
};

std::string gzip(const std::string& s) {
  std::string path = test::temp_path("x.gz");
  gzFile g = gzopen(path.c_str(), "wb");
  gzwrite(g, s.data(), static_cast<unsigned>(s.size()));
  gzclose(g);
  std::string out = test::read_file(path);
  std::remove(path.c_str());
  return out;
}

TEST(InputStream, LinesComeOneByOneWithoutTheirEnds) {
  std::string path = test::temp_path("lines.txt");
  test::write_file(path, "a;b 1\r\n\nlast 2");
  auto in = InputStream::open(path);
  ASSERT_TRUE(in.ok()) << in.error();
  std::string_view line;
  std::vector<std::string> got;
  while ((*in)->next_line(line)) got.emplace_back(line);
  EXPECT_EQ(got, (std::vector<std::string>{"a;b 1", "", "last 2"}));
  EXPECT_TRUE((*in)->error().empty());
  std::remove(path.c_str());
}

// Before: `report <(cat x.folded)` said "empty file" (the pipe was drained by the format check).
TEST(InputStream, FoldedFromAPipeGivesTheFilesPicture) {
  std::string text = test::read_file(source("tests/data/demo_matmul.folded"));
  auto want = read_flame_input(source("tests/data/demo_matmul.folded"));
  ASSERT_TRUE(want.ok()) << want.error();
  PipeFeed feed(text);
  auto got = read_flame_input(feed.path());
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(got->total(), want->total());
  EXPECT_EQ(got->stacks.size(), want->stacks.size());
}

TEST(InputStream, GzipFromAPipe) {
  PipeFeed feed(gzip(test::read_file(source("tests/data/demo_matmul.folded"))));
  auto got = read_flame_input(feed.path());
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_GT(got->total(), 0u);
}

// A binary profile through a pipe is copied to an unnamed temporary file and read as a file is.
TEST(InputStream, AiflameProfileFromAPipe) {
  auto want = read_flame_input(source("tests/data/demo_matmul.aiflame"));
  ASSERT_TRUE(want.ok()) << want.error();
  {
    PipeFeed feed(test::read_file(source("tests/data/demo_matmul.aiflame")));
    auto in = FlameInput::open(feed.path());
    ASSERT_TRUE(in.ok()) << in.error();
    EXPECT_EQ(in->format(), InputFormat::Aiflame);
    auto path = in->profile_path();
    ASSERT_TRUE(path.ok()) << path.error();
    EXPECT_NE(*path, feed.path());  // the copy, not the drained pipe
  }
  // The report's pipeline (report/load_flame.h) through the same copy: the file's picture.
  PipeFeed feed(test::read_file(source("tests/data/demo_matmul.aiflame")));
  auto got = read_flame_input(feed.path());
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(got->total(), want->total());
  EXPECT_EQ(got->stacks.size(), want->stacks.size());
}

// Before: a FIFO hung (opened twice: the second open waited for a writer that had gone).
TEST(InputStream, Fifo) {
  std::string path = test::temp_path("fifo");
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  std::string text = "p;main;-;gemm 3\np;main;-;gemm 4\n";
  std::thread writer([&] { test::write_file(path, text); });
  auto got = read_flame_input(path);
  writer.join();
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(got->total(), 7u);
  EXPECT_EQ(got->stacks.size(), 1u);
  std::remove(path.c_str());
}

// Before: bad_alloc (the whole input was read, then gunzipped, into one string). Now one line.
TEST(InputStream, EndlessLineIsOneError) {
  auto got = read_flame_input("/dev/zero");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().find("/dev/zero"), std::string::npos) << got.error();
  EXPECT_EQ(got.error().find('\n'), std::string::npos);
}

TEST(InputStream, GzipBombOfOneLongLineIsOneError) {
  std::string path = test::temp_path("bomb.folded.gz");
  gzFile g = gzopen(path.c_str(), "wb9");
  std::string a(1 << 20, 'a');
  for (int i = 0; i < 100; i++) gzwrite(g, a.data(), static_cast<unsigned>(a.size()));  // 100 MiB, no newline
  gzclose(g);
  auto got = read_flame_input(path);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().find("no line end in its first 64 MiB"), std::string::npos) << got.error();
  EXPECT_EQ(got.error().find('\n'), std::string::npos);
  std::remove(path.c_str());
}

// Many identical lines (a 6-GB-unpacked .gz of them aborted before) keep one stack: memory is the picture.
TEST(InputStream, RepeatedLinesMergeAsTheyStream) {
  std::string path = test::temp_path("rep.folded.gz");
  gzFile g = gzopen(path.c_str(), "wb9");
  std::string block;
  for (int i = 0; i < 1000; i++) block += "python;main;train;-;gemm;0x10;selected 1\n";
  for (int i = 0; i < 500; i++) gzwrite(g, block.data(), static_cast<unsigned>(block.size()));
  gzclose(g);
  auto got = read_flame_input(path);
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(got->total(), 500000u);
  EXPECT_EQ(got->stacks.size(), 1u);
  std::remove(path.c_str());
}

TEST(InputStream, CutShortGzipIsAnError) {
  std::string z = gzip(test::read_file(source("tests/data/demo_matmul.folded")));
  std::string path = test::temp_path("cut.folded.gz");
  test::write_file(path, z.substr(0, z.size() / 2));
  auto got = read_flame_input(path);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().find("gzip"), std::string::npos) << got.error();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace aiflame
