// A synthetic aiflame profile of realistic shape, written with the real ProfileWriter, for the report
// benchmarks: a PyTorch-like training run with thousands of launch stacks 30-60 frames deep (Python
// frames over the interpreter, libtorch, cuBLAS-like libraries and the CUDA runtime), hundreds of
// kernels launched at a few thousand per second, and a PC-sample batch every 10 ms with hundreds of
// records across instruction offsets and stall reasons of the kernels that ran in its window.
#pragma once
#include <cstdint>
#include <string>

namespace aiflame::bench {

struct SyntheticShape {
  double seconds = 10;             // length of the simulated run
  uint32_t stacks = 3000;          // distinct launch stacks
  uint32_t kernels = 300;          // distinct kernel functions
  uint32_t launches_per_s = 4000;  // kernel launches (and executions) per second
  uint32_t records_per_batch = 400;  // PC records per 10 ms batch
  uint64_t seed = 1;
  int32_t rank = -1;                // >= 0: one rank of a distributed job (pid 10000 + rank)
  int32_t world_size = 0;
};

struct SyntheticCounts {
  uint64_t pc_records = 0, samples = 0, kernels = 0, batches = 0, file_bytes = 0;
};

// Writes the profile to path (replacing it). Returns false with *error set on an I/O error.
bool write_synthetic_profile(const std::string& path, const SyntheticShape& shape, SyntheticCounts* counts,
                             std::string* error);

}  // namespace aiflame::bench
