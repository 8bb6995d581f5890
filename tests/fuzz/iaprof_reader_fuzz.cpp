// libFuzzer: any text through the iaprof reader (both of its formats), and back through the writers.
#include <cstdint>
#include <sstream>
#include <string_view>

#include "input/iaprof_reader.h"
#include "output/folded_writer.h"
#include "output/svg_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto d = aiflame::parse_iaprof(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!d) return 0;
  std::ostringstream out;
  aiflame::FoldedWriter().write(*d, out);
  aiflame::SvgWriter().write(*d, out);
  return 0;
}
