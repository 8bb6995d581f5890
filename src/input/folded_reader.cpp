#include "input/folded_reader.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <functional>
#include <string>
#include <unordered_set>

#include "input/text_lines.h"

namespace aiflame {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_hex_offset(std::string_view s) {
  if (s.size() < 3 || !starts_with(s, "0x")) return false;
  for (char c : s.substr(2))
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "dir/file.cl", "kernel.cu:42", "[unknown file]": a GPU source frame rather than a kernel name.
bool looks_like_file(std::string_view s) {
  if (s == "[unknown file]" || s.find('/') != std::string_view::npos || s.find('\\') != std::string_view::npos)
    return true;
  while (!s.empty() && std::isdigit(static_cast<unsigned char>(s.back()))) {  // strip ":LINE" parts
    size_t colon = s.rfind(':');
    if (colon == std::string_view::npos || !all_digits(s.substr(colon + 1))) break;
    s = s.substr(0, colon);
  }
  size_t dot = s.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || s.size() - dot < 2 || s.size() - dot > 6) return false;
  if (!std::isalpha(static_cast<unsigned char>(s[dot + 1]))) return false;
  for (char c : s.substr(dot + 1))
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+') return false;
  return true;
}

// "func (file.py:12)", the name aiflame gives Python frames.
bool looks_like_python(std::string_view s) {
  if (!ends_with(s, ")")) return false;
  size_t open = s.rfind(" (");
  if (open == std::string_view::npos) return false;
  std::string_view loc = s.substr(open + 2, s.size() - open - 3);
  size_t colon = loc.rfind(':');
  return colon != std::string_view::npos && ends_with(loc.substr(0, colon), ".py") && all_digits(loc.substr(colon + 1));
}

bool looks_like_runtime(std::string_view s) {
  for (std::string_view p : {"cuda", "cu", "_start", "__libc_", "start_thread", "clone", "_Py", "Py", "lib", "["}) {
    if (!starts_with(s, p)) continue;
    if (p == "cu" || p == "Py") return s.size() > p.size() && std::isupper(static_cast<unsigned char>(s[p.size()]));
    return true;
  }
  return false;
}

FrameKind cpu_frame_kind(std::string_view name) {
  if (starts_with(name, "py::")) return FrameKind::Python;
  if (ends_with(name, "_[k]")) return FrameKind::Runtime;  // no kernel-mode kind yet
  if (name == "[unattributed]") return FrameKind::Unattributed;
  if (looks_like_python(name)) return FrameKind::Python;
  return looks_like_runtime(name) ? FrameKind::Runtime : FrameKind::Native;
}

}  // namespace

Frame classify_cpu_frame(std::string_view name) {
  FrameKind kind = cpu_frame_kind(name);
  if (kind == FrameKind::Python && starts_with(name, "py::")) name.remove_prefix(4);
  return {std::string(name), kind};
}

std::vector<std::string_view> trim_cpu_names(const std::vector<std::string_view>& names, const TextFrameOptions& opt) {
  size_t sep = names.size();
  for (size_t i = 1; i < names.size() && sep == names.size(); i++)
    if (names[i] == "-") sep = i;
  size_t process = names.empty() ? 0 : (names.size() > 1 && 1 < sep && all_digits(names[1])) ? 2 : 1;
  // A plain CPU profile (no "-") has no process frames of its own: all of its frames are CPU frames.
  if (sep == names.size()) process = 0;
  std::vector<std::string_view> out(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(std::min(process, sep)));
  size_t kept = 0;
  for (size_t i = out.size(); i < sep && !(opt.max_depth && kept >= opt.max_depth); i++) {
    FrameKind k = cpu_frame_kind(names[i]);
    if ((k == FrameKind::Python && !opt.python) || ((k == FrameKind::Native || k == FrameKind::Runtime) && !opt.native))
      continue;
    out.push_back(names[i]);
    kept++;
  }
  out.insert(out.end(), names.begin() + static_cast<std::ptrdiff_t>(sep), names.end());
  if (out.empty()) out.push_back("[empty]");
  return out;
}

