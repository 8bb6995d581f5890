// Per-process totals of a multi-process (distributed) run: who each recorded process was, its samples,
// kernels, launches and GPU-busy share, and the imbalance between the processes that ran kernels. One
// computation for the table `record` and `report` print and the one the HTML report shows.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace aiflame {

struct ProcessRow {
  std::string file;
  std::string name;  // program (basename of argv[0])
  std::string host;
  uint32_t pid = 0;
  int32_t rank = -1;
  std::vector<uint32_t> devices;
  uint64_t samples = 0;
  double attributed_percent = 0;
  uint64_t launches = 0;
  uint64_t kernels = 0;
  double seconds = 0;       // the profile's span
  double busy_seconds = 0;  // union of the kernels' execution intervals, over all its devices
  double busy_fraction() const { return seconds > 0 ? busy_seconds / seconds : 0; }
};

// "rank 3" where a launcher set the rank, else "pid 1234".
std::string process_label(const ProcessRow& r);

// The least and the most busy GPU among the processes that ran kernels (a launcher such as torchrun's
// agent, which only initialised CUDA, is not compared); ties go to the lower (rank, pid). Indices into
// the rows; nullopt with fewer than two such processes.
struct BusyImbalance {
  size_t least = 0, most = 0;
};
std::optional<BusyImbalance> busy_imbalance(const std::vector<ProcessRow>& rows);

// "3 processes, 15 GPU samples in all; GPU busy from 50.0% (rank 1) to 90.0% (rank 0)".
std::string process_totals_line(const std::vector<ProcessRow>& rows);

}  // namespace aiflame
