#include "output/pprof_writer.h"

#include <zlib.h>

#include <charconv>
#include <map>
#include <ostream>
#include <tuple>
#include <unordered_map>

#include "output/device_split.h"

namespace aiflame {

namespace {

// Protocol buffers' wire format, the three field shapes profile.proto needs.
class Pb {
 public:
  void varint(uint32_t field, uint64_t v) {
    tag(field, 0);
    raw_varint(v);
  }
  void bytes(uint32_t field, std::string_view s) {
    tag(field, 2);
    raw_varint(s.size());
    buf_.append(s);
  }
  void message(uint32_t field, const Pb& m) { bytes(field, m.buf_); }
  void packed(uint32_t field, const std::vector<uint64_t>& vs) {
    Pb p;
    for (uint64_t v : vs) p.raw_varint(v);
    bytes(field, p.buf_);
  }
  const std::string& str() const { return buf_; }

 private:
  void tag(uint32_t field, uint32_t wire) { raw_varint(uint64_t{field} << 3 | wire); }
  void raw_varint(uint64_t v) {
    while (v >= 0x80) buf_ += static_cast<char>((v & 0x7f) | 0x80), v >>= 7;
    buf_ += static_cast<char>(v);
  }
  std::string buf_;
};

// Field numbers from profile.proto (github.com/google/pprof/blob/main/proto/profile.proto).
enum ProfileField : uint32_t {
  kSampleType = 1, kSample = 2, kLocation = 4, kFunction = 5, kStringTable = 6, kDurationNanos = 10,
  kPeriodType = 11, kPeriod = 12, kComment = 13, kDefaultSampleType = 14
};
enum SampleField : uint32_t { kLocationId = 1, kValue = 2, kLabel = 3 };
enum LabelField : uint32_t { kKey = 1, kStr = 2, kNum = 3 };
enum LocationField : uint32_t { kLocId = 1, kAddress = 3, kLine = 4 };
enum LineField : uint32_t { kFunctionId = 1, kLineNumber = 2 };
enum FunctionField : uint32_t { kFnId = 1, kName = 2, kSystemName = 3, kFilename = 4 };

struct Line {
  uint64_t function = 0;
  int64_t line = 0;
  bool operator<(const Line& o) const { return std::tie(function, line) < std::tie(o.function, o.line); }
};

class Builder {
 public:
  uint64_t str(std::string_view s) {
    auto [it, fresh] = strings_.try_emplace(std::string(s), strings_.size());
    if (fresh) order_.push_back(&it->first);
    return it->second;
  }
  uint64_t function(std::string_view name, std::string_view file) {
    auto key = std::make_pair(str(name), str(file));
    auto [it, fresh] = functions_.try_emplace(key, functions_.size() + 1);
    if (fresh) {
      Pb f;
      f.varint(kFnId, it->second);
      f.varint(kName, key.first);
      f.varint(kSystemName, key.first);
      if (key.second) f.varint(kFilename, key.second);
      fn_msgs_.push_back(f);
    }
    return it->second;
  }
  // Lines innermost first, as profile.proto orders inlined frames.
  uint64_t location(uint64_t address, const std::vector<Line>& lines) {
    auto [it, fresh] = locations_.try_emplace({address, lines}, locations_.size() + 1);
    if (fresh) {
      Pb l;
      l.varint(kLocId, it->second);
      if (address) l.varint(kAddress, address);
      for (const auto& ln : lines) {
        Pb m;
        m.varint(kFunctionId, ln.function);
        if (ln.line > 0) m.varint(kLineNumber, static_cast<uint64_t>(ln.line));
        l.message(kLine, m);
      }
      loc_msgs_.push_back(l);
    }
    return it->second;
  }
  void finish(Pb& profile) {
    for (const auto& l : loc_msgs_) profile.message(kLocation, l);
    for (const auto& f : fn_msgs_) profile.message(kFunction, f);
    for (const auto* s : order_) profile.bytes(kStringTable, *s);
  }

  Builder() { str(""); }  // string 0 is always ""

