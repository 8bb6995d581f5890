// `aiflame top`: a live view of a running job, py-spy top for GPUs. It records as `aiflame record`
// does (it runs `aiflame record` itself, into a directory of its own), and every --refresh seconds
// reads what the profiles hold up to their last flush (docs/format.md: a profile being written reads
// as one cut short) and redraws one screen: the kernels with their stall mix and the lines of the
// user's code that launch them, the stall reasons, GPU busy share and samples per second.
// On a terminal it draws full screen with keys (s: sort, p: pause, q: quit); otherwise it prints one
// plain block per refresh. `--replay FILE` feeds a recorded profile's chunks into its directory over
// time instead of recording: the view of a run, without a GPU (its tests run it in tmux).
// Each refresh reads the profiles whole: its cost grows with the profile (about what `aiflame report`
// of the same file costs), the recording's is the recorder's.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "output/text_writer.h"
#include "report/load_flame.h"

namespace aiflame {

namespace {

enum class Sort { Samples, GpuTime, Launches };
const char* sort_name(Sort s) {
  switch (s) {
    case Sort::Samples: return "samples";
    case Sort::GpuTime: return "GPU time";
    case Sort::Launches: return "launches";
  }
  return "";
}

volatile sig_atomic_t g_quit = 0;
void on_quit(int) { g_quit = 1; }

// The terminal in raw mode and on its alternate screen while the view runs; restored on every way out.
class Screen {
 public:
  explicit Screen(bool live) : live_(live) {
    if (!live_) return;
    if (isatty(0) && tcgetattr(0, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      keys_ = tcsetattr(0, TCSANOW, &raw) == 0;
    }
    std::cout << "\x1b[?1049h\x1b[?25l" << std::flush;
  }
  ~Screen() {
    if (!live_) return;
    std::cout << "\x1b[?25h\x1b[?1049l" << std::flush;
    if (keys_) tcsetattr(0, TCSANOW, &saved_);
  }
  bool keys() const { return keys_; }
  // Columns and rows of the terminal (80x24 when it does not say).
  std::pair<size_t, size_t> size() const {
    winsize w{};
    if (ioctl(1, TIOCGWINSZ, &w) == 0 && w.ws_col > 0 && w.ws_row > 0) return {w.ws_col, w.ws_row};
    return {80, 24};
  }

 private:
  bool live_;
  bool keys_ = false;
  termios saved_{};
};

// The profiles in `dir`: record's files while it runs (PREFIX.rec-ID.PID), the named ones after.
std::vector<std::string> profiles_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      auto ends_with = [&](std::string_view tail) {
        return name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
      };
      if (name.rfind("top.aiflame", 0) != 0 || ends_with(".check") || ends_with(".old")) continue;
      std::string full = dir + "/" + name;
      struct stat st;
      if (stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 16) out.push_back(full);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A recorded profile's chunks appended to a file over time (docs/format.md: a 16-byte header, then
// self-contained chunks with their stored size at bytes 8-11).
class Replay {
 public:
  bool open(const std::string& from, const std::string& to, unsigned steps, std::string* error) {
    std::ifstream in(from, std::ios::binary);
    if (!in) return *error = from + ": " + std::strerror(errno), false;
    bytes_.assign(std::istreambuf_iterator<char>(in), {});
    if (bytes_.size() < 16 || bytes_.compare(0, 8, std::string("AIFLAME\0", 8)) != 0)
      return *error = from + ": not an aiflame profile", false;
    for (size_t at = 16; at + 16 <= bytes_.size();) {
      uint32_t stored = 0;
      std::memcpy(&stored, bytes_.data() + at + 8, 4);
      at += 16 + stored;
      ends_.push_back(std::min(at, bytes_.size()));
    }
    per_step_ = std::max<size_t>(1, (ends_.size() + steps - 1) / std::max(1u, steps));
    out_.open(to, std::ios::binary | std::ios::trunc);
    if (!out_) return *error = to + ": " + std::strerror(errno), false;
    out_.write(bytes_.data(), 16);
    out_.flush();
    return true;
  }
  // The next step's chunks; false once the whole profile has been fed.
  bool step() {
    if (next_ >= ends_.size()) return false;
    size_t upto = std::min(ends_.size(), next_ + per_step_);
    size_t from = next_ ? ends_[next_ - 1] : 16;
    out_.write(bytes_.data() + from, static_cast<std::streamsize>(ends_[upto - 1] - from));
    out_.flush();
    next_ = upto;
    return true;
  }
  bool done() const { return next_ >= ends_.size(); }

