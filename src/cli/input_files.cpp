#include "cli/input_files.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "input/flame_input.h"

namespace aiflame {

Result<std::vector<std::string>> expand_inputs(const std::vector<std::string>& inputs, std::vector<std::string>* members,
                                               std::vector<std::string>* skipped) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (!fs::is_directory(in, ec)) {
      out.push_back(in);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(in, ec)) {
      if (!e.is_regular_file(ec)) continue;
      auto kind = detect_file_format(e.path().string());
      if (kind && *kind == InputFormat::Aiflame) found.push_back(e.path().string());
      else if (skipped)
        skipped->push_back(e.path().string() + ": " + (e.file_size(ec) == 0 ? "an empty file" : "not an aiflame profile") +
                           ", left out of the directory's picture");
    }
    if (ec) return Error{"cannot read directory " + in + ": " + ec.message()};
    if (found.empty()) return Error{"directory " + in + " holds no aiflame profile (aiflame record writes FILE.<pid> per process)"};
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
    if (members) members->insert(members->end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace aiflame
