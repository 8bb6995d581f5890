// libFuzzer: a profile file through the report path the CLI runs (`aiflame report FILE`):
// flame_from_profile_file reads the profile without its PC batches, then streams the batches through
// the batch pipeline (attribution on a second thread), the GPU symbolizer (stored lines and SASS,
// and the cubins' own line tables read by libdw) and the frame builder; then every writer. Inputs are
// mutated with the structure-aware mutator (profile_mutator.h), so mutations keep valid chunk CRCs
// and reach the record decoders and what follows. Never a crash, hang or sanitizer report.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <sstream>
#include <string>

#include "attribute/profile_flame.h"
#include "output/writer.h"
#include "profile_mutator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One file per process, rewritten for each input: the path is what the report reads.
  static const std::string path = "/tmp/aiflame_report_fuzz." + std::to_string(getpid());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return 0;
  for (size_t done = 0; done < size;) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  aiflame::FrameOptions fo;
  fo.native = false;  // native frames would open the files that module records name
  fo.times = true;    // the timeline, kernel spans and launch stacks that trace, heatmap and html read
  fo.stalls = static_cast<aiflame::StallLeaves>(size % 4);
  auto r = aiflame::flame_from_profile_file(path, fo, aiflame::GpuSymbolizerOptions{});
  if (!r) return 0;
  r->flame.title = "fuzz";
  for (const std::string& format : aiflame::writer_formats()) {
    std::ostringstream out;
    aiflame::make_writer(format)->write(r->flame, out);
  }
  return 0;
}
