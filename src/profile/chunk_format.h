// File framing: a fixed header, then self-contained chunks. A chunk holds whole records, so a file
// cut short (crash, SIGKILL) stays readable up to its last complete chunk.
#pragma once
#include <cstdint>

namespace aiflame {

inline constexpr char kMagic[8] = {'A', 'I', 'F', 'L', 'A', 'M', 'E', '\0'};
// 2: launches may name a BackwardStack (autograd) instead of a Stack; version 1 files read as before.
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr size_t kFileHeaderSize = 16;   // magic, u32 version, u32 flags (0)
inline constexpr size_t kChunkHeaderSize = 16;  // u8 compression, 3 zero bytes, u32 raw size, u32 stored size, u32 crc32
inline constexpr uint32_t kMaxChunkSize = 256u << 20;  // sanity bound for readers

enum class Compression : uint8_t { None = 0, Zlib = 1, Zstd = 2 };

}  // namespace aiflame
