#include "output/writer.h"

namespace aiflame {

std::vector<std::string> writer_formats() {
  std::vector<std::string> names;
  for (const auto& f : output_formats()) names.emplace_back(f.name);
  return names;
}

std::unique_ptr<Writer> make_writer(std::string_view format, const WriterOptions& options) {
  for (const auto& f : output_formats())
    if (f.name == format) return f.make(options);
  return nullptr;
}

std::string format_from_path(std::string_view path) {
  std::string_view best_format, best_ext;
  for (const auto& f : output_formats())
    for (std::string_view ext : f.extensions)
      if (path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext && ext.size() > best_ext.size())
        best_format = f.name, best_ext = ext;
  return std::string(best_format);
}

std::string output_formats_help() {
  std::string h = "Output file; its extension picks the format:";
  for (const auto& f : output_formats()) {
    h += "\n  " + std::string(f.name) + " (";
    for (size_t i = 0; i < f.extensions.size(); i++) h += (i ? " " : "") + std::string(f.extensions[i]);
    h += "): " + std::string(f.help);
  }
  return h + "\nDefault (no -o, or -o -): the text report on stdout";
}

bool folds_runs_by_default(std::string_view format) {
  for (const auto& f : output_formats())
    if (f.name == format) return f.folds_runs;
  return false;
}

std::string fold_runs_help() {
  std::string on, off;
  for (const auto& f : output_formats()) {
    std::string& list = f.folds_runs ? on : off;
    list += (list.empty() ? "" : ", ") + std::string(f.name);
  }
  return "Fold each run of 3 or more unsymbolized frames of one library ([libcublasLt.so.13+0x...]) into one frame "
         "[libcublasLt.so.13: N frames]. Default: on for " + on + "; off for " + off;
}

}  // namespace aiflame
