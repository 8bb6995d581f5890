#include "cli/diff_command.h"

#include <cstdio>
#include <iostream>

#include "cli/input_files.h"
#include "cli/output_file.h"
#include "cli/picture_options.h"
#include "cli/time_span.h"
#include "output/diff_writer.h"
#include "output/writer.h"

namespace aiflame {

void add_diff_command(CLI::App& app, DiffArgs& a) {
  auto* sub = app.add_subcommand("diff", "Differential flame graph: red where AFTER grew, blue where it shrank");
  sub->add_option("before", a.before,
                  "Profile before the change (aiflame profile, folded stacks or iaprof output, or a directory of "
                  "profiles)")
      ->required();
  sub->add_option("after", a.after, "Profile after the change")->required();
  sub->add_option("-o,--output", a.output, "Output file, .svg or .folded. Default: diff folded lines on stdout");
  sub->add_option("--format", a.format, "Output format, overriding the extension")->check(CLI::IsMember({"svg", "folded"}));
  auto* plain = sub->add_flag("--plain", a.plain, "Folded output with bare frame names (the default)");
  sub->add_flag("--annotate", a.annotate, "Folded output with iaprof's frame annotations (_[G], _[g], py::)")->excludes(plain);
  sub->add_option("--title", a.title, "Title of the flame graph");
  sub->add_flag("-q,--quiet", a.quiet, "Print only errors");
  sub->add_flag("-f,--force", a.force, "Overwrite the output file if it exists");
  add_picture_options(sub, a);
  sub->add_option("--since", a.since, std::string(kSinceHelp) + "; on both sides, each from its own windows");
  sub->add_option("--until", a.until, kUntilHelp);
}

namespace {

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", share * 100);
  return buf;
}

// One side of the diff through the pipeline `report` uses (streamed, its memory bound, filtered and
// folded as report's picture of that format would be).
Result<LoadedFlame> load_side(const std::string& input, const LoadOptions& options, const PictureArgs& a) {
  auto inputs = expand_inputs({input});
  if (!inputs) return Error{inputs.error()};
  bool usage = false;
  inputs = apply_time_span(*inputs, a.since, a.until, &usage);
  if (!inputs) return Error{input + ": " + inputs.error()};
  return load_flame(*inputs, options);
}

}  // namespace

int run_diff(const DiffArgs& args) {
  DiffArgs a = args;
  if (a.output == "-") a.output.clear();  // standard output, as report's -o -
  std::string format = a.format;
  if (format.empty() && !a.output.empty()) {
    format = format_from_path(a.output);
    if (format != "svg" && format != "folded") {
      std::cerr << "aiflame: diff writes .svg or .folded, not '" << a.output << "'; use --format svg or folded\n";
      return 2;
    }
  }
  if (format.empty()) format = "folded";
  if (!a.output.empty()) {
    if (Status st = check_output_path(a.output, a.force); !st) {
      std::cerr << "aiflame: " << st.error() << "\n";
      return 2;
    }
    if (Status st = check_output_not_input(a.output, {a.before, a.after}); !st) {
      std::cerr << "aiflame: " << st.error() << "\n";
      return 2;
    }
  }
  auto options = load_options(a, format);
  if (!options) {
    std::cerr << "aiflame: " << options.error() << "\n";
    return 2;
  }
  auto before = load_side(a.before, *options, a);
  if (!before) {
    std::cerr << "aiflame: " << before.error() << "\n";
    return 1;
  }
  auto after = load_side(a.after, *options, a);
  if (!after) {
    std::cerr << "aiflame: " << after.error() << "\n";
    return 1;
  }
  // As in report: a filter item that matches nothing is said, and filters that leave a side empty
  // are status 3 (there is nothing to compare: no output is written).
  for (const auto* side : {&*before, &*after})
    if (std::string w = side->filter_warning(); !a.quiet && !w.empty())
      std::cerr << "aiflame: warning: " << (side == &*before ? "BEFORE " + a.before : "AFTER " + a.after) << ": " << w
                << "\n";
  if (before->filtered_out || after->filtered_out) return kReportNothingMatched;
  const FlameData& b = before->data;
  const FlameData& f = after->data;
  if (b.total() == 0 || f.total() == 0) {
    std::cerr << "aiflame: " << (b.total() == 0 ? a.before : a.after) << " has no samples to compare\n";
    return 1;
  }
  DiffData diff = make_diff(b, f);
  if (!a.title.empty()) diff.title = a.title;
  DiffShare share = diff_share(diff);
  if (!a.quiet && (share.kernels_before < kLittleShared || share.kernels_after < kLittleShared))
    std::cerr << "aiflame: the inputs share little: " << percent(share.kernels_before) << " of BEFORE's samples and "
              << percent(share.kernels_after) << " of AFTER's are in launch stacks and kernels both have (--group-by "
              << a.group_by << "); are they runs of one program? --group-by none compares stacks whatever process "
              << "ran them\n";
  auto fill = [&](std::ostream& out) {
    if (format == "svg") write_diff_svg(diff, out);
    else write_diff_folded(diff, out, !a.annotate);
  };
  Status st = write_output(a.output, fill, a.force);
  if (!st) {
    std::cerr << "aiflame: " << st.error() << "\n";
    return 1;
  }
  if (!a.quiet && !a.output.empty())
    std::cerr << "aiflame: wrote " << a.output << " (" << diff.before_total << " samples before, " << diff.after_total
              << " after)\n";
  return 0;
}

}  // namespace aiflame
