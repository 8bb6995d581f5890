#include "input/iaprof_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <unordered_map>

#include "input/folded_reader.h"
#include "input/text_lines.h"

namespace aiflame {

namespace {

constexpr std::string_view kRecords[] = {"string",    "interval",   "kernel",  "eustall",     "metric",
                                         "proc_name", "pid",        "ustack",  "kstack",      "shader_type",
                                         "gpu_file",  "gpu_symbol", "insn_text", "e", "interval_start",
                                         "interval_end", "frame"};

bool known_record(std::string_view name) {
  for (auto r : kRecords)
    if (r == name) return true;
  return false;
}

// Everything one sample's stack is made of, before it becomes frames.
struct Context {
  std::string_view command, cpu_stack, kernel_stack, file, symbol, insn;
  uint64_t pid = 0;
};

}  // namespace

class IaprofParser::Impl {
 public:
  bool add_line(std::string_view line, size_t number);
  Result<FlameData> finish();
  std::string err_;

 private:
  // The text of a string id; id 0 is iaprof's "none". False (with err_ set) for an undefined id.
  bool str(std::string_view field, std::string_view& out);
  bool num(std::string_view field, uint64_t& v, int base = 10);
  bool fields(const std::vector<std::string_view>& f, size_t n);
  void add(const Context& c, std::string_view stall, uint64_t offset, uint64_t count);
  bool fail_line(std::string what) {
    err_ = std::move(what);
    return false;
  }
  bool fail(const std::string& what) {
    err_ = "line " + std::to_string(line_) + ": " + what;
    return false;
  }

  std::unordered_map<uint64_t, std::string> strings_;
  std::unordered_map<std::string, uint32_t> index_;  // frames (names and kinds) -> stack
  std::unordered_map<uint32_t, size_t> interval_entries_;  // stack -> its timeline entry of this interval
  FlameData d_;
  size_t line_ = 0;
  Context cur;    // the current format's "kernel" record
  Context state;  // the older format's state records
  uint64_t total = 0;
  bool any = false;
  bool have_time_ = false;
  double first_time_ = 0, time_ = 0;
  uint64_t kernel_addr_ = 0;
};

bool IaprofParser::Impl::str(std::string_view field, std::string_view& out) {
  uint64_t id = 0;
  if (!num(field, id)) return false;
  auto it = strings_.find(id);
  if (it != strings_.end()) out = it->second;
  else if (id == 0) out = {};
  else return fail("string id " + std::to_string(id) + " is used before its 'string' record");
  return true;
}

bool IaprofParser::Impl::num(std::string_view field, uint64_t& v, int base) {
  if (parse_u64(field, v, base)) return true;
  std::string what(1, '\'');  // built step by step: GCC 12 warns (-Wrestrict) on "lit" + string&&
  what.append(field.substr(0, 40));
  what.append(base == 16 ? "' is not a hex number" : "' is not a whole number");
  return fail(what);
}

bool IaprofParser::Impl::fields(const std::vector<std::string_view>& f, size_t n) {
  if (f.size() >= n) return true;
  std::string what(1, '\'');
  what.append(f[0]);
  what.append("' needs ").append(std::to_string(n - 1)).append(" fields, has ").append(std::to_string(f.size() - 1));
  return fail(what);
}

void IaprofParser::Impl::add(const Context& c, std::string_view stall, uint64_t offset, uint64_t count) {
  if (count == 0) return;
  // iaprof's own folded layout: comm;pid;user stack;kernel stack;-;file_[G];kernel_[G];insn_[g];stall_[g];0xoff_[g]
  std::vector<Frame> f;
  f.push_back({c.command.empty() ? "[unknown]" : std::string(c.command), FrameKind::Process});
  f.push_back({std::to_string(c.pid), FrameKind::Process});
  for (std::string_view stack : {c.cpu_stack, c.kernel_stack}) {
    for (size_t p = 0; p < stack.size();) {
      size_t q = stack.find(';', p);
      if (q == std::string_view::npos) q = stack.size();
      if (q > p) f.push_back(classify_cpu_frame(stack.substr(p, q - p)));
      p = q + 1;
    }
  }
  char addr[32];
  snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(kernel_addr_));
  f.push_back({"-", FrameKind::Separator});
  f.push_back({c.file.empty() ? "[unknown file]" : std::string(c.file), FrameKind::GpuSource});
  f.push_back({c.symbol.empty() ? std::string(addr) : std::string(c.symbol), FrameKind::GpuKernel});
  f.push_back({c.insn.empty() ? "[failed decode]" : std::string(c.insn), FrameKind::GpuInstruction});
  f.push_back({std::string(stall), FrameKind::Stall});
  snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(offset));
  f.push_back({addr, FrameKind::GpuInstruction});
  std::string key;
  for (const auto& fr : f) key += fr.name, key += '\x1f', key += static_cast<char>(fr.kind), key += '\x1e';
  auto [it, fresh] = index_.try_emplace(std::move(key), static_cast<uint32_t>(d_.stacks.size()));
  if (fresh) d_.stacks.push_back({std::move(f), 0});
  d_.stacks[it->second].count += count;
  // One timeline entry per stack and interval: the samples of a stack within an interval share its
  // time, so the timeline grows with the picture, not with the lines of the input.
  auto [entry, new_entry] = interval_entries_.try_emplace(it->second, d_.timeline.size());
  if (new_entry) {
    double t = have_time_ ? std::max(0.0, time_ - first_time_) : 0.0;
    d_.timeline.push_back({it->second, 0, static_cast<uint64_t>(std::llround(t * 1e9)), 0.0});
  }
  d_.timeline[entry->second].weight += static_cast<double>(count);
  if (d_.process.empty()) d_.process = d_.stacks[it->second].frames[0].name, d_.pid = static_cast<uint32_t>(c.pid);
}

