#include "flame/fold_runs.h"

#include <string>
#include <unordered_map>

namespace aiflame {

std::string_view unsymbolized_library(std::string_view name) {
  if (name.size() < 6 || name.front() != '[' || name.back() != ']') return {};
  size_t plus = name.rfind("+0x");
  if (plus == std::string_view::npos || plus < 2) return {};
  for (size_t i = plus + 3; i + 1 < name.size(); i++) {
    char c = name[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return {};
  }
  if (plus + 4 > name.size() - 1) return {};  // no digits
  return name.substr(1, plus - 1);
}

namespace {

bool cpu_code(FrameKind k) { return k == FrameKind::Native || k == FrameKind::Runtime; }

}  // namespace

std::vector<Frame> fold_library_runs(const std::vector<Frame>& frames) {
  std::vector<Frame> out;
  out.reserve(frames.size());
  for (size_t i = 0; i < frames.size();) {
    std::string_view lib = cpu_code(frames[i].kind) ? unsymbolized_library(frames[i].name) : std::string_view{};
    size_t j = i + 1;
    if (!lib.empty())
      while (j < frames.size() && frames[j].kind == frames[i].kind && unsymbolized_library(frames[j].name) == lib) j++;
    if (!lib.empty() && j - i >= kMinFoldedRun) {
      out.push_back({"[" + std::string(lib) + ": " + std::to_string(j - i) + " frames]", frames[i].kind});
    } else {
      out.insert(out.end(), frames.begin() + static_cast<std::ptrdiff_t>(i), frames.begin() + static_cast<std::ptrdiff_t>(j));
    }
    i = j;
  }
  return out;
}

void fold_library_runs(FlameData& data) {
  // Stacks share their runs (frame_list.h): each run is folded once and the result shared again.
  std::unordered_map<const std::vector<Frame>*, FrameList::Run> done;
  auto fold = [&](const std::vector<Frame>* run) -> FrameList::Run {
    if (!run) return nullptr;
    auto [it, fresh] = done.try_emplace(run);
    if (fresh) it->second = std::make_shared<const std::vector<Frame>>(fold_library_runs(*run));
    return it->second;
  };
  for (auto& s : data.stacks) {
    if (!s.frames.head_run() && !s.frames.tail_run()) continue;
    s.frames = FrameList(fold(s.frames.head_run()), fold(s.frames.tail_run()));
  }
  for (auto& c : data.cpu_stacks) c = fold_library_runs(c);
}

}  // namespace aiflame
