// Little-endian varint encoding for the profile format: a growable writer and a bounds-checked reader.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace aiflame {

class ByteWriter {
 public:
  void u8(uint8_t v) { buf_.push_back(static_cast<char>(v)); }
  void u32le(uint32_t v) { raw(&v, 4); }
  void u64le(uint64_t v) { raw(&v, 8); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<char>(v));
  }
  // Zig-zag for values that may be negative (deltas).
  void svarint(int64_t v) { varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void str(std::string_view s) {
    varint(s.size());
    buf_.append(s.data(), s.size());
  }
  void raw(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }

  const std::string& data() const { return buf_; }
  size_t size() const { return buf_.size(); }
  void clear() { buf_.clear(); }
  std::string take() { return std::move(buf_); }

 private:
  std::string buf_;
};

// Every read checks bounds; after the first failure ok() is false and reads return zeros.
class ByteReader {
 public:
  explicit ByteReader(std::string_view d) : d_(d) {}
  bool ok() const { return ok_; }
  bool eof() const { return pos_ >= d_.size(); }
  size_t pos() const { return pos_; }
  size_t remaining() const { return ok_ ? d_.size() - pos_ : 0; }

  uint8_t u8() {
    if (!need(1)) return 0;
    return static_cast<uint8_t>(d_[pos_++]);
  }
  uint32_t u32le() {
    uint32_t v = 0;
    if (need(4)) { std::memcpy(&v, d_.data() + pos_, 4); pos_ += 4; }
    return v;
  }
  uint64_t u64le() {
    uint64_t v = 0;
    if (need(8)) { std::memcpy(&v, d_.data() + pos_, 8); pos_ += 8; }
    return v;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (!need(1)) return 0;
      uint8_t b = static_cast<uint8_t>(d_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    ok_ = false;  // more than 10 bytes: corrupt
    return 0;
  }
  uint32_t varint32() {
    uint64_t v = varint();
    if (v > UINT32_MAX) { ok_ = false; return 0; }
    return static_cast<uint32_t>(v);
  }
  int64_t svarint() {
    uint64_t v = varint();
    return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  }
  std::string_view str() {
    uint64_t n = varint();
    if (!need(n)) return {};
    std::string_view s = d_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  // A count of items that each take at least min_bytes: rejects counts the remaining bytes cannot hold,
  // so a corrupt count never makes the caller reserve gigabytes.
  uint64_t count(size_t min_bytes = 1) {
    uint64_t n = varint();
    if (ok_ && min_bytes && n > remaining() / min_bytes) ok_ = false;
    return ok_ ? n : 0;
  }
  void fail() { ok_ = false; }

 private:
  bool need(uint64_t n) {
    if (!ok_ || n > d_.size() - pos_) { ok_ = false; return false; }
    return true;
  }
  std::string_view d_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace aiflame
