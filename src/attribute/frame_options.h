// What the frames of a picture hold: which CPU frames, which root frames, which stall leaves
// (`report` and `diff` options, report/load_flame.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace aiflame {

class GpuSymbolizer;

// The root frames of every stack: which process (program;pid, iaprof's layout), which program (its
// name alone: `diff` compares two runs of one program, whose pids differ), which rank of a
// distributed job ("rank 3"), which GPU ("GPU 1"), or none.
enum class GroupBy { Process, Rank, Device, None, Program };
// "process", "program", "rank", "device", "none"; nullopt for anything else.
std::optional<GroupBy> parse_group_by(const std::string& s);
std::vector<std::string> group_by_names();
// Which samples end in a stall reason frame. A reason's samples split into those taken on cycles when
// the warp's scheduler issued nothing ("not issued": latency nobody hid) and the rest ("issued").
enum class StallLeaves : uint8_t { All, Issued, NotIssued, None };
// "all", "issued", "not-issued", "none"; nullopt for anything else.
std::optional<StallLeaves> parse_stall_leaves(const std::string& s);

struct FrameOptions {
  bool python = true;
  bool native = true;
  size_t max_depth = 0;  // 0: unlimited CPU frames
  bool full_names = false;  // keep C++ parameter lists and long template arguments
  GroupBy group_by = GroupBy::Process;
  StallLeaves stalls = StallLeaves::All;
  GpuSymbolizer* gpu = nullptr;  // nullptr: one of its own, from the profile alone (no nvdisasm)
  bool lines = false;  // native frames carry " (file:line)" from the modules' DWARF
  // Fill FlameData's timeline, kernel spans and launch stacks (the writers that show time or devices
  // need them; they grow with the length of the run, so a folded or SVG report leaves them out).
  bool times = true;
  // Each kernel span's launching thread and launch time (KernelSpan::launch_tid): the trace output's
  // CPU tracks. The launch records are read again for it (LaunchRow keeps neither).
  bool launch_threads = false;
};

}  // namespace aiflame
