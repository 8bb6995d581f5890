// Reads folded stacks ("frame;frame;... COUNT", flamegraph.pl's input), plain or with iaprof's
// annotations, back into typed frames. What each annotation means is in docs/formats.md.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flame/flame_data.h"
#include "util/result.h"

namespace aiflame {

// What of a text input's CPU frames is kept: report's --no-python, --no-native (native and runtime
// frames) and --max-depth (CPU frames from the root, after the process frames), as they shape a
// recorded profile's stacks. Applied to the names before they are interned, so a stack of millions of
// frames costs what is kept.
struct TextFrameOptions {
  bool python = true;
  bool native = true;
  size_t max_depth = 0;  // 0: all
  bool trims() const { return !python || !native || max_depth; }
};

// The names of one stack (root first) with the CPU frames `opt` leaves out removed.
std::vector<std::string_view> trim_cpu_names(const std::vector<std::string_view>& names, const TextFrameOptions& opt);

// Folded stacks a line at a time, for inputs streamed from a file or a pipe: what it keeps is the
// picture (each distinct stack once, identical ones summed), never the text.
class FoldedParser {
 public:
  explicit FoldedParser(TextFrameOptions opt = {});
  ~FoldedParser();
  // False on a malformed line; error() then names it by `number`.
  bool add_line(std::string_view line, size_t number);
  const std::string& error() const { return error_; }
  Result<FlameData> finish();

 private:
  struct Index;
  FlameData d_;
  std::unique_ptr<Index> index_;  // identical stacks merge
  uint64_t total_ = 0;
  std::string error_;
  std::string last_stack_;  // the previous line's stack text, and its stack's index
  uint32_t last_index_ = 0;
  TextFrameOptions opt_;
};

// Parses a whole folded file. Blank lines and '#' comments are skipped; any other line without a
// whole-number count after its last blank is an error naming the line.
Result<FlameData> parse_folded(std::string_view text);

// Kinds for the frames of one stack, root first, from their annotations (or, in plain files, from
// their place around the "-" separator and their shape). Strips "_[G]", "_[g]" and "py::".
std::vector<Frame> classify_folded_frames(const std::vector<std::string_view>& names);

// A CPU frame by its name alone: "py::" Python, "_[k]" kernel mode (kept, as Runtime), CUDA and C
// runtime names Runtime, "func (file.py:N)" Python, anything else Native.
Frame classify_cpu_frame(std::string_view name);

}  // namespace aiflame
