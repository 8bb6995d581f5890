// `aiflame report FILE [-o OUT] [--format F]`: symbolize, attribute and write one output.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "flame/flame_merge.h"
#include "input/flame_input.h"
#include "output/folded_writer.h"
#include "attribute/frame_builder.h"
#include "attribute/profile_flame.h"
#include "cli/commands.h"
#include "cli/filter_check.h"
#include "cli/output_file.h"
#include "cli/input_files.h"
#include "flame/flame_filter.h"
#include "output/fold_runs.h"
#include <set>
#include "cli/process_table.h"
#include "cli/stream_hint.h"
#include "cli/summary.h"
#include "output/writer.h"
#include "symbolize/nvdisasm.h"

namespace aiflame {

void add_report_command(CLI::App& app, ReportArgs& a) {
  auto* sub = app.add_subcommand("report", "Attribute GPU samples to launch stacks and write a flame graph");
  sub->add_option("files", a.inputs,
                  "Profiles written by `aiflame record`, folded stack files or iaprof output, or directories of "
                  "profiles (several: one picture, each process under its own name and pid)")
      ->required()
      ->expected(1, 1 << 20);
  sub->add_option("-o,--output", a.output,
                  "Output file; its extension picks the format (.svg, .html, .heatmap.svg, .folded, .pb.gz, .speedscope.json, .trace.json, "
                  ".stacks). Default: folded stacks on stdout");
  sub->add_option("--format", a.format, "Output format, overriding the extension")->check(CLI::IsMember(writer_formats()));
  sub->add_flag("--no-python", a.no_python, "Leave out Python frames");
  sub->add_flag("--no-native", a.no_native, "Leave out native (C/C++) frames");
  sub->add_option("--max-depth", a.max_depth, "Keep at most N CPU frames from the root (0: all)");
  sub->add_flag("--full-names", a.full_names, "Keep C++ parameter lists and long template arguments in frame names");
  sub->add_flag("--lines", a.lines,
                "Add file:line to native frames (from the libraries' debug information; functions inlined at "
                "a call are frames of their own either way)");
  sub->add_option("--title", a.title, "Title of the flame graph");
  sub->add_flag("-q,--quiet", a.quiet, "Print only errors");
  sub->add_flag("--plain", a.plain, "Folded output without iaprof's annotations (_[G], _[g], py::)");
  sub->add_option("--group-by", a.group_by,
                  "Root frames of each stack: process (program and pid), rank (of a torchrun/MPI job; "
                  "falls back to process), device (GPU), none")
      ->check(CLI::IsMember({"process", "rank", "device", "none"}));
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
  sub->add_flag("-f,--force", a.force, "Overwrite the output file if it exists");
  sub->add_flag("--fold-runs,!--no-fold-runs", a.fold_runs,
                "Fold each run of 3 or more unsymbolized frames of one library ([libcublasLt.so.13+0x...]) into one "
                "frame [libcublasLt.so.13: N frames]. Default: on for svg, html and speedscope, off for the rest");
}

int run_report(const ReportArgs& a) {
  std::string format = a.format;
  if (format.empty() && !a.output.empty()) {
    format = format_from_path(a.output);
    if (format.empty()) {
      std::cerr << "aiflame: cannot tell the format of '" << a.output << "' from its extension; use --format (one of " << fmt::format("{}", fmt::join(writer_formats(), ", ")) << ")\n";
      return 2;
    }
  }
  if (format.empty()) format = "folded";
  auto writer = make_writer(format);
  if (!writer) {
    std::cerr << "aiflame: unknown format '" << format << "'\n";
    return 2;
  }
  if (!a.output.empty()) {
    if (Status st = check_output_path(a.output, a.force); !st) {
      std::cerr << "aiflame: " << st.error() << "\n";
      return 2;
    }
  }
  if (format == "folded" && a.plain) writer = std::make_unique<FoldedWriter>(FoldedOptions{.plain = true});
  std::string nvdisasm = find_nvdisasm(a.nvdisasm);
  if (!a.nvdisasm.empty() && nvdisasm.empty()) {
    std::cerr << "aiflame: --nvdisasm " << a.nvdisasm << " is not an executable file; pass the path of CUDA's nvdisasm\n";
    return 2;
  }
  FlameData data;
  uint64_t samples = 0, kernels = 0;
  std::string command;
  auto inputs = expand_inputs(a.inputs);
  if (!inputs) {
    std::cerr << "aiflame: " << inputs.error() << "\n";
    return 1;
  }
  GroupBy group_by = a.group_by == "rank"     ? GroupBy::Rank
                     : a.group_by == "device" ? GroupBy::Device
                     : a.group_by == "none"   ? GroupBy::None
                                              : GroupBy::Process;
  auto filter = make_flame_filter(a.kernels, a.exclude_kernels, a.stalls, a.devices, a.pids);
  if (!filter) {
    std::cerr << "aiflame: " << filter.error() << "\n";
    return 2;
  }
  RunSummary summary;
  std::set<uint32_t> devices;
  StackIndex stack_index;
  for (const std::string& input : *inputs) {
    // Folded stacks and iaprof's text output are read too, recognised by their content. Each input
    // is opened once (a pipe or a FIFO cannot be opened again) and streamed.
    auto in = FlameInput::open(input);
    if (!in) {
      std::cerr << "aiflame: " << in.error() << "\n";
      return 1;
    }
    if (in->format() != InputFormat::Aiflame) {
      auto d = in->read();
      if (!d) {
        std::cerr << "aiflame: " << d.error() << "\n";
        return 1;
      }
      samples += d->total();
      if (command.empty()) command = std::string(input_format_name(in->format())) + " " + input;
      merge_flame(data, std::move(*d));
      continue;
    }
    auto path = in->profile_path();  // the file itself, or a copy of a piped profile
    if (!path) {
      std::cerr << "aiflame: " << path.error() << "\n";
      return 1;
    }
    // Streamed: the profile is read without its PC batches, which then pass one at a time through
    // attribution into the frame lists (profile_flame.h).
    FrameOptions fo{!a.no_python, !a.no_native, a.max_depth, a.full_names};
    fo.lines = a.lines;
    fo.group_by = group_by;
    fo.stalls = *parse_stall_leaves(a.stall_reasons);
    // The time series is also what --devices filters by.
    fo.times = writer->uses_times() || !filter->devices.empty();
    fo.launch_threads = format == "trace";
    auto r = flame_from_profile_file(*path, fo, GpuSymbolizerOptions{true, nvdisasm});
    if (!r) {
      std::cerr << "aiflame: " << in->own_error(r.error()) << "\n";
      return 1;
    }
    const Profile& p = r->profile;
    r->flame.processes[0].file = input;
    // Without a time series nothing points at a stack's index: equal stacks are summed as they come.
    if (fo.times) merge_flame(data, std::move(r->flame));
    else merge_flame_summed(data, std::move(r->flame), stack_index);
    const AttributionStats& stats = r->stats;
    samples += stats.samples;
    summary.samples += stats.samples;
    summary.dropped += stats.dropped;
    summary.attributed += stats.attributed;
    summary.processes++;
    if (p.process && p.process->interval_ms) summary.interval_ms = p.process->interval_ms;
    for (const auto& k : p.kernels) devices.insert(k.device);
    devices.insert(r->batch_devices.begin(), r->batch_devices.end());
    kernels += p.kernels.size();
    if (command.empty() && p.process) command = p.process->command;
    if (!a.quiet && inputs->size() == 1) {
      print_summary(p, stats, input, std::cerr);
      print_gpu_summary(r->gpu, r->gpu_notes, std::cerr);
      if (stats.samples > 0)
        if (auto shape = serialized_streams(p)) std::cerr << "aiflame: " << serialized_streams_hint(*shape) << "\n";
    }
  }
  if (!a.quiet && data.processes.size() > 1) print_process_table(data.processes, std::cerr);
  if (inputs->size() > 1) command = std::to_string(inputs->size()) + " processes";
  summary.command = command;
  summary.devices.assign(devices.begin(), devices.end());
  if (!summary.processes) summary.samples = samples;
  data.summary = summary;
  // A filter item that matches nothing is said (a typo must not be a silent empty output), and a
  // picture the filters emptied is status 3 (cli/filter_check.h).
  const uint64_t before_filter = data.total();
  const auto unmatched = unmatched_filter_items(*filter, data);
  apply_filter(*filter, data);
  if (a.fold_runs > 0 || (a.fold_runs == 0 && (format == "svg" || format == "html" || format == "speedscope")))
    fold_library_runs(data);
  const bool filtered_out = !filter->empty() && before_filter > 0 && data.total() == 0;
  if (!a.quiet && (filtered_out || !unmatched.empty())) {
    std::string items;
    for (const auto& u : unmatched) items += (items.empty() ? "" : "; ") + u;
    std::cerr << "aiflame: warning: " << (filtered_out ? "the filters matched no sample" : "a filter matched no sample")
              << (items.empty() ? std::string(" (together; each alone matches some)") : ": " + items) << "\n";
  }
  const int done = filtered_out ? kReportNothingMatched : 0;
  data.title = a.title.empty() ? "AI Flame Graph: " + data.process : a.title;
  data.subtitle = command + "  |  " + std::to_string(samples) + " GPU samples, " + std::to_string(kernels) + " kernels";
  // A writer that scales or leaves something out to keep its output bounded says so (FlameScope).
  if (!a.quiet)
    if (std::string note = writer->bound_note(data); !note.empty()) std::cerr << "aiflame: note: " << note << "\n";
  if (a.output.empty()) {
    writer->write(data, std::cout);
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::cerr << "aiflame: writing the output to standard output failed: " << std::strerror(errno ? errno : EIO) << "\n";
      return 1;
    }
    return done;
  }
  Status st = write_output_file(a.output, [&](std::ostream& out) { writer->write(data, out); }, a.force);
  if (!st) {
    std::cerr << "aiflame: " << st.error() << "\n";
    return 1;
  }
  if (!a.quiet) std::cerr << "aiflame: wrote " << a.output << "\n";
  return done;
}

}  // namespace aiflame
