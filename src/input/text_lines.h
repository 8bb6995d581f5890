// Small, bounds-checked helpers for the text readers: lines one by one, fields split by a tab, whole
// numbers with overflow checks.
#pragma once
#include <charconv>
#include <cstdint>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace aiflame {

class TextLines {
 public:
  explicit TextLines(std::string_view text) : text_(text) {}
  // The next line without its "\n" or "\r\n"; false at the end.
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    size_t nl = text_.find('\n', pos_);
    size_t end = nl == std::string_view::npos ? text_.size() : nl;
    line = text_.substr(pos_, end - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = end + 1;
    number_++;
    return true;
  }
  size_t number() const { return number_; }  // 1-based number of the last line returned

 private:
  std::string_view text_;
  size_t pos_ = 0, number_ = 0;
};

// Feeds every line of `text` to a streaming parser (add_line(line, number) -> false with error() on
// bad input, then finish() -> Result): a whole text parsed as the streaming readers parse it.
template <class Parser>
auto parse_lines(Parser& parser, std::string_view text) -> decltype(parser.finish()) {
  TextLines lines(text);
  std::string_view line;
  while (lines.next(line))
    if (!parser.add_line(line, lines.number())) return Error{parser.error()};
  return parser.finish();
}

// Splits at every tab; at most max_fields fields, the last one keeping any further tabs.
inline std::vector<std::string_view> split_tabs(std::string_view line, size_t max_fields = SIZE_MAX) {
  std::vector<std::string_view> f;
  size_t p = 0;
  while (f.size() + 1 < max_fields) {
    size_t q = line.find('\t', p);
    if (q == std::string_view::npos) break;
    f.push_back(line.substr(p, q - p));
    p = q + 1;
  }
  f.push_back(line.substr(p));
  return f;
}

// Decimal (or, with base 16, hex with an optional 0x) whole number; false on anything else or overflow.
inline bool parse_u64(std::string_view s, uint64_t& v, int base = 10) {
  if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v, base);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace aiflame
