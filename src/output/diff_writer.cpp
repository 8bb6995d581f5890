#include "output/diff_writer.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "output/folded_writer.h"
#include "output/svg_writer.h"

namespace aiflame {

namespace {

// aiflame's instruction frame "IMAD 0x70": an upper-case SASS mnemonic, one space, the offset.
bool is_named_instruction(std::string_view name, size_t* offset_at) {
  size_t space = name.find(' ');
  if (space == std::string_view::npos || space == 0 || name.substr(space + 1, 2) != "0x") return false;
  for (char c : name.substr(0, space))
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_')) return false;
  for (char c : name.substr(space + 3))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  *offset_at = space + 1;
  return true;
}

// What stacks are matched by: their folded line without annotations, aiflame's instruction frames
// by their offset alone. A profile symbolized where no nvdisasm ran names no mnemonics ("0x70" for
// "IMAD 0x70"), and the same instruction of the same kernel must still match.
std::string match_key(const FrameList& frames, bool* named) {
  std::string key;
  *named = false;
  for (size_t i = 0; i < frames.size(); i++) {
    if (i) key += ';';
    std::string name = folded_frame_name(frames[i].name);
    size_t at = 0;
    if (frames[i].kind == FrameKind::GpuInstruction && is_named_instruction(name, &at)) {
      *named = true;
      name.erase(0, at);
    }
    key += name;
  }
  return key;
}

}  // namespace

DiffData make_diff(const FlameData& before, const FlameData& after) {
  DiffData d;
  d.before_total = before.total(), d.after_total = after.total();
  const std::string& name = after.title.empty() ? after.process : after.title;
  d.title = "Differential flame graph" + (name.empty() ? std::string() : ": " + name);
  std::map<std::string, DiffStack> by_line;
  std::map<std::string, bool> named;  // whether the frames shown name their instructions
  for (const auto& s : before.stacks) {
    if (!s.count) continue;
    bool has_names = false;
    std::string key = match_key(s.frames, &has_names);
    auto& ds = by_line[key];
    if (ds.frames.empty() || (has_names && !named[key])) ds.frames = s.frames, named[key] = has_names;
    ds.before += s.count;
  }
  for (const auto& s : after.stacks) {
    if (!s.count) continue;
    bool has_names = false;
    std::string key = match_key(s.frames, &has_names);
    auto& ds = by_line[key];
    // AFTER's kinds win, unless only BEFORE names the instructions.
    if (ds.frames.empty() || (!ds.after && (has_names || !named[key])))
      ds.frames = s.frames, named[key] = has_names;
    ds.after += s.count;
  }
  const double scale = d.before_total ? static_cast<double>(d.after_total) / static_cast<double>(d.before_total) : 0;
  for (auto& [line, ds] : by_line) {
    ds.before_scaled = static_cast<double>(ds.before) * scale;
    d.stacks.push_back(std::move(ds));
  }
  return d;
}

DiffShare diff_share(const DiffData& d) {
  uint64_t before = 0, after = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_kernel;  // stack up to its kernel -> counts
  for (const auto& s : d.stacks) {
    if (s.before && s.after) before += s.before, after += s.after;
    std::string key;
    for (const auto& f : s.frames) {
      key += f.name.str() + ';';
      if (f.kind == FrameKind::GpuKernel) break;
    }
    auto& k = by_kernel[key];
    k.first += s.before, k.second += s.after;
  }
  uint64_t kernels_before = 0, kernels_after = 0;
  for (const auto& [key, k] : by_kernel)
    if (k.first && k.second) kernels_before += k.first, kernels_after += k.second;
  auto share = [](uint64_t part, uint64_t total) {
    return total ? static_cast<double>(part) / static_cast<double>(total) : 0.0;
  };
  return {share(before, d.before_total), share(after, d.after_total), share(kernels_before, d.before_total),
          share(kernels_after, d.after_total)};
}

void write_diff_folded(const DiffData& d, std::ostream& out, bool plain) {
  for (const auto& s : d.stacks)
    out << folded_stack(s.frames, plain) << ' ' << static_cast<uint64_t>(std::llround(s.before_scaled)) << ' ' << s.after << '\n';
}

void write_diff_svg(const DiffData& d, std::ostream& out, int width) {
  // The report's own SVG (zoom, search, details line), its stacks AFTER's, coloured by the change.
  FlameData picture;
  picture.title = d.title;
  picture.subtitle = "width: AFTER (" + std::to_string(d.after_total) + " samples); colour: change from BEFORE (" +
                     std::to_string(d.before_total) + " samples, scaled); red grew, blue shrank";
  SvgDiff diff;
  for (const auto& s : d.stacks) {
    picture.stacks.push_back({s.frames, s.after, kNoProcess});
    diff.before.push_back(s.before);
    diff.before_scaled.push_back(s.before_scaled);
  }
  SvgOptions options;
  options.width = width;
  write_svg(picture, options, &diff, out);
}

}  // namespace aiflame
