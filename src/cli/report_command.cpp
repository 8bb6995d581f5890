// `aiflame report FILE [-o OUT] [--format F]`: symbolize, attribute and write one output.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "cli/input_files.h"
#include "cli/picture_options.h"
#include "cli/process_table.h"
#include "cli/stream_hint.h"
#include "cli/time_span.h"
#include "cli/summary.h"
#include "output/writer.h"
#include "report/load_flame.h"

namespace aiflame {

void add_report_command(CLI::App& app, ReportArgs& a) {
  auto* sub = app.add_subcommand("report", "Attribute GPU samples to launch stacks and write a flame graph");
  sub->add_option("files", a.inputs,
                  "Profiles written by `aiflame record`, folded stack files or iaprof output, or directories of "
                  "profiles (default: aiflame.data, as `aiflame record` writes it). Several files (or a "
                  "directory's profiles) are merged into one picture, each process under its own name and pid")
      ->expected(0, 1 << 20);
  sub->add_option("-o,--output", a.output,
                  output_formats_help());
  sub->add_option("--format", a.format, "Output format, overriding the extension")->check(CLI::IsMember(writer_formats()));
  sub->add_option("--title", a.title, "Title of the flame graph");
  sub->add_flag("-q,--quiet", a.quiet, "Print only errors");
  // Plain by default: stock flamegraph.pl, speedscope and inferno show iaprof's suffixes as part of
  // the names; aiflame reads plain files back by the frames' places and shapes (docs/formats.md).
  auto* plain = sub->add_flag("--plain", a.plain, "Folded output with bare frame names (the default)");
  sub->add_flag("--annotate", a.annotate,
                "Folded output with iaprof's annotations (name_[G] GPU code, name_[g] GPU instruction and stall, "
                "py::name Python), which iaprof's flamegraph.pl colours by")
      ->excludes(plain);
  add_picture_options(sub, a);
  sub->add_flag("-f,--force", a.force, "Overwrite the output file if it exists");
  sub->add_option("--since", a.since, kSinceHelp);
  sub->add_option("--until", a.until, kUntilHelp);
}

int run_report(const ReportArgs& args) {
  ReportArgs a = args;
  if (a.output == "-") a.output.clear();  // standard output, as every neighbouring tool spells it
  if (a.inputs.empty()) a.inputs = {"aiflame.data"};  // what `aiflame record` writes, as perf.data for perf
  std::string format = a.format;
  if (format.empty() && !a.output.empty()) {
    format = format_from_path(a.output);
    if (format.empty()) {
      std::cerr << "aiflame: cannot tell the format of '" << a.output << "' from its extension; use --format (one of " << fmt::format("{}", fmt::join(writer_formats(), ", ")) << ")\n";
      return 2;
    }
  }
  if (format.empty()) format = "text";
  auto writer = make_writer(format, WriterOptions{.plain = !a.annotate});
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
  std::vector<std::string> members, skipped;
  auto inputs = expand_inputs(a.inputs, &members, &skipped);
  if (!inputs) {
    std::cerr << "aiflame: " << inputs.error() << "\n";
    return 1;
  }
  if (Status st = check_output_not_input(a.output, *inputs); !st) {
    std::cerr << "aiflame: " << st.error() << "\n";
    return 2;
  }
  bool usage = false;
  if (auto spanned = apply_time_span(*inputs, a.since, a.until, &usage); !spanned) {
    std::cerr << "aiflame: " << spanned.error() << "\n";
    return usage ? 2 : 1;
  } else {
    inputs = std::move(spanned);
  }
  auto options = load_options(a, format);
  if (!options) {
    std::cerr << "aiflame: " << options.error() << "\n";
    return 2;
  }
  LoadOptions& lo = *options;
  lo.may_fail.insert(members.begin(), members.end());
  if (!a.quiet)
    for (const auto& line : skipped) std::cerr << "aiflame: warning: " << line << "\n";
  if (!a.quiet && inputs->size() == 1)
    lo.on_profile = [](const std::string& input, const ProfileFlame& r) {
      print_summary(r.profile, r.stats, input, std::cerr);
      print_gpu_summary(r.gpu, r.gpu_notes, std::cerr);
      if (r.stats.samples > 0)
        if (auto shape = serialized_streams(r.profile)) std::cerr << "aiflame: " << serialized_streams_hint(*shape) << "\n";
    };
  auto loaded = load_flame(*inputs, lo);
  if (!loaded) {
    std::cerr << "aiflame: " << loaded.error() << "\n";
    return 1;
  }
  FlameData& data = loaded->data;
  // A directory's member that failed is named, its picture left out, and the status says so (4).
  for (const auto& why : loaded->left_out) std::cerr << "aiflame: " << why << "; left out of the picture\n";
  if (!a.quiet && inputs->size() > 1)
    for (const auto& f : loaded->cut_short)
      std::cerr << "aiflame: " << f << ": the profile was cut short (the program was killed or crashed); it is read up "
                   "to its last flush\n";
  if (!a.quiet && data.processes.size() > 1) print_process_table(data.processes, std::cerr);
  // A filter item that matches nothing is said (a typo must not be a silent empty output), and a
  // picture the filters emptied is status 3.
  if (std::string w = loaded->filter_warning(); !a.quiet && !w.empty()) std::cerr << "aiflame: warning: " << w << "\n";
  const int done = loaded->filtered_out ? kReportNothingMatched : !loaded->left_out.empty() ? kReportMembersLeftOut : 0;
  data.title = a.title.empty() ? "AI Flame Graph: " + data.process : a.title;
  data.subtitle = loaded->command + "  |  " + std::to_string(loaded->samples) + " GPU samples, " +
                  std::to_string(loaded->kernels) + " kernels";
  Status st = write_output(a.output, [&](std::ostream& out) { writer->write(data, out); }, a.force);
  if (!st) {
    std::cerr << "aiflame: " << st.error() << "\n";
    return 1;
  }
  // A writer that scales or leaves something out to keep its output bounded says so (FlameScope).
  if (!a.quiet)
    if (std::string note = writer->bound_note(data); !note.empty()) std::cerr << "aiflame: note: " << note << "\n";
  if (!a.quiet && !a.output.empty()) std::cerr << "aiflame: wrote " << a.output << "\n";
  return done;
}

}  // namespace aiflame
