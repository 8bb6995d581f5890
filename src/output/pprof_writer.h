// pprof's profile.proto, gzip'd (`.pb.gz`), as `go tool pprof`, Pyroscope, Grafana and the
// pprof-format npm package read it. CPU frames are Locations with one Line each; a GPU PC is one
// Location (address = PC offset) whose Line is the kernel (with its GPU source file and inlined
// device functions where known); the stall reason is the leaf Location. The program and pid,
// the "-" separator and the device become labels instead of frames.
// Sample types: gpu_samples/count and, when kernel times are known, gpu_time/nanoseconds (each
// kernel's GPU time shared among its samples). Encoded by the code protoc generates from
// output/profile.proto; function names are display names (no system_name) and every Location is in
// one symbolized Mapping, so that pprof shows the names as they are and looks for no binary.
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
// gzip (RFC 1952) of `raw`.
std::string gzip_bytes(const std::string& raw);

}  // namespace aiflame
