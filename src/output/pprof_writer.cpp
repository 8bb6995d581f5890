#include "output/pprof_writer.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <ostream>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "output/device_split.h"
#include "output/profile.pb.h"
#include "util/utf8.h"

namespace aiflame {

namespace {

namespace pb = perftools::profiles;

struct Line {
  uint64_t function = 0;
  int64_t line = 0;
  bool operator<(const Line& o) const { return std::tie(function, line) < std::tie(o.function, o.line); }
};

// The profile's string, function and location tables, each entry added once.
class Builder {
 public:
  explicit Builder(pb::Profile& p) : p_(p) { str(""); }  // string 0 is always ""

  int64_t str(std::string_view s) {
    auto [it, fresh] = strings_.try_emplace(std::string(s), static_cast<int64_t>(strings_.size()));
    // proto3 strings are UTF-8: names from binaries may not be (libprotobuf logged an ERROR line).
    if (fresh) p_.add_string_table(is_valid_utf8(it->first) ? it->first : valid_utf8(it->first));
    return it->second;
  }
  // `name` is the name as a user reads it (demangled, "<module>", template arguments kept).
  // system_name stays unset: frames carry no mangled names, and pprof treats a function whose
  // system_name equals its name as not yet demangled and "demangles" it again, rewriting
  // "<module>" to "<unknown>" and dropping template arguments (go tool pprof, symbolizer.go).
  uint64_t function(std::string_view name, std::string_view file) {
    auto key = std::make_pair(str(name), str(file));
    auto [it, fresh] = functions_.try_emplace(key, functions_.size() + 1);
    if (fresh) {
      pb::Function* f = p_.add_function();
      f->set_id(it->second);
      f->set_name(key.first);
      f->set_filename(key.second);
    }
    return it->second;
  }
  // Lines innermost first, as profile.proto orders inlined frames. `mapping` is kProgramMapping or
  // 1 + kProgramMapping + an index into FlameData::modules.
  uint64_t location(uint64_t address, const std::vector<Line>& lines, uint64_t mapping = kProgramMapping) {
    auto [it, fresh] = locations_.try_emplace({address, mapping, lines}, locations_.size() + 1);
    if (fresh) {
      pb::Location* l = p_.add_location();
      l->set_id(it->second);
      l->set_mapping_id(mapping);
      l->set_address(address);
      if (mapping == kProgramMapping) max_address_ = std::max(max_address_, address);
      else modules_used_.insert(mapping - kProgramMapping - 1);
      for (const auto& ln : lines) {
        pb::Line* m = l->add_line();
        m->set_function_id(ln.function);
        if (ln.line > 0) m->set_line(ln.line);
      }
    }
    return it->second;
  }
  uint64_t max_address() const { return max_address_; }
  const std::set<uint64_t>& modules_used() const { return modules_used_; }
  static constexpr uint64_t kProgramMapping = 1;