std::vector<Frame> classify_folded_frames(const std::vector<std::string_view>& names) {
  std::vector<Frame> out(names.size());
  size_t sep = names.size();
  for (size_t i = 1; i < names.size() && sep == names.size(); i++)
    if (names[i] == "-") sep = i;
  // The root is the program only where the stack is laid out as aiflame and iaprof write theirs: a GPU
  // part after "-", or a pid second. In any other file (`main;foo`, perf's `comm;...`) it is a frame
  // like the others: writers that turn the program into a label (pprof) would otherwise drop it.
  const bool program_first = sep < names.size() || (names.size() > 2 && all_digits(names[1]));
  for (size_t i = 0; i < names.size() && i <= sep; i++) {
    std::string_view n = names[i];
    if (i == sep) out[i] = {"-", FrameKind::Separator};
    else if (program_first && (i == 0 || (i == 1 && all_digits(n)))) out[i] = {std::string(n), FrameKind::Process};  // program, pid
    else out[i] = classify_cpu_frame(n);
  }
  if (sep == names.size()) return out;
  // The GPU part: strip the annotations, then give kinds by place. iaprof writes
  // file_[G];kernel_[G];inlined_[G];insn_[g];stall_[g];0xoff_[g]; aiflame kernel;0xoff;stall.
  std::vector<std::string_view> gpu;
  std::vector<int> mark;  // 'G', 'g' or 0 (plain)
  for (size_t i = sep + 1; i < names.size(); i++) {
    std::string_view n = names[i];
    int m = 0;
    if (ends_with(n, "_[G]")) m = 'G';
    else if (ends_with(n, "_[g]")) m = 'g';
    if (m) n.remove_suffix(4);
    gpu.push_back(n);
    mark.push_back(m);
  }
  size_t kernel = gpu.size(), stall = gpu.size();
  bool annotated = false;
  for (int m : mark) annotated |= m != 0;
  for (size_t j = 0; j < gpu.size(); j++) {
    bool code_side = annotated ? mark[j] == 'G' : true;  // in plain files any frame may be the kernel
    if (code_side && kernel == gpu.size() && !looks_like_file(gpu[j]) && !(annotated ? false : is_hex_offset(gpu[j])))
      kernel = j;
  }
  if (kernel == gpu.size() && annotated)  // every "_[G]" frame looks like a file: the last one is the kernel
    for (size_t j = gpu.size(); j-- > 0;)
      if (mark[j] == 'G') { kernel = j; break; }
  if (kernel == gpu.size() && !annotated)
    for (size_t j = 0; j < gpu.size(); j++)
      if (!is_hex_offset(gpu[j])) { kernel = j; break; }
  for (size_t j = gpu.size(); j-- > 0;)
    if (j != kernel && !is_hex_offset(gpu[j]) && (annotated ? mark[j] == 'g' : j > kernel)) { stall = j; break; }
  for (size_t j = 0; j < gpu.size(); j++) {
    FrameKind k;
    if (j == kernel) k = FrameKind::GpuKernel;
    else if (j == stall) k = FrameKind::Stall;
    else if (annotated ? mark[j] == 'G' : j < kernel) k = FrameKind::GpuSource;
    else if (annotated && mark[j] == 0) k = classify_cpu_frame(gpu[j]).kind;  // unannotated frame in an annotated stack
    else k = FrameKind::GpuInstruction;
    out[sep + 1 + j] = {std::string(gpu[j]), k};
  }
  return out;
}

// The stacks already seen, as indices into the picture's stacks, hashed and compared by their frames
// (interned names: a pointer and a kind each). A stack is looked up by adding it at the end first.
struct FoldedParser::Index {
  struct Hash {
    const std::vector<WeightedStack>* stacks;
    size_t operator()(uint32_t i) const {
      size_t h = 0;
      for (const Frame& f : (*stacks)[i].frames)
        h = (h ^ (std::hash<const void*>()(&f.name.str()) + static_cast<size_t>(f.kind))) * 0x100000001b3ull;
      return h;
    }
  };
  struct Eq {
    const std::vector<WeightedStack>* stacks;
    bool operator()(uint32_t a, uint32_t b) const { return (*stacks)[a].frames == (*stacks)[b].frames; }
  };
  explicit Index(const std::vector<WeightedStack>* s) : seen(64, Hash{s}, Eq{s}) {}
  std::unordered_set<uint32_t, Hash, Eq> seen;
};

FoldedParser::FoldedParser(TextFrameOptions opt) : index_(std::make_unique<Index>(&d_.stacks)), opt_(opt) {}
FoldedParser::~FoldedParser() = default;

bool FoldedParser::add_line(std::string_view line, size_t number) {
  if (line.empty() || line[0] == '#') return true;
  size_t blank = line.find_last_of(" \t");
  if (blank == std::string_view::npos || blank == 0) {
    error_ = "line " + std::to_string(number) + ": no count after the stack (folded stacks end in ' COUNT')";
    return false;
  }
  uint64_t count = 0;
  if (!parse_u64(line.substr(blank + 1), count)) {
    error_ = "line " + std::to_string(number) + ": the count '" + std::string(line.substr(blank + 1, 40)) +
             "' is not a whole number";
    return false;
  }
  if (total_ + count < total_) {
    error_ = "line " + std::to_string(number) + ": the counts overflow 64 bits";
    return false;
  }
  if (d_.stacks.size() >= UINT32_MAX) {
    error_ = "line " + std::to_string(number) + ": more than 4 billion distinct stacks";
    return false;
  }
  total_ += count;
  std::string_view stack = line.substr(0, blank);
  while (!stack.empty() && (stack.back() == ' ' || stack.back() == '\t')) stack.remove_suffix(1);
  // The same stack as the line before (sorted or repeated input): no need to classify it again.
  if (!d_.stacks.empty() && stack == last_stack_) {
    d_.stacks[last_index_].count += count;
    return true;
  }
  std::vector<std::string_view> names;
  for (size_t p = 0;;) {
    size_t q = stack.find(';', p);
    std::string_view n = stack.substr(p, q == std::string_view::npos ? std::string_view::npos : q - p);
    names.push_back(n.empty() ? std::string_view("[empty]") : n);
    if (q == std::string_view::npos) break;
    p = q + 1;
  }
  if (opt_.trims()) names = trim_cpu_names(names, opt_);
  d_.stacks.push_back({classify_folded_frames(names), count});
  auto [it, fresh] = index_->seen.insert(static_cast<uint32_t>(d_.stacks.size() - 1));
  if (!fresh) {
    d_.stacks.pop_back();
    d_.stacks[*it].count += count;
  }
  last_stack_.assign(stack);
  last_index_ = *it;
  return true;
}

Result<FlameData> FoldedParser::finish() {
  if (!error_.empty()) return Error{error_};
  index_->seen.clear();
  if (d_.stacks.empty()) return Error{"no stacks in the folded input"};
  const auto& first = d_.stacks.front().frames;
  if (!first.empty() && first[0].kind == FrameKind::Process) d_.process = first[0].name;
  if (first.size() > 1 && first[1].kind == FrameKind::Process && all_digits(first[1].name) && first[1].name.size() < 10)
    d_.pid = static_cast<uint32_t>(std::stoul(first[1].name));
  return std::move(d_);
}

Result<FlameData> parse_folded(std::string_view text) {
  FoldedParser parser;
  return parse_lines(parser, text);
}

}  // namespace aiflame
