// Every input `aiflame report` and `aiflame diff` read, told apart by content (never by name):
// aiflame profiles, folded stacks (plain or annotated, as aiflame, flamegraph.pl's stackcollapse
// scripts and iaprof write them) and iaprof's text output. Gzip'd text is read as well. The text
// inputs are read here; aiflame profiles are attributed on their way to a picture
// (report/load_flame.h reads every kind).
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "flame/flame_data.h"
#include "input/folded_reader.h"
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
  // Nothing to read: an empty file or pipe.
  bool empty();
  // The flame graph of a text input, read line by line. An aiflame profile is an error here: it is
  // attributed on its way to a picture (report/load_flame.h opens it at profile_path()).
  // Folded stacks keep the CPU frames `frames` allows (folded_reader.h).
  Result<FlameData> read(const TextFrameOptions& frames = {});

 private:
  FlameInput() = default;
  std::unique_ptr<InputStream> stream_;
  InputFormat format_ = InputFormat::Unknown;
  int copy_fd_ = -1;
  std::string copy_path_;
};

// The format of a file's content, for callers that handle aiflame profiles their own way.
Result<InputFormat> detect_file_format(const std::string& path);

// A flame graph from the bytes of a text input (folded stacks, iaprof output), read as it is; `name`
// is used in errors, which are one line (an aiflame profile's bytes are one too).
Result<FlameData> parse_flame_input(const std::string& bytes, const std::string& name);

}  // namespace aiflame
