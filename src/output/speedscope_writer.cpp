#include "output/speedscope_writer.h"

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "output/device_split.h"

namespace aiflame {

namespace {

// speedscope's "file" and "line" for frames whose name carries them ("func (file.py:12)").
void add_location(nlohmann::json& frame, const std::string& name) {
  size_t open = name.rfind(" (");
  if (open == std::string::npos || name.back() != ')') return;
  std::string loc = name.substr(open + 2, name.size() - open - 3);
  size_t colon = loc.rfind(':');
  if (colon == std::string::npos || colon + 1 == loc.size()) return;
  for (size_t i = colon + 1; i < loc.size(); i++)
    if (loc[i] < '0' || loc[i] > '9' || i - colon > 9) return;
  frame["file"] = loc.substr(0, colon);
  frame["line"] = std::stoi(loc.substr(colon + 1));
}

}  // namespace

void SpeedscopeWriter::write(const FlameData& data, std::ostream& out) const {
  using nlohmann::json;
  json frames = json::array();
  std::map<std::pair<std::string, FrameKind>, size_t> frame_index;
  auto frame_of = [&](const Frame& f) {
    auto [it, fresh] = frame_index.try_emplace({f.name, f.kind}, frames.size());
    if (fresh) {
      json j{{"name", f.name}};
      if (f.kind == FrameKind::Python) add_location(j, f.name);
      frames.push_back(std::move(j));
    }
    return it->second;
  };
  const bool devices = !data.timeline.empty();
  std::map<uint32_t, std::pair<json, json>> per_device;  // device -> (samples, weights)
  std::map<uint32_t, uint64_t> totals;
  std::vector<json> stack_json(data.stacks.size());
  for (const auto& part : split_by_device(data)) {
    json& st = stack_json[part.stack];
    if (st.is_null()) {
      st = json::array();
      for (const auto& f : data.stacks[part.stack].frames) st.push_back(frame_of(f));
    }
    auto& [samples, weights] = per_device[part.device];
    if (samples.is_null()) samples = json::array(), weights = json::array();
    samples.push_back(st);
    weights.push_back(part.count);
    totals[part.device] += part.count;
  }
  json profiles = json::array();
  for (auto& [device, sw] : per_device) {
    std::string name = devices ? "GPU " + std::to_string(device) : "GPU samples";
    if (!data.process.empty()) name += " (" + data.process + ")";
    profiles.push_back({{"type", "sampled"},
                        {"name", name},
                        {"unit", "none"},
                        {"startValue", 0},
                        {"endValue", totals[device]},
                        {"samples", std::move(sw.first)},
                        {"weights", std::move(sw.second)}});
  }
  json doc{{"$schema", "https://www.speedscope.app/file-format-schema.json"},
           {"shared", {{"frames", std::move(frames)}}},
           {"profiles", std::move(profiles)},
           {"name", data.title.empty() ? std::string("aiflame") : data.title},
           {"activeProfileIndex", 0},
           {"exporter", "aiflame"}};
  // Invalid UTF-8 in a name becomes U+FFFD instead of an exception.
  out << doc.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace aiflame
