#include "output/heatmap_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include "output/svg_writer.h"

namespace aiflame {

Heatmap bin_heatmap(const FlameData& data, uint32_t row_ms) {
  Heatmap h;
  h.row_ms = std::clamp<uint32_t>(row_ms, 1, 1000);
  h.rows = (1000 + h.row_ms - 1) / h.row_ms;
  uint64_t end_ns = data.duration_ns;
  std::map<uint32_t, size_t> lane_of;
  for (const auto& t : data.timeline) {
    if (t.weight <= 0) continue;
    end_ns = std::max(end_ns, t.time_ns == UINT64_MAX ? t.time_ns : t.time_ns + 1);
    lane_of.try_emplace(t.device, 0);
  }
  const uint64_t seconds = std::max<uint64_t>(1, end_ns / 1000000000ull + (end_ns % 1000000000ull != 0));
  h.column_s = static_cast<uint32_t>(std::min<uint64_t>((seconds + kMaxHeatmapColumns - 1) / kMaxHeatmapColumns, UINT32_MAX));
  h.columns = static_cast<uint32_t>((seconds + h.column_s - 1) / h.column_s);
  // Lanes in device order; the devices past the first kMaxHeatmapLanes - 1 share the last lane.
  for (auto& [device, lane] : lane_of) {
    lane = std::min<size_t>(h.lanes.size(), kMaxHeatmapLanes - 1);
    if (lane < h.lanes.size()) {
      h.other_devices = true;
      continue;
    }
    h.lanes.push_back({device, std::vector<std::vector<double>>(h.columns, std::vector<double>(h.rows, 0.0)), 0});
  }
  const uint64_t column_ns = uint64_t{h.column_s} * 1000000000ull;
  for (const auto& t : data.timeline) {
    if (t.weight <= 0) continue;
    HeatmapGrid& g = h.lanes[lane_of.at(t.device)];
    uint64_t col = t.time_ns / column_ns;
    uint64_t row = (t.time_ns % 1000000000ull) / (1000000ull * h.row_ms);
    if (col >= h.columns || row >= h.rows) continue;
    double& c = g.counts[col][row];
    c += t.weight;
    g.max = std::max(g.max, c);
  }
  return h;
}

namespace {

// White through orange to dark red, FlameScope's scale; 0 stays white.
std::string cell_colour(double v, double max) {
  if (v <= 0 || max <= 0) return "#ffffff";
  double x = std::sqrt(v / max);  // square root: small counts stay visible beside a hot second
  int r = 255, g = static_cast<int>(235 - 200 * x), b = static_cast<int>(200 - 200 * x);
  if (x > 0.75) r = static_cast<int>(255 - 120 * (x - 0.75) * 4);
  return fmt::format("rgb({},{},{})", std::clamp(r, 0, 255), std::clamp(g, 0, 255), std::clamp(b, 0, 255));
}

}  // namespace

void HeatmapWriter::write(const FlameData& data, std::ostream& out) const {
  Heatmap h = bin_heatmap(data, data.summary.interval_ms ? data.summary.interval_ms : 10);
  const int cell_w = std::clamp(1100 / static_cast<int>(h.columns), 4, 24);
  const int cell_h = std::max(2, 400 / static_cast<int>(h.rows));
  const int left = 70, top = 60, lane_gap = 30, legend_h = 50, kMinWidth = 700;
  const int lanes = std::max<int>(1, static_cast<int>(h.lanes.size()));
  const int lane_h = cell_h * static_cast<int>(h.rows);
  // At least as wide as the title, the subtitle's first line and the legend need: one column of a
  // short run was 158 px and cut all three off.
  const int width = std::max(left + cell_w * static_cast<int>(h.columns) + 40, kMinWidth);
  const int height = top + lanes * (lane_h + lane_gap) + legend_h;
  const size_t subtitle_chars = static_cast<size_t>((width - left) / 6);  // 11-px Verdana: about 6 px a character
  // "3 s" for a column of one second, "30-39 s" for one of ten.
  auto column_label = [&](uint32_t c) {
    uint64_t first = uint64_t{c} * h.column_s;
    return h.column_s == 1 ? std::to_string(first) : fmt::format("{}-{}", first, first + h.column_s - 1);
  };
  out << "<?xml version=\"1.0\" standalone=\"no\"?>\n"
      << fmt::format("<svg version=\"1.1\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
                     "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"Verdana\" font-size=\"11\">\n",
                     width, height, width, height)
      << "<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n";
  std::string title = data.title.empty() ? "GPU sample heatmap" : data.title + ": GPU samples over time";
  out << fmt::format("<text x=\"{}\" y=\"22\" font-size=\"16\">{}</text>\n", left,
                     svg_escape(svg_clean_text(title, static_cast<size_t>((width - left) / 9))));  // 16-px: about 9 px a character
  out << fmt::format("<text x=\"{}\" y=\"40\" fill=\"#555\">{}</text>\n", left,
                     svg_escape(svg_clean_text(fmt::format("x: seconds since the start{}; y: offset within the second, "
                                                           "{} ms rows; colour: GPU samples. {}",
                                                           h.column_s > 1 ? fmt::format(" ({} s a column)", h.column_s) : "",
                                                           h.row_ms, data.subtitle), subtitle_chars)));
  double max = 0;
  for (const auto& g : h.lanes) max = std::max(max, g.max);
  if (h.lanes.empty()) {
    out << fmt::format("<text x=\"{}\" y=\"{}\">No timed samples (the input has no time series).</text>\n", left,
                       top + 20);
  }
  for (size_t l = 0; l < h.lanes.size(); l++) {
    const HeatmapGrid& g = h.lanes[l];
    int y0 = top + static_cast<int>(l) * (lane_h + lane_gap);
    // Time no profile recorded (between the windows of a duty-cycled recording): grey, not white, so
    // that it does not read as an idle GPU. Cell by cell at one second a column; whole columns when a
    // column sums several seconds.
    if (!data.recorded.empty()) {
      auto covered = [&](uint64_t b, uint64_t e) {
        for (const auto& [rb, re] : data.recorded)
          if (rb < e && re > b) return true;
        return false;
      };
      const uint64_t column_ns = uint64_t{h.column_s} * 1000000000ull, row_ns = uint64_t{h.row_ms} * 1000000ull;
      for (uint32_t c = 0; c < h.columns; c++) {
        const uint64_t b = uint64_t{c} * column_ns;
        if (h.column_s > 1 || !covered(b, b + column_ns)) {
          if (!covered(b, b + column_ns))
            out << fmt::format("<rect class=\"unrecorded\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                               "fill=\"#d8d8d8\"><title>{} s: not recorded (between windows)</title></rect>\n",
                               left + static_cast<int>(c) * cell_w, y0, cell_w, lane_h, column_label(c));
          continue;
        }
        for (uint32_t r = 0; r < h.rows;) {  // runs of unrecorded rows as one rectangle
          uint32_t e = r;
          while (e < h.rows && !covered(b + e * row_ns, b + (e + 1) * row_ns)) e++;
          if (e > r)
            out << fmt::format("<rect class=\"unrecorded\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                               "fill=\"#d8d8d8\"><title>{} s + {}-{} ms: not recorded (between windows)</title></rect>\n",
                               left + static_cast<int>(c) * cell_w, y0 + static_cast<int>(r) * cell_h, cell_w,
                               static_cast<int>(e - r) * cell_h, column_label(c), r * h.row_ms, e * h.row_ms);
          r = e + 1;
        }
      }
    }
    if (h.lanes.size() > 1)
      out << fmt::format("<text x=\"4\" y=\"{}\" font-weight=\"bold\">GPU {}{}</text>\n", y0 + 12, g.device,
                         h.other_devices && l + 1 == h.lanes.size() ? "+" : "");
    out << fmt::format("<g class=\"lane\" data-device=\"{}\">\n", g.device);
    for (uint32_t c = 0; c < h.columns; c++)
      for (uint32_t r = 0; r < h.rows; r++) {
        double v = g.counts[c][r];
        if (v <= 0) continue;
        out << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} s + {} ms: "
                           "{:.0f} samples</title></rect>\n",
                           left + static_cast<int>(c) * cell_w, y0 + static_cast<int>(r) * cell_h, cell_w, cell_h,
                           cell_colour(v, max), column_label(c), r * h.row_ms, v);
      }
    out << "</g>\n";
    // Axes: the y axis in ms within the second, the x axis in seconds.
    out << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", left, y0,
                       cell_w * static_cast<int>(h.columns), lane_h);
    for (int ms = 0; ms <= 1000; ms += 250)
      out << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#555\">{} ms</text>\n", left - 4,
                         y0 + lane_h * ms / 1000 + 4, ms);
    uint32_t step = std::max<uint32_t>(1, h.columns / 20);
    for (uint32_t c = 0; c <= h.columns; c += step)
      out << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n",
                         left + static_cast<int>(c) * cell_w, y0 + lane_h + 14, uint64_t{c} * h.column_s);
  }
  // Legend: the scale from 0 to the hottest cell.
  int ly = height - legend_h + 20;
  out << fmt::format("<text x=\"{}\" y=\"{}\">seconds</text>\n", left + cell_w * static_cast<int>(h.columns) / 2, ly - 4);
  for (int i = 0; i <= 10; i++)
    out << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"20\" height=\"12\" fill=\"{}\" stroke=\"#ccc\"/>\n",
                       left + i * 20, ly + 4, cell_colour(max * i / 10.0, max));
  out << fmt::format("<text x=\"{}\" y=\"{}\">0 .. {:.0f} samples per cell</text>\n", left + 11 * 20 + 6, ly + 14, max);
  if (!data.recorded.empty())
    out << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"20\" height=\"12\" fill=\"#d8d8d8\"/><text x=\"{}\" "
                       "y=\"{}\">not recorded (between windows)</text>\n",
                       left + 11 * 20 + 200, ly + 4, left + 11 * 20 + 224, ly + 14);
  out << "</svg>\n";
}

}  // namespace aiflame
