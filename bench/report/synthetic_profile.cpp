#include "synthetic_profile.h"

#include <algorithm>
#include <deque>
#include <random>
#include <vector>

#include "profile/profile_writer.h"

namespace aiflame::bench {
namespace {

struct Module {
  const char* path;
  uint64_t lo, hi;
};

// The libraries a PyTorch launch passes through, leaf to root (the interpreter and libc at the root).
const Module kModules[] = {
    {"/usr/local/cuda/lib64/libcudart.so.12", 0x7f0000000000, 0x7f0000100000},
    {"/usr/lib/python3/dist-packages/torch/lib/libcublasLt.so.12", 0x7f0010000000, 0x7f0018000000},
    {"/usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so", 0x7f0020000000, 0x7f0030000000},
    {"/usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so", 0x7f0040000000, 0x7f0050000000},
    {"/usr/lib/python3/dist-packages/torch/lib/libtorch_python.so", 0x7f0060000000, 0x7f0064000000},
    {"/usr/bin/python3.12", 0x400000, 0x900000},
    {"/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f0070000000, 0x7f0070200000},
};
constexpr int kCudart = 0, kCublas = 1, kTorchCuda = 2, kTorchCpu = 3, kTorchPython = 4, kPython = 5, kLibc = 6;

const char* kStallReasons[] = {
    "smsp__pcsamp_warps_issue_stalled_long_scoreboard", "smsp__pcsamp_warps_issue_stalled_barrier",
    "smsp__pcsamp_warps_issue_stalled_selected", "smsp__pcsamp_warps_issue_stalled_wait",
    "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle", "smsp__pcsamp_warps_issue_stalled_short_scoreboard",
    "smsp__pcsamp_warps_issue_stalled_not_selected", "smsp__pcsamp_warps_issue_stalled_mio_throttle",
    "smsp__pcsamp_warps_issue_stalled_lg_throttle", "smsp__pcsamp_warps_issue_stalled_dispatch_stall",
    "smsp__pcsamp_warps_issue_stalled_branch_resolving", "smsp__pcsamp_warps_issue_stalled_no_instructions",
    "smsp__pcsamp_warps_issue_stalled_membar", "smsp__pcsamp_warps_issue_stalled_tex_throttle",
    "smsp__pcsamp_warps_issue_stalled_imc_miss", "smsp__pcsamp_warps_issue_stalled_drain",
    "smsp__pcsamp_warps_issue_stalled_sleeping", "smsp__pcsamp_warps_issue_stalled_misc",
    "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued",
    "smsp__pcsamp_warps_issue_stalled_barrier_not_issued", "smsp__pcsamp_warps_issue_stalled_wait_not_issued",
    "smsp__pcsamp_sample_count"};
constexpr uint32_t kStallCount = sizeof kStallReasons / sizeof kStallReasons[0];

struct Kernel {
  uint32_t name;           // string id
  uint64_t crc;
  uint32_t code_bytes;     // instruction offsets run over [0, code_bytes)
  uint64_t duration_ns;
};

struct Stack {
  uint32_t kernel;         // index into kernels: a launch site launches one kernel
};

struct Run {
  uint32_t kernel;
  uint64_t start, end;
};

}  // namespace

bool write_synthetic_profile(const std::string& path, const SyntheticShape& shape, SyntheticCounts* counts,
                             std::string* error) {
  std::mt19937_64 rng(shape.seed);
  auto uniform = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  ProfileWriter w;
  if (!w.open(path, /*overwrite=*/true, error)) return false;
  uint32_t next_string = 1;
  auto intern = [&](const std::string& s) {
    w.add(StringRecord{next_string, s});
    return next_string++;
  };

  const uint64_t t0 = 1'000'000'000'000ull;
  ProcessRecord proc;
  proc.pid = shape.rank >= 0 ? 10000 + static_cast<uint32_t>(shape.rank) : 4242;
  proc.rank = shape.rank;
  proc.local_rank = shape.rank >= 0 ? shape.rank % 8 : -1;
  proc.world_size = shape.world_size;
  proc.command = "python3 train.py --synthetic";
  proc.hostname = "bench";
  proc.start_timestamp = t0;
  proc.interval_ms = 10;
  proc.sampling_period_log2 = 22;
  proc.backend = "cupti";
  proc.tool_version = "bench";
  w.add(proc);
  StallReasonsRecord reasons;
  for (uint32_t i = 0; i < kStallCount; i++) reasons.reasons.emplace_back(i + 1, kStallReasons[i]);
  w.add(reasons);
  uint32_t module_id = 1;
  for (const Module& m : kModules) w.add(ModuleRecord{module_id++, m.path, 0, m.lo, m.hi, ""});

  // Native functions per module, each a symbolized address (finalize_profile adds these at exit).
  std::vector<std::vector<uint64_t>> functions(std::size(kModules));
  for (size_t m = 0; m < std::size(kModules); m++) {
    size_t n = m == kPython ? 60 : m == kLibc ? 4 : 500;
    for (size_t i = 0; i < n; i++) {
      uint64_t a = kModules[m].lo + uniform(0x1000, kModules[m].hi - kModules[m].lo - 0x1000);
      std::string name = m == kPython ? "_PyEval_EvalFrameDefault_" + std::to_string(i)
                         : m == kLibc ? "__libc_start_call_main_" + std::to_string(i)
                                      : "at::native::(anonymous namespace)::op_" + std::to_string(m) + "_" +
                                            std::to_string(i) + "_impl(at::TensorIterator&, c10::Scalar const&)";
      w.add(SymbolRecord{a, static_cast<uint32_t>(m + 1), name, uniform(0, 0x400)});
      functions[m].push_back(a);
    }
  }
  auto pick = [&](int m) { return functions[m][uniform(0, functions[m].size() - 1)]; };

  std::vector<Kernel> kernels(shape.kernels);
  for (uint32_t k = 0; k < shape.kernels; k++) {
    std::string name = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_" + std::to_string(k) +
                       "_GLOBAL__N__functorIfEESt5arrayIPcLm3EEEEviT0_T1_";
    kernels[k] = {intern(name), 0x9e3779b97f4a7c15ull * (k + 1) >> 16, static_cast<uint32_t>(uniform(64, 2048)) * 16,
                  uniform(4'000, 400'000)};
  }

  // Python code locations (file, function) and launch stacks 30-60 frames deep.
  std::vector<std::pair<uint32_t, uint32_t>> code;
  for (int f = 0; f < 40; f++) {
    uint32_t file = intern("/usr/lib/python3/dist-packages/torch/nn/modules/module_" + std::to_string(f) + ".py");
    for (int fn = 0; fn < 8; fn++) code.emplace_back(file, intern("Module_" + std::to_string(f) + "._call_impl_" + std::to_string(fn)));
  }
  std::vector<Stack> stacks(shape.stacks);
  for (uint32_t s = 0; s < shape.stacks; s++) {
    StackRecord r;
    r.id = s + 1;
    int depth = static_cast<int>(uniform(30, 60));
    int python = static_cast<int>(uniform(8, 20));
    int native = depth - python;
    // Leaf first: runtime, math library or not, libtorch, the binding layer, then the interpreter.
    for (int i = 0; i < 3; i++) r.native.push_back(pick(kCudart));
    if (uniform(0, 2) == 0) for (int i = 0; i < 3; i++) r.native.push_back(pick(kCublas));
    while (static_cast<int>(r.native.size()) < native - 10) r.native.push_back(pick(uniform(0, 1) ? kTorchCuda : kTorchCpu));
    for (int i = 0; i < 3; i++) r.native.push_back(pick(kTorchPython));
    while (static_cast<int>(r.native.size()) < native - 2) r.native.push_back(pick(kPython));
    for (int i = 0; i < 2; i++) r.native.push_back(pick(kLibc));
    for (int i = 0; i < python; i++) {
      auto [file, fn] = code[uniform(0, code.size() - 1)];
      r.python.push_back(PyFrame{file, fn, static_cast<uint32_t>(uniform(1, 2000))});
    }
    w.add(r);
    stacks[s].kernel = static_cast<uint32_t>(uniform(0, shape.kernels - 1));
  }
  w.flush();

  // The run: launches at a steady rate from a skewed choice of stacks (a few hot sites, a long tail);
  // the GPU runs the kernels back to back; every 10 ms a batch samples what ran in its window.
  std::geometric_distribution<uint32_t> hot(8.0 / shape.stacks);
  std::geometric_distribution<uint64_t> hot_pc(1.0 / 3);
  std::geometric_distribution<uint32_t> hot_stall(1.0 / 1.5);
  SyntheticCounts c;
  uint64_t now = t0, gpu_free = t0, prev_batch = t0, corr = 0;
  const uint64_t launch_gap = 1'000'000'000ull / std::max(1u, shape.launches_per_s);
  const uint64_t end = t0 + static_cast<uint64_t>(shape.seconds * 1e9);
  std::deque<Run> ran;
  std::vector<KernelRecord> pending;  // kernel records arrive in activity buffers, after their batch
  while (now < end) {
    uint64_t batch_at = prev_batch + 10'000'000ull;
    for (; now < batch_at; now += launch_gap) {
      uint32_t s = std::min(hot(rng), shape.stacks - 1);
      const Kernel& k = kernels[stacks[s].kernel];
      LaunchRecord l{static_cast<uint32_t>(++corr), 7, now, s + 1, 211, false};
      w.add(l);
      KernelRecord kr;
      kr.correlation_id = l.correlation_id;
      kr.start = std::max(now + 5'000, gpu_free);
      kr.end = kr.start + k.duration_ns / 4 + uniform(0, k.duration_ns / 2);
      kr.stream = 7;
      kr.name = k.name;
      kr.grid[0] = 1024; kr.grid[1] = kr.grid[2] = 1;
      kr.block[0] = 256; kr.block[1] = kr.block[2] = 1;
      gpu_free = kr.end;
      pending.push_back(kr);
      ran.push_back({stacks[s].kernel, kr.start, kr.end});
      c.kernels++;
    }
    // Batch: records of the kernels that ran in [prev_batch, batch_at), each at a few offsets and reasons.
    PcBatchRecord b;
    b.timestamp = batch_at;
    b.prev_timestamp = prev_batch;
    std::vector<uint32_t> active;
    for (const Run& r : ran)
      if (r.start < batch_at && r.end > prev_batch) active.push_back(r.kernel);
    std::sort(active.begin(), active.end());
    active.erase(std::unique(active.begin(), active.end()), active.end());
    while (!ran.empty() && ran.front().end <= batch_at) ran.pop_front();
    for (uint32_t i = 0; !active.empty() && i < shape.records_per_batch; i++) {
      const Kernel& k = kernels[active[i % active.size()]];
      PcSample ps;
      ps.function = k.name;
      ps.code_object_id = k.crc;
      // Samples pile up on a kernel's few hot instructions (loads, the math loop) and a few stall reasons.
      ps.pc_offset = std::min<uint64_t>(hot_pc(rng), k.code_bytes / 16 - 1) * 16;
      ps.stall_reason = 1 + std::min(hot_stall(rng), kStallCount - 1);
      ps.count = static_cast<uint32_t>(1 + uniform(0, 3) * uniform(0, 3));
      b.total_samples += ps.count;
      b.samples.push_back(ps);
    }
    c.pc_records += b.samples.size();
    c.samples += b.total_samples;
    c.batches++;
    w.add(b);
    for (const auto& kr : pending) w.add(kr);
    pending.clear();
    if (!w.flush()) break;
    prev_batch = batch_at;
  }
  EndRecord e;
  e.timestamp = now;
  e.launches = e.kernels = c.kernels;
  e.stacks = shape.stacks;
  e.pc_records = c.pc_records;
  e.samples = c.samples;
  w.add(e);
  if (!w.close()) {
    if (error) *error = w.error();
    return false;
  }
  c.file_bytes = w.bytes_written();
  if (counts) *counts = c;
  return true;
}

}  // namespace aiflame::bench