 private:
  std::string bytes_;
  std::vector<size_t> ends_;
  size_t per_step_ = 1, next_ = 0;
  std::ofstream out_;
};

struct View {
  Sort sort = Sort::Samples;
  bool paused = false;
  size_t rows = 10;
};

struct Reading {
  FlameData data;
  TopTables tables;
  std::string command;
  double seconds = 0, busy = 0;  // the profiles' span; the share of it some kernel ran
};

bool read_profiles(const std::string& dir, Reading* r) {
  std::vector<std::string> files = profiles_in(dir);
  if (files.empty()) return false;
  LoadOptions lo;
  lo.frames.times = true;
  lo.gpu = GpuSymbolizerOptions{};  // no nvdisasm on every refresh: names from the profile only
  auto loaded = load_flame(files, lo);
  if (!loaded) return false;  // a profile not yet past its first records
  r->data = std::move(loaded->data);
  r->command = loaded->command;
  r->tables = top_tables(r->data);
  double secs = 0, busy = 0;
  for (const ProcessRow& p : r->data.processes) secs = std::max(secs, p.seconds), busy += p.busy_seconds;
  r->seconds = secs;
  r->busy = secs > 0 ? std::min(1.0, busy / secs / std::max<size_t>(1, r->data.processes.size())) : 0;
  return true;
}

std::string fit(std::string s, size_t width) {
  if (s.size() > width) s = s.substr(0, width > 3 ? width - 3 : width) + (width > 3 ? "..." : "");
  return s;
}

double pct(uint64_t n, uint64_t of) { return of ? 100.0 * static_cast<double>(n) / static_cast<double>(of) : 0.0; }

// One screen, `width` columns, `height` rows at most (0: no limit).
std::string draw(const Reading& r, const View& v, double rate, const std::string& state, size_t width, size_t height) {
  std::vector<std::string> lines;
  const TopTables& t = r.tables;
  lines.push_back(fmt::format("aiflame top - {}  |  {:.1f} s  |  {} GPU samples ({:.0f}/s)  |  GPU busy {:.0f}%  |  "
                              "sort: {}{}{}",
                              r.command, r.seconds, t.total, rate, 100 * r.busy, sort_name(v.sort),
                              v.paused ? "  [paused]" : "", state.empty() ? "" : "  [" + state + "]"));
  lines.push_back("keys: s sort (samples, GPU time, launches)  p pause  q quit");
  lines.push_back("");
  std::string stalls;
  for (size_t i = 0; i < t.stalls.size() && i < 6; i++)
    stalls += fmt::format("{}{} {:.0f}%", i ? ", " : "", t.stalls[i].name, pct(t.stalls[i].samples, t.total));
  lines.push_back("stalls: " + (stalls.empty() ? std::string("-") : stalls));
  lines.push_back("");
  lines.push_back(fmt::format("{:>9} {:>6} {:>10} {:>9}  {}", "samples", "%", "GPU ms", "launches", "kernel / stall mix / launched from"));
  std::vector<const TopKernel*> ks;
  for (const TopKernel& k : t.kernels) ks.push_back(&k);
  auto key = [&](const TopKernel* k) {
    switch (v.sort) {
      case Sort::GpuTime: return k->gpu_ms;
      case Sort::Launches: return static_cast<double>(k->launches);
      case Sort::Samples: break;
    }
    return static_cast<double>(k->samples);
  };
  std::stable_sort(ks.begin(), ks.end(), [&](const TopKernel* a, const TopKernel* b) { return key(a) > key(b); });
  for (size_t i = 0; i < ks.size() && i < v.rows; i++) {
    const TopKernel& k = *ks[i];
    lines.push_back(fmt::format("{:>9} {:>5.1f}% {:>10.3f} {:>9}  {}", k.samples, pct(k.samples, t.total), k.gpu_ms,
                                k.launches, k.name));
    std::string mix;
    for (size_t j = 0; j < k.stalls.size() && j < 3; j++)
      mix += fmt::format("{}{} {:.0f}%", j ? ", " : "", k.stalls[j].name, pct(k.stalls[j].samples, k.samples));
    lines.push_back(fmt::format("{:>39}{}  <-  {}", "", mix.empty() ? "-" : mix, k.site.name.empty() ? "-" : k.site.name));
  }
  if (ks.empty()) lines.push_back("  (no GPU samples yet)");
  lines.push_back("");
  lines.push_back(t.user_known ? "lines of your code launching them:" : "launch sites:");
  for (size_t i = 0; i < t.user_lines.size() && i < 5; i++) {
    const TopLine& l = t.user_lines[i];
    lines.push_back(fmt::format("{:>9} {:>5.1f}%  {}  ({})", l.samples, pct(l.samples, t.total), l.name,
                                l.kernels.empty() ? std::string("-") : fmt::format("{} kernel{}", l.kernels.size(), l.kernels.size() == 1 ? "" : "s")));
  }
  std::string out;
  for (size_t i = 0; i < lines.size() && (!height || i < height); i++) out += fit(lines[i], width) + "\n";
  return out;
}

// `aiflame record -q -o DIR/top.aiflame ...` as a child of its own: top reads its files as they grow.
pid_t start_recording(const TopArgs& a, const std::string& dir, bool quiet_child) {
  std::vector<std::string> words = {"/proc/self/exe", "record", "-q", "-f", "-o", dir + "/top.aiflame"};
  for (int pid : a.pids) words.push_back("--pid=" + std::to_string(pid));
  if (a.duration_s > 0) words.push_back("--duration=" + std::to_string(a.duration_s));
  if (!a.command.empty()) {
    words.push_back("--");
    words.insert(words.end(), a.command.begin(), a.command.end());
  }
  pid_t pid = fork();
  if (pid != 0) return pid;
  if (quiet_child) {
    // The full screen view owns the terminal: the program's output goes to a log beside the profile.
    int fd = open((dir + "/output.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) dup2(null, 0);
  }
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(127);
}

void remove_dir(const std::string& dir, bool keep_log) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || (keep_log && name == "output.log")) continue;
      unlink((dir + "/" + name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

}  // namespace

void add_top_command(CLI::App& app, TopArgs& a) {
  auto* sub = app.add_subcommand("top", "A live view of a running job: kernels, their stall mix, the lines of your "
                                        "code launching them, GPU busy share and samples/s, refreshed every second");
  sub->add_option("-p,--pid", a.pids, "Attach to running process(es) instead of starting one (as record --pid)")
      ->delimiter(',')->check(CLI::PositiveNumber);
  sub->add_option("--replay", a.replay, "Show a recorded profile as if it were being recorded: its chunks are fed "
                                        "in --replay-steps steps, one per refresh");
  sub->add_option("--replay-steps", a.replay_steps, "Steps of --replay (default 10)")->check(CLI::Range(1u, 1000000u));
  sub->add_option("--refresh", a.refresh_s, "Seconds between refreshes (default 1)")->check(CLI::Range(0.05, 3600.0));
  sub->add_option("--duration", a.duration_s, "Seconds to record, as record --duration")->check(CLI::NonNegativeNumber);
  sub->add_option("-n,--rows", a.rows, "Kernels shown (default 10)")->check(CLI::Range(1u, 1000u));
  sub->add_flag("--plain", a.plain, "Plain blocks, one per refresh, even on a terminal (the default when stdout is not one)");
  sub->add_option("command", a.command, "The command to run and watch (after --, or as the first word that is not an option)")
      ->expected(-1);
  sub->footer("Keys on a terminal: s cycles the sort (samples, GPU time, launches), p pauses the screen, q quits "
              "(a command started by top is interrupted, as Ctrl-C). The program's output goes to a log file "
              "named at the end while the full screen view runs. Exit status: the program's, as record's.");
}

int run_top(const TopArgs& a) {
  const int ways = !a.command.empty() + !a.pids.empty() + !a.replay.empty();
  if (ways != 1) {
    std::cerr << "aiflame: top needs one of: a command, --pid PID, --replay FILE\n";
    return 2;
  }
  const bool live = !a.plain && isatty(1);
  const char* base = std::getenv("TMPDIR");
  std::string dir = std::string(base && *base ? base : "/tmp") + "/aiflame-top-XXXXXX";
  if (!mkdtemp(dir.data())) {
    std::cerr << "aiflame: cannot create a directory for top's profile under " << (base && *base ? base : "/tmp")
              << ": " << std::strerror(errno) << "\n";
    return 1;
  }

  Replay replay;
  pid_t child = -1;
  if (!a.replay.empty()) {
    std::string error;
    if (!replay.open(a.replay, dir + "/top.aiflame", a.replay_steps, &error)) {
      std::cerr << "aiflame: " << error << "\n";
      remove_dir(dir, false);
      return 1;
    }
  } else {
    child = start_recording(a, dir, live);
    if (child < 0) {
      std::cerr << "aiflame: fork failed: " << std::strerror(errno) << "\n";
      remove_dir(dir, false);
      return 2;
    }
  }
  struct sigaction sa = {};
  sa.sa_handler = on_quit;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);

  View view;
  view.rows = a.rows;
  int status = 0;
  bool ended = false;
  Reading shown;
  bool have = false;
  uint64_t last_total = 0;
  auto last_time = std::chrono::steady_clock::now();
  double rate = 0;
  std::string final_screen;
  {
    Screen screen(live);
    bool quit_sent = false;
    while (true) {
      // The job: the replay's next step, or whether the recording has ended.
      if (!a.replay.empty()) {
        if (!view.paused) replay.step();
        ended = replay.done();
      } else if (!ended) {
        pid_t w = waitpid(child, &status, WNOHANG);
        ended = w == child;
      }
      if (g_quit && !quit_sent) {
        if (child > 0 && !ended) kill(child, SIGINT);
        quit_sent = true;
        if (child <= 0) ended = true;
      }
      if (!view.paused || ended) {
        Reading r;
        if (read_profiles(dir, &r)) {
          auto now = std::chrono::steady_clock::now();
          double dt = std::chrono::duration<double>(now - last_time).count();
          if (r.tables.total >= last_total && dt > 0) rate = static_cast<double>(r.tables.total - last_total) / dt;
          last_total = r.tables.total;
          last_time = now;
          shown = std::move(r);
          have = true;
        }
      }
      const std::string state = ended ? "ended" : "";
      if (live) {
        auto [cols, rows] = screen.size();
        std::cout << "\x1b[H\x1b[2J";
        if (have) {
          std::string s = draw(shown, view, rate, state, cols, rows);
          // Raw mode leaves output processing on: "\n" still returns the carriage.
          std::cout << s;
        } else {
          std::cout << "aiflame top: waiting for the first samples...\n";
        }
        std::cout << std::flush;
      } else if (have && (!view.paused || ended)) {
        std::cout << draw(shown, view, rate, state, 100000, 0) << "\n" << std::flush;
      }
      if (ended || (g_quit && child <= 0)) break;
      // The wait for the next refresh, broken by a key.
      auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.refresh_s);
      while (!g_quit) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
        if (left <= 0) break;
        if (!screen.keys()) {
          usleep(static_cast<useconds_t>(std::min<long long>(left, 100) * 1000));
          if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
            ended = true;
            break;
          }
          continue;
        }
        pollfd p{0, POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(std::min<long long>(left, 100))) > 0) {
          char c = 0;
          if (read(0, &c, 1) == 1) {
            if (c == 'q' || c == 'Q') g_quit = 1;
            if (c == 'p' || c == 'P' || c == ' ') view.paused = !view.paused;
            if (c == 's' || c == 'S') view.sort = static_cast<Sort>((static_cast<int>(view.sort) + 1) % 3);
            break;  // redraw at once
          }
        }
      }
      if (ended) continue;  // one more reading, of the whole profile, then out
    }
    if (live && have) final_screen = draw(shown, view, rate, "ended", screen.size().first, 0);
  }
  if (child > 0 && !ended) {
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  }
  if (!final_screen.empty()) std::cout << final_screen << std::flush;
  bool log = false;
  struct stat st;
  if (live && child > 0 && stat((dir + "/output.log").c_str(), &st) == 0 && st.st_size > 0) {
    log = true;
    std::cerr << "aiflame: the program's output: " << dir << "/output.log\n";
  }
  remove_dir(dir, log);
  if (!a.replay.empty()) return 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace aiflame
