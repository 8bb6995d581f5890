// libFuzzer: the report's option parsers: --stall-reasons (parse_stall_leaves) and the filters
// (make_flame_filter: --kernels and --exclude-kernels regexes, --stalls, --devices and --pids lists),
// and what they accept applied to a small picture. The input is six lines: --kernels, --exclude-kernels, --stalls, --devices, --pids, --stall-reasons. A bad
// option is one error line; never a crash.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attribute/frame_builder.h"
#include "input/folded_reader.h"
#include "flame/flame_filter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> field(6);
  for (size_t i = 0, start = 0; i < field.size() && start <= in.size(); i++) {
    size_t end = std::min(in.find('\n', start), in.size());
    field[i] = std::string(in.substr(start, end - start));
    start = end + 1;
  }
  (void)aiflame::parse_stall_leaves(field[5]);
  // The regexes are the user's own, compiled and matched by RE2 (linear time: libstdc++'s std::regex
  // never finished '(..?+)+x', corpus/filter/possessive_nested.txt).
  auto filter = aiflame::make_flame_filter(field[0], field[1], field[2], field[3], field[4]);
  if (!filter) return 0;
  static const char kFolded[] =
      "python3;1234;main;-;_Z6kernelPf;matmul.cu:28;FFMA 0x1a0;long_scoreboard 5\n"
      "python3;1234;main;-;_Z6kernelPf;matmul.cu:28;FFMA 0x1a0;selected 3\n"
      "rank 1;99;train;-;nccl_allreduce;0x20;sleeping 2\n";
  auto d = aiflame::parse_folded(kFolded);
  if (!d) __builtin_trap();
  aiflame::apply_filter(*filter, *d);
  return 0;
}
