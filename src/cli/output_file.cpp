#include "cli/output_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <streambuf>

namespace aiflame {
namespace {

// An ostream buffer over the descriptor we created: the file is never opened again by name.
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
  ~FdBuf() override { sync(); }
  bool failed() const { return failed_; }
  int error() const { return errno_; }

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
      if (w <= 0) failed_ = true, errno_ = w < 0 ? errno : ENOSPC;
      else p += w;
    }
    setp(buf_, buf_ + sizeof buf_);
    return !failed_;
  }
  int fd_;
  bool failed_ = false;
  int errno_ = 0;
  char buf_[1 << 16];
};

}  // namespace

namespace {
std::string dir_of(const std::string& path);
}

Status check_output_path(const std::string& path, bool force) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      return Error{path + " is a symbolic link; aiflame does not write through links (remove it or choose another name)"};
    if (!S_ISREG(st.st_mode)) return Error{path + " exists and is not a regular file; choose another name"};
    if (!force) return Error{path + " exists; pass --force to overwrite it"};
  }
  // A directory the output cannot be created in is found before the input is read (a 1.1 GB input
  // took 26 s to read before the write said so).
  const std::string dir = dir_of(path);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return Error{"cannot create " + path + ": " + dir + ": " + std::strerror(errno)};
  return Ok{};
}

Status check_output_not_input(const std::string& path, const std::vector<std::string>& inputs) {
  struct stat out;
  if (path.empty() || ::stat(path.c_str(), &out) != 0) return Ok{};
  for (const auto& in : inputs) {
    struct stat st;
    if (::stat(in.c_str(), &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino)
      return Error{path + " is the input " + in + "; aiflame does not overwrite what it reads (choose another output name)"};
  }
  return Ok{};
}

namespace {

// The file being written, unnamed until it is whole: O_TMPFILE in the target's directory, so that
// nothing is left behind however the command ends (an exception, abort, SIGKILL), linked to its name
// at the end. File systems without O_TMPFILE get a mkostemp name, removed on every failure aiflame
// lives through.
struct TempOutput {
  int fd = -1;
  std::string named;  // the mkostemp path; empty for an unnamed file
  ~TempOutput() {
    if (fd >= 0) ::close(fd);
    if (!named.empty()) ::unlink(named.c_str());
  }
};

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Status write_output_file(const std::string& path, const std::function<void(std::ostream&)>& fill, bool force) {
  if (Status st = check_output_path(path, force); !st) return st;
  TempOutput tmp;
  tmp.fd = ::open(dir_of(path).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);  // the umask applies
  if (tmp.fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    tmp.named = path + ".XXXXXX";
    tmp.fd = ::mkostemp(tmp.named.data(), O_CLOEXEC);  // O_CREAT | O_EXCL: never an existing file or link
    if (tmp.fd < 0) tmp.named.clear();
    else {
      mode_t mask = ::umask(0);
      ::umask(mask);
      ::fchmod(tmp.fd, 0666 & ~mask);  // what a plain create would give, not mkstemp's 0600
    }
  }
  if (tmp.fd < 0) return Error{"cannot create " + path + ": " + std::strerror(errno)};
  bool ok;
  int write_errno = 0;
  {
    FdBuf buf(tmp.fd);
    std::ostream out(&buf);
    fill(out);  // an exception leaves through TempOutput's destructor: nothing named is left
    out.flush();
    ok = out.good() && !buf.failed();
    write_errno = buf.error();
  }
  if (ok && ::fsync(tmp.fd) != 0 && errno != EINVAL) ok = false, write_errno = errno;
  if (!ok) return Error{"writing " + path + " failed: " + std::strerror(write_errno ? write_errno : EIO)};
  std::string from = tmp.named.empty() ? "/proc/self/fd/" + std::to_string(tmp.fd) : tmp.named;
  int rc;
  if (tmp.named.empty() && !force) {
    // linkat never replaces: a file that appeared meanwhile is not replaced either.
    rc = ::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW);
  } else if (tmp.named.empty()) {
    // Named beside the target first, then renamed over it: the target is replaced whole or not at all.
    std::string beside;
    rc = -1;
    for (int i = 0; i < 100 && rc != 0; i++) {
      beside = path + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(i);
      rc = ::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, beside.c_str(), AT_SYMLINK_FOLLOW);
      if (rc != 0 && errno != EEXIST) break;
    }
    if (rc == 0) {
      rc = ::rename(beside.c_str(), path.c_str());
      int e = errno;
      if (rc != 0) ::unlink(beside.c_str());
      errno = e;
    }
  } else {
    // Without --force, a file that appeared meanwhile is not replaced either.
    rc = force ? ::rename(from.c_str(), path.c_str())
               : ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE);
    if (rc == 0) tmp.named.clear();
  }
  if (rc != 0) {
    int e = errno;
    if (e == EEXIST) return Error{path + " exists; pass --force to overwrite it"};
    return Error{"cannot create " + path + ": " + std::strerror(e)};
  }
  return Ok{};
}

Status write_output(const std::string& path, const std::function<void(std::ostream&)>& fill, bool force) {
  if (!path.empty()) return write_output_file(path, fill, force);
  fill(std::cout);
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout))
    return Error{std::string("writing the output to standard output failed: ") + std::strerror(errno ? errno : EIO)};
  return Ok{};
}

}  // namespace aiflame