bool IaprofParser::Impl::add_line(std::string_view line, size_t number) {
  line_ = number;
  if (line.empty()) return true;
  auto f = split_tabs(line, 3);
  const std::string_view rec = f[0];
  if (!known_record(rec)) return true;
  any = true;
  if (rec == "string") {
    uint64_t id = 0;
    if (!fields(f, 3) || !num(f[1], id)) return false;
    strings_.try_emplace(id, f[2]);  // the first definition wins: views into it stay valid
    return true;
  }
  f = split_tabs(line);
  if (rec == "interval" || rec == "interval_start") {
    if (!fields(f, 3)) return false;
    char* end = nullptr;
    std::string s(f[2]);
    double t = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end || !std::isfinite(t) || t < 0) return fail_line("line " + std::to_string(line_) + ": bad time '" + s.substr(0, 40) + "'");
    if (!have_time_) first_time_ = t, have_time_ = true;
    if (t != time_) interval_entries_.clear();
    time_ = t;
    d_.duration_ns = std::max<uint64_t>(d_.duration_ns, static_cast<uint64_t>(std::llround((t - first_time_) * 1e9)));
  } else if (rec == "kernel") {
    // kernel ADDR COMMAND_ID PID CPU_STACK_ID FILE_ID SYMBOL_ID
    if (!fields(f, 7) || !num(f[1], kernel_addr_, 16) || !str(f[2], cur.command) || !num(f[3], cur.pid) ||
        !str(f[4], cur.cpu_stack) || !str(f[5], cur.file) || !str(f[6], cur.symbol))
      return false;
  } else if (rec == "eustall") {
    // eustall OFFSET INSN_ID then one count per stall reason (9 on i915 builds, 10 with tdr)
    uint64_t offset = 0;
    if (!fields(f, 3 + 9) || !num(f[1], offset, 16) || !str(f[2], cur.insn)) return false;
    for (size_t r = 0; r < std::size(kIaprofStallReasons) && 3 + r < f.size(); r++) {
      uint64_t n = 0;
      if (!num(f[3 + r], n)) return false;
      if (total + n < total) return fail_line("line " + std::to_string(line_) + ": the counts overflow 64 bits");
      total += n;
      add(cur, kIaprofStallReasons[r], offset, n);
    }
  } else if (rec == "e") {
    // e STACK_ID STALL_ID OFFSET(hex) COUNT, with the state records before it
    uint64_t offset = 0, n = 0;
    std::string_view stall;
    if (!fields(f, 5) || !str(f[2], stall) || !num(f[3], offset, 16) || !num(f[4], n)) return false;
    if (total + n < total) return fail_line("line " + std::to_string(line_) + ": the counts overflow 64 bits");
    total += n;
    add(state, stall.empty() ? "unknown" : stall, offset, n);
  } else if (rec == "proc_name" || rec == "ustack" || rec == "kstack" || rec == "gpu_file" || rec == "gpu_symbol" ||
             rec == "insn_text") {
    std::string_view* slot = rec == "proc_name" ? &state.command : rec == "ustack" ? &state.cpu_stack
                             : rec == "kstack"  ? &state.kernel_stack : rec == "gpu_file" ? &state.file
                             : rec == "gpu_symbol" ? &state.symbol : &state.insn;
    if (!fields(f, 2) || !str(f[1], *slot)) return false;
  } else if (rec == "pid") {
    if (!fields(f, 2) || !num(f[1], state.pid)) return false;
  }
  // metric, shader_type, interval_end, frame: nothing a flame graph shows.
  return true;
}

Result<FlameData> IaprofParser::Impl::finish() {
  if (!err_.empty()) return Error{err_};
  if (!any) return Error{"no iaprof records in the input"};
  if (d_.stacks.empty()) return Error{"no EU stall samples in the iaprof output"};
  d_.start_ns = have_time_ ? static_cast<uint64_t>(std::llround(first_time_ * 1e9)) : 0;
  if (!have_time_) d_.timeline.clear();
  return std::move(d_);
}

bool looks_like_iaprof(std::string_view text) {
  TextLines lines(text);
  std::string_view line;
  while (lines.next(line)) {
    if (line.empty()) continue;
    size_t tab = line.find('\t');
    return tab != std::string_view::npos && known_record(line.substr(0, tab));
  }
  return false;
}

IaprofParser::IaprofParser() : impl_(std::make_unique<Impl>()) {}
IaprofParser::~IaprofParser() = default;
bool IaprofParser::add_line(std::string_view line, size_t number) { return impl_->add_line(line, number); }
const std::string& IaprofParser::error() const { return impl_->err_; }
Result<FlameData> IaprofParser::finish() { return impl_->finish(); }

Result<FlameData> parse_iaprof(std::string_view text) {
  IaprofParser parser;
  return parse_lines(parser, text);
}

}  // namespace aiflame
