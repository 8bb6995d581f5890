#include "attribute/frame_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "attribute/process_row.h"
#include "symbolize/demangle.h"

namespace aiflame {

bool is_interpreter_module(const std::string& m) {
  return m.rfind("python", 0) == 0 || m.rfind("libpython", 0) == 0;
}

FrameKind classify_module(const std::string& m) {
  // NVIDIA's runtime and math libraries, the C/C++ runtimes and the loader: "the driver/runtime" layer.
  static const char* runtime_prefixes[] = {"libcuda.", "libcudart", "libcupti", "libcublas", "libcudnn", "libnccl",
                                           "libcufft", "libcurand", "libcusparse", "libcusolver", "libnvrtc",
                                           "libnvJitLink", "libc.so", "libc-", "libpthread", "ld-linux", "libstdc++",
                                           "libgcc_s", "libdl.", "libaiflame_cupti"};
  for (const char* pre : runtime_prefixes)
    if (m.rfind(pre, 0) == 0) return FrameKind::Runtime;
  if (is_interpreter_module(m)) return FrameKind::Runtime;
  return FrameKind::Native;
}

std::string pc_frame_name(uint64_t offset, const std::string& mnemonic) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(offset));
  return mnemonic.empty() ? std::string(buf) : mnemonic + " " + buf;
}

std::optional<StallLeaves> parse_stall_leaves(const std::string& s) {
  if (s == "all") return StallLeaves::All;
  if (s == "issued") return StallLeaves::Issued;
  if (s == "not-issued") return StallLeaves::NotIssued;
  if (s == "none") return StallLeaves::None;
  return std::nullopt;
}

const std::vector<Frame>& FrameBuilder::instruction_frames(const AttributedSample& a) {
  GpuPc pc{a.cubin_crc, a.function, a.pc_offset};
  auto it = instruction_cache_.find(pc);
  if (it != instruction_cache_.end()) return it->second;
  if (!opt_.gpu && !own_gpu_) own_gpu_ = std::make_unique<GpuSymbolizer>(p_);
  GpuSymbolizer& gpu = opt_.gpu ? *opt_.gpu : *own_gpu_;
  std::vector<Frame> frames;
  // kernel -> its line -> inlined function -> its line ... -> instruction.
  const auto& lines = gpu.lines(pc);
  for (size_t i = 0; i < lines.size(); i++) {
    if (i > 0) frames.push_back({kernel_frame_name(lines[i].function), FrameKind::GpuSource});
    frames.push_back({basename_of(lines[i].file) + ":" + std::to_string(lines[i].line), FrameKind::GpuSource});
  }
  has_lines_[pc] = !lines.empty();
  frames.push_back({pc_frame_name(a.pc_offset, gpu.mnemonic(pc)), FrameKind::GpuInstruction});
  return instruction_cache_.emplace(pc, std::move(frames)).first->second;
}

std::string short_stall_name(const std::string& name) {
  static const std::string prefixes[] = {"smsp__pcsamp_warps_issue_stalled_", "smsp__pcsamp_"};
  for (const auto& pre : prefixes)
    if (name.rfind(pre, 0) == 0) return name.substr(pre.size());
  return name;
}

std::string program_name(const Profile& p) {
  if (!p.process || p.process->command.empty()) return "[process]";
  const std::string& cmd = p.process->command;
  return basename_of(cmd.substr(0, cmd.find(' ')));
}

std::string FrameBuilder::process_name() const { return program_name(p_); }

const std::vector<Frame>& FrameBuilder::native_frames(uint64_t address) {
  auto it = native_cache_.find(address);
  if (it != native_cache_.end()) return it->second;
  NativeSymbol s;
  auto rec = p_.symbols.find(address);
  if (rec != p_.symbols.end() && !rec->second.function.empty()) {
    s.function = rec->second.function;
    s.levels = rec->second.levels;
    const ModuleRecord* m = sym_.module_of(address - 1);
    if (m) s.module = basename_of(m->path);
  } else {
    s = sym_.lookup(address);
  }
  FrameKind kind = classify_module(s.module);
  // The CUDA runtime linked statically into a program (nvcc's default) is still the runtime.
  if (s.function.rfind("cuda", 0) == 0 || s.function.rfind("libcudart_static", 0) == 0 ||
      s.function.rfind("__cudart", 0) == 0)
    kind = FrameKind::Runtime;
  auto name_of = [&](const std::string& fn) { return opt_.full_names ? fn : short_function_name(fn); };
  std::vector<Frame> frames;
  if (s.function.empty()) {
    frames.push_back({unknown_frame_name(s), kind});
  } else if (s.levels.empty()) {
    frames.push_back({name_of(s.function), kind});
  } else {
    // Inlined functions are frames of their own, as perf shows them; --lines adds where each is.
    for (const SourceFrame& l : s.levels) {
      std::string name = name_of(l.function.empty() ? "[inlined]" : l.function);
      if (opt_.lines && l.line) name += " (" + l.file + ":" + std::to_string(l.line) + ")";
      frames.push_back({std::move(name), kind});
    }
  }
  return native_cache_.emplace(address, std::move(frames)).first->second;
}

