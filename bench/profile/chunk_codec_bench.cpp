// Chunk compression of recorded profiles: zlib level 1 (the recorder's codec until 2026-11-23) against
// zstd level 1 (now), on the raw chunks of the H100 fixtures in tests/data (or the profiles named in
// AIFLAME_BENCH_PROFILES, space-separated). Counters: bytes/s of raw input and the compression ratio.
#include <benchmark/benchmark.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "profile/chunk_format.h"
#include "profile/profile_writer.h"
#include "test_util.h"

namespace aiflame {
namespace {

// The raw (decompressed) payload of every chunk of a profile file.
void raw_chunks(const std::string& file, std::vector<std::string>& out) {
  std::string f = test::read_file(file);
  for (size_t pos = kFileHeaderSize; pos + kChunkHeaderSize <= f.size();) {
    uint32_t raw = 0, stored = 0;
    std::memcpy(&raw, &f[pos + 4], 4);
    std::memcpy(&stored, &f[pos + 8], 4);
    if (pos + kChunkHeaderSize + stored > f.size()) break;
    const char* payload = &f[pos + kChunkHeaderSize];
    std::string chunk(raw, '\0');
    auto codec = static_cast<Compression>(f[pos]);
    uLongf n = raw;
    if (codec == Compression::Zlib) uncompress(reinterpret_cast<Bytef*>(chunk.data()), &n, reinterpret_cast<const Bytef*>(payload), stored);
    else if (codec == Compression::Zstd) ZSTD_decompress(chunk.data(), raw, payload, stored);
    else chunk.assign(payload, stored);
    out.push_back(std::move(chunk));
    pos += kChunkHeaderSize + stored;
  }
}

const std::vector<std::string>& chunks() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v;
    std::string list;
    if (const char* e = std::getenv("AIFLAME_BENCH_PROFILES"); e && *e) list = e;
    else
      for (const char* f : {"split_streams", "split_size", "split_sequential", "graph_replay", "triton_loop", "gpt_train",
                            "demo_matmul", "multigpu"})
        list += std::string(AIFLAME_SOURCE_DIR) + "/tests/data/" + f + ".aiflame ";
    std::istringstream in(list);
    for (std::string file; in >> file;) raw_chunks(file, v);
    return v;
  }();
  return all;
}

void BM_CompressChunks(benchmark::State& state) {
  auto codec = static_cast<Compression>(state.range(0));
  const auto& all = chunks();
  size_t raw = 0, stored = 0;
  std::string out;
  for (auto _ : state) {
    raw = stored = 0;
    for (const auto& c : all) {
      if (!compress_chunk(codec, 1, c, out)) state.SkipWithError("codec failed");
      raw += c.size();
      stored += out.size();
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * raw));
  state.counters["ratio"] = stored ? static_cast<double>(raw) / stored : 0;
  state.counters["chunks"] = static_cast<double>(all.size());
  state.SetLabel(codec == Compression::Zstd ? "zstd 1" : "zlib 1");
}
BENCHMARK(BM_CompressChunks)->Arg(static_cast<int>(Compression::Zlib))->Arg(static_cast<int>(Compression::Zstd));

}  // namespace
}  // namespace aiflame

BENCHMARK_MAIN();
