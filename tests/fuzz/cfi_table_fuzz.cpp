// libFuzzer harness for the CFI row builder (src/record/unwind/cfi_table.cpp), which reads the
// .eh_frame_hdr and .eh_frame of every object a launch stack passes through. Input: three
// little-endian u64 (the image's address, the .eh_frame_hdr address, the load bias) and the image
// bytes (tests/fuzz/make_cfi_seed.py cuts them from a real object). The builder must stay inside the
// image and return rows sorted by location, one per location.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "record/unwind/cfi_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 24) return 0;
  uint64_t head[3];
  std::memcpy(head, data, sizeof head);
  // A copy of exactly the image bytes, so that AddressSanitizer sees any read past them.
  std::vector<uint8_t> image(data + 24, data + size);
  aiflame::unwind::MemView mem{image.data(), head[0], image.size()};
  std::vector<aiflame::unwind::FrameRow> rows;
  aiflame::unwind::CfiStats stats;
  if (!aiflame::unwind::build_cfi_rows(mem, head[1], head[2], &rows, &stats)) return 0;
  for (size_t i = 1; i < rows.size(); i++)
    if (rows[i - 1].loc >= rows[i].loc) std::abort();
  for (const auto& r : rows) {
    const auto* found = aiflame::unwind::find_row(rows.data(), rows.size(), r.loc);
    if (!found || found->loc != r.loc) std::abort();
  }
  return 0;
}
