#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

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

uint32_t Profile::sm_count(uint32_t device) const {
  for (const auto& t : stall_reasons)
    if (t.device == device && t.sm_count) return t.sm_count;
  return 0;
}

const StallReasonsRecord* Profile::sm_limits(uint32_t device) const {
  for (const auto& t : stall_reasons)
    if (t.device == device && t.sm_count && t.max_threads_per_sm && t.max_blocks_per_sm && t.registers_per_sm &&
        t.shared_per_sm)
      return &t;
  return nullptr;
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
    // One context per thread, reused: creating one per chunk cost 3% of a report.
    thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!ctx) return false;
    size_t n = ZSTD_decompressDCtx(ctx.get(), out.data(), raw_size, stored.data(), stored.size());
    return !ZSTD_isError(n) && n == raw_size;
  }
  return false;
}

template <class R>
bool read_one(ByteReader& r, R& rec) {
  return decode(r, rec) && r.eof();
}

// What one pass over the chunks does with the records.
enum class Pass { All, AllButBatches, OnlyBatches, OnlyLaunches };

struct RecordSink {
  Profile& p;
  Pass pass;
  const std::function<void(const PcBatchRecord&)>* on_batch = nullptr;
  const std::function<void(const LaunchRecord&)>* on_launch = nullptr;
  PcBatchRecord batch;  // reused: decoding into it keeps its sample vector's capacity
};

// Parses the records of one chunk into the profile; false on a malformed record.
bool parse_records(std::string_view raw, RecordSink& sink) {
  Profile& p = sink.p;
  ByteReader chunk(raw);
  while (!chunk.eof()) {
    uint8_t type = chunk.u8();
    std::string_view payload = chunk.str();
    if (!chunk.ok()) return false;
    ByteReader r(payload);
    bool ok = true;
    auto kind = static_cast<RecordType>(type);
    if (sink.pass == Pass::OnlyLaunches) {
      if (kind != RecordType::Launch) continue;
      LaunchRecord x;
      if (!read_one(r, x)) return false;
      (*sink.on_launch)(x);
      continue;
    }
    if (sink.pass == Pass::OnlyBatches) {
      if (kind != RecordType::PcBatch) continue;
      if (!read_one(r, sink.batch)) return false;
      (*sink.on_batch)(sink.batch);
      continue;
    }
    switch (kind) {
      case RecordType::Process: { ProcessRecord x; ok = read_one(r, x); p.process = std::move(x); break; }
      case RecordType::String: { StringRecord x; ok = read_one(r, x); p.strings[x.id] = std::move(x.text); break; }
      case RecordType::StallReasons: { StallReasonsRecord x; ok = read_one(r, x); p.stall_reasons.push_back(std::move(x)); break; }
      case RecordType::Module: { ModuleRecord x; ok = read_one(r, x); p.modules.push_back(std::move(x)); break; }
      case RecordType::Stack: { StackRecord x; ok = read_one(r, x); p.stacks[x.id] = std::move(x); break; }
      case RecordType::Launch: { LaunchRecord x; ok = read_one(r, x); p.launches.push_back(x); break; }
      case RecordType::Kernel: { KernelRecord x; ok = read_one(r, x); p.kernels.push_back(x); break; }
      case RecordType::PcBatch: {
        p.batch_records++;
        if (sink.pass == Pass::AllButBatches) {
          // Decoded for the tally alone (a malformed batch is reported when the batches are streamed).
          ByteReader rr = r;
          PcBatchRecord& x = sink.batch;
          if (read_one(rr, x)) {
            p.last_batch_timestamp = std::max(p.last_batch_timestamp, x.timestamp);
            p.tally(x);
          } else {
            uint64_t ts = r.varint();
            ok = r.ok();
            p.last_batch_timestamp = std::max(p.last_batch_timestamp, ts);
          }
          break;
        }
        PcBatchRecord x;
        ok = read_one(r, x);
        p.last_batch_timestamp = std::max(p.last_batch_timestamp, x.timestamp);
        p.tally(x);
        p.batches.push_back(std::move(x));
        break;
      }
      case RecordType::CodeObject: { CodeObjectRecord x; ok = read_one(r, x); uint64_t id = x.id; p.cubins[id] = std::move(x); break; }
      case RecordType::Symbol: { SymbolRecord x; ok = read_one(r, x); p.symbols[x.address] = std::move(x); break; }
      case RecordType::Warning: { WarningRecord x; ok = read_one(r, x); p.warnings.push_back(std::move(x.text)); break; }
      case RecordType::GraphNode: { GraphNodeRecord x; ok = read_one(r, x); p.graph_nodes[x.node_id] = x; break; }
      case RecordType::End: { EndRecord x; ok = read_one(r, x); p.end = x; break; }
      case RecordType::GpuLine: {
        GpuLineRecord x; ok = read_one(r, x);
        p.gpu_lines[{x.code_object_id, x.function, x.pc_offset}] = std::move(x.frames);
        break;
      }
      case RecordType::GpuInstruction: {
        GpuInstructionRecord x; ok = read_one(r, x);
        p.gpu_sass[{x.code_object_id, x.function, x.pc_offset}] = std::move(x.mnemonic);
        break;
      }
      case RecordType::BackwardCaller: {
        BackwardCallerRecord x; ok = read_one(r, x); p.backward_callers[x.id] = std::move(x); break;
      }
      case RecordType::BackwardStack: { BackwardStackRecord x; ok = read_one(r, x); p.backward_stacks[x.id] = x; break; }
      case RecordType::AutogradSummary: { AutogradSummaryRecord x; ok = read_one(r, x); p.autograd = std::move(x); break; }
      default: p.unknown_records++; break;  // newer record kind: length-prefixed, so skippable
    }
    if (!ok) return false;
  }
  return true;
}

