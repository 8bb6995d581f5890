// Interactive SVG flame graph (flamegraph.pl-like): merged stacks laid out by count, coloured by
// frame kind, with click-to-zoom, regex search and a hover details line in embedded JavaScript.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "output/writer.h"

namespace aiflame {

struct SvgOptions {
  int width = 1200;           // image width in px
  int frame_height = 16;      // px per stack level
  double min_width_px = 0.1;  // narrower frames are not drawn (their counts still count)
  bool inverted = false;      // icicle graph: root at the top
};

class SvgWriter : public Writer {
 public:
  SvgWriter() = default;
  explicit SvgWriter(const SvgOptions& options) : options_(options) {}
  std::string_view format() const override { return "svg"; }
  void write(const FlameData& data, std::ostream& out) const override;
  bool uses_times() const override { return false; }
  const SvgOptions& options() const { return options_; }

 private:
  SvgOptions options_;
};

// What a differential flame graph adds to the picture's stacks (their counts are AFTER's): each
// stack's BEFORE samples, raw and scaled to AFTER's total (output/diff_writer.h).
struct SvgDiff {
  std::vector<uint64_t> before;
  std::vector<double> before_scaled;
};

// The SVG of `data`; with `diff`, frames are coloured by their change (flamegraph.pl's differential
// colours: red grew, blue shrank, grey unchanged, every frame outlined) and tooltips give both sides.
void write_svg(const FlameData& data, const SvgOptions& options, const SvgDiff* diff, std::ostream& out);

// Helpers, public for the tests.

// Valid UTF-8 without control characters: invalid sequences and controls become U+FFFD, tab and
// newlines a space. Keeps at most max_chars code points, then appends "..." if any were dropped.
std::string svg_clean_text(std::string_view s, size_t max_chars = std::string_view::npos);
// XML escape of & < > " ' (for text nodes and attributes alike). Expects svg_clean_text output.
std::string svg_escape(std::string_view clean);
// A frame label that fits width_px at char_px per character: the whole text, a prefix ending in
// "..", or empty when fewer than 3 characters fit. Counts UTF-8 code points, as the script does.
std::string svg_label(std::string_view clean, double width_px, double char_px);

}  // namespace aiflame
