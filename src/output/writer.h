// One interface for every output format, and the registry of formats (output/formats.cpp) the CLI
// picks a writer from, by name or by a file's extension.
#pragma once
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "flame/flame_data.h"

namespace aiflame {

class Writer {
 public:
  virtual ~Writer() = default;
  virtual std::string_view format() const = 0;
  virtual void write(const FlameData& data, std::ostream& out) const = 0;
  // Whether the writer reads FlameData's times (timeline, kernels, cpu_stacks). A report leaves them
  // out for writers that do not: the timeline grows with the length of the run.
  virtual bool uses_times() const { return true; }
  // Whether it reads each kernel span's launching thread and launch time (KernelSpan::launch_tid),
  // which costs a second pass over the launch records.
  virtual bool uses_launch_threads() const { return false; }
  // One line when the output of `data` leaves something out or scales it to stay within the
  // writer's stated bound (docs/reliability.md), else empty. The CLI prints it as a note.
  virtual std::string bound_note(const FlameData&) const { return {}; }
};

// What the CLI asks of a writer beyond the picture.
struct WriterOptions {
  bool plain = false;  // folded: bare names, no iaprof annotations (--plain)
};

// One line of the registry.
struct OutputFormat {
  std::string_view name;                     // --format NAME
  std::vector<std::string_view> extensions;  // of an output file, the first one shown in help
  std::string_view help;                     // what it is, for the help text
  // Runs of unsymbolized library frames folded into one frame unless --no-fold-runs (flame/fold_runs.h):
  // the pictures fold, the interchange formats keep every frame unless --fold-runs.
  bool folds_runs;
  std::unique_ptr<Writer> (*make)(const WriterOptions&);
};

// The registry, in the order help lists it (output/formats.cpp).
std::span<const OutputFormat> output_formats();

// Known format names, e.g. "folded", "svg".
std::vector<std::string> writer_formats();
// nullptr when the name is unknown.
std::unique_ptr<Writer> make_writer(std::string_view format, const WriterOptions& options = {});
// Format implied by a file name's extension, the longest that matches ("x.heatmap.svg" ->
// "heatmap", "x.svg" -> "svg"), empty if none.
std::string format_from_path(std::string_view path);
// The help line of `report -o`: every format with its extensions.
std::string output_formats_help();
// Whether the named format folds runs of unsymbolized frames by default (false for an unknown name).
bool folds_runs_by_default(std::string_view format);
// The help line of --fold-runs, naming the formats that fold by default.
std::string fold_runs_help();

}  // namespace aiflame
