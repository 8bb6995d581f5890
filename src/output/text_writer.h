// The text report, the first thing a user reads (`aiflame report FILE` with no -o): the tables a user
// of `perf report --stdio` or `pprof -top` looks for, from the same picture as every other format.
//   - the top kernels: samples, share, GPU time, launches, and their heaviest launch site in the
//     user's own code (FlameData::user_frames; forward and backward alike: a kernel autograd's
//     engine launched carries the forward Python that created its node);
//   - the stall reasons overall, and per top kernel;
//   - the user's source lines that launched the samples (the deepest frame of the user's code in each
//     launch stack), with their kernels;
//   - the GPU source lines.
// The same tables give record's closing lines (summary_lines) and `aiflame top`'s screen.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "output/writer.h"

namespace aiflame {

struct TopShare {
  std::string name;
  uint64_t samples = 0;
};

struct TopKernel {
  std::string name;
  uint64_t samples = 0;
  double gpu_ms = 0;      // the kernel's executions (FlameData::kernels), all of them
  uint64_t launches = 0;  // executions recorded
  TopShare site;          // heaviest launch site; name empty when no stack has one
  std::vector<TopShare> stalls;  // this kernel's, heaviest first
};

struct TopLine {
  std::string name;
  uint64_t samples = 0;
  std::vector<TopShare> kernels;  // heaviest first
};

struct TopTables {
  uint64_t total = 0;        // samples of the picture
  uint64_t kernel_count = 0; // distinct kernels that have samples
  bool user_known = false;   // the input tells the user's own frames (recorded profiles do)
  double busy_ms = 0;        // GPU time of every kernel execution
  std::vector<TopKernel> kernels;   // heaviest first, all of them (cut by the writer)
  std::vector<TopShare> stalls;     // overall
  std::vector<TopLine> user_lines;  // launch sites
  std::vector<TopLine> gpu_lines;   // GPU source lines, with their kernels
  bool gpu_lines_are_instructions = false;  // no sample has a source line: "kernel instruction" instead
};

// Ties are broken by name, so that the tables are the same on every run.
TopTables top_tables(const FlameData& data);

// The tables as text, `limit` rows each.
void write_text_report(const FlameData& data, const TopTables& t, size_t limit, std::ostream& out);

// record's three closing lines: "62.0% of GPU samples in 3 kernels (of 41): ...", "top stall
// long_scoreboard 31.0% ...", "top line forward (model.py:88) 40.0% ...". None when the picture has no
// sample.
std::vector<std::string> summary_lines(const TopTables& t);

class TextWriter : public Writer {
 public:
  std::string_view format() const override { return "text"; }
  void write(const FlameData& data, std::ostream& out) const override;
};

}  // namespace aiflame
