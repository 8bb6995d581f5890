#include "input/flame_input.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <utility>

#include "input/folded_reader.h"
#include "input/iaprof_reader.h"
#include "input/text_lines.h"

namespace aiflame {

namespace {

constexpr size_t kMaxInput = size_t{4} << 30;  // 4 GiB of text: far beyond any real profile

bool is_gzip(std::string_view b) { return b.size() >= 2 && b[0] == '\x1f' && b[1] == '\x8b'; }

Result<std::string> gunzip(const std::string& in, const std::string& name) {
  if (in.size() > UINT32_MAX) return Error{name + ": gzip'd input larger than 4 GiB"};
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return Error{name + ": cannot start zlib"};
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);  // Z_BUF_ERROR once the input ends before the stream does
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > kMaxInput) rc = Z_MEM_ERROR;
  } while (rc == Z_OK);
  inflateEnd(&z);
  if (rc == Z_MEM_ERROR) return Error{name + ": more than 4 GiB once gunzipped"};
  if (rc != Z_STREAM_END) return Error{name + ": corrupt or cut-short gzip data"};
  return out;
}

// A first content line of the shape "a;b;c 12".
bool looks_like_folded(std::string_view bytes) {
  TextLines lines(bytes);
  std::string_view line;
  while (lines.next(line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t blank = line.find_last_of(" \t");
    uint64_t n = 0;
    return blank != std::string_view::npos && blank > 0 && parse_u64(line.substr(blank + 1), n);
  }
  return false;
}

}  // namespace

std::string_view input_format_name(InputFormat f) {
  switch (f) {
    case InputFormat::Aiflame: return "aiflame profile";
    case InputFormat::Folded: return "folded stacks";
    case InputFormat::Iaprof: return "iaprof output";
    case InputFormat::Unknown: break;
  }
  return "unknown";
}

InputFormat detect_input_format(std::string_view bytes) {
  if (bytes.substr(0, 8) == std::string_view("AIFLAME\0", 8)) return InputFormat::Aiflame;
  if (looks_like_iaprof(bytes)) return InputFormat::Iaprof;
  if (looks_like_folded(bytes)) return InputFormat::Folded;
  return InputFormat::Unknown;
}

Result<std::string> read_input_bytes(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return Error{path + ": " + std::strerror(errno)};
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) {
    bytes.append(buf, n);
    if (bytes.size() > kMaxInput) return Error{path + ": larger than 4 GiB"};
  }
  if (std::ferror(f.get())) return Error{path + ": " + std::strerror(errno ? errno : EIO)};
  if (is_gzip(bytes)) return gunzip(bytes, path);
  return bytes;
}

namespace {

// True when the first line that decides the format (not blank, not a '#' comment) is whole in `head`.
bool first_content_line_complete(std::string_view head) {
  for (size_t p = 0;;) {
    size_t nl = head.find('\n', p);
    if (nl == std::string_view::npos) return false;
    std::string_view line = head.substr(p, nl - p);
    if (!line.empty() && line != "\r" && line[0] != '#') return true;
    p = nl + 1;
  }
}

}  // namespace

Result<FlameInput> FlameInput::open(const std::string& path) {
  auto stream = InputStream::open(path);
  if (!stream) return Error{stream.error()};
  FlameInput in;
  in.stream_ = std::move(*stream);
  // The first bytes, enough for the first line that tells the format, up to InputStream::kMaxLine.
  std::string_view head;
  for (size_t n = 1 << 16;; n *= 2) {
    head = in.stream_->peek(n);
    if (head.size() < n || first_content_line_complete(head) || n >= InputStream::kMaxLine) break;
  }
  if (!in.stream_->error().empty()) return Error{in.stream_->error()};
  in.format_ = detect_input_format(head);
  return in;
}

FlameInput::FlameInput(FlameInput&& o) noexcept
    : stream_(std::move(o.stream_)), format_(o.format_), copy_fd_(std::exchange(o.copy_fd_, -1)),
      copy_path_(std::move(o.copy_path_)) {}

FlameInput& FlameInput::operator=(FlameInput&& o) noexcept {
  if (this != &o) {
    if (copy_fd_ >= 0) ::close(copy_fd_);
    stream_ = std::move(o.stream_);
    format_ = o.format_;
    copy_fd_ = std::exchange(o.copy_fd_, -1);
    copy_path_ = std::move(o.copy_path_);
  }
  return *this;
}

