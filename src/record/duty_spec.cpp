#include "record/duty_spec.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace aiflame {

bool parse_duration_ms(std::string_view t, double* ms) {
  double x = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), x, std::chars_format::fixed);
  if (ec != std::errc() || end == t.data() || !std::isfinite(x) || x < 0) return false;
  std::string_view unit(end, static_cast<size_t>(t.data() + t.size() - end));
  double scale;
  if (unit.empty() || unit == "s") scale = 1000;
  else if (unit == "ms") scale = 1;
  else if (unit == "m" || unit == "min") scale = 60000;
  else if (unit == "h") scale = 3600000;
  else return false;
  *ms = x * scale;
  return *ms < 1e15;
}

bool parse_duty_spec(std::string_view t, DutySpec* out) {
  if (t == "on" || t == "default") return *out = {kDefaultDutyWindowMs, kDefaultDutyPeriodMs}, true;
  if (t == "off") return *out = {}, true;
  auto slash = t.find('/');
  if (slash == std::string_view::npos) return false;
  double w = 0, p = 0;
  if (!parse_duration_ms(t.substr(0, slash), &w) || !parse_duration_ms(t.substr(slash + 1), &p)) return false;
  if (w < 100 || p > 24 * 3600e3 || p < 2 * w) return false;
  *out = {static_cast<uint32_t>(std::lround(w)), static_cast<uint32_t>(std::lround(p))};
  return true;
}

std::string duty_window_prefix(const std::string& dir, uint64_t seq) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "/window-%06llu", static_cast<unsigned long long>(seq));
  return dir + buf;
}

std::vector<DutyFile> duty_window_files(const std::string& dir, int pid) {
  std::vector<DutyFile> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  const std::string suffix = "." + std::to_string(pid);
  while (dirent* e = readdir(d)) {
    std::string_view name = e->d_name;
    if (name.rfind("window-", 0) != 0 || name.size() <= 7 + suffix.size()) continue;
    if (name.substr(name.size() - suffix.size()) != suffix) continue;
    std::string_view digits = name.substr(7, name.size() - 7 - suffix.size());
    uint64_t seq = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seq);
    if (ec != std::errc() || end != digits.data() + digits.size()) continue;
    DutyFile f{dir + "/" + std::string(name), seq, 0};
    struct stat st;
    if (lstat(f.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    f.bytes = static_cast<uint64_t>(st.st_size);
    out.push_back(std::move(f));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const DutyFile& a, const DutyFile& b) { return a.seq < b.seq; });
  return out;
}

std::vector<std::string> rotate_duty_files(const std::string& dir, int pid, uint32_t keep, uint64_t max_bytes) {
  std::vector<std::string> deleted;
  auto files = duty_window_files(dir, pid);
  uint64_t total = 0;
  for (const auto& f : files) total += f.bytes;
  size_t left = files.size();
  for (const auto& f : files) {
    if (left <= 1) break;
    bool over_count = keep && left > keep;
    bool over_size = max_bytes && total > max_bytes;
    if (!over_count && !over_size) break;
    if (unlink(f.path.c_str()) == 0) deleted.push_back(f.path);
    total -= f.bytes;
    left--;
  }
  return deleted;
}

}  // namespace aiflame
