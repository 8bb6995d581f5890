// SASS mnemonics of the sampled kernels when a recording ends, derived by nvdisasm once per (cubin,
// kernel) for all the profiles of the recording. Only sampled kernels are disassembled (nvdisasm
// --function), cubins run in parallel, most-sampled first, under one time budget: PyTorch's cubins hold
// hundreds of kernels each, and whole-cubin runs took over 60 s apiece, 285 s at the end of a 20-s DDP
// job.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.h"
#include "symbolize/nvidia/nvdisasm.h"

namespace aiflame {

class SassCache {
 public:
  struct Want {
    std::string_view image;         // the cubin's bytes (kept alive by the caller during derive)
    std::set<std::string> kernels;  // mangled names
    uint64_t samples = 0;           // orders the work: most sampled cubins first
  };
  struct Stats {
    size_t cubins = 0, kernels = 0;  // disassembled
    size_t cubins_left = 0;          // not reached within the budget
    size_t whole_runs = 0;           // retried without --function (a tool that refused it)
    size_t timeouts = 0;             // runs killed at the time limit
    double seconds = 0;
  };

  // No nvdisasm run starts with less than this left of the budget (a run takes ~30 ms even on a tiny
  // cubin, so one started later could only be killed at the deadline).
  static constexpr int kMinRunMs = 100;

  // Disassembles what `wanted` names and was not tried before. `tool` empty: one "not found" note.
  // Problems go to *notes once each, as one line.
  void derive(const std::string& tool, const std::map<uint64_t, Want>& wanted, int budget_ms, unsigned threads,
              std::vector<std::string>& notes);

  // Whether derive was asked for this kernel (then mnemonic() is all there is to know).
  bool tried(uint64_t crc, const std::string& kernel) const { return tried_.count({crc, kernel}) != 0; }
  // Whether nvdisasm listed the kernel's cubin with it asked for: an instruction it did not name has no
  // name to find later either (finalize stores that, so the report does not run nvdisasm for it again).
  bool answered(uint64_t crc, const std::string& kernel) const { return answered_.count({crc, kernel}) != 0; }
  // nullptr when unknown.
  const std::string* mnemonic(uint64_t crc, const std::string& kernel, uint64_t offset) const;
  const Stats& stats() const { return stats_; }

 private:
  std::map<uint64_t, SassListing> by_cubin_;
  std::set<std::pair<uint64_t, std::string>> tried_, answered_;
  Stats stats_;
};

// Adds kernel `function` of cubin `crc`, with its samples, to `wanted` when the profile keeps the cubin's
// bytes (else there is nothing to disassemble).
void want_kernel(std::map<uint64_t, SassCache::Want>& wanted, const Profile& p, uint64_t crc, uint32_t function,
                 uint64_t samples);

}  // namespace aiflame
