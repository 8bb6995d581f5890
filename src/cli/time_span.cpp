#include "cli/time_span.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include "profile/profile.h"
#include "record/duty_spec.h"

namespace aiflame {

Result<TimeBound> parse_time_bound(std::string_view t) {
  TimeBound b;
  if (t.empty()) return b;
  // An absolute UTC time.
  if (t.size() >= 16 && t[4] == '-' && t[10] == 'T') {
    std::string s(t);
    if (s.back() == 'Z') s.pop_back();
    struct tm tm = {};
    int sec = 0, used = 0;
    if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                    &used) == 5) {
      if (static_cast<size_t>(used) < s.size()) {
        int more = 0;
        if (std::sscanf(s.c_str() + used, ":%2d%n", &sec, &more) != 1 || static_cast<size_t>(used + more) != s.size())
          return Error{"'" + std::string(t) + "' is not a time: give YYYY-MM-DDTHH:MM[:SS] (UTC)"};
      }
      // Years past 2200 would overflow the nanoseconds (int64 reaches 2262).
      if (tm.tm_year < 1970 || tm.tm_year > 2200 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
          sec > 60)
        return Error{"'" + std::string(t) + "' is not a time: give YYYY-MM-DDTHH:MM[:SS] (UTC)"};
      tm.tm_year -= 1900;
      tm.tm_mon -= 1;
      tm.tm_sec = sec;
      b.kind = TimeBound::Absolute;
      b.ns = static_cast<int64_t>(timegm(&tm)) * 1000000000;
      return b;
    }
  }
  bool back = t.front() == '-';
  double ms = 0;
  // At most 100 years: the nanoseconds must fit an int64.
  if (!parse_duration_ms(back ? t.substr(1) : t, &ms) || ms > 100 * 365.25 * 86400e3)
    return Error{"'" + std::string(t) +
                 "' is not a time: give a duration from the first window (90s, 10m, 2h), -DURATION back from the "
                 "last one, or YYYY-MM-DDTHH:MM[:SS] (UTC)"};
  b.kind = back ? TimeBound::FromLast : TimeBound::FromFirst;
  b.ns = static_cast<int64_t>(ms * 1e6);
  return b;
}

namespace {

// file name -> start, from one window log (record/duty_cycle.h: "window ... file=NAME start=NS ...").
std::map<std::string, int64_t> logged_starts(const std::string& log_path) {
  std::map<std::string, int64_t> out;
  std::ifstream log(log_path);
  std::string line;
  while (std::getline(log, line)) {
    if (line.rfind("window ", 0) != 0) continue;
    std::istringstream words(line);
    std::string w, file;
    int64_t start = 0;
    while (words >> w) {
      if (w.rfind("file=", 0) == 0) file = w.substr(5);
      else if (w.rfind("start=", 0) == 0) start = std::strtoll(w.c_str() + 6, nullptr, 10);
    }
    if (!file.empty() && start > 0) out[file] = start;
  }
  return out;
}

}  // namespace

Result<std::vector<TimedFile>> file_start_times(const std::vector<std::string>& files) {
  std::map<std::string, std::map<std::string, int64_t>> logs;  // log path -> file name -> start
  std::vector<TimedFile> out;
  for (const auto& f : files) {
    auto slash = f.rfind('/');
    std::string dir = slash == std::string::npos ? "." : f.substr(0, slash);
    std::string name = slash == std::string::npos ? f : f.substr(slash + 1);
    int64_t start = 0;
    if (auto dot = name.rfind('.'); name.rfind("window-", 0) == 0 && dot != std::string::npos) {
      std::string log = dir + "/windows." + name.substr(dot + 1) + ".log";
      auto it = logs.find(log);
      if (it == logs.end()) it = logs.emplace(log, logged_starts(log)).first;
      if (auto s = it->second.find(name); s != it->second.end()) start = s->second;
    }
    if (start == 0) {
      auto p = read_profile(f, BatchReading::Skip);
      if (!p) return Error{p.error()};
      if (p->process) start = p->process->start_realtime_ns;
    }
    out.push_back({f, start});
  }
  return out;
}

Result<std::vector<std::string>> select_by_time(const std::vector<TimedFile>& files, const TimeBound& since,
                                                const TimeBound& until) {
  std::vector<std::string> out;
  if (files.empty()) return out;
  int64_t first = files[0].start_ns, last = files[0].start_ns;
  for (const auto& f : files) first = std::min(first, f.start_ns), last = std::max(last, f.start_ns);
  auto resolve = [&](const TimeBound& b, int64_t none) {
    switch (b.kind) {
      case TimeBound::FromFirst: return first + b.ns;
      case TimeBound::FromLast: return last - b.ns;
      case TimeBound::Absolute: return b.ns;
      case TimeBound::None: break;
    }
    return none;
  };
  const int64_t lo = resolve(since, INT64_MIN), hi = resolve(until, INT64_MAX);
  for (const auto& f : files)
    if (f.start_ns >= lo && f.start_ns < hi) out.push_back(f.path);
  if (out.empty()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "no profile started in the span asked for: the %zu profiles started from %.1f s to %.1f s "
                  "after the first (span asked: %.1f s to %.1f s)", files.size(), 0.0, (last - first) / 1e9,
                  lo == INT64_MIN ? 0.0 : (lo - first) / 1e9, hi == INT64_MAX ? (last - first) / 1e9 : (hi - first) / 1e9);
    return Error{buf};
  }
  return out;
}

}  // namespace aiflame

namespace aiflame {

Result<std::vector<std::string>> apply_time_span(const std::vector<std::string>& files, const std::string& since,
                                                 const std::string& until, bool* usage) {
  *usage = false;
  if (since.empty() && until.empty()) return files;
  auto lo = parse_time_bound(since);
  auto hi = parse_time_bound(until);
  if (!lo || !hi) {
    *usage = true;
    return Error{(since.empty() || lo ? "--until " : "--since ") + (lo ? hi.error() : lo.error())};
  }
  auto timed = file_start_times(files);
  if (!timed) return Error{timed.error()};
  return select_by_time(*timed, *lo, *hi);
}

}  // namespace aiflame
