// libFuzzer: any bytes as a file `aiflame report` reads as a text input (src/input/flame_input.h):
// format detection, gzip, the line stream with its 64 MiB line bound, then the folded or iaprof
// reader with report's frame options (the last byte picks them). Structure-aware for gzip: a gzip'd
// input is mutated inside and compressed again, so that mutations reach the readers past gzip's CRC.
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "input/flame_input.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

// The input's bytes in one memory file, opened by its /proc path as report opens a named file.
const std::string& input_path() {
  static const std::string path = [] {
    int fd = memfd_create("aiflame_text_input", 0);
    return "/proc/self/fd/" + std::to_string(fd);
  }();
  return path;
}

bool gunzip(const uint8_t* data, size_t size, size_t limit, std::string& out) {
  z_stream z = {};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return false;
  z.next_in = const_cast<uint8_t*>(data);
  z.avail_in = static_cast<unsigned>(size);
  char buf[16384];
  int rc = Z_OK;
  while (rc == Z_OK && out.size() < limit) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END;
}

bool gzip(const std::string& text, std::string& out) {
  z_stream z = {};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  out.resize(deflateBound(&z, text.size()) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<unsigned>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<unsigned>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int) {
  std::string text, packed;
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b && gunzip(data, size, 4 * max_size, text)) {
    size_t n = text.size();
    text.resize(std::max(n, 4 * max_size));
    n = LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(text.data()), n, text.size());
    text.resize(n);
    if (gzip(text, packed) && packed.size() <= max_size) {
      std::copy(packed.begin(), packed.end(), data);
      return packed.size();
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  aiflame::TextFrameOptions opt;
  if (size > 0) {
    const uint8_t b = data[size - 1];
    opt = {.python = (b & 1) == 0, .native = (b & 2) == 0, .max_depth = static_cast<size_t>((b >> 2) & 7)};
  }
  int fd = std::stoi(input_path().substr(sizeof "/proc/self/fd/" - 1));
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  auto in = aiflame::FlameInput::open(input_path());
  if (!in || in->format() == aiflame::InputFormat::Aiflame) return 0;  // profiles: profile_reader_fuzz
  auto d = in->read(opt);
  if (d) (void)d->total();
  return 0;
}
