// Valid UTF-8 from any bytes: what a format whose strings must be UTF-8 (protobuf's proto3 strings,
// which libprotobuf otherwise logs an ERROR line for, even under -q) gets from names read from
// binaries and profiles.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace aiflame {

// The length of the valid UTF-8 sequence at s[i] (1 to 4), or 0 where it is invalid (overlong,
// a surrogate, past U+10FFFF, cut short).
inline size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (!n || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; k++)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && b(i + 1) < 0xA0) return 0;   // overlong
  if (c == 0xED && b(i + 1) >= 0xA0) return 0;  // surrogates
  if (c == 0xF0 && b(i + 1) < 0x90) return 0;   // overlong
  if (c == 0xF4 && b(i + 1) >= 0x90) return 0;  // past U+10FFFF
  return n;
}

inline bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence(s, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

// s with each byte that starts no valid sequence replaced by U+FFFD.
inline std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence(s, i);
    if (n) out.append(s.substr(i, n)), i += n;
    else out += "\xEF\xBF\xBD", i++;
  }
  return out;
}

}  // namespace aiflame
