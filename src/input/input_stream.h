// One input of `aiflame report`/`diff`, opened once and read front to back: a file, a pipe, a FIFO or
// a character device, gzip'd or not (zlib's gz reader passes plain bytes through). Nothing is read
// whole: lines come one at a time from a 64 KiB buffer, so the memory of a text input is its longest
// line plus what the parser keeps (the picture), whatever the input's size, and a pipe or a FIFO works
// as a file does (it is never opened a second time, which would find it drained or block).
#pragma once
#include <zlib.h>

#include <memory>
#include <string>
#include <string_view>

#include "util/result.h"

namespace aiflame {

class InputStream {
 public:
  // A line longer than this is an error ("not a text profile?"): /dev/zero or a gzip bomb without a
  // newline would otherwise grow one line without end. Folded lines of deep stacks are tens of KB.
  static constexpr size_t kMaxLine = size_t{64} << 20;

  // Errors are one line naming the file.
  static Result<std::unique_ptr<InputStream>> open(const std::string& path);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  const std::string& name() const { return name_; }
  // A regular file, not gzip'd: its path can be opened again (the binary profile reader reads twice).
  bool reopenable() const { return regular_ && !gzip_; }
  // Up to n of the first (decompressed) bytes, without consuming them; fewer at the end of the input.
  std::string_view peek(size_t n);
  // The next line without its "\n" or "\r\n"; false at the end or on an error (then error() is set).
  bool next_line(std::string_view& line);
  size_t line_number() const { return line_; }  // 1-based number of the last line returned
  // Empty, or one line: a read error, corrupt gzip data, an overlong line.
  const std::string& error() const { return error_; }
  // Writes every byte not yet consumed (the peeked ones included) to the descriptor.
  Status copy_rest(int fd);

 private:
  InputStream() = default;
  bool fill();  // reads more onto buf_; false at the end or on an error
  std::string name_;
  gzFile gz_ = nullptr;
  bool regular_ = false, gzip_ = false, eof_ = false;
  std::string buf_;
  size_t pos_ = 0, line_ = 0;
  std::string error_;
};

}  // namespace aiflame
