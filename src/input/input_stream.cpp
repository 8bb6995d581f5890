#include "input/input_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace aiflame {

namespace {
constexpr size_t kBlock = 1 << 16;
}

Result<std::unique_ptr<InputStream>> InputStream::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{path + ": " + std::strerror(errno)};
  struct stat st;
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    int e = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    return Error{path + ": " + std::strerror(e)};
  }
  std::unique_ptr<InputStream> in(new InputStream);
  in->name_ = path;
  in->regular_ = S_ISREG(st.st_mode);
  in->gz_ = gzdopen(fd, "rb");  // owns fd from here, also when it fails
  if (!in->gz_) {
    ::close(fd);
    return Error{path + ": cannot start zlib"};
  }
  gzbuffer(in->gz_, kBlock);
  in->peek(2);
  in->gzip_ = !gzdirect(in->gz_);
  if (!in->error_.empty()) return Error{in->error_};
  return in;
}

InputStream::~InputStream() {
  if (gz_) gzclose(gz_);
}

bool InputStream::fill() {
  if (eof_ || !error_.empty()) return false;
  if (pos_ > 0 && pos_ >= buf_.size() / 2) {  // drop what was consumed before growing
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  size_t old = buf_.size();
  buf_.resize(old + kBlock);
  int n = gzread(gz_, buf_.data() + old, static_cast<unsigned>(kBlock));
  buf_.resize(old + static_cast<size_t>(n > 0 ? n : 0));
  if (n < 0) {
    int code = 0;
    const char* msg = gzerror(gz_, &code);
    error_ = name_ + ": " + (code == Z_ERRNO ? std::strerror(errno) : code == Z_DATA_ERROR ? "corrupt gzip data" : msg);
    return false;
  }
  if (n == 0) {
    eof_ = true;
    int code = 0;
    gzerror(gz_, &code);
    if (code == Z_BUF_ERROR) error_ = name_ + ": gzip data cut short";
    else if (code != Z_OK) error_ = name_ + ": corrupt gzip data";
    return false;
  }
  return true;
}

std::string_view InputStream::peek(size_t n) {
  while (buf_.size() - pos_ < n && fill()) {}
  return std::string_view(buf_).substr(pos_, n);
}

bool InputStream::next_line(std::string_view& line) {
  size_t scanned = 0;  // bytes after pos_ known to hold no newline (fill() may move pos_ to 0)
  while (true) {
    size_t nl = buf_.find('\n', pos_ + scanned);
    if (nl != std::string::npos) {
      line = std::string_view(buf_).substr(pos_, nl - pos_);
      pos_ = nl + 1;
      break;
    }
    scanned = buf_.size() - pos_;
    if (scanned > kMaxLine) {
      error_ = name_ + ": line " + std::to_string(line_ + 1) + " is longer than " + std::to_string(kMaxLine >> 20) +
               " MiB (not a text profile?)";
      return false;
    }
    if (!fill()) {
      if (!error_.empty() || pos_ >= buf_.size()) return false;
      line = std::string_view(buf_).substr(pos_);  // the last line, without a newline
      pos_ = buf_.size();
      break;
    }
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  line_++;
  return true;
}

Status InputStream::copy_rest(int fd) {
  do {
    for (size_t p = pos_; p < buf_.size();) {
      ssize_t w = ::write(fd, buf_.data() + p, buf_.size() - p);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return Error{"cannot copy " + name_ + " to a temporary file: " + std::strerror(w < 0 ? errno : ENOSPC)};
      p += static_cast<size_t>(w);
    }
    buf_.clear();
    pos_ = 0;
  } while (fill());
  if (!error_.empty()) return Error{error_};
  return Ok{};
}

}  // namespace aiflame
