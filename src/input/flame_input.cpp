#include "input/flame_input.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

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

Result<InputFormat> detect_file_format(const std::string& path) {
  // An aiflame profile is known by its first 8 bytes: reading the whole of a long profile only to see
  // them would put its size on top of a report's peak memory.
  if (std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose); f) {
    char magic[8];
    if (std::fread(magic, 1, sizeof magic, f.get()) == sizeof magic && std::memcmp(magic, "AIFLAME\0", 8) == 0)
      return InputFormat::Aiflame;
  }
  auto b = read_input_bytes(path);
  if (!b) return Error{b.error()};
  return detect_input_format(*b);
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

Result<FlameData> read_text_flame(const std::string& path) {
  auto b = read_input_bytes(path);
  if (!b) return Error{b.error()};
  return parse_flame_input(*b, path);
}

}  // namespace aiflame
