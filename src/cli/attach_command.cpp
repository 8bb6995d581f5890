// `aiflame record --pid PID [--duration S] [--wait]`: records programs that are already running. The
// injection library is loaded into each with ptrace (attach_ptrace.h); it records for the duration,
// detaches and closes its profile (src/record/attach.cpp); then the profiles are finished as `record`
// finishes them. Ctrl-C ends the recording early and keeps what was recorded.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "attribute/attribution.h"
#include "attribute/profile_flame.h"
#include "cli/attach_ptrace.h"
#include "cli/commands.h"
#include "cli/finalize.h"
#include "cli/process_table.h"
#include "cli/record_output.h"
#include "cli/stream_hint.h"
#include "cli/summary.h"
#include "record/record_options.h"
#include "symbolize/nvidia/nvdisasm.h"

namespace aiflame {
namespace {

// Exit statuses (record's --help): 2 bad input (no such process), 3 attach refused or failed, or
// --wait ran out of --duration; 125 (kRecordOwnFailure) a profile could not be named.
constexpr int kBadInput = 2;
constexpr int kRefused = 3;

std::string fmt_seconds(double s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

volatile sig_atomic_t g_interrupts = 0;
void on_interrupt(int) { g_interrupts = g_interrupts + 1; }

bool alive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  std::getline(in, s);
  auto paren = s.rfind(')');
  return paren != std::string::npos && paren + 2 < s.size() && s[paren + 2] != 'Z';
}

// The last line of the status file the target writes (attach.h), or "".
std::string last_status(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// "refused <code> <why>" -> <why>; *code gets <code>.
std::string refusal_text(const std::string& line, std::string* code) {
  std::string rest = line.substr(std::strlen("refused "));
  auto sp = rest.find(' ');
  *code = rest.substr(0, sp);
  return sp == std::string::npos ? rest : rest.substr(sp + 1);
}

bool cuda_loaded(pid_t pid) {
  for (const auto& m : read_maps(pid))
    if (m.path.find("/libcuda.so") != std::string::npos) return true;
  return false;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// The settings of the injection library as NAME=VALUE lines in the variables of the option schema,
// as run_record hands them over in the environment (record_options.h parses both).
std::string library_settings(const RecordArgs& a, const std::string& output) {
  auto options = a.options;
  options["output"] = output;
  // The library's warnings go into the profile (the summary prints them), never into the program's stderr.
  options["quiet"] = "1";
  std::string s;
  for (const auto& [name, value] : options)
    if (const RecordOptionSpec* spec = find_record_option(name)) s += std::string(spec->env) + "=" + value + "\n";
  return s;
}

struct Target {
  pid_t pid = 0;
  std::string profile, status, stop;
  bool done = false;
};

// Loads the library into t.pid and waits until its recording started. An error is the line to print
// and *code the exit status.
// With --duration, waiting (--wait) ends with it: the duration bounds the whole command.
Status start_one(const RecordArgs& a, const std::string& lib, const std::string& settings, Target& t, int* code,
                 std::chrono::steady_clock::time_point wait_until) {
  *code = kRefused;
  bool announced = false;
  for (;;) {
    if (g_interrupts) return Error{"interrupted before process " + std::to_string(t.pid) + " was attached"};
    if (announced && std::chrono::steady_clock::now() >= wait_until)
      return Error{"process " + std::to_string(t.pid) + " did not start using CUDA within --duration " +
                   fmt_seconds(a.duration_s) + " s; nothing recorded"};
    if (!alive(t.pid)) return Error{"process " + std::to_string(t.pid) + " ended before aiflame could attach"};
    if (a.wait && !cuda_loaded(t.pid)) {
      if (!announced && !a.quiet())
        std::cerr << "aiflame: waiting for process " << t.pid << " to start using CUDA (Ctrl-C to give up)\n";
      announced = true;
      sleep_ms(200);
      continue;
    }
    unlink(t.status.c_str());
    // What is left of --duration once the wait is over (0: until Ctrl-C).
    uint64_t left_ms = 0;
    if (wait_until != std::chrono::steady_clock::time_point::max())
      left_ms = static_cast<uint64_t>(std::max<int64_t>(
          1, std::chrono::duration_cast<std::chrono::milliseconds>(wait_until - std::chrono::steady_clock::now()).count()));
    auto res = inject_and_attach(t.pid, lib, settings + "AIFLAME_ATTACH_DURATION_MS=" + std::to_string(left_ms) + "\n");
    if (!res) return Error{res.error()};
    std::string line;
    if (res->attach_rc != 0) {
      line = last_status(t.status);
      if (line.empty()) return Error{"process " + std::to_string(t.pid) + " refused the attach (code " + std::to_string(res->attach_rc) + ")"};
    } else {
      // The library's own thread loads CUPTI and finds the contexts (a second or two).
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while ((line = last_status(t.status)).empty()) {
        if (!alive(t.pid)) return Error{"process " + std::to_string(t.pid) + " ended while aiflame attached"};
        if (std::chrono::steady_clock::now() > until)
          return Error{"process " + std::to_string(t.pid) + " loaded aiflame but its recording did not start within 60 s"};
        sleep_ms(20);
      }
    }
    if (line == "started") return Ok{};
    if (!starts_with(line, "refused ")) return Error{"process " + std::to_string(t.pid) + ": unexpected status '" + line + "'"};
    std::string why_code;
    std::string why = refusal_text(line, &why_code);
    if (a.wait && (why_code == "no-context" || why_code == "no-driver")) {
      if (!announced && !a.quiet())
        std::cerr << "aiflame: waiting for process " << t.pid << " to create a CUDA context (Ctrl-C to give up)\n";
      announced = true;
      sleep_ms(1000);
      continue;
    }
    return Error{"process " + std::to_string(t.pid) + ": " + why};
  }
}

}  // namespace

int run_attach(const RecordArgs& a, const std::string& lib, const std::string& output, const std::string& prefix,
               const Publish& previous) {
  struct sigaction sa = {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);

  std::vector<Target> targets;
  for (int pid : a.pids) {
    Target t;
    t.pid = pid;
    t.profile = prefix + "." + std::to_string(pid);
    t.status = t.profile + ".status";
    t.stop = t.profile + ".stop";
    auto ok = check_target(pid, lib);
    if (!ok) {
      std::cerr << "aiflame: " << ok.error() << "\n";
      return starts_with(ok.error(), "no process") ? kBadInput : kRefused;
    }
    targets.push_back(t);
  }
  std::string base = library_settings(a, prefix);
  uint64_t duration_ms = static_cast<uint64_t>(std::llround(a.duration_s * 1000));
  auto t_start = std::chrono::steady_clock::now();
  std::vector<Target> started;
  int code = 0;
  std::string failure;
  for (auto& t : targets) {
    unlink(t.stop.c_str());
    std::string settings = base + "AIFLAME_ATTACH_STATUS=" + t.status + "\nAIFLAME_ATTACH_STOP=" + t.stop +
                           "\nAIFLAME_ATTACH_CLI_PID=" + std::to_string(getpid()) + "\n";
    auto wait_until = duration_ms ? t_start + std::chrono::milliseconds(duration_ms) : std::chrono::steady_clock::time_point::max();
    auto ok = start_one(a, lib, settings, t, &code, wait_until);
    if (!ok) {
      failure = ok.error();
      unlink(t.status.c_str());
      break;
    }
    started.push_back(t);
  }
  if (!failure.empty()) {
    std::cerr << "aiflame: " << failure << "\n";
    if (started.empty()) return code;
    g_interrupts = 1;  // stop the ones already recording and keep what they have
  } else if (!a.quiet()) {
    std::cerr << "aiflame: recording process" << (started.size() > 1 ? "es" : "");
    for (const auto& t : started) std::cerr << " " << t.pid;
    if (duration_ms) std::cerr << " for " << a.duration_s << " s";
    std::cerr << " (Ctrl-C to stop and keep what was recorded)\n";
  }

  // Each target stops by itself after the duration; Ctrl-C (or the grace period) asks it to stop early.
  bool stop_sent = false;
  auto stop_all = [&] {
    for (auto& t : started)
      if (!t.done) std::ofstream(t.stop).put('\n');
    stop_sent = true;
  };
  std::chrono::steady_clock::time_point stop_at{};
  for (;;) {
    bool all_done = true;
    for (auto& t : started) {
      if (t.done) continue;
      std::string line = last_status(t.status);
      if (starts_with(line, "done")) {
        t.done = true;
        if (line == "done exit" && !a.quiet()) std::cerr << "aiflame: process " << t.pid << " ended during the recording\n";
      } else if (!alive(t.pid)) {
        t.done = true;
        if (!a.quiet()) std::cerr << "aiflame: process " << t.pid << " ended during the recording\n";
      }
      all_done = all_done && t.done;
    }
    if (all_done) break;
    auto now = std::chrono::steady_clock::now();
    bool overdue = duration_ms && now - t_start > std::chrono::milliseconds(duration_ms) + std::chrono::seconds(30);
    if ((g_interrupts || overdue) && !stop_sent) {
      if (!a.quiet()) std::cerr << "aiflame: stopping: detaching and keeping what was recorded\n";
      stop_all();
      stop_at = now;
    }
    // A second Ctrl-C, or a target that does not answer in 30 s: keep the profile as it is (readable
    // up to its last flush); the target's recording ends by itself once aiflame is gone.
    if (stop_sent && (g_interrupts > 1 || now - stop_at > std::chrono::seconds(30))) {
      std::cerr << "aiflame: not waiting any longer for the recording to close; the profile keeps what was flushed\n";
      break;
    }
    sleep_ms(50);
  }
  auto t_end = std::chrono::steady_clock::now();
  std::vector<std::string> files;
  for (const auto& t : started) {
    unlink(t.status.c_str());
    unlink(t.stop.c_str());
    struct stat st;
    if (stat(t.profile.c_str(), &st) == 0) files.push_back(t.profile);
    else std::cerr << "aiflame: process " << t.pid << " left no profile at " << t.profile << "\n";
  }
  if (files.empty()) return kRefused;
  bool unnamed = false;
  // Named as a started program's profiles are: FILE for one, FILE.<pid> for several; a name taken
  // meanwhile by what is not ours to move gets FILE-2 (record_output.h).
  for (auto& f : files) {
    std::string pid_text = f.substr(prefix.size() + 1);
    Publish pub = previous;
    if (files.size() > 1) {
      pub = plan_publish(f, output + "." + pid_text);
      pub.had_previous = false;
    }
    pub.tmp = f;
    int named = publish_profile(pub, a.force);
    if (!named) {
      std::cerr << "aiflame: cannot name the profile " << pub.final_name << " (" << std::strerror(errno) << "); it is kept as "
                << f << "\n";
      unnamed = true;
      continue;
    }
    if (named == 2)
      std::cerr << "aiflame: " << pub.final_name << " was named by another run meanwhile (kept); this run's profile is "
                << pub.published << "\n";
    f = pub.published;
  }

  std::vector<ProcessRow> rows;
  GpuSymbolizerOptions gpu{a.sass_timeout_s > 0, find_nvdisasm(a.nvdisasm)};
  std::vector<std::string> notes;
  FinalizeStats fin;
  for (const auto& f : files) {
    auto p = finalize_profile(f, gpu, &notes, &fin, static_cast<int>(a.sass_timeout_s * 1000));
    if (!p) {
      std::cerr << "aiflame: symbolizing " << f << " failed: " << p.error() << "\n";
      p = read_profile(f, BatchReading::Skip);
    }
    if (a.quiet()) continue;
    if (!p) {
      std::cerr << "aiflame: " << p.error() << "\n";
      continue;
    }
    auto stats = stream_attribution_stats(f, *p);
    if (!stats) {
      std::cerr << "aiflame: " << stats.error() << "\n";
      continue;
    }
    if (files.size() == 1) {
      print_summary(*p, *stats, f, std::cerr);
      print_top_summary(f, std::cerr);
    } else rows.push_back(process_row(*p, *stats, f));
    if (stats->samples > 0)
      if (auto shape = serialized_streams(*p))
        std::cerr << "aiflame: " << (files.size() > 1 ? f + ": " : "") << serialized_streams_hint(*shape) << "\n";
  }
  if (!a.quiet() && files.size() > 1) {
    std::cerr << "aiflame: " << files.size() << " processes recorded:\n";
    print_process_table(rows, std::cerr);
    std::cerr << "aiflame: `aiflame report " << output << ".*` draws them in one picture (--group-by process)\n";
  }
  if (!a.quiet()) {
    for (const auto& n : notes) std::cerr << "aiflame: " << n << "\n";
    std::cerr << "aiflame: attached " << std::fixed << std::setprecision(2)
              << std::chrono::duration<double>(t_end - t_start).count() << " s; symbolizing and the summary took "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t_end).count() << " s\n";
  }
  if (!failure.empty()) return code;
  return unnamed ? kRecordOwnFailure : 0;
}

}  // namespace aiflame
