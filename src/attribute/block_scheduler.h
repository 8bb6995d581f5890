// How executions that overlap in time share a GPU's SMs, and so its PC samples: a model of the block
// scheduler, for attribution (docs/attribution.md, "Method").
//
// The hardware places a grid's blocks on SMs as far as each SM's limits allow (resident threads,
// blocks, registers, shared memory), takes the grids in the order they were launched (an earlier
// grid's pending blocks get a freed slot first), and frees a block's slot when the block ends. The PC
// sampler picks one active warp per SM each period, so an execution's expected samples are, summed
// over the SMs, the time integral of its share of each SM's resident warps.
//
// What the records do not tell is how long a block runs. The model assumes one duration per
// execution (its blocks do the same work) and fits it so that the simulated execution ends when the
// recorded one did. Executions are fitted in launch order: an earlier one does not depend on a later
// one, so each fit is a one-dimensional monotone search with the earlier ones fixed.
#pragma once
#include <cstdint>
#include <vector>

namespace aiflame {

// One SM's limits, as cuDeviceGetAttribute gives them; the device has `sms` of them.
struct SmLimits {
  uint32_t sms = 0;
  uint32_t threads = 0;          // resident threads
  uint32_t blocks = 0;           // resident blocks
  uint32_t registers = 0;        // 32-bit registers
  uint32_t shared = 0;           // shared memory, bytes
  uint32_t shared_reserved = 0;  // shared memory the driver reserves per block, bytes
  bool known() const { return sms && threads >= 32 && blocks && registers && shared; }
};

// One execution as recorded.
struct GridRun {
  uint64_t start = 0, end = 0;  // end > start
  uint32_t blocks = 0;          // of its grid; 0: not known (taken as one full wave)
  uint32_t threads = 0;         // per block; 0: not known (one warp)
  uint32_t registers = 0;       // per thread; 0: not known (registers do not limit it)
  uint32_t shared = 0;          // static + dynamic shared memory per block, bytes
};

// How many of the run's blocks fit on an empty SM (at least 1).
uint32_t blocks_per_sm(const GridRun& r, const SmLimits& sm);

// Per run (same order as `runs`): its expected samples in SM-nanoseconds, i.e. the sum over SMs of
// the time integral of the run's share of the SM's resident warps. `runs` are the executions of one
// device, in any order; the model takes launch order to be the order of their starts. Empty when the
// simulation would take too long (a bounded number of steps per device: hostile profiles).
// needed (optional, per run): a group of overlapping runs none of which is needed is not simulated,
// each run weighed as if alone (attribution needs the split only for kernels from several stacks).
std::vector<double> expected_sm_time(const std::vector<GridRun>& runs, const SmLimits& sm,
                                     const std::vector<bool>* needed = nullptr);

// Also gives each run's simulated end (for tests: the fit must reproduce the recorded ends).
std::vector<double> expected_sm_time(const std::vector<GridRun>& runs, const SmLimits& sm,
                                     std::vector<uint64_t>* simulated_end, const std::vector<bool>* needed = nullptr);

}  // namespace aiflame
