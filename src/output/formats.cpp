// The registry of output formats: one line each (name, file extensions, help line, whether runs of
// unsymbolized frames fold by default, factory). The format names `report --format` takes, the
// extension lookup of `-o`, the --fold-runs default and the help text all come from here. A new
// format: its writer in a file of its own (output/NAME_writer.h/.cpp; CMake builds every
// output/*_writer.cpp), and its line (and include) here.
#include "output/writer.h"

#include "output/flamescope_writer.h"
#include "output/folded_writer.h"
#include "output/heatmap_writer.h"
#include "output/html_writer.h"
#include "output/pprof_writer.h"
#include "output/speedscope_writer.h"
#include "output/svg_writer.h"
#include "output/text_writer.h"
#include "output/trace_writer.h"

namespace aiflame {
namespace {

template <class W>
std::unique_ptr<Writer> make(const WriterOptions&) {
  return std::make_unique<W>();
}

constexpr bool kFold = true, kKeep = false;  // runs of unsymbolized frames, unless --(no-)fold-runs

const OutputFormat kFormats[] = {
    {"text", {".txt"}, "text report: top kernels, stalls, lines (the default, on stdout)", kKeep, make<TextWriter>},
    {"folded", {".folded", ".collapsed"}, "folded stacks (plain names; --annotate: iaprof's annotations)", kKeep,
     [](const WriterOptions& o) -> std::unique_ptr<Writer> {
       return std::make_unique<FoldedWriter>(FoldedOptions{.plain = o.plain});
     }},
    {"svg", {".svg"}, "interactive flame graph", kFold, make<SvgWriter>},
    {"pprof", {".pb.gz", ".pprof"}, "pprof profile.proto, gzip'd", kKeep, make<PprofWriter>},
    {"speedscope", {".speedscope.json"}, "speedscope JSON", kFold, make<SpeedscopeWriter>},
    {"trace", {".trace.json", ".perfetto.json"}, "Chrome trace events (Perfetto)", kKeep, make<TraceWriter>},
    {"flamescope", {".stacks", ".perf"}, "perf-script text for FlameScope", kKeep, make<FlameScopeWriter>},
    {"html", {".html", ".htm"}, "HTML report", kFold, make<HtmlWriter>},
    {"heatmap", {".heatmap.svg"}, "sample heat map over time", kKeep, make<HeatmapWriter>},
};

}  // namespace

std::span<const OutputFormat> output_formats() { return kFormats; }

}  // namespace aiflame
