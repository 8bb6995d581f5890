// A whole recorded profile in memory, as the report side sees it.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "profile/records.h"
#include "util/result.h"

namespace aiflame {

// One sampled GPU instruction: cubin CRC, kernel name string id, offset from the kernel's start.
struct GpuPc {
  uint64_t cubin_crc = 0;
  uint32_t function = 0;
  uint64_t pc_offset = 0;
  auto operator<=>(const GpuPc&) const = default;
};

struct Profile {
  uint32_t version = 0;
  std::optional<ProcessRecord> process;
  std::unordered_map<uint32_t, std::string> strings;
  std::vector<StallReasonsRecord> stall_reasons;
  std::vector<ModuleRecord> modules;
  std::unordered_map<uint32_t, StackRecord> stacks;
  std::vector<LaunchRecord> launches;
  std::vector<KernelRecord> kernels;
  std::vector<PcBatchRecord> batches;
  std::map<uint64_t, CubinRecord> cubins;
  std::unordered_map<uint64_t, SymbolRecord> symbols;
  std::vector<std::string> warnings;
  std::unordered_map<uint64_t, GraphNodeRecord> graph_nodes;  // by node id
  // GPU instruction positions and mnemonics stored when recording ended, by (cubin, function, offset).
  std::map<GpuPc, std::vector<GpuSourceFrame>> gpu_lines;
  std::map<GpuPc, std::string> gpu_sass;
  std::optional<EndRecord> end;
  bool truncated = false;        // the file ends inside a chunk: the run was cut short
  uint64_t unknown_records = 0;  // records of a newer minor kind, skipped
  uint64_t valid_bytes = 0;      // end of the last whole chunk
  uint64_t batch_records = 0;    // PC batch records in the file, kept in `batches` or not
  uint64_t last_batch_timestamp = 0;  // latest batch timestamp, also when the batches were not kept

  const std::string& str(uint32_t id) const;
  // Stall reason name for a device's hardware index ("stall_<idx>" when unknown).
  std::string stall_reason_name(uint32_t device, uint32_t index) const;
};

// What a read keeps of the PC batch records, which are nearly all of a long profile: everything, or
// everything but the batches (each PC batch then costs only its timestamp; for_each_batch streams them).
enum class BatchReading { Keep, Skip };

// Reads a profile file, chunk by chunk. Errors are one line naming the file and what is wrong with it.
Result<Profile> read_profile(const std::string& path, BatchReading batches = BatchReading::Keep);
Result<Profile> parse_profile(const std::string& bytes, const std::string& name);

// Reads the file again and hands each PC batch record to fn, in file order, without keeping them: a
// report's memory then does not grow with the length of the run. The record passed is reused.
Status for_each_batch(const std::string& path, const std::function<void(const PcBatchRecord&)>& fn);

}  // namespace aiflame
