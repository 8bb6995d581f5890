// Structure-aware mutation of aiflame profiles for libFuzzer (LLVMFuzzerCustomMutator): the file is
// decoded into its chunks and their records (src/profile/chunk_format.h: a 16-byte file header, then
// chunks of a 16-byte header and stored bytes, zlib- or zstd-compressed or not, with a CRC-32 of the
// stored bytes; a chunk's raw bytes are records, each a type byte and a varint-length payload), one
// record-level mutation is made, and the file is written back with valid sizes, compression and CRCs.
// Plain byte mutations almost never get past the CRC or the decompressor; these reach the record
// decoders and everything after them (attribution, frame building, the writers).
// Include in exactly one translation unit of a harness (it defines LLVMFuzzerCustomMutator).
#pragma once
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "profile/byte_io.h"
#include "profile/chunk_format.h"
#include "profile/profile_writer.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace aiflame::fuzz {

struct Record {
  uint8_t type = 0;
  std::string payload;
};
struct Chunk {
  Compression compression = Compression::None;
  std::vector<Record> records;
};
struct File {
  std::string header;  // the 16 file-header bytes as they were
  std::vector<Chunk> chunks;
  std::string tail;    // bytes after the last whole chunk (a file cut short)
};

// Whole chunks whose CRC matches and whose records parse; false when the header is not a profile's.
inline bool decode_file(std::string_view bytes, File& f) {
  if (bytes.size() < kFileHeaderSize || std::memcmp(bytes.data(), kMagic, 8) != 0) return false;
  f.header.assign(bytes.substr(0, kFileHeaderSize));
  size_t pos = kFileHeaderSize;
  while (pos + kChunkHeaderSize <= bytes.size()) {
    const auto* h = reinterpret_cast<const unsigned char*>(bytes.data() + pos);
    uint32_t raw_size, stored_size, crc;
    std::memcpy(&raw_size, h + 4, 4);
    std::memcpy(&stored_size, h + 8, 4);
    std::memcpy(&crc, h + 12, 4);
    if (h[0] > 2 || raw_size > (64u << 20) || stored_size > bytes.size() - pos - kChunkHeaderSize) break;
    std::string_view stored = bytes.substr(pos + kChunkHeaderSize, stored_size);
    if (static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(stored.data()), stored_size)) != crc) break;
    Chunk c;
    c.compression = static_cast<Compression>(h[0]);
    std::string raw;
    if (c.compression == Compression::None) {
      raw.assign(stored);
    } else if (c.compression == Compression::Zlib) {
      raw.resize(raw_size);
      uLongf n = raw_size;
      if (uncompress(reinterpret_cast<Bytef*>(raw.data()), &n, reinterpret_cast<const Bytef*>(stored.data()),
                     stored.size()) != Z_OK || n != raw_size)
        break;
    } else {
      raw.resize(raw_size);
      size_t n = ZSTD_decompress(raw.data(), raw.size(), stored.data(), stored.size());
      if (ZSTD_isError(n) || n != raw_size) break;
    }
    ByteReader r(raw);
    while (!r.eof()) {
      Record rec;
      rec.type = r.u8();
      rec.payload.assign(r.str());
      if (!r.ok()) break;
      c.records.push_back(std::move(rec));
    }
    if (!r.ok()) break;
    f.chunks.push_back(std::move(c));
    pos += kChunkHeaderSize + stored_size;
  }
  f.tail.assign(bytes.substr(pos));
  return true;
}

inline std::string encode_file(const File& f) {
  std::string out = f.header;
  for (const Chunk& c : f.chunks) {
    ByteWriter w;
    for (const Record& r : c.records) {
      w.u8(r.type);
      w.str(r.payload);
    }
    std::string raw = w.take(), stored;
    Compression used = c.compression;
    if (used == Compression::None || !compress_chunk(used, 1, raw, stored)) {
      used = Compression::None;
      stored = raw;
    }
    unsigned char h[kChunkHeaderSize] = {};
    h[0] = static_cast<unsigned char>(used);
    uint32_t raw_size = static_cast<uint32_t>(raw.size()), stored_size = static_cast<uint32_t>(stored.size());
    uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(stored.data()), stored_size));
    std::memcpy(h + 4, &raw_size, 4);
    std::memcpy(h + 8, &stored_size, 4);
    std::memcpy(h + 12, &crc, 4);
    out.append(reinterpret_cast<const char*>(h), sizeof h);
    out += stored;
  }
  return out + f.tail;
}

