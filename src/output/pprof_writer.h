// pprof's profile.proto, gzip'd (`.pb.gz`), as `go tool pprof`, Pyroscope, Grafana and the
// pprof-format npm package read it (docs/formats.md says what it keeps). Native frames are Locations at
// their recorded address in one Mapping per library (with its build ID); frames inlined at one address
// are one Location's Lines; Python frames carry their full file path. The kernel is the leaf Location
// (address = PC offset, GPU source file and line where known), so that `go tool pprof -top` ranks
// kernels; the instruction, the innermost inlined device function and the stall reason are labels, as
// are the program, pid, rank and device (the process frames and "-" are not frames here).
// Sample types: gpu_samples/count and, when kernel times are known, gpu_time/nanoseconds (each
// kernel's GPU time shared among its samples). Encoded by the code protoc generates from
// output/profile.proto; function names are display names (no system_name), so that pprof shows them
// as they are.
#pragma once
#include <string>

#include "output/writer.h"

namespace aiflame {

class PprofWriter : public Writer {
 public:
  std::string_view format() const override { return "pprof"; }
  void write(const FlameData& data, std::ostream& out) const override;
};

// The encoded, uncompressed Profile message (for tests and for callers that compress themselves).
std::string pprof_profile_bytes(const FlameData& data);
// gzip (RFC 1952) of `raw`, handed to zlib `chunk` bytes at a time (its counts are 32-bit: a profile
// past 4 GiB goes in several calls). Throws std::runtime_error when zlib fails.
std::string gzip_bytes(const std::string& raw, size_t chunk = size_t{1} << 30);

}  // namespace aiflame
