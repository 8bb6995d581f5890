// Every input `aiflame report` and `aiflame diff` read, told apart by content (never by name):
// aiflame profiles, folded stacks (plain or annotated, as aiflame, flamegraph.pl's stackcollapse
// scripts and iaprof write them) and iaprof's text output. Gzip'd text is read as well.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "attribute/frame_builder.h"
#include "flame/flame_data.h"
#include "input/input_stream.h"
#include "util/result.h"

namespace aiflame {

enum class InputFormat { Aiflame, Folded, Iaprof, Unknown };
std::string_view input_format_name(InputFormat f);

// The format of a file's (decompressed) bytes.
InputFormat detect_input_format(std::string_view bytes);

// The file's bytes, gunzipped when they start with gzip's magic. Errors name the file. Reads the
// whole input: for small files (tests); the commands stream with FlameInput instead.
Result<std::string> read_input_bytes(const std::string& path);

// One input opened once, its format told from its first bytes (a pipe or a FIFO is never opened
// twice: it would be found drained, or block). Text is then streamed a line at a time; an aiflame
// profile is read by path, from a copy in $TMPDIR (an unnamed file, gone with the process) when the
// input is a pipe, a FIFO or gzip'd, since its reader reads the file twice.
class FlameInput {
 public:
  static Result<FlameInput> open(const std::string& path);
  FlameInput(FlameInput&&) noexcept;
  FlameInput& operator=(FlameInput&&) noexcept;
  ~FlameInput();
  InputFormat format() const { return format_; }
  const std::string& name() const { return stream_->name(); }
  // A path that read_profile() and for_each_batch() can open, for an aiflame profile.
  Result<std::string> profile_path();
  // Error text with the copy's path put back to the input's name.
  std::string own_error(std::string error) const;
  // A flame graph: aiflame profiles attributed and built with `options`, text read line by line.
  Result<FlameData> read(const FrameOptions& options = {});

 private:
  FlameInput() = default;
  std::unique_ptr<InputStream> stream_;
  InputFormat format_ = InputFormat::Unknown;
  int copy_fd_ = -1;
  std::string copy_path_;
};

// The format of a file's content, for callers that handle aiflame profiles their own way.
Result<InputFormat> detect_file_format(const std::string& path);

// A flame graph from any input: aiflame profiles are attributed and built with `options`; folded
// and iaprof inputs are read as they are. Errors are one line naming the file.
Result<FlameData> read_flame_input(const std::string& path, const FrameOptions& options = {});

// The same from bytes already read; `name` is used in errors.
Result<FlameData> parse_flame_input(const std::string& bytes, const std::string& name, const FrameOptions& options = {});

}  // namespace aiflame