// The varints of a payload, read from its start as if every field were one (strings' bytes included:
// a guess that is right for the numeric fields that lead most records). (offset, length, value).
struct Varint {
  size_t offset, length;
  uint64_t value;
};
inline std::vector<Varint> varints_of(const std::string& s) {
  std::vector<Varint> v;
  size_t i = 0;
  while (i < s.size()) {
    uint64_t value = 0;
    size_t start = i;
    int shift = 0;
    while (i < s.size() && shift < 64) {
      auto b = static_cast<uint8_t>(s[i++]);
      value |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    v.push_back({start, i - start, value});
  }
  return v;
}
inline std::string varint_bytes(uint64_t v) {
  ByteWriter w;
  w.varint(v);
  return w.take();
}

inline constexpr uint8_t kRecordTypes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 20};

// One mutation of the decoded file. False when it made none (the caller falls back to bytes).
inline bool mutate_file(File& f, std::mt19937_64& rng, size_t max_size) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  std::vector<std::pair<size_t, size_t>> all;  // (chunk, record)
  for (size_t c = 0; c < f.chunks.size(); c++)
    for (size_t r = 0; r < f.chunks[c].records.size(); r++) all.push_back({c, r});
  if (all.empty()) {
    if (f.chunks.empty()) f.chunks.push_back({});
    f.chunks[0].records.push_back({kRecordTypes[pick(sizeof kRecordTypes)], std::string(pick(16), '\0')});
    return true;
  }
  auto [ci, ri] = all[pick(all.size())];
  Record& rec = f.chunks[ci].records[ri];
  switch (pick(10)) {
    case 0:
    case 1:
    case 2: {  // a numeric field to a value that has broken readers before, or another field's value
      auto vs = varints_of(rec.payload);
      if (vs.empty()) return false;
      const Varint& v = vs[pick(vs.size())];
      static constexpr uint64_t kInteresting[] = {0, 1, 2, 0x7f, 0x80, 0xffff, 0x7fffffff, 0x80000000, 0x80000001,
                                                  0xfffffffe, 0xffffffff, 0x100000000, 1ull << 63, ~0ull};
      uint64_t nv;
      switch (pick(4)) {
        case 0: nv = kInteresting[pick(sizeof kInteresting / sizeof kInteresting[0])]; break;
        case 1: nv = v.value + 1 - 2 * pick(2); break;
        case 2: nv = v.value ^ (1ull << pick(64)); break;
        default: {  // a value seen elsewhere in the file (ids that must match across records)
          auto [c2, r2] = all[pick(all.size())];
          auto other = varints_of(f.chunks[c2].records[r2].payload);
          nv = other.empty() ? 0 : other[pick(other.size())].value;
        }
      }
      rec.payload.replace(v.offset, v.length, varint_bytes(nv));
      return true;
    }
    case 3: {  // bytes of one payload, by libFuzzer's own mutators
      size_t old = rec.payload.size(), cap = old * 2 + 32;
      rec.payload.resize(cap);
      rec.payload.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(rec.payload.data()), old, cap));
      return true;
    }
    case 4:  // a record again (a second End, a duplicate string id or stack), here or in another chunk
      if (rec.payload.size() > max_size / 2) return false;
      f.chunks[pick(f.chunks.size())].records.push_back(rec);
      return true;
    case 5:  // a record less
      f.chunks[ci].records.erase(f.chunks[ci].records.begin() + static_cast<ptrdiff_t>(ri));
      return true;
    case 6: {  // records in another order (a launch after its kernel, a stack after its user)
      auto [c2, r2] = all[pick(all.size())];
      std::swap(rec, f.chunks[c2].records[r2]);
      return true;
    }
    case 7:  // another record type for the same payload
      rec.type = kRecordTypes[pick(sizeof kRecordTypes)];
      return true;
    case 8:  // another compression for a chunk
      f.chunks[ci].compression = static_cast<Compression>(pick(3));
      return true;
    default:  // a payload cut short or grown at its end
      if (pick(2) && !rec.payload.empty()) rec.payload.resize(pick(rec.payload.size()));
      else rec.payload.append(varint_bytes(rng()));
      return true;
  }
}

}  // namespace aiflame::fuzz

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  using namespace aiflame::fuzz;
  std::mt19937_64 rng(seed);
  File f;
  // One in eight mutations is libFuzzer's own on the bytes (headers, cut-short files, bad CRCs).
  if (rng() % 8 != 0 && decode_file(std::string_view(reinterpret_cast<const char*>(data), size), f)) {
    for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n; i++) mutate_file(f, rng, max_size);
    // Now and then a file cut short inside its last chunk (a crashed recording).
    std::string out = encode_file(f);
    if (rng() % 16 == 0 && out.size() > aiflame::kFileHeaderSize) out.resize(aiflame::kFileHeaderSize + rng() % (out.size() - aiflame::kFileHeaderSize));
    if (out.size() <= max_size) {
      std::memcpy(data, out.data(), out.size());
      return out.size();
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}