static std::string python_file_name(const std::string& path) {
  std::string base = basename_of(path);
  if (base == "__init__.py") {
    auto slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      auto prev = path.rfind('/', slash - 1);
      return path.substr(prev == std::string::npos ? 0 : prev + 1);
    }
  }
  return base;
}

const std::vector<Frame>& FrameBuilder::cpu_frames(uint32_t stack_id) {
  auto it = cache_.find(stack_id);
  if (it != cache_.end()) return it->second;
  std::vector<Frame> frames;  // root first
  if (LaunchIndex::composite(stack_id)) {
    // A graph replay: the replay's stack, the graph, then the stack that created the kernel's node.
    auto [replay, node] = launches_.parts(stack_id);
    frames = cpu_frames(replay);
    frames.push_back({"[cuda graph]", FrameKind::Runtime});
    // The root frames both stacks share (_start, main...) are shown once, above the graph frame.
    const auto& created = cpu_frames(node);
    size_t common = 0;
    while (common < created.size() && common + 1 < frames.size() && created[common] == frames[common]) common++;
    frames.insert(frames.end(), created.begin() + static_cast<std::ptrdiff_t>(common), created.end());
    return cache_.emplace(stack_id, std::move(frames)).first->second;
  }
  auto st = p_.stacks.find(stack_id);
  if (st != p_.stacks.end()) {
    const StackRecord& s = st->second;
    // Native frames, leaf first (each address root first within: its function, then what was
    // inlined into it), symbolized once.
    std::vector<const std::vector<Frame>*> native;
    std::vector<bool> interp;
    for (uint64_t a : s.native) {
      native.push_back(&native_frames(a));
      const ModuleRecord* m = sym_.module_of(a - 1);
      interp.push_back(m && is_interpreter_module(basename_of(m->path)));
    }
    // Python replaces the interpreter's part of the native stack: keep the native frames on the leaf
    // side of the leaf-most interpreter frame (the extension code the Python code called into).
    size_t native_keep = native.size();
    bool have_python = opt_.python && !s.python.empty();
    if (have_python) {
      for (size_t i = 0; i < native.size(); i++)
        if (interp[i]) { native_keep = i; break; }
      for (size_t i = s.python.size(); i-- > 0;) {
        const PyFrame& pf = s.python[i];
        std::string name = p_.str(pf.function) + " (" + python_file_name(p_.str(pf.file)) + ":" +
                           std::to_string(pf.line) + ")";
        frames.push_back({std::move(name), FrameKind::Python});
      }
    }
    if (opt_.native)
      for (size_t i = native_keep; i-- > 0;) frames.insert(frames.end(), native[i]->begin(), native[i]->end());
    if (opt_.max_depth && frames.size() > opt_.max_depth) frames.resize(opt_.max_depth);
  }
  return cache_.emplace(stack_id, std::move(frames)).first->second;
}

std::vector<Frame> FrameBuilder::root_frames(uint32_t device) const {
  int32_t rank = p_.process ? p_.process->rank : -1;
  switch (opt_.group_by) {
    case GroupBy::None: return {};
    case GroupBy::Device: return {{"GPU " + std::to_string(device), FrameKind::Process}};
    case GroupBy::Rank:
      if (rank >= 0) return {{"rank " + std::to_string(rank), FrameKind::Process}};
      [[fallthrough]];  // not a distributed run: by process
    case GroupBy::Process: break;
  }
  // iaprof's layout: the program, then its pid, so that several processes merge into one picture.
  return {{process_name(), FrameKind::Process}, {p_.process ? std::to_string(p_.process->pid) : "?", FrameKind::Process}};
}

