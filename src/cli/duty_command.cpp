// `aiflame record --duty W/P [-o DIR] -- CMD` and `aiflame record --duty W/P --pid PID`: the program
// (or the running process) records one window of W every P into DIR, CUPTI detached between windows
// (record/duty_cycle.h). At the end each window's profile is symbolized as `record` does, and a summary
// says how many windows opened, the samples each got, the duty reached and what opening one cost.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "cli/attach_ptrace.h"
#include "cli/commands.h"
#include "cli/duty_command.h"
#include "cli/finalize.h"
#include "record/duty_spec.h"
#include "record/record_options.h"
#include "symbolize/nvidia/nvdisasm.h"

namespace aiflame {
namespace {

volatile pid_t g_duty_child = 0;
volatile sig_atomic_t g_duty_interrupts = 0;
void duty_forward(int sig) {
  pid_t c = g_duty_child;
  if (c > 0) kill(c, sig);
}
void duty_interrupt(int) { g_duty_interrupts = g_duty_interrupts + 1; }

bool is_duty_entry(const std::string& name) {
  return name.rfind("window-", 0) == 0 || name.rfind("windows.", 0) == 0 || name.rfind(".cubins.", 0) == 0 ||
         name.rfind(".status.", 0) == 0 || name == ".stop";  // the last two: `--pid`'s, left by a killed aiflame
}

// Removes a directory that holds only what a duty-cycled recording writes; false (nothing removed)
// when it holds anything else.
bool remove_duty_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return false;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (!is_duty_entry(n)) {
      closedir(d);
      return false;
    }
    names.push_back(n);
  }
  closedir(d);
  for (const auto& n : names) {
    std::string p = dir + "/" + n;
    if (n.rfind(".cubins.", 0) == 0) {
      if (DIR* c = opendir(p.c_str())) {
        while (dirent* e = readdir(c))
          if (e->d_name[0] != '.') unlink((p + "/" + e->d_name).c_str());
        closedir(c);
      }
      rmdir(p.c_str());
    } else {
      unlink(p.c_str());
    }
  }
  return rmdir(dir.c_str()) == 0;
}

// Makes the output directory; what was at its path moves to PATH.old (a file, or an earlier duty
// directory), or goes with --force. Empty when it is ready, else why not.
std::string prepare_dir(const std::string& dir, bool force) {
  struct stat st;
  if (lstat(dir.c_str(), &st) == 0) {
    const bool is_dir = S_ISDIR(st.st_mode);
    if (force) {
      if (is_dir ? !remove_duty_dir(dir) : unlink(dir.c_str()) != 0)
        return dir + " holds files that are not aiflame window profiles; name another directory";
    } else {
      const std::string old = dir + ".old";
      if (lstat(old.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && !remove_duty_dir(old))
        return old + " (where the earlier " + dir + " would move) holds other files; remove it or pass --force";
      if (rename(dir.c_str(), old.c_str()) != 0)
        return "cannot move the existing " + dir + " to " + old + ": " + std::strerror(errno);
    }
  }
  if (mkdir(dir.c_str(), 0755) != 0) return "cannot create the directory " + dir + ": " + std::strerror(errno);
  return {};
}

std::map<std::string, std::string> words(const std::string& line) {
  std::map<std::string, std::string> m;
  std::istringstream in(line);
  std::string w;
  while (in >> w)
    if (auto eq = w.find('='); eq != std::string::npos) m[w.substr(0, eq)] = w.substr(eq + 1);
  return m;
}

double num(const std::map<std::string, std::string>& m, const char* k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : std::atof(it->second.c_str());
}

std::string with_commas(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

bool alive(pid_t pid) { return !(kill(pid, 0) != 0 && errno == ESRCH); }

}  // namespace

DutySummary summarize_duty_dir(const std::string& dir) {
  DutySummary s;
  DIR* d = opendir(dir.c_str());
  if (!d) return s;
  std::vector<std::string> logs;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind("windows.", 0) == 0 && n.size() > 4 && n.substr(n.size() - 4) == ".log") logs.push_back(dir + "/" + n);
  }
  closedir(d);
  std::sort(logs.begin(), logs.end());
  for (const auto& log : logs) {
    std::ifstream in(log);
    std::string line;
    while (std::getline(in, line)) {
      auto m = words(line);
      if (line.rfind("duty ", 0) == 0) {
        s.window_ms = num(m, "window_ms");
        s.period_ms = num(m, "period_ms");
        double start = num(m, "start");
        if (s.first_start_ns == 0 || start < s.first_start_ns) s.first_start_ns = start;
        continue;
      }
      if (line.rfind("waiting ", 0) == 0 || line.rfind("stopped ", 0) == 0) {
        s.notes.push_back(line);
        continue;
      }
      if (line.rfind("window ", 0) != 0) continue;
      DutyWindow w;
      w.samples = static_cast<uint64_t>(num(m, "samples"));
      w.launches = static_cast<uint64_t>(num(m, "launches"));
      w.length_ms = num(m, "length_ms");
      w.open_ms = num(m, "prepare_ms") + num(m, "subscribe_ms") + num(m, "enable_ms");
      w.prepare_ms = num(m, "prepare_ms");
      w.subscribe_ms = num(m, "subscribe_ms");
      w.enable_ms = num(m, "enable_ms");
      w.close_ms = num(m, "close_ms");
      w.silent = num(m, "silent") != 0;
      w.retry = num(m, "retry") != 0;
      w.start_ns = num(m, "start");
      s.windows.push_back(w);
    }
  }
  return s;
}

