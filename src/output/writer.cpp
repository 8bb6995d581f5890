#include "output/writer.h"

#include "output/folded_writer.h"
#include "output/svg_writer.h"

namespace aiflame {

std::vector<std::string> writer_formats() { return {"folded", "svg"}; }

std::unique_ptr<Writer> make_writer(std::string_view format) {
  if (format == "folded") return std::make_unique<FoldedWriter>();
  if (format == "svg") return std::make_unique<SvgWriter>();
  return nullptr;
}

std::string format_from_path(std::string_view path) {
  auto ends = [&](std::string_view ext) {
    return path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext;
  };
  if (ends(".svg")) return "svg";
  if (ends(".folded") || ends(".txt") || ends(".collapsed")) return "folded";
  return {};
}

}  // namespace aiflame