FlameData FrameBuilder::build(const AttributionResult& res) {
  // Sum fractional weights per distinct frame list, then round with the largest-remainder method so
  // the total stays exactly the number of samples.
  using Key = std::vector<std::pair<std::string, FrameKind>>;
  std::map<Key, double> acc;
  double gpu_weight = 0, no_line_weight = 0;
  std::unordered_map<uint32_t, std::string> kernel_names;
  auto kernel_name = [&](uint32_t fn) -> const std::string& {
    auto kn = kernel_names.find(fn);
    if (kn == kernel_names.end()) kn = kernel_names.emplace(fn, kernel_frame_name(p_.str(fn))).first;
    return kn->second;
  };
  std::string proc = process_name();
  std::map<uint32_t, std::vector<Frame>> roots;  // by device
  auto roots_of = [&](uint32_t device) -> const std::vector<Frame>& {
    auto it = roots.find(device);
    if (it == roots.end()) it = roots.emplace(device, root_frames(device)).first;
    return it->second;
  };
  // One sample may feed two stacks: with and without its stall reason leaf (see StallLeaves).
  struct Part { const Key* key; double weight; size_t sample; };
  std::vector<Part> parts;
  parts.reserve(res.samples.size());
  for (size_t i = 0; i < res.samples.size(); i++) {
    const auto& a = res.samples[i];
    Key key;
    for (const auto& f : roots_of(a.device)) key.emplace_back(f.name, f.kind);
    if (a.stack_id == 0) {
      key.emplace_back("[unattributed]", FrameKind::Unattributed);
    } else {
      for (const auto& f : cpu_frames(a.stack_id)) key.emplace_back(f.name, f.kind);
    }
    key.emplace_back("-", FrameKind::Separator);
    key.emplace_back(kernel_name(a.function), FrameKind::GpuKernel);
    for (const auto& f : instruction_frames(a)) key.emplace_back(f.name, f.kind);
    gpu_weight += a.weight;
    if (!has_lines_[{a.cubin_crc, a.function, a.pc_offset}]) no_line_weight += a.weight;
    double not_issued = std::min(a.not_issued, a.weight);
    double leaf = opt_.stalls == StallLeaves::All        ? a.weight
                  : opt_.stalls == StallLeaves::Issued    ? a.weight - not_issued
                  : opt_.stalls == StallLeaves::NotIssued ? not_issued
                                                          : 0.0;
    if (a.weight - leaf > 0) {
      auto it = acc.try_emplace(key, 0.0).first;
      it->second += a.weight - leaf;
      parts.push_back({&it->first, a.weight - leaf, i});
    }
    if (leaf > 0 || opt_.stalls == StallLeaves::All) {
      key.emplace_back(short_stall_name(p_.stall_reason_name(a.device, a.stall_reason)), FrameKind::Stall);
      auto it = acc.try_emplace(std::move(key), 0.0).first;
      it->second += leaf;
      parts.push_back({&it->first, leaf, i});
    }
  }
  gpu_stats_.samples += static_cast<uint64_t>(std::llround(gpu_weight));
  gpu_stats_.samples_without_lines += static_cast<uint64_t>(std::llround(no_line_weight));
  double total = 0;
  for (const auto& [k, w] : acc) total += w;
  uint64_t target = static_cast<uint64_t>(std::llround(total));
  FlameData out;
  std::map<const Key*, uint32_t> index_of;
  std::vector<std::pair<double, size_t>> remainders;
  uint64_t sum = 0;
  for (const auto& [k, w] : acc) {
    WeightedStack ws;
    for (const auto& [name, kind] : k) ws.frames.push_back({name, kind});
    ws.count = static_cast<uint64_t>(std::floor(w));
    ws.process = 0;
    sum += ws.count;
    remainders.emplace_back(w - std::floor(w), out.stacks.size());
    index_of[&k] = static_cast<uint32_t>(out.stacks.size());
    out.stacks.push_back(std::move(ws));
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t i = 0; sum < target && i < remainders.size(); i++, sum++) out.stacks[remainders[i].second].count++;

  // Times and kernels, relative to the start of the profile.
  out.processes = {process_row(p_, res.stats, "")};
  out.process = proc;
  out.pid = p_.process ? p_.process->pid : 0;
  uint64_t start = p_.process ? p_.process->start_timestamp : 0, end = start;
  for (const auto& k : p_.kernels) {
    if (!start || k.start < start) start = k.start;
    end = std::max(end, k.end);
  }
  for (const auto& b : p_.batches) end = std::max(end, b.timestamp);
  out.start_ns = start;
  out.duration_ns = end > start ? end - start : 0;
  // The time series, at 1 ms resolution: finer than any drain interval, coarse enough to stay small.
  constexpr uint64_t kResolution = 1000000;
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, double> timed;
  for (const Part& part : parts) {
    const auto& a = res.samples[part.sample];
    uint64_t t = a.time_ns > start ? (a.time_ns - start) / kResolution * kResolution : 0;
    timed[{index_of[part.key], a.device, t}] += part.weight;
  }
  for (const auto& [k, w] : timed) out.timeline.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), w});
  std::map<std::pair<uint32_t, uint32_t>, int32_t> cpu_index;  // (stack, device)
  for (const auto& k : p_.kernels) {
    KernelSpan span;
    span.name = kernel_name(k.name);
    span.device = k.device;
    span.stream = k.stream;
    span.start_ns = k.start > start ? k.start - start : 0;
    span.end_ns = k.end > start ? k.end - start : 0;
    span.correlation_id = k.correlation_id;
    span.process = 0;
    if (uint32_t st = launches_.stack_of(k)) {
      auto [ci, fresh] = cpu_index.try_emplace({st, k.device}, static_cast<int32_t>(out.cpu_stacks.size()));
      if (fresh) {
        std::vector<Frame> frames = roots_of(k.device);
        for (const auto& f : cpu_frames(st)) frames.push_back(f);
        out.cpu_stacks.push_back(std::move(frames));
      }
      span.cpu_stack = ci->second;
    }
    out.kernels.push_back(std::move(span));
  }
  // Zero-count stacks stay (the timeline refers to them by index); writers skip them.
  return out;
}

}  // namespace aiflame
