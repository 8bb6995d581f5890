// libFuzzer harness for the CFI row builder (src/record/unwind/cfi_table.cpp), which reads the
// .eh_frame_hdr and .eh_frame of every object a launch stack passes through. Input: three
// little-endian u64 (the image's address, the .eh_frame_hdr address, the load bias) and the image
// bytes (tests/fuzz/make_cfi_seed.py cuts them from a real object). The builder must stay inside the
// image and return rows sorted by location, one per location; the in-place lookup of one FDE
// (find_cfi_row, a walk through an object whose rows are being built) must stay inside it too.
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
  aiflame::unwind::FrameRow row;
  // Locations around the image's own addresses (where its code would be, relative to the bias).
  for (uint64_t d : {uint64_t{0}, uint64_t{0x40}, uint64_t{0x1000}, image.size() / 2})
    (void)aiflame::unwind::find_cfi_row(mem, head[1], head[2], static_cast<uint32_t>(head[0] - head[2] + d), &row);
  if (!aiflame::unwind::build_cfi_rows(mem, head[1], head[2], &rows, &stats)) return 0;
  for (size_t i = 0; i < rows.size(); i += 1 + rows.size() / 64)
    (void)aiflame::unwind::find_cfi_row(mem, head[1], head[2], rows[i].loc, &row);
  for (size_t i = 1; i < rows.size(); i++)
    if (rows[i - 1].loc >= rows[i].loc) std::abort();
  for (const auto& r : rows) {
    const auto* found = aiflame::unwind::find_row(rows.data(), rows.size(), r.loc);
    if (!found || found->loc != r.loc) std::abort();
  }
  return 0;
}