 private:
  std::unordered_map<std::string, uint64_t> strings_;
  std::vector<const std::string*> order_;
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> functions_;
  std::map<std::pair<uint64_t, std::vector<Line>>, uint64_t> locations_;
  std::vector<Pb> fn_msgs_, loc_msgs_;
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

// Location ids of one stack, leaf first.
std::vector<uint64_t> stack_locations(Builder& b, const FrameList& frames) {
  std::vector<uint64_t> root_first;
  int kernel = find_frame(frames, FrameKind::GpuKernel);
  std::vector<Line> inlined;  // GPU source frames after the kernel: inlined device functions, leaf first
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
      } else if (frames[i].kind == FrameKind::GpuInstruction && !pc) {
        // "0x1a0" or "FFMA 0x1a0"
        std::string_view n = frames[i].name;
        parse_hex(n.substr(n.rfind(' ') == std::string_view::npos ? 0 : n.rfind(' ') + 1), pc);
      }
    }
    for (auto l = levels.rbegin(); l != levels.rend(); ++l) inlined.push_back(Line{b.function(l->name, l->file), l->line});
    for (int i = kernel - 1; i >= 0 && frames[i].kind == FrameKind::GpuSource; i--) {
      std::string_view name;
      split_location(frames[i].name, name, kernel_file, kernel_line);
      if (kernel_file.empty()) kernel_file = frames[i].name;
      break;
    }
  }
  for (size_t i = 0; i < frames.size(); i++) {
    const Frame& f = frames[i];
    switch (f.kind) {
      case FrameKind::Process:
      case FrameKind::Separator: continue;  // labels, not frames
      case FrameKind::GpuSource: continue;  // folded into the kernel's location
      case FrameKind::GpuKernel:
        if (static_cast<int>(i) == kernel) {
          std::vector<Line> lines = inlined;
          lines.push_back({b.function(f.name, kernel_file), kernel_line});
          root_first.push_back(b.location(pc, lines));
          continue;
        }
        break;
      case FrameKind::GpuInstruction: {
        uint64_t v;
        if (parse_hex(f.name, v) && v == pc && kernel >= 0) continue;  // the PC location's address
        break;
      }
      case FrameKind::Python: {
        std::string_view name, file;
        int64_t line;
        split_location(f.name, name, file, line);
        root_first.push_back(b.location(0, {{b.function(name, file), line}}));
        continue;
      }
      default: break;
    }
    root_first.push_back(b.location(0, {{b.function(f.name, {}), 0}}));
  }
  return {root_first.rbegin(), root_first.rend()};
}

}  // namespace

std::string pprof_profile_bytes(const FlameData& data) {
  Builder b;
  Pb profile;
  auto value_type = [&](std::string_view type, std::string_view unit) {
    Pb vt;
    vt.varint(1, b.str(type));
    vt.varint(2, b.str(unit));
    return vt;
  };
  const bool timed = !data.kernels.empty();
  profile.message(kSampleType, value_type("gpu_samples", "count"));
  if (timed) profile.message(kSampleType, value_type("gpu_time", "nanoseconds"));
  // Each kernel's GPU time, shared among the samples of that kernel.
  std::unordered_map<std::string, std::pair<double, uint64_t>> kernel_time;  // name -> (ns, samples)
  for (const auto& k : data.kernels) kernel_time[k.name].first += static_cast<double>(k.end_ns - std::min(k.start_ns, k.end_ns));
  for (const auto& s : data.stacks) {
    int k = find_frame(s.frames, FrameKind::GpuKernel);
    if (k >= 0) kernel_time[s.frames[k].name].second += s.count;
  }
  const uint64_t k_process = b.str("process"), k_stall = b.str("stall_reason"), k_device = b.str("device");
  const bool devices = !data.timeline.empty();
  std::vector<std::vector<uint64_t>> locs(data.stacks.size());
  for (const auto& part : split_by_device(data)) {
    const auto& st = data.stacks[part.stack];
    if (locs[part.stack].empty()) locs[part.stack] = stack_locations(b, st.frames);
    Pb s;
    s.packed(kLocationId, locs[part.stack]);
    std::vector<uint64_t> values{part.count};
    if (timed) {
      int k = find_frame(st.frames, FrameKind::GpuKernel);
      double ns = 0;
      if (k >= 0) {
        const auto& [t, n] = kernel_time[st.frames[k].name];
        if (n) ns = t * static_cast<double>(part.count) / static_cast<double>(n);
      }
      values.push_back(static_cast<uint64_t>(ns + 0.5));
    }
    s.packed(kValue, values);
    auto label = [&](uint64_t key, std::string_view str) {
      Pb l;
      l.varint(kKey, key);
      l.varint(kStr, b.str(str));
      s.message(kLabel, l);
    };
    std::string_view process = data.process;
    if (!st.frames.empty() && st.frames[0].kind == FrameKind::Process) process = st.frames[0].name;
    if (!process.empty()) label(k_process, process);
    int stall = find_frame(st.frames, FrameKind::Stall);
    if (stall >= 0) label(k_stall, st.frames[stall].name);
    if (devices) {
      Pb l;
      l.varint(kKey, k_device);
      l.varint(kNum, part.device);
      s.message(kLabel, l);
    }
    profile.message(kSample, s);
  }
  if (data.duration_ns) profile.varint(kDurationNanos, data.duration_ns);
  profile.message(kPeriodType, value_type("gpu_samples", "count"));
  profile.varint(kPeriod, 1);
  if (!data.title.empty()) profile.packed(kComment, {b.str(data.title)});
  profile.varint(kDefaultSampleType, b.str("gpu_samples"));
  b.finish(profile);
  return profile.str();
}

std::string gzip_bytes(const std::string& raw) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out;
  out.resize(deflateBound(&z, raw.size()) + 64);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void PprofWriter::write(const FlameData& data, std::ostream& out) const {
  std::string gz = gzip_bytes(pprof_profile_bytes(data));
  out.write(gz.data(), static_cast<std::streamsize>(gz.size()));
}

}  // namespace aiflame
