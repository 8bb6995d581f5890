// A self-contained HTML report: flame graph (normal and inverted, search, click-zoom, breadcrumbs,
// colours by frame kind), a sub-second heatmap whose dragged range re-draws the flame graph, and
// tables of kernels, GPU source lines, stall reasons and launch sites. Everything is inlined; the
// data travels as one JSON block with shared strings and stacks as a prefix tree.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "output/writer.h"

namespace aiflame {

class HtmlWriter : public Writer {
 public:
  std::string_view format() const override { return "html"; }
  void write(const FlameData& data, std::ostream& out) const override;
};

// The data block the page's script reads (public for the tests).
nlohmann::json html_report_data(const FlameData& data);
// Unsigned numbers as text: 5 bits per base-64 digit, low bits first, digit value 32 and up meaning
// "more digits follow". The page's script unpacks them.
std::string pack_numbers(const std::vector<uint32_t>& v);
// Text for an HTML text node or attribute: & < > " ' escaped, invalid UTF-8 and controls replaced.
std::string html_escape(std::string_view s);

}  // namespace aiflame
