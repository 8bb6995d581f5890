// FlameScope-style sub-second heatmap as SVG: x = seconds since the start, y = offset within the
// second in rows of the collection interval, colour = GPU samples in the cell; one lane per GPU when
// several were sampled. Built from FlameData::timeline (estimated sample times, docs/attribution.md).
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "output/writer.h"

namespace aiflame {

// The cells of one lane: counts[column][row].
struct HeatmapGrid {
  uint32_t device = 0;
  std::vector<std::vector<double>> counts;
  double max = 0;
};

struct Heatmap {
  uint32_t columns = 0;  // of column_s seconds each
  uint32_t column_s = 1;
  uint32_t rows = 0;     // per second
  uint32_t row_ms = 10;
  std::vector<HeatmapGrid> lanes;  // by device; the last one holds every device past kMaxLanes - 1
  bool other_devices = false;      // the last lane is "the other GPUs"
};

// The bound on a heatmap's memory and picture, whatever the timeline holds (a crafted kernel time
// 10^16 ns from the others once asked for 8 GB): at most kMaxColumns columns (a column then holds
// several seconds) and kMaxLanes lanes, so at most kMaxColumns * kMaxLanes * 1000 cells (a 1-ms
// row), 8 bytes each: 16 MB.
inline constexpr uint32_t kMaxHeatmapColumns = 600;
inline constexpr uint32_t kMaxHeatmapLanes = 16;

// Bins the timeline: a sample at t lands in column t / (column_s seconds), row (t mod 1 s) / row_ms.
Heatmap bin_heatmap(const FlameData& data, uint32_t row_ms);

class HeatmapWriter : public Writer {
 public:
  std::string_view format() const override { return "heatmap"; }
  void write(const FlameData& data, std::ostream& out) const override;
};

}  // namespace aiflame