// Sequential bytes of a profile: a string in memory, or a file read chunk by chunk (a report then
// never holds the whole file). read() returns at most n bytes; fewer means the end of the data.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::string_view read(size_t n) = 0;
  virtual bool failed() const { return false; }
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view d) : d_(d) {}
  std::string_view read(size_t n) override {
    std::string_view v = d_.substr(pos_, n);
    pos_ += v.size();
    return v;
  }
 private:
  std::string_view d_;
  size_t pos_ = 0;
};

class FileSource : public ByteSource {
 public:
  explicit FileSource(std::FILE* f) : f_(f) {}
  std::string_view read(size_t n) override {
    buf_.resize(n);
    size_t got = std::fread(buf_.data(), 1, n, f_);
    return std::string_view(buf_.data(), got);
  }
  bool failed() const override { return std::ferror(f_) != 0; }
 private:
  std::FILE* f_;
  std::string buf_;
};

// Walks the file header and every whole chunk, parsing each chunk's records into sink.
Status walk_chunks(ByteSource& src, const std::string& name, RecordSink& sink) {
  Profile& p = sink.p;
  std::string_view header = src.read(kFileHeaderSize);
  if (src.failed()) return Error{name + ": read error"};
  if (header.empty() && !src.failed()) return Error{name + ": empty file (0 bytes: nothing was written into it; a recording leaves this when its disk is full)"};
  if (header.size() < kFileHeaderSize || std::memcmp(header.data(), kMagic, 8) != 0)
    return Error{name + ": not an aiflame profile (bad magic)"};
  std::memcpy(&p.version, header.data() + 8, 4);
  if (p.version == 0 || p.version > kFormatVersion)
    return Error{name + ": profile format version " + std::to_string(p.version) + " is not supported (this aiflame reads up to " +
                 std::to_string(kFormatVersion) + "); upgrade aiflame"};
  uint64_t pos = kFileHeaderSize;
  std::string raw;
  while (true) {
    std::string_view hv = src.read(kChunkHeaderSize);
    if (hv.empty()) break;
    if (hv.size() < kChunkHeaderSize) { p.truncated = true; break; }
    unsigned char h[kChunkHeaderSize];
    std::memcpy(h, hv.data(), kChunkHeaderSize);
    auto comp = static_cast<Compression>(h[0]);
    uint32_t raw_size, stored_size, crc;
    std::memcpy(&raw_size, h + 4, 4);
    std::memcpy(&stored_size, h + 8, 4);
    std::memcpy(&crc, h + 12, 4);
    std::string where = name + ": chunk at byte " + std::to_string(pos);
    if (h[1] || h[2] || h[3] || static_cast<uint8_t>(comp) > 2 || raw_size > kMaxChunkSize || stored_size > kMaxChunkSize)
      return Error{where + " has a corrupt header"};
    std::string_view stored = src.read(stored_size);
    if (stored.size() < stored_size) { p.truncated = true; break; }
    if (static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(stored.data()), stored_size)) != crc)
      return Error{where + " fails its checksum (the file is corrupt)"};
    std::string_view records = stored;
    if (comp != Compression::None) {
      if (!decompress(comp, stored, raw_size, raw)) return Error{where + " does not decompress"};
      records = raw;
    } else if (raw_size != stored_size) {
      return Error{where + " has a corrupt header"};
    }
    if (!parse_records(records, sink)) return Error{where + " holds a malformed record"};
    pos += kChunkHeaderSize + stored_size;
  }
  if (src.failed()) return Error{name + ": read error"};
  p.valid_bytes = pos;
  if (!p.end) p.truncated = true;
  return Ok{};
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

Result<Profile> parse_profile(const std::string& bytes, const std::string& name) {
  Profile p;
  RecordSink sink{p, Pass::All};
  MemorySource src(bytes);
  Status st = walk_chunks(src, name, sink);
  if (!st) return Error{st.error()};
  return p;
}

Result<Profile> read_profile(const std::string& path, BatchReading batches) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) return Error{path + ": " + std::strerror(errno)};
  Profile p;
  RecordSink sink{p, batches == BatchReading::Keep ? Pass::All : Pass::AllButBatches};
  FileSource src(f.get());
  Status st = walk_chunks(src, path, sink);
  if (!st) return Error{st.error()};
  return p;
}

Status for_each_batch(const std::string& path, const std::function<void(const PcBatchRecord&)>& fn) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) return Error{path + ": " + std::strerror(errno)};
  Profile scratch;
  RecordSink sink{scratch, Pass::OnlyBatches, &fn};
  FileSource src(f.get());
  return walk_chunks(src, path, sink);
}

Status for_each_launch(const std::string& path, const std::function<void(const LaunchRecord&)>& fn) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) return Error{path + ": " + std::strerror(errno)};
  Profile scratch;
  RecordSink sink{scratch, Pass::OnlyLaunches, nullptr, &fn};
  FileSource src(f.get());
  return walk_chunks(src, path, sink);
}

}  // namespace aiflame
