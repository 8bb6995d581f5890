#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "profile/chunk_format.h"
#include "profile/profile.h"
#include "profile/record_codec.h"

namespace aiflame {

const std::string& Profile::str(uint32_t id) const {
  static const std::string empty;
  auto it = strings.find(id);
  return it == strings.end() ? empty : it->second;
}

std::string Profile::stall_reason_name(uint32_t device, uint32_t index) const {
  for (const auto& t : stall_reasons) {
    if (t.device != device) continue;
    for (const auto& [idx, name] : t.reasons)
      if (idx == index) return name;
  }
  for (const auto& t : stall_reasons)  // same hardware, another device
    for (const auto& [idx, name] : t.reasons)
      if (idx == index) return name;
  return "stall_" + std::to_string(index);
}

namespace {

bool decompress(Compression c, std::string_view stored, uint32_t raw_size, std::string& out) {
  out.resize(raw_size);
  if (c == Compression::Zlib) {
    uLongf n = raw_size;
    return uncompress(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(stored.data()),
                      stored.size()) == Z_OK &&
           n == raw_size;
  }
  if (c == Compression::Zstd) {
    size_t n = ZSTD_decompress(out.data(), raw_size, stored.data(), stored.size());
    return !ZSTD_isError(n) && n == raw_size;
  }
  return false;
}

template <class R>
bool read_one(ByteReader& r, R& rec) {
  return decode(r, rec) && r.eof();
}

// Parses the records of one chunk into the profile; false on a malformed record.
bool parse_records(std::string_view raw, Profile& p) {
  ByteReader chunk(raw);
  while (!chunk.eof()) {
    uint8_t type = chunk.u8();
    std::string_view payload = chunk.str();
    if (!chunk.ok()) return false;
    ByteReader r(payload);
    bool ok = true;
    switch (static_cast<RecordType>(type)) {
      case RecordType::Process: { ProcessRecord x; ok = read_one(r, x); p.process = std::move(x); break; }
      case RecordType::String: { StringRecord x; ok = read_one(r, x); p.strings[x.id] = std::move(x.text); break; }
      case RecordType::StallReasons: { StallReasonsRecord x; ok = read_one(r, x); p.stall_reasons.push_back(std::move(x)); break; }
      case RecordType::Module: { ModuleRecord x; ok = read_one(r, x); p.modules.push_back(std::move(x)); break; }
      case RecordType::Stack: { StackRecord x; ok = read_one(r, x); p.stacks[x.id] = std::move(x); break; }
      case RecordType::Launch: { LaunchRecord x; ok = read_one(r, x); p.launches.push_back(x); break; }
      case RecordType::Kernel: { KernelRecord x; ok = read_one(r, x); p.kernels.push_back(x); break; }
      case RecordType::PcBatch: { PcBatchRecord x; ok = read_one(r, x); p.batches.push_back(std::move(x)); break; }
      case RecordType::Cubin: { CubinRecord x; ok = read_one(r, x); uint64_t crc = x.crc; p.cubins[crc] = std::move(x); break; }
      case RecordType::Symbol: { SymbolRecord x; ok = read_one(r, x); p.symbols[x.address] = std::move(x); break; }
      case RecordType::Warning: { WarningRecord x; ok = read_one(r, x); p.warnings.push_back(std::move(x.text)); break; }
      case RecordType::GraphNode: { GraphNodeRecord x; ok = read_one(r, x); p.graph_nodes[x.node_id] = x; break; }
      case RecordType::End: { EndRecord x; ok = read_one(r, x); p.end = x; break; }
      case RecordType::GpuLine: {
        GpuLineRecord x; ok = read_one(r, x);
        p.gpu_lines[{x.cubin_crc, x.function, x.pc_offset}] = std::move(x.frames);
        break;
      }
      case RecordType::GpuSass: {
        GpuSassRecord x; ok = read_one(r, x);
        p.gpu_sass[{x.cubin_crc, x.function, x.pc_offset}] = std::move(x.mnemonic);
        break;
      }
      default: p.unknown_records++; break;  // newer record kind: length-prefixed, so skippable
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Result<Profile> parse_profile(const std::string& bytes, const std::string& name) {
  if (bytes.empty()) return Error{name + ": empty file (the recorded program may have made no CUDA calls)"};
  if (bytes.size() < kFileHeaderSize || std::memcmp(bytes.data(), kMagic, 8) != 0)
    return Error{name + ": not an aiflame profile (bad magic)"};
  Profile p;
  std::memcpy(&p.version, bytes.data() + 8, 4);
  if (p.version == 0 || p.version > kFormatVersion)
    return Error{name + ": profile format version " + std::to_string(p.version) + " is not supported (this aiflame reads up to " +
                 std::to_string(kFormatVersion) + "); upgrade aiflame"};
  size_t pos = kFileHeaderSize;
  std::string raw;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < kChunkHeaderSize) { p.truncated = true; break; }
    const unsigned char* h = reinterpret_cast<const unsigned char*>(bytes.data() + pos);
    auto comp = static_cast<Compression>(h[0]);
    uint32_t raw_size, stored_size, crc;
    std::memcpy(&raw_size, h + 4, 4);
    std::memcpy(&stored_size, h + 8, 4);
    std::memcpy(&crc, h + 12, 4);
    std::string where = name + ": chunk at byte " + std::to_string(pos);
    if (h[1] || h[2] || h[3] || static_cast<uint8_t>(comp) > 2 || raw_size > kMaxChunkSize || stored_size > kMaxChunkSize)
      return Error{where + " has a corrupt header"};
    if (bytes.size() - pos - kChunkHeaderSize < stored_size) { p.truncated = true; break; }
    std::string_view stored(bytes.data() + pos + kChunkHeaderSize, stored_size);
    if (static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(stored.data()), stored_size)) != crc)
      return Error{where + " fails its checksum (the file is corrupt)"};
    std::string_view records = stored;
    if (comp != Compression::None) {
      if (!decompress(comp, stored, raw_size, raw)) return Error{where + " does not decompress"};
      records = raw;
    } else if (raw_size != stored_size) {
      return Error{where + " has a corrupt header"};
    }
    if (!parse_records(records, p)) return Error{where + " holds a malformed record"};
    pos += kChunkHeaderSize + stored_size;
  }

  p.valid_bytes = pos;
  if (!p.end) p.truncated = true;
  return p;
}

Result<Profile> read_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": " + std::strerror(errno)};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Error{path + ": read error"};
  return parse_profile(ss.str(), path);
}

}  // namespace aiflame
