#include "attribute/frame_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "attribute/frame_naming.h"
#include "attribute/process_row.h"
#include "attribute/user_code.h"
#include "symbolize/demangle.h"

namespace aiflame {

const std::vector<Frame>& FrameBuilder::instruction_frames(const AttributedSample& a) {
  GpuPc pc{a.code_object_id, a.function, a.pc_offset};
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
  // Where they are, for pprof's mappings: the call instruction in its module, as recorded.
  if (const ModuleRecord* m = sym_.module_of(address - 1)) {
    auto [mi, fresh] = module_index_.try_emplace(m->id, static_cast<uint32_t>(modules_.size()));
    if (fresh) modules_.push_back({m->path, m->build_id, m->lo, m->hi, m->lo - std::min(m->lo, m->load_bias)});
    for (const Frame& f : frames) origins_.try_emplace(f.name, FrameOrigin{mi->second, address - 1, {}});
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
  if (stack_id & kBackwardStackBit) {
    auto bw = p_.backward_stacks.find(stack_id);
    if (bw != p_.backward_stacks.end()) frames = backward_frames(bw->second);
    return cache_.emplace(stack_id, std::move(frames)).first->second;
  }
  auto st = p_.stacks.find(stack_id);
  if (st != p_.stacks.end()) frames = stack_frames(st->second, false);
  return cache_.emplace(stack_id, std::move(frames)).first->second;
}

std::vector<Frame> FrameBuilder::stack_frames(const StackRecord& s, bool engine_thread) {
  std::vector<Frame> frames;  // root first
  // Native frames, leaf first (each address root first within: its function, then what was
  // inlined into it), symbolized once.
  std::vector<const std::vector<Frame>*> native;
  std::vector<bool> interp;
  for (uint64_t a : s.native) {
    native.push_back(&native_frames(a));
    const ModuleRecord* m = sym_.module_of(a - 1);
    interp.push_back(m && is_interpreter_module(basename_of(m->path)));
    if (m && is_user_native_module(m->path, process_name()))
      for (const Frame& f : *native.back())
        if (!is_cuda_runtime_function(f.name)) user_frames_.insert(f.name);
  }
  // Python replaces the interpreter's part of the native stack: keep the native frames on the leaf
  // side of the leaf-most interpreter frame (the extension code the Python code called into). On an
  // autograd engine thread running a Python hook, the frames on the root side of the root-most
  // interpreter frame are the engine's (thread_main, evaluate_function, the hook's caller): they
  // come first, as called (issue 23 item 3).
  size_t native_keep = native.size(), outer = native.size();
  bool have_python = opt_.python && !s.python.empty();
  if (have_python) {
    for (size_t i = 0; i < native.size(); i++)
      if (interp[i]) { native_keep = i; break; }
    if (engine_thread)
      for (size_t i = native.size(); i-- > native_keep;)
        if (interp[i]) { outer = i + 1; break; }
    if (opt_.native)
      for (size_t i = native.size(); i-- > outer;) frames.insert(frames.end(), native[i]->begin(), native[i]->end());
    for (size_t i = s.python.size(); i-- > 0;) frames.push_back(python_frame(s.python[i]));
  }
  if (opt_.native)
    for (size_t i = native_keep; i-- > 0;) frames.insert(frames.end(), native[i]->begin(), native[i]->end());
  if (opt_.max_depth && frames.size() > opt_.max_depth) frames.resize(opt_.max_depth);
  return frames;
}

Frame FrameBuilder::python_frame(const PyFrame& pf) const {
  std::string name = p_.str(pf.function) + " (" + python_file_name(p_.str(pf.file)) + ":" + std::to_string(pf.line) + ")";
  // The user's own frames (issue #26), forward and backward alike (issue #23).
  if (is_user_python_file(p_.str(pf.file))) user_frames_.insert(name);
  Frame f{std::move(name), FrameKind::Python};
  origins_.try_emplace(f.name, FrameOrigin{UINT32_MAX, 0, p_.str(pf.file)});  // the full path, for pprof -list
  return f;
}

// A kernel launched by autograd's engine: the Python stack that called backward(), "[backward]", the
// Python stack of the forward launch that created the autograd node (from the last root frame it
// shares with the caller: <module>, main... are shown once), then the engine thread's own frames.
std::vector<Frame> FrameBuilder::backward_frames(const BackwardStackRecord& b) {
  std::vector<Frame> frames;
  if (opt_.python) {
    auto caller = p_.backward_callers.find(b.caller_id);
    if (caller != p_.backward_callers.end())
      for (size_t i = caller->second.python.size(); i-- > 0;) frames.push_back(python_frame(caller->second.python[i]));
  }
  size_t caller_frames = frames.size();
  frames.push_back({"[backward]", FrameKind::Runtime});
  auto fwd = p_.stacks.find(b.forward_stack_id);
  if (opt_.python && fwd != p_.stacks.end()) {
    const auto& py = fwd->second.python;
    size_t common = 0;
    while (common < py.size() && common < caller_frames &&
           python_frame(py[py.size() - 1 - common]) == frames[common])
      common++;
    // The last shared frame stays: the call that ran both the forward code and backward() (often one
    // line, `loss = f(model(x)); loss.backward()`) heads the forward part.
    if (common > 0) common--;
    for (size_t i = py.size() - common; i-- > 0;) frames.push_back(python_frame(py[i]));
  }
  // The engine thread's own frames; a Python hook it runs after the engine's native frames that called it.
  auto own = p_.stacks.find(b.stack_id);
  if (own != p_.stacks.end()) {
    std::vector<Frame> engine = stack_frames(own->second, true);
    frames.insert(frames.end(), engine.begin(), engine.end());
  }
  if (opt_.max_depth && frames.size() > opt_.max_depth) frames.resize(opt_.max_depth);
  return frames;
}

std::vector<Frame> FrameBuilder::root_frames(uint32_t device) const {
  int32_t rank = p_.process ? p_.process->rank : -1;
  switch (opt_.group_by) {
    case GroupBy::None: return {};
    case GroupBy::Device: return {{"GPU " + std::to_string(device), FrameKind::Process}};
    case GroupBy::Program: return {{process_name(), FrameKind::Process}};
    case GroupBy::Rank:
      if (rank >= 0) return {{"rank " + std::to_string(rank), FrameKind::Process}};
      [[fallthrough]];  // not a distributed run: by process
    case GroupBy::Process: break;
  }
  // iaprof's layout: the program, then its pid, so that several processes merge into one picture.
  return {{process_name(), FrameKind::Process}, {p_.process ? std::to_string(p_.process->pid) : "?", FrameKind::Process}};
}

}  // namespace aiflame
