#include "cli/picture_options.h"

#include "output/writer.h"
#include "symbolize/nvidia/nvdisasm.h"

namespace aiflame {

void add_picture_options(CLI::App* sub, PictureArgs& a) {
  sub->add_flag("--no-python", a.no_python, "Leave out Python frames");
  sub->add_flag("--no-native", a.no_native, "Leave out native (C/C++) frames");
  sub->add_option("--max-depth", a.max_depth, "Keep at most N CPU frames from the root (0: all)");
  sub->add_flag("--full-names", a.full_names, "Keep C++ parameter lists and long template arguments in frame names");
  sub->add_flag("--lines", a.lines,
                "Add file:line to native frames (from the libraries' debug information; functions inlined at "
                "a call are frames of their own either way)");
  sub->add_option("--group-by", a.group_by,
                  "Root frames of each stack: process (program and pid), program (its name alone: runs and "
                  "processes of one program merge), rank (of a torchrun/MPI job; falls back to process), "
                  "device (GPU), none")
      ->check(CLI::IsMember(group_by_names()))
      ->capture_default_str();
  sub->add_option("--kernels", a.kernels, "Keep only GPU kernels whose name matches this regex (RE2 syntax, e.g. 'nccl|gemm')");
  sub->add_option("--exclude-kernels", a.exclude_kernels, "Leave out GPU kernels whose name matches this regex");
  sub->add_option("--stalls", a.stalls, "Keep only these stall reasons (comma-separated short names, e.g. long_scoreboard,selected)");
  sub->add_option("--devices", a.devices, "Keep only samples of these GPUs (comma-separated numbers)");
  sub->add_option("--pids", a.pids, "Keep only these processes (comma-separated pids, or root frame names such as 'rank 1')");
  sub->add_option("--stall-reasons", a.stall_reasons,
                  "Which GPU samples end in a stall reason frame: all, issued (their warp scheduler issued on that cycle), "
                  "not-issued (it issued nothing: latency not hidden), none")
      ->check(CLI::IsMember({"all", "issued", "not-issued", "none"}));
  sub->add_option("--nvdisasm", a.nvdisasm,
                  "nvdisasm for SASS names not stored in the profile (default: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)");
  sub->add_flag("--fold-runs,!--no-fold-runs", a.fold_runs, fold_runs_help());
}

Result<LoadOptions> load_options(const PictureArgs& a, std::string_view format) {
  auto filter = make_flame_filter(a.kernels, a.exclude_kernels, a.stalls, a.devices, a.pids);
  if (!filter) return Error{filter.error()};
  std::string nvdisasm = find_nvdisasm(a.nvdisasm);
  if (!a.nvdisasm.empty() && nvdisasm.empty())
    return Error{"--nvdisasm " + a.nvdisasm + " is not an executable file; pass the path of CUDA's nvdisasm"};
  auto writer = make_writer(format);
  LoadOptions lo;
  lo.frames = FrameOptions{!a.no_python, !a.no_native, a.max_depth, a.full_names};
  lo.frames.lines = a.lines;
  lo.frames.group_by = parse_group_by(a.group_by).value_or(GroupBy::Process);
  lo.frames.stalls = parse_stall_leaves(a.stall_reasons).value_or(StallLeaves::All);
  // The time series is also what --devices filters by.
  lo.frames.times = (writer && writer->uses_times()) || !filter->devices.empty();
  lo.frames.launch_threads = writer && writer->uses_launch_threads();
  lo.gpu = GpuSymbolizerOptions{true, nvdisasm};
  lo.filter = std::move(*filter);
  lo.fold_runs = a.fold_runs > 0 || (a.fold_runs == 0 && folds_runs_by_default(format));
  return lo;
}

}  // namespace aiflame