 private:
  pb::Profile& p_;
  std::unordered_map<std::string, int64_t> strings_;
  std::map<std::pair<int64_t, int64_t>, uint64_t> functions_;
  std::map<std::tuple<uint64_t, uint64_t, std::vector<Line>>, uint64_t> locations_;
  std::set<uint64_t> modules_used_;  // indices into FlameData::modules
  uint64_t max_address_ = 0;
};

bool parse_hex(std::string_view s, uint64_t& v) {
  if (s.size() < 3 || s[0] != '0' || s[1] != 'x') return false;
  auto r = std::from_chars(s.data() + 2, s.data() + s.size(), v, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "name (file.py:12)" or "file.cu:12" -> name, file, line.
void split_location(std::string_view s, std::string_view& name, std::string_view& file, int64_t& line) {
  name = s, file = {}, line = 0;
  std::string_view loc = s;
  size_t open = s.rfind(" (");
  if (open != std::string_view::npos && s.back() == ')') loc = s.substr(open + 2, s.size() - open - 3);
  size_t colon = loc.rfind(':');
  if (colon == std::string_view::npos) return;
  int64_t n = 0;
  auto r = std::from_chars(loc.data() + colon + 1, loc.data() + loc.size(), n);
  if (r.ec != std::errc() || r.ptr != loc.data() + loc.size() || n <= 0) return;
  if (loc.data() != s.data()) name = s.substr(0, open);
  file = loc.substr(0, colon), line = n;
}

// What a stack's GPU part becomes: the kernel is the leaf Location (so that `-top` ranks kernels),
// the instruction, the innermost inlined device function and the stall reason are labels.
struct GpuPart {
  std::string instruction;  // "FFMA 0x1a0" (iaprof's mnemonic and offset frames joined)
  std::string inlined;      // "function (file:line)", the innermost inlined device function
};

// Location ids of one stack, leaf first.
std::vector<uint64_t> stack_locations(Builder& b, const FlameData& data, const FrameList& frames, GpuPart& gpu) {
  std::vector<uint64_t> root_first;
  int kernel = find_frame(frames, FrameKind::GpuKernel);
  std::string_view kernel_file;
  int64_t kernel_line = 0;
  uint64_t pc = 0;
  if (kernel >= 0) {
    // aiflame writes kernel;file:line[;inlined function;file:line]...: a bare "file:line" is the current
    // line of the function before it. Other producers write "function (file:line)" or a function alone.
    struct Level { std::string_view name, file; int64_t line; };
    std::vector<Level> levels;  // inlined functions, root first
    for (size_t i = kernel + 1; i < frames.size(); i++) {
      if (frames[i].kind == FrameKind::GpuSource) {
        std::string_view name, file;
        int64_t line;
        split_location(frames[i].name, name, file, line);
        bool bare_line = !file.empty() && name.size() == frames[i].name.size();
        if (!bare_line) levels.push_back({name, file, line});
        else if (levels.empty()) kernel_file = file, kernel_line = line;
        else levels.back().file = file, levels.back().line = line;
      } else if (frames[i].kind == FrameKind::GpuInstruction) {
        // "0x1a0" or "FFMA 0x1a0"; iaprof writes the mnemonic and the offset as two frames.
        std::string_view n = frames[i].name;
        if (!pc) parse_hex(n.substr(n.rfind(' ') == std::string_view::npos ? 0 : n.rfind(' ') + 1), pc);
        gpu.instruction += (gpu.instruction.empty() ? "" : " ") + std::string(n);
      }
    }
    if (!levels.empty()) {
      const Level& l = levels.back();
      gpu.inlined = std::string(l.name);
      if (!l.file.empty()) gpu.inlined += " (" + std::string(l.file) + ":" + std::to_string(l.line) + ")";
    }
    for (int i = kernel - 1; i >= 0 && frames[i].kind == FrameKind::GpuSource; i--) {
      std::string_view name;
      split_location(frames[i].name, name, kernel_file, kernel_line);
      if (kernel_file.empty()) kernel_file = frames[i].name;
      break;
    }
  }
  const FrameOrigin* pending = nullptr;  // the native frames of one address, as one Location's Lines
  std::vector<Line> pending_lines;       // root first
  auto flush = [&] {
    if (!pending) return;
    std::vector<Line> lines(pending_lines.rbegin(), pending_lines.rend());
    root_first.push_back(b.location(pending->address, lines, Builder::kProgramMapping + 1 + pending->module));
    pending = nullptr;
    pending_lines.clear();
  };
  for (size_t i = 0; i < frames.size(); i++) {
    const Frame& f = frames[i];
    if ((f.kind == FrameKind::Native || f.kind == FrameKind::Runtime) && !data.origins.empty()) {
      auto o = data.origins.find(f.name);
      if (o != data.origins.end() && o->second.module < data.modules.size()) {
        // Frames inlined at one address (recorded root first) are one Location, innermost Line first.
        if (pending && (pending->address != o->second.address || pending->module != o->second.module)) flush();
        pending = &o->second;
        pending_lines.push_back({b.function(f.name, {}), 0});
        continue;
      }
    }
    flush();
    switch (f.kind) {
      case FrameKind::Process:
      case FrameKind::Separator: continue;  // labels, not frames
      case FrameKind::GpuSource: continue;  // folded into the kernel's location
      case FrameKind::GpuKernel:
        if (static_cast<int>(i) == kernel) {
          root_first.push_back(b.location(pc, {{b.function(f.name, kernel_file), kernel_line}}));
          continue;
        }
        break;
      case FrameKind::GpuInstruction:
      case FrameKind::Stall:
        if (kernel >= 0 && static_cast<int>(i) > kernel) continue;  // labels of the kernel's sample
        break;
      case FrameKind::Python: {
        std::string_view name, file;
        int64_t line;
        split_location(f.name, name, file, line);
        auto o = data.origins.find(f.name);
        if (o != data.origins.end() && !o->second.file.empty()) file = o->second.file;  // the full path
        root_first.push_back(b.location(0, {{b.function(name, file), line}}));
        continue;
      }
      default: break;
    }
    root_first.push_back(b.location(0, {{b.function(f.name, {}), 0}}));
  }
  flush();
  return {root_first.rbegin(), root_first.rend()};
}

}  // namespace

std::string pprof_profile_bytes(const FlameData& data) {
  pb::Profile profile;
  Builder b(profile);
  auto value_type = [&](pb::ValueType* vt, std::string_view type, std::string_view unit) {
    vt->set_type(b.str(type));
    vt->set_unit(b.str(unit));
  };
  const bool timed = !data.kernels.empty();
  value_type(profile.add_sample_type(), "gpu_samples", "count");
  if (timed) value_type(profile.add_sample_type(), "gpu_time", "nanoseconds");
  // Each kernel's GPU time, shared among the samples of that kernel.
  std::unordered_map<std::string, std::pair<double, uint64_t>> kernel_time;  // name -> (ns, samples)
  for (const auto& k : data.kernels) kernel_time[k.name].first += static_cast<double>(k.end_ns - std::min(k.start_ns, k.end_ns));
  for (const auto& s : data.stacks) {
    int k = find_frame(s.frames, FrameKind::GpuKernel);
    if (k >= 0) kernel_time[s.frames[k].name].second += s.count;
  }
  const int64_t k_process = b.str("process"), k_stall = b.str("stall_reason"), k_device = b.str("device");
  const int64_t k_pid = b.str("pid"), k_rank = b.str("rank"), k_instruction = b.str("instruction");
  const int64_t k_inlined = b.str("inlined"), k_gpu = b.str("gpu"), k_proc = b.str("proc");
  const bool devices = !data.timeline.empty();
  struct Built {
    std::vector<uint64_t> locations;
    GpuPart gpu;
    bool done = false;
  };
  std::vector<Built> built(data.stacks.size());
  for (const auto& part : split_by_device(data)) {
    const auto& st = data.stacks[part.stack];
    Built& bs = built[part.stack];
    if (!bs.done) bs.locations = stack_locations(b, data, st.frames, bs.gpu), bs.done = true;
    pb::Sample* s = profile.add_sample();
    for (uint64_t id : bs.locations) s->add_location_id(id);
    s->add_value(static_cast<int64_t>(part.count));
    if (timed) {
      int k = find_frame(st.frames, FrameKind::GpuKernel);
      double ns = 0;
      if (k >= 0) {
        const auto& [t, n] = kernel_time[st.frames[k].name];
        if (n) ns = t * static_cast<double>(part.count) / static_cast<double>(n);
      }
      // Saturated: kernel records of a damaged profile can sum past int64 (a fuzzed profile: 9.2e18 ns).
      constexpr double kMax = 9.2e18;
      s->add_value(ns >= kMax ? static_cast<int64_t>(kMax) : ns > 0 ? static_cast<int64_t>(ns + 0.5) : 0);
    }
    auto label = [&](int64_t key, std::string_view str) {
      pb::Label* l = s->add_label();
      l->set_key(key);
      l->set_str(b.str(str));
    };
    // Numbers as numeric labels with a unit: `-tagfocus=device=0` is read by pprof as a numeric range,
    // which only numeric labels match, and a numeric label of 0 without a unit is dropped when pprof
    // reads the file. Pyroscope and Parca keep only string labels: `gpu` and `proc` carry the same
    // under keys of their own (under one key, pprof's -tags would count each sample twice).
    auto number = [&](int64_t key, int64_t v, std::string_view unit) {
      pb::Label* l = s->add_label();
      l->set_key(key);
      l->set_num(v);
      l->set_num_unit(b.str(unit));
    };
    const ProcessRow* row = st.process < data.processes.size() ? &data.processes[st.process] : nullptr;
    std::string_view process = data.process;
    if (row && !row->name.empty()) process = row->name;
    else if (!st.frames.empty() && st.frames[0].kind == FrameKind::Process) process = st.frames[0].name;
    if (!process.empty()) label(k_process, process);
    if (row && row->pid) number(k_pid, row->pid, "pid");
    if (row && row->rank >= 0) number(k_rank, row->rank, "rank");
    if (row && (row->pid || row->rank >= 0)) label(k_proc, process_label(*row));
    int stall = find_frame(st.frames, FrameKind::Stall);
    if (stall >= 0) label(k_stall, st.frames[stall].name);
    if (!bs.gpu.instruction.empty()) label(k_instruction, bs.gpu.instruction);
    if (!bs.gpu.inlined.empty()) label(k_inlined, bs.gpu.inlined);
    if (devices) number(k_device, part.device, "device"), label(k_gpu, std::to_string(part.device));
  }
  // The program's mapping first (pprof takes the first for the main binary: without one it prints
  // "Main binary filename not available."): Python frames and GPU PCs (the offset in the kernel), and
  // CPU frames whose module is not known. Then one per library that native frames were found in, with
  // its build ID and runtime addresses. All are marked symbolized: pprof then shows the names as they
  // are and looks for no binary; a consumer that symbolizes by build ID (Parca) has what it needs.
  pb::Mapping* m = profile.add_mapping();
  m->set_id(Builder::kProgramMapping);
  m->set_memory_limit(b.max_address() + 1);
  m->set_filename(b.str(data.process.empty() ? "aiflame" : data.process));
  auto symbolized = [](pb::Mapping* m) {
    m->set_has_functions(true);
    m->set_has_filenames(true);
    m->set_has_line_numbers(true);
    m->set_has_inline_frames(true);
  };
  symbolized(m);
  for (uint64_t i : b.modules_used()) {
    const NativeModule& mod = data.modules[i];
    pb::Mapping* lib = profile.add_mapping();
    lib->set_id(Builder::kProgramMapping + 1 + i);
    lib->set_memory_start(mod.start);
    lib->set_memory_limit(mod.limit);
    lib->set_file_offset(mod.file_offset);
    lib->set_filename(b.str(mod.path));
    if (!mod.build_id.empty()) lib->set_build_id(b.str(mod.build_id));
    symbolized(lib);
  }
  if (data.duration_ns) profile.set_duration_nanos(static_cast<int64_t>(data.duration_ns));
  value_type(profile.mutable_period_type(), "gpu_samples", "count");
  profile.set_period(1);
  if (!data.title.empty()) profile.add_comment(b.str(data.title));
  profile.set_default_sample_type(b.str("gpu_samples"));
  return profile.SerializeAsString();
}

std::string gzip_bytes(const std::string& raw, size_t chunk) {
  z_stream z{};
  if (int rc = deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY); rc != Z_OK)
    throw std::runtime_error("gzip: deflateInit2 failed (zlib " + std::to_string(rc) + ")");
  std::string out;
  size_t in_at = 0;
  int rc = Z_OK;
  do {
    size_t in_n = std::min(std::max<size_t>(chunk, 1), raw.size() - in_at);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data() + in_at));
    z.avail_in = static_cast<uInt>(in_n);
    in_at += in_n;
    const int flush = in_at == raw.size() ? Z_FINISH : Z_NO_FLUSH;
    do {
      size_t had = out.size();
      out.resize(had + deflateBound(&z, z.avail_in) + 64);
      z.next_out = reinterpret_cast<Bytef*>(out.data() + had);
      z.avail_out = static_cast<uInt>(out.size() - had);
      rc = deflate(&z, flush);
      out.resize(out.size() - z.avail_out);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        deflateEnd(&z);
        throw std::runtime_error("gzip: deflate failed (zlib " + std::to_string(rc) + ")");
      }
    } while (z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  } while (in_at < raw.size());
  deflateEnd(&z);
  return out;
}

void PprofWriter::write(const FlameData& data, std::ostream& out) const {
  std::string gz = gzip_bytes(pprof_profile_bytes(data));
  out.write(gz.data(), static_cast<std::streamsize>(gz.size()));
}

}  // namespace aiflame
