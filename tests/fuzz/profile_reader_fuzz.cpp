// libFuzzer: any bytes through the profile reader, and whatever it accepts through attribution,
// frame building and the folded and SVG writers. Never a crash, hang or sanitizer report. Mutations
// are structure-aware (profile_mutator.h: records mutated inside chunks with valid CRCs), with one in
// eight left to libFuzzer's byte mutators.
#include <cstdint>
#include <sstream>
#include <string>

#include "attribute/frame_builder.h"
#include "output/folded_writer.h"
#include "output/svg_writer.h"
#include "profile/profile.h"
#include "profile_mutator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto p = aiflame::parse_profile(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!p) return 0;
  p->modules.clear();  // never open files named by fuzz input
  // Stored GpuLine/GpuSass records are fuzzed through frame building; cubin images would be fuzzing
  // elfutils' ELF/DWARF readers, not aiflame's code.
  for (auto& [crc, cubin] : p->cubins) cubin.image.clear();
  if (p->launches.size() + p->kernels.size() > 100000) return 0;
  aiflame::AttributionResult r = aiflame::attribute_samples(*p);
  aiflame::Symbolizer sym({});
  aiflame::FrameBuilder fb(*p, sym, {});
  aiflame::FlameData d = fb.build(r);
  std::ostringstream out;
  aiflame::FoldedWriter().write(d, out);
  aiflame::SvgWriter().write(d, out);
  return 0;
}
