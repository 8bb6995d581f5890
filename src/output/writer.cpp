#include "output/writer.h"

#include "output/flamescope_writer.h"
#include "output/heatmap_writer.h"
#include "output/html_writer.h"
#include "output/folded_writer.h"
#include "output/pprof_writer.h"
#include "output/speedscope_writer.h"
#include "output/svg_writer.h"
#include "output/trace_writer.h"

namespace aiflame {

std::vector<std::string> writer_formats() { return {"folded", "svg", "pprof", "speedscope", "trace", "flamescope", "html", "heatmap"}; }

std::unique_ptr<Writer> make_writer(std::string_view format) {
  if (format == "folded") return std::make_unique<FoldedWriter>();
  if (format == "svg") return std::make_unique<SvgWriter>();
  if (format == "pprof") return std::make_unique<PprofWriter>();
  if (format == "speedscope") return std::make_unique<SpeedscopeWriter>();
  if (format == "trace") return std::make_unique<TraceWriter>();
  if (format == "flamescope") return std::make_unique<FlameScopeWriter>();
  if (format == "html") return std::make_unique<HtmlWriter>();
  if (format == "heatmap") return std::make_unique<HeatmapWriter>();
  return nullptr;
}

std::string format_from_path(std::string_view path) {
  auto ends = [&](std::string_view ext) {
    return path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext;
  };
  if (ends(".heatmap.svg")) return "heatmap";
  if (ends(".svg")) return "svg";
  if (ends(".html") || ends(".htm")) return "html";
  if (ends(".folded") || ends(".txt") || ends(".collapsed")) return "folded";
  if (ends(".pb.gz") || ends(".pprof")) return "pprof";
  if (ends(".speedscope.json")) return "speedscope";
  if (ends(".trace.json") || ends(".perfetto.json")) return "trace";
  if (ends(".stacks") || ends(".perf")) return "flamescope";
  return {};
}

}  // namespace aiflame
