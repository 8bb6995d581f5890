// Memory and time of what `aiflame record` does with a profile when the program ends (symbolize, then
// the summary's attribution statistics), two ways, each in its own process for a clean peak RSS:
//   aiflame_record_end_bench held PROFILE      the batches read into memory, attribute_samples (before)
//   aiflame_record_end_bench streamed PROFILE  finalize_profile and stream_attribution_stats (now)
// The profile is finalized in place (a copy is the caller's business).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "attribute/profile_flame.h"
#include "cli/finalize.h"

int main(int argc, char** argv) {
  using namespace aiflame;
  if (argc != 3 || (std::strcmp(argv[1], "held") != 0 && std::strcmp(argv[1], "streamed") != 0)) {
    std::fprintf(stderr, "usage: %s held|streamed PROFILE\n", argv[0]);
    return 2;
  }
  auto t0 = std::chrono::steady_clock::now();
  AttributionStats stats;
  if (std::strcmp(argv[1], "held") == 0) {
    auto p = read_profile(argv[2]);
    if (!p) return std::fprintf(stderr, "%s\n", p.error().c_str()), 1;
    stats = attribute_samples(*p).stats;
  } else {
    auto p = finalize_profile(argv[2], GpuSymbolizerOptions{});
    if (!p) return std::fprintf(stderr, "%s\n", p.error().c_str()), 1;
    auto s = stream_attribution_stats(argv[2], *p);
    if (!s) return std::fprintf(stderr, "%s\n", s.error().c_str()), 1;
    stats = *s;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage ru = {};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("%-8s %llu samples, %.2f%% attributed: %.2f s, peak RSS %.1f MB\n", argv[1],
              static_cast<unsigned long long>(stats.samples), stats.percent_attributed(), secs, ru.ru_maxrss / 1024.0);
  return 0;
}
