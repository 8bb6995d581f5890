// A whole recorded profile in memory, as the report side sees it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "profile/record_array.h"
#include "profile/records.h"
#include "util/result.h"

namespace aiflame {

// One sampled GPU instruction: cubin CRC, kernel name string id, offset from the kernel's start.
struct GpuPc {
  uint64_t code_object_id = 0;
  uint32_t function = 0;
  uint64_t pc_offset = 0;
  auto operator<=>(const GpuPc&) const = default;
};

// A launch as a report reads it: the launch record without its thread, time and API (16 bytes, not
// 32; a long run has millions).
struct LaunchRow {
  uint32_t correlation_id = 0;
  uint32_t stack_id = 0;
  uint32_t device = kNoDevice;
  bool native_unwound = false;
  LaunchRow() = default;
  LaunchRow(const LaunchRecord& l)  // NOLINT: implicit, so that records convert where rows are kept
      : correlation_id(l.correlation_id), stack_id(l.stack_id), device(l.device), native_unwound(l.native_unwound) {}
};

// A kernel execution as a report reads it: the kernel record without its launch configuration,
// context and graph id, which no report shows (56 bytes, not 96). The file keeps them all.
struct KernelRow {
  uint64_t start = 0, end = 0;
  uint64_t graph_node_id = 0;  // the graph node that ran it (0: not run by a graph, or not recorded)
  uint32_t correlation_id = 0;
  uint32_t device = 0, stream = 0;
  uint32_t name = 0;  // string id (mangled name)
  uint32_t blocks = 0;  // thread blocks of its grid (capped at 2^32-1; 0: not known)
  // What one block holds of an SM (attribution's block-scheduler model; 0: not known).
  uint32_t shared = 0;          // static + dynamic shared memory, bytes (capped at 2^32-1)
  uint16_t threads = 0;         // per block (capped at 65535)
  uint16_t registers = 0;       // per thread (capped at 65535)
  KernelRow() = default;
  KernelRow(const KernelRecord& k)  // NOLINT: implicit, as LaunchRow
      : start(k.start), end(k.end), graph_node_id(k.graph_node_id), correlation_id(k.correlation_id),
        device(k.device), stream(k.stream), name(k.name), blocks(grid_blocks(k)),
        shared(static_cast<uint32_t>(std::min<uint64_t>(uint64_t{k.static_shared} + k.dynamic_shared, UINT32_MAX))),
        threads(static_cast<uint16_t>(std::min<uint64_t>(block_threads(k), UINT16_MAX))),
        registers(static_cast<uint16_t>(std::min<uint32_t>(k.registers, UINT16_MAX))) {}
  static uint64_t block_threads(const KernelRecord& k) {
    uint64_t n = 1;
    for (int32_t d : k.block) {
      if (d <= 0) return 0;
      n = std::min<uint64_t>(n * static_cast<uint64_t>(d), UINT32_MAX);
    }
    return n;
  }
  static uint32_t grid_blocks(const KernelRecord& k) {
    uint64_t n = 1;
    for (int32_t d : k.grid) {
      if (d <= 0) return 0;
      n = std::min<uint64_t>(n * static_cast<uint64_t>(d), UINT32_MAX);
    }
    return static_cast<uint32_t>(n);
  }
};

struct Profile {
  uint32_t version = 0;
  std::optional<ProcessRecord> process;
  std::unordered_map<uint32_t, std::string> strings;
  std::vector<StallReasonsRecord> stall_reasons;
  std::vector<ModuleRecord> modules;
  std::unordered_map<uint32_t, StackRecord> stacks;
  // Launch rows; a report drops them once its indexes have read them (drop_launch_rows): count
  // launches with launch_count() and launches_unwound().
  RecordArray<LaunchRow> launches;
  RecordArray<KernelRow> kernels;
  std::vector<PcBatchRecord> batches;
  std::map<uint64_t, CodeObjectRecord> cubins;
  std::unordered_map<uint64_t, SymbolRecord> symbols;
  std::vector<std::string> warnings;
  std::unordered_map<uint64_t, GraphNodeRecord> graph_nodes;  // by node id
  // Autograd (format 2): the backward() callers' Python stacks and the composed backward stacks, by id.
  std::unordered_map<uint32_t, BackwardCallerRecord> backward_callers;
  std::unordered_map<uint32_t, BackwardStackRecord> backward_stacks;
  std::optional<AutogradSummaryRecord> autograd;
  // GPU instruction positions and mnemonics stored when recording ended, by (cubin, function, offset).
  std::map<GpuPc, std::vector<GpuSourceFrame>> gpu_lines;
  std::map<GpuPc, std::string> gpu_sass;
  std::optional<EndRecord> end;
  bool truncated = false;        // the file ends inside a chunk: the run was cut short
  uint64_t unknown_records = 0;  // records of a newer minor kind, skipped
  uint64_t valid_bytes = 0;      // end of the last whole chunk
  uint64_t batch_records = 0;    // PC batch records in the file, kept in `batches` or not
  uint64_t last_batch_timestamp = 0;  // latest batch timestamp, also when the batches were not kept
  // Samples without a correlation id (continuous mode) by (device, function, stall reason), over every
  // batch, also when the batches were not kept: attribution matches batches to executions in order.
  using SampleTally = std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint64_t>;
  SampleTally continuous_samples;
  static void tally(SampleTally& into, const PcBatchRecord& b) {
    for (const auto& s : b.samples)
      if (!s.correlation_id) into[{b.device, s.function, s.stall_reason}] += s.count;
  }
  void tally(const PcBatchRecord& b) { tally(continuous_samples, b); }

  uint64_t launch_count() const { return launches.size() + dropped_launches_; }
  uint64_t launches_unwound() const {
    uint64_t n = dropped_unwound_;
    for (const auto& l : launches) n += l.native_unwound;
    return n;
  }
  // Frees the launch rows, keeping their counts (a 300-s run's 1.2 million rows are 19 MB). Anything
  // that maps correlation ids to stacks (LaunchIndex) must have been built before.
  void drop_launch_rows() {
    dropped_unwound_ = launches_unwound();
    dropped_launches_ += launches.size();
    launches.clear();
  }

  const std::string& str(uint32_t id) const;
  // Stall reason name for a device's hardware index ("stall_<idx>" when unknown).
  std::string stall_reason_name(uint32_t device, uint32_t index) const;
  // The device's streaming multiprocessors as recorded (0: not known, as in files before they were).
  uint32_t sm_count(uint32_t device) const;
  // The device's record with its per-SM limits, or null when they were not recorded (older files).
  const StallReasonsRecord* sm_limits(uint32_t device) const;

  uint64_t dropped_launches_ = 0, dropped_unwound_ = 0;  // see drop_launch_rows()
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
// The same for the launch records, whole (with the thread and time that LaunchRow leaves out).
Status for_each_launch(const std::string& path, const std::function<void(const LaunchRecord&)>& fn);

}  // namespace aiflame
