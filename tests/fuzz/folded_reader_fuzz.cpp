// libFuzzer: any text through the folded-stack reader, and what it accepts back through the writers.
// The first byte picks report's frame options (--no-python, --no-native, --max-depth 0..31), which
// the reader applies to each stack's names before it interns them.
#include <cstdint>
#include <sstream>
#include <string_view>

#include "input/folded_reader.h"
#include "input/text_lines.h"
#include "output/folded_writer.h"
#include "output/svg_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  aiflame::TextFrameOptions opt;
  if (!text.empty()) {
    const uint8_t b = static_cast<uint8_t>(text[0]);
    opt = {.python = (b & 1) == 0, .native = (b & 2) == 0, .max_depth = static_cast<size_t>(b >> 3)};
    text.remove_prefix(1);
  }
  aiflame::FoldedParser parser(opt);
  auto d = aiflame::parse_lines(parser, text);
  if (!d) return 0;
  std::ostringstream out;
  aiflame::FoldedWriter().write(*d, out);
  aiflame::SvgWriter().write(*d, out);
  return 0;
}