FlameInput::~FlameInput() {
  if (copy_fd_ >= 0) ::close(copy_fd_);
}

Result<std::string> FlameInput::profile_path() {
  if (stream_->reopenable()) return stream_->name();
  if (copy_fd_ >= 0) return copy_path_;
  // An unnamed file (O_TMPFILE): nothing is left behind however the report ends.
  const char* dir = std::getenv("TMPDIR");
  std::string tmp = dir && *dir ? dir : "/tmp";
  copy_fd_ = ::open(tmp.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (copy_fd_ < 0)
    return Error{name() + ": an aiflame profile from a pipe, a FIFO or gzip is copied to " + tmp +
                 " first, which failed (" + std::strerror(errno) + "); save it to a file and report that"};
  if (Status st = stream_->copy_rest(copy_fd_); !st) return Error{st.error()};
  copy_path_ = "/proc/self/fd/" + std::to_string(copy_fd_);
  return copy_path_;
}

std::string FlameInput::own_error(std::string error) const {
  if (copy_path_.empty()) return error;
  for (size_t at; (at = error.find(copy_path_)) != std::string::npos;) error.replace(at, copy_path_.size(), name());
  return error;
}

bool FlameInput::empty() { return stream_->peek(1).empty(); }

Result<FlameData> FlameInput::read(const TextFrameOptions& frames) {
  const std::string& nm = name();
  auto lines = [&](auto& parser, const char* what) -> Result<FlameData> {
    std::string_view line;
    while (stream_->next_line(line))
      if (!parser.add_line(line, stream_->line_number())) return Error{nm + ": " + what + ", " + parser.error()};
    if (!stream_->error().empty()) return Error{stream_->error()};
    auto d = parser.finish();
    if (!d) return Error{nm + ": " + what + ", " + d.error()};
    d->title = "AI Flame Graph: " + d->process;
    d->subtitle = what;
    return d;
  };
  switch (format_) {
    case InputFormat::Aiflame:
      // Profiles are attributed on their way to a picture: report/load_flame.h reads them.
      return Error{nm + ": an aiflame profile, not a text input"};
    case InputFormat::Iaprof: {
      IaprofParser parser;
      return lines(parser, "iaprof output");
    }
    case InputFormat::Folded: {
      FoldedParser parser(frames);
      return lines(parser, "folded stacks");
    }
    case InputFormat::Unknown: break;
  }
  if (empty()) return Error{nm + ": empty file"};
  std::string_view head = stream_->peek(InputStream::kMaxLine);
  if (head.size() == InputStream::kMaxLine && head.find('\n') == std::string_view::npos)
    return Error{nm + ": not an aiflame profile, folded stacks or iaprof output (no line end in its first " +
                 std::to_string(InputStream::kMaxLine >> 20) + " MiB)"};
  return Error{nm + ": not an aiflame profile, folded stacks or iaprof output"};
}

Result<InputFormat> detect_file_format(const std::string& path) {
  auto in = FlameInput::open(path);
  if (!in) return Error{in.error()};
  return in->format();
}

Result<FlameData> parse_flame_input(const std::string& bytes, const std::string& name) {
  switch (detect_input_format(bytes)) {
    case InputFormat::Aiflame:
      // Profiles are attributed on their way to a picture: report/load_flame.h reads them.
      return Error{name + ": an aiflame profile, not a text input"};
    case InputFormat::Iaprof: {
      auto d = parse_iaprof(bytes);
      if (!d) return Error{name + ": iaprof output, " + d.error()};
      d->title = "AI Flame Graph: " + d->process;
      d->subtitle = "iaprof output";
      return d;
    }
    case InputFormat::Folded: {
      auto d = parse_folded(bytes);
      if (!d) return Error{name + ": folded stacks, " + d.error()};
      d->title = "AI Flame Graph: " + d->process;
      d->subtitle = "folded stacks";
      return d;
    }
    case InputFormat::Unknown: break;
  }
  if (bytes.empty()) return Error{name + ": empty file"};
  return Error{name + ": not an aiflame profile, folded stacks or iaprof output"};
}

}  // namespace aiflame