void print_duty_summary(const DutySummary& s, double run_s, std::ostream& out) {
  if (s.windows.empty()) {
    out << "aiflame: no window opened";
    for (const auto& n : s.notes) out << " (" << n << ")";
    out << "\n";
    return;
  }
  double recorded_ms = 0, worst_open = 0, worst_close = 0;
  const DutyWindow* worst = &s.windows[0];
  std::vector<uint64_t> samples;
  size_t silent = 0, left_silent = 0, retries = 0;
  for (size_t i = 0; i < s.windows.size(); i++) {
    const auto& w = s.windows[i];
    recorded_ms += w.length_ms;
    samples.push_back(w.samples);
    if (w.open_ms > worst_open) worst_open = w.open_ms, worst = &w;
    worst_close = std::max(worst_close, w.close_ms);
    silent += w.silent;
    retries += w.retry;
    bool recovered = i + 1 < s.windows.size() && s.windows[i + 1].retry;
    if (w.launches > 0 && w.samples == 0 && !recovered) left_silent++;
  }
  std::vector<uint64_t> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  out << std::fixed << std::setprecision(2);
  auto span = [](double ms) {
    std::ostringstream o;
    if (ms < 1000) o << std::llround(ms) << "ms";
    else o << std::defaultfloat << ms / 1000 << "s";
    return o.str();
  };
  out << "aiflame: duty " << span(s.window_ms) << "/" << span(s.period_ms) << ": " << s.windows.size()
      << " windows opened";
  if (retries) out << " (" << retries << " reopened after silent sampling)";
  out << ", " << recorded_ms / 1000 << " s recorded";
  if (run_s > 0) out << " of " << run_s << " s (duty reached " << 100 * recorded_ms / 1000 / run_s << "%)";
  out << "\n";
  out << "aiflame: GPU samples per window: min " << with_commas(sorted.front()) << ", median "
      << with_commas(sorted[sorted.size() / 2]) << ", max " << with_commas(sorted.back()) << "; windows left silent: "
      << left_silent << (silent ? " (" + std::to_string(silent) + " found silent and reopened)" : std::string()) << "\n";
  out << std::setprecision(0) << "aiflame: opening a window took up to " << worst_open << " ms (load " << worst->prepare_ms
      << ", subscribe " << worst->subscribe_ms << ", sampling enabled " << worst->enable_ms << "); closing up to "
      << worst_close << " ms\n";
}

