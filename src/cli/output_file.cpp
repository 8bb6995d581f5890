#include "cli/output_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <streambuf>

namespace aiflame {
namespace {

// An ostream buffer over the descriptor we created: the file is never opened again by name.
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
  ~FdBuf() override { sync(); }
  bool failed() const { return failed_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (c != traits_type::eof()) {
      *pptr() = static_cast<char>(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* p = pbase();
    while (!failed_ && p < pptr()) {
      ssize_t w = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) failed_ = true;
      else p += w;
    }
    setp(buf_, buf_ + sizeof buf_);
    return !failed_;
  }
  int fd_;
  bool failed_ = false;
  char buf_[1 << 16];
};

}  // namespace

Status check_output_path(const std::string& path, bool force) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return Ok{};
  if (S_ISLNK(st.st_mode))
    return Error{path + " is a symbolic link; aiflame does not write through links (remove it or choose another name)"};
  if (!S_ISREG(st.st_mode)) return Error{path + " exists and is not a regular file; choose another name"};
  if (!force) return Error{path + " exists; pass --force to overwrite it"};
  return Ok{};
}

Status write_output_file(const std::string& path, const std::function<void(std::ostream&)>& fill, bool force) {
  if (Status st = check_output_path(path, force); !st) return st;
  std::string tmp = path + ".XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);  // O_CREAT | O_EXCL: never an existing file or link
  if (fd < 0) return Error{"cannot create " + path + ": " + std::strerror(errno)};
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);  // what a plain create would give, not mkstemp's 0600
  bool ok;
  {
    FdBuf buf(fd);
    std::ostream out(&buf);
    fill(out);
    out.flush();
    ok = out.good() && !buf.failed();
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    ::unlink(tmp.c_str());
    return Error{"writing " + path + " failed (disk full?)"};
  }
  // Without --force, a file that appeared meanwhile is not replaced either.
  int rc = force ? ::rename(tmp.c_str(), path.c_str())
                 : ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE);
  if (rc != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    if (e == EEXIST) return Error{path + " exists; pass --force to overwrite it"};
    return Error{"cannot create " + path + ": " + std::strerror(e)};
  }
  return Ok{};
}

}  // namespace aiflame
