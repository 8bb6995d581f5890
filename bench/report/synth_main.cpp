// aiflame_synth_profile OUT SECONDS [RECORDS_PER_BATCH [RANK WORLD_SIZE]]: writes a synthetic profile (synthetic_profile.h)
// and prints its counts, for bench/report_throughput.sh and by-hand runs of `aiflame report`.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "synthetic_profile.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.aiflame SECONDS [RECORDS_PER_BATCH [RANK WORLD_SIZE]]\n", argv[0]);
    return 2;
  }
  aiflame::bench::SyntheticShape shape;
  shape.seconds = std::atof(argv[2]);
  if (argc > 3) shape.records_per_batch = static_cast<uint32_t>(std::atoi(argv[3]));
  if (argc > 5) {  // one rank of a data-parallel job: its own pid and rank, the same program
    shape.rank = std::atoi(argv[4]);
    shape.world_size = std::atoi(argv[5]);
  }
  aiflame::bench::SyntheticCounts c;
  std::string error;
  if (!aiflame::bench::write_synthetic_profile(argv[1], shape, &c, &error)) {
    std::fprintf(stderr, "aiflame_synth_profile: %s\n", error.c_str());
    return 1;
  }
  std::printf("%s: %llu PC records, %llu samples, %llu kernels, %llu batches, %llu bytes\n", argv[1],
              static_cast<unsigned long long>(c.pc_records), static_cast<unsigned long long>(c.samples),
              static_cast<unsigned long long>(c.kernels), static_cast<unsigned long long>(c.batches),
              static_cast<unsigned long long>(c.file_bytes));
  return 0;
}