int run_duty_record(const RecordArgs& a, const std::string& lib) {
  auto t_start = std::chrono::steady_clock::now();
  std::string dir = a.output;
  if (!dir.empty() && dir[0] != '/') {
    char buf[4096];
    if (getcwd(buf, sizeof buf)) dir = std::string(buf) + "/" + dir;
  }
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::string problem = prepare_dir(dir, a.force);
  if (!problem.empty()) {
    const bool refuse = a.require_profile || !a.pids.empty();
    std::cerr << "aiflame: cannot record to " << dir << ": " << problem
              << (!a.pids.empty() ? "; nothing attached\n"
                  : refuse        ? "; the program was not started\n"
                                  : "; the program runs unprofiled (--require-profile: do not run it)\n");
    if (refuse) return 2;
  }
  auto options = a.options;
  options["output"] = dir;
  int rc = 0;
  if (a.pids.empty()) {
    if (problem.empty()) setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
    for (const auto& [name, value] : options)
      if (const RecordOptionSpec* spec = find_record_option(name)) setenv(spec->env, value.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& s : a.command) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
      std::cerr << "aiflame: fork failed: " << std::strerror(errno) << "\n";
      return 2;
    }
    if (pid == 0) {
      execvp(argv[0], argv.data());
      std::cerr << "aiflame: cannot run '" << a.command[0] << "': " << std::strerror(errno) << "\n";
      _exit(127);
    }
    g_duty_child = pid;
    struct sigaction sa = {};
    sa.sa_handler = duty_forward;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    g_duty_child = 0;
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
    if (rc == 127 || !problem.empty()) return rc;
  } else {
    struct sigaction sa = {};
    sa.sa_handler = duty_interrupt;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
    std::string base;
    options["quiet"] = "1";
    for (const auto& [name, value] : options)
      if (const RecordOptionSpec* spec = find_record_option(name)) base += std::string(spec->env) + "=" + value + "\n";
    uint64_t duration_ms = static_cast<uint64_t>(std::llround(a.duration_s * 1000));
    std::vector<std::pair<pid_t, std::string>> started;  // pid, status file
    for (int pid : a.pids) {
      if (auto ok = check_target(pid, lib); !ok) {
        std::cerr << "aiflame: " << ok.error() << "\n";
        return 3;
      }
      std::string status = dir + "/.status." + std::to_string(pid), stop = dir + "/.stop";
      std::string settings = base + "AIFLAME_ATTACH_STATUS=" + status + "\nAIFLAME_ATTACH_STOP=" + stop +
                             "\nAIFLAME_ATTACH_DURATION_MS=" + std::to_string(duration_ms) +
                             "\nAIFLAME_ATTACH_CLI_PID=" + std::to_string(getpid()) + "\n";
      auto res = inject_and_attach(pid, lib, settings);
      if (!res) {
        std::cerr << "aiflame: " << res.error() << "\n";
        return 3;
      }
      std::string line;
      for (int i = 0; i < 3000 && (line = last_line(status)).empty() && alive(pid); i++) sleep_ms(20);
      if (line != "started") {
        std::cerr << "aiflame: process " << pid << ": " << (line.empty() ? "the recording did not start" : line) << "\n";
        return 3;
      }
      started.push_back({pid, status});
    }
    if (!a.quiet())
      std::cerr << "aiflame: duty-cycled recording of " << started.size() << " process(es) into " << dir
                << " (Ctrl-C to stop and keep the windows recorded)\n";
    bool stop_sent = false;
    for (;;) {
      bool all_done = true;
      for (const auto& [pid, status] : started)
        if (last_line(status).rfind("done", 0) != 0 && alive(pid)) all_done = false;
      if (all_done) break;
      if (g_duty_interrupts && !stop_sent) {
        std::ofstream(dir + "/.stop").put('\n');
        stop_sent = true;
      }
      if (g_duty_interrupts > 1) break;
      sleep_ms(50);
    }
    for (const auto& [pid, status] : started) unlink(status.c_str());
    unlink((dir + "/.stop").c_str());
  }
  const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  // Every window's profile symbolized now, while the libraries and nvdisasm are at hand.
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string n = e->d_name; n.rfind("window-", 0) == 0) files.push_back(dir + "/" + n);
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  GpuSymbolizerOptions gpu{a.sass_timeout_s > 0, find_nvdisasm(a.nvdisasm)};
  std::vector<std::string> notes;
  FinalizeStats fin;
  uint64_t bytes = 0;
  for (const auto& f : files) {
    auto p = finalize_profile(f, gpu, &notes, &fin, static_cast<int>(a.sass_timeout_s * 1000));
    if (!p) std::cerr << "aiflame: symbolizing " << f << " failed: " << p.error() << "\n";
    struct stat st;
    if (stat(f.c_str(), &st) == 0) bytes += static_cast<uint64_t>(st.st_size);
  }
  if (!a.quiet()) {
    print_duty_summary(summarize_duty_dir(dir), a.pids.empty() ? run_s : 0, std::cerr);
    std::sort(notes.begin(), notes.end());
    notes.erase(std::unique(notes.begin(), notes.end()), notes.end());
    for (const auto& n : notes) std::cerr << "aiflame: " << n << "\n";
    std::cerr << "aiflame: wrote " << dir << " (" << files.size() << " window profiles, " << (bytes >> 20)
              << " MB); `aiflame report " << dir << "` merges them (--since/--until pick a span)\n";
  }
  return rc;
}

}  // namespace aiflame
