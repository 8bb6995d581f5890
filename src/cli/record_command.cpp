// `aiflame record [options] -- CMD [ARGS...]`: runs CMD with the injection library and turns what
// each CUDA process of it wrote into a finished profile.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>

#include <chrono>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cmath>
#include <iomanip>
#include <cstring>
#include <iostream>

#include "attribute/attribution.h"
#include "attribute/profile_flame.h"
#include "cli/commands.h"
#include "cli/duty_command.h"
#include "cli/finalize.h"
#include "cli/process_table.h"
#include "cli/record_output.h"
#include "cli/sampling_rate.h"
#include "symbolize/nvidia/nvdisasm.h"
#include "cli/stream_hint.h"
#include "cli/summary.h"
#include "profile/profile_writer.h"
#include "record/record_options.h"
#include "util/env_switch.h"

namespace aiflame {

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

namespace {

// CLI11's PositiveNumber and NonNegativeNumber name their range up to the largest double, 309 digits.
CLI::Validator pid_number() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        char* end = nullptr;
        errno = 0;
        long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || errno || n < 1 || n > INT_MAX) return "takes process ids (1 or more), not '" + v + "'";
        return "";
      },
      "PID");
}

CLI::Validator seconds_number() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        char* end = nullptr;
        double s = std::strtod(v.c_str(), &end);
        if (v.empty() || *end || !(s >= 0) || s > 1e9) return "takes seconds (0 or more), not '" + v + "'";
        return "";
      },
      "SECONDS");
}

}  // namespace

void add_record_command(CLI::App& app, RecordArgs& a) {
  auto* sub = app.add_subcommand("record", "Run a command and record GPU samples, kernels and launch stacks");
  sub->add_option("-o,--output", a.output,
                  "Profile file to write (an existing one is kept as FILE.old; several CUDA processes: FILE.<pid> each; "
                  "a name another run took meanwhile: FILE-2, said). Checked before the program starts: a device, "
                  "FIFO or symbolic link as FILE is refused (exit 2, never moved or written); a missing or read-only "
                  "directory, a directory as FILE or a full disk is said in one line, and the program then runs "
                  "unprofiled")
      ->capture_default_str();
  sub->add_flag("-f,--force", a.force, "Overwrite the output file instead of rotating it to FILE.old");
  sub->add_flag("--require-profile", a.require_profile,
                "Do not start the program when it cannot be profiled (exit 2): its profile cannot be written, or "
                "there is no NVIDIA driver; without it the program runs unprofiled, with a line that says why");
  // The injection library's options, from its schema: each value is checked here by the parser the
  // library runs, and handed over in the option's environment variable.
  for (const RecordOptionSpec& spec : record_option_schema()) {
    if (!spec.cli) continue;
    if (spec.flag_value) {
      sub->add_flag_callback(spec.cli, [&a, &spec] { a.options[spec.name] = spec.flag_value; }, spec.help);
      continue;
    }
    CLI::Validator valid(
        [&spec](std::string& v) -> std::string {
          RecordOptions scratch;
          return spec.parse(scratch, v) ? "" : std::string("takes ") + spec.expected + ", not '" + v + "'";
        },
        spec.expected);
    sub->add_option_function<std::string>(spec.cli, [&a, &spec](const std::string& v) { a.options[spec.name] = v; },
                                          spec.help)
        ->check(valid);
  }
  sub->add_option("--lib", a.lib, "Injection library (default: $AIFLAME_LIB or libaiflame_cupti.so next to aiflame)");
  sub->add_option("--nvdisasm", a.nvdisasm,
                  "nvdisasm for the SASS names of sampled instructions (default: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)");
  sub->add_option("--sass-timeout", a.sass_timeout_s,
                  "Seconds nvdisasm may take in all when the recording ends (sampled kernels only, in parallel); "
                  "instructions left without a name show their offsets, and `aiflame report` can name them later; "
                  "0: no SASS names at record time")
      ->check(CLI::Range(0u, 86400u))->capture_default_str();
  sub->add_option("command", a.command, "The command to profile, after --")->expected(-1);
  sub->add_option("-p,--pid", a.pids, "Attach to running process(es) instead of starting one (repeat or comma-separate "
                  "for several): no restart, no environment variable; needs ptrace (root, or the same user)")
      ->delimiter(',')->check(pid_number());
  sub->add_option("--duration", a.duration_s,
                  "Seconds to record (default: until Ctrl-C or the program ends). With --pid: then detach, the "
                  "program runs on; with a command: then the program is interrupted (SIGINT, as Ctrl-C) and its "
                  "profile written")
      ->check(seconds_number());
  sub->add_option("--rate", a.rate_hz,
                  "Samples per second per SM, instead of --period: the period is 2^N cycles of the SM clock with "
                  "N = round(log2(clock / HZ)) in 5..31 (so within a factor of 1.4 of HZ), the clock being device "
                  "0's maximum SM clock from the driver, or 1.98 GHz (H100 SXM) without one; e.g. 100 Hz on an H100 "
                  "is --period 24 (118/s)")
      ->check(CLI::PositiveNumber)->excludes(sub->get_option("--period"));
  sub->add_flag("--wait", a.wait, "With --pid: wait for the process to create its CUDA context instead of refusing");
}

namespace {

// The program while it runs; 0 once it has ended, so that a signal is never sent to a pid that
// may be reused by then.
volatile pid_t g_child = 0;

void forward_signal(int sig) {
  pid_t child = g_child;
  if (child > 0) kill(child, sig);
}

// Said even with -q: the profile is not where the user asked for it.
std::string taken_note(const std::string& wanted, const std::string& got) {
  return wanted + " was named by another run meanwhile (kept); this run's profile is " + got;
}

// --duration when launching: the time is up, the program is interrupted as Ctrl-C would.
void duration_over(int) {
  pid_t child = g_child;
  if (child > 0) kill(child, SIGINT);
}

// --rate HZ as the --period the injection library takes (cli/sampling_rate.h), said in one line.
std::string rate_period(double hz, bool quiet) {
  std::string where;
  double clock = device_sm_clock_hz(&where);
  if (clock > 0) where = where + "'s SM clock";
  else clock = kNominalSmClockHz, where = "H100 SXM's SM clock, no driver here to ask";
  unsigned n = period_log2_for_rate(hz, clock);
  if (!quiet)
    std::cerr << "aiflame: --rate " << hz << ": --period " << n << " (2^" << n << " cycles at " << clock / 1e9 << " GHz, "
              << where << ": " << std::lround(clock / std::ldexp(1.0, static_cast<int>(n))) << " samples/s per SM)\n";
  return std::to_string(n);
}

// What the end phase's interrupt handler publishes: set up before the handler is installed.
std::vector<Publish>* g_pending = nullptr;
bool g_pending_force = false;
const char* g_interrupt_note = "";

// Ctrl-C (or TERM, HUP) once the program has ended: stop symbolizing at once, name the profiles as
// they are (readable; `aiflame report` names what it can), and exit with the signal's status.
void end_phase_interrupt(int sig) {
  if (g_pending)
    for (auto& p : *g_pending)
      if (!p.done)
        if (int named = publish_profile(p, g_pending_force)) {
          p.done = 1;
          if (named == 2) {
            const char* parts[] = {"aiflame: interrupted: ", p.final_name.c_str(), " was taken; the profile is ", p.published, "\n"};
            for (const char* part : parts) (void)!write(2, part, strlen(part));
          }
        }
  (void)!write(2, g_interrupt_note, strlen(g_interrupt_note));
  _exit(128 + sig);
}

bool exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

std::string absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char buf[PATH_MAX];
  if (!getcwd(buf, sizeof buf)) return p;
  return std::string(buf) + "/" + p;
}

std::string find_library(const RecordArgs& a) {
  if (!a.lib.empty()) return absolute(a.lib);
  if (const char* e = std::getenv("AIFLAME_LIB"); e && *e) return absolute(e);
  for (const char* rel : {"/libaiflame_cupti.so", "/../lib/libaiflame_cupti.so", "/../lib/aiflame/libaiflame_cupti.so"}) {
    std::string p = self_dir() + rel;
    if (exists(p)) return p;
  }
  return {};
}

// FILE.<pid> files the injection library wrote during this run.
// The NVIDIA driver's library loads: without it no CUDA call succeeds and no injection library starts.
bool driver_present() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

// A readable profile that holds only why it is empty, so that `aiflame report` says so too.
Status write_empty_profile(const std::string& path, pid_t pid, const std::vector<std::string>& command,
                           const std::string& why) {
  ProfileWriter w;
  std::string error;
  if (!w.open(path, /*overwrite=*/false, &error)) return Error{error};
  ProcessRecord p;
  p.pid = static_cast<uint32_t>(pid);
  p.ppid = static_cast<uint32_t>(getpid());
  for (const auto& arg : command) p.command += (p.command.empty() ? "" : " ") + arg;
  p.tool_version = AIFLAME_VERSION;
  w.add(p);
  w.add(WarningRecord{why});
  w.add(EndRecord{});
  if (!w.close()) return Error{path + ": " + w.error()};
  return Ok{};
}

// The FILE.<pid> files the injection library wrote in this run: their names start with this run's
// own prefix (AIFLAME_OUTPUT), so that two runs with the same -o never take each other's.
std::vector<std::string> per_process_files(const std::string& prefix) {
  std::string dir = prefix.substr(0, prefix.rfind('/'));
  std::string base = prefix.substr(prefix.rfind('/') + 1) + ".";
  std::vector<std::string> found;
  DIR* d = opendir(dir.c_str());
  if (!d) return found;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= base.size() || name.compare(0, base.size(), base) != 0) continue;
    std::string rest = name.substr(base.size());
    if (rest.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string full = dir + "/" + name;
    struct stat st;
    if (lstat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode)) found.push_back(full);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

// A name no other run uses at the same time: aiflame's pid (unique among running processes on this
// host) and 32 random bits (other hosts, on a shared file system).
std::string run_id() {
  std::random_device rd;
  char buf[16];
  snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
  return std::to_string(getpid()) + "-" + buf;
}

// Whether the profile can be written at `output`, asked before the program starts: empty when it
// can, else what is wrong, in words. A probe file is created (and removed) under this run's prefix,
// which finds missing directories, permissions and read-only file systems alike.
std::string output_problem(const std::string& output, const std::string& prefix) {
  struct stat st;
  if (stat(output.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return output + " is a directory; name a file for the profile (e.g. " + output + "/aiflame.data)";
  std::string dir = output.substr(0, output.rfind('/'));
  if (dir.empty()) dir = "/";
  if (stat(dir.c_str(), &st) != 0) return "the directory " + dir + " " + (errno == ENOENT ? "does not exist" : std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  std::string probe = prefix + ".check";
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot create files in " + dir + ": " + std::strerror(errno);
  close(fd);
  unlink(probe.c_str());
  struct statvfs vfs;
  if (statvfs(dir.c_str(), &vfs) == 0 && uint64_t{vfs.f_bavail} * vfs.f_frsize < (uint64_t{1} << 20))
    return "no space left on the file system of " + dir + " (under 1 MiB free)";
  return {};
}

size_t file_size(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
}

int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace


// Level Zero has no injection variable: the preloaded libaiflame_ze_preload.so (next to the injection
// library; record/levelzero/ze_preload.c says why this way) starts the library at the program's first
// zeInit. The loader needs its tracing layer on at that zeInit, and metrics enabled for EU-stall
// sampling. A program built with ASan refuses to start when a preloaded object comes before ASan's
// runtime; the preloaded object allocates nothing and interposes nothing of ASan's, so that check is
// turned off for the command. A program reaches Level Zero only through its loader: where this machine
// has none, nothing is preloaded, so CUDA programs there run exactly as before.
static bool level_zero_loader_present() {
  void* h = dlopen("libze_loader.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return false;
  dlclose(h);
  return true;
}
static void preload_for_level_zero(const std::string& lib) {
  const std::string preload = lib.substr(0, lib.rfind('/') + 1) + "libaiflame_ze_preload.so";
  if (!exists(preload) || !level_zero_loader_present()) return;
  const char* old = std::getenv("LD_PRELOAD");
  setenv("LD_PRELOAD", (old && *old ? preload + ":" + old : preload).c_str(), 1);
  setenv("ZE_ENABLE_TRACING_LAYER", "1", 1);
  setenv("ZET_ENABLE_METRICS", "1", 1);
  const char* asan = std::getenv("ASAN_OPTIONS");
  setenv("ASAN_OPTIONS", (asan && *asan ? std::string(asan) + ":verify_asan_link_order=0" : std::string("verify_asan_link_order=0")).c_str(), 1);
}

int run_record(const RecordArgs& a) {
  if (a.command.empty() == a.pids.empty()) {
    std::cerr << (a.command.empty() ? "aiflame: record needs a command after -- (or --pid PID to attach to a running program)\n"
                                    : "aiflame: record takes either a command or --pid, not both\n");
    return 2;
  }
  if (a.pids.empty() && a.wait) {
    std::cerr << "aiflame: --wait goes with --pid (attaching to a running program)\n";
    return 2;
  }
  std::string lib = find_library(a);
  if (lib.empty() || !exists(lib)) {
    // The path the user gave, when one was given: not the default name.
    const char* env_lib = std::getenv("AIFLAME_LIB");
    if (!a.lib.empty()) std::cerr << "aiflame: --lib " << a.lib << ": no such file (the injection library libaiflame_cupti.so)\n";
    else if (env_lib && *env_lib) std::cerr << "aiflame: AIFLAME_LIB=" << env_lib << ": no such file (the injection library libaiflame_cupti.so)\n";
    else std::cerr << "aiflame: injection library libaiflame_cupti.so not found next to aiflame; pass --lib PATH or set AIFLAME_LIB\n";
    return 2;
  }
  // Windows mode gives exact samples and costs about 2% of a long single-threaded training run on the
  // H100, but it ran eight threads on eight streams 4x slower or hung them, and its few windows leave
  // short runs nearly without samples.
  if (a.option("pc_mode") == "windows" && !switch_on("AIFLAME_EXPERIMENTAL")) {
    std::cerr << "aiflame: --pc-mode windows is experimental: it can stall programs that launch from several threads "
                 "(docs/attribution.md); use the default continuous mode, or set AIFLAME_EXPERIMENTAL=1 to try it\n";
    return 2;
  }
  if (!a.nvdisasm.empty() && find_nvdisasm(a.nvdisasm).empty()) {
    std::cerr << "aiflame: --nvdisasm " << a.nvdisasm << " is not an executable file; pass the path of CUDA's nvdisasm\n";
    return 2;
  }
  if (const std::string& duty = a.option("duty"); !duty.empty() && duty != "off") return run_duty_record(a, lib);
  std::string output = absolute(a.output);
  // A device node, FIFO, socket or link at -o is never ours to write, move or delete: refused before
  // anything runs, as `report -o` refuses it.
  if (std::string refusal = record_output_refusal(output); !refusal.empty()) {
    std::cerr << "aiflame: cannot record to " << output << ": " << refusal
              << (a.pids.empty() ? "; the program was not started\n" : "; nothing attached\n");
    return 2;
  }
  // What is at -o now: the only file the end may move to FILE.old (or replace with -f). A profile
  // another run names there meanwhile is kept, and this run's gets FILE-2.
  const Publish previous = plan_publish("", output);
  // The injection library writes PREFIX.<pid>; the prefix is this run's own (two runs with the same
  // -o never take each other's files), and the files are named FILE (or FILE.<pid>) only at the end.
  const std::string prefix = output + ".rec-" + run_id();
  const std::string problem = output_problem(output, prefix);
  if (!problem.empty()) {
    if (a.require_profile || !a.pids.empty()) {  // an attach has no program to run unprofiled
      std::cerr << "aiflame: cannot record to " << output << ": " << problem
                << (a.pids.empty() ? "; the program was not started\n" : "; nothing attached\n");
      return 2;
    }
    std::cerr << "aiflame: cannot record to " << output << ": " << problem
              << "; the program runs unprofiled (--require-profile: do not run it)\n";
  }
  // Without a driver no process can be profiled: --require-profile refuses to start the program.
  if (a.require_profile && a.pids.empty() && !driver_present()) {
    std::cerr << "aiflame: no NVIDIA driver here (libcuda.so.1 not found), so nothing can be recorded; the program was "
                 "not started (--require-profile)\n";
    return 2;
  }
  if (!a.pids.empty()) {
    // Attaching: the processes write PREFIX.<pid> themselves (attach_command.cpp), and the CLI names
    // them at the end as a started program's are named.
    return run_attach(a, lib, output, prefix, previous);
  }
  auto t_start = std::chrono::steady_clock::now();

  if (problem.empty()) setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
  if (problem.empty()) preload_for_level_zero(lib);
  // The options given, in the variables of the schema; the others keep the environment's values (the
  // lab's AIFLAME_LAB) or the library's defaults.
  auto options = a.options;
  options["output"] = prefix;
  if (a.rate_hz > 0) options["period"] = rate_period(a.rate_hz, a.quiet());
  for (const auto& [name, value] : options)
    if (const RecordOptionSpec* spec = find_record_option(name)) setenv(spec->env, value.c_str(), 1);

  std::vector<char*> argv;
  for (const auto& s : a.command) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  // The child reports a failed exec through a close-on-exec pipe.
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    std::cerr << "aiflame: pipe failed: " << std::strerror(errno) << "\n";
    return 2;
  }
  pid_t pid = fork();
  if (pid < 0) {
    std::cerr << "aiflame: fork failed: " << std::strerror(errno) << "\n";
    return 2;
  }
  if (pid == 0) {
    close(pipefd[0]);
    execvp(argv[0], argv.data());
    int err = errno;
    (void)!write(pipefd[1], &err, sizeof err);
    _exit(127);
  }
  close(pipefd[1]);
  g_child = pid;
  struct sigaction sa = {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);
  if (a.duration_s > 0) {
    sa.sa_handler = duration_over;
    sigaction(SIGALRM, &sa, nullptr);
    itimerval t = {};
    t.it_value.tv_sec = static_cast<time_t>(a.duration_s);
    t.it_value.tv_usec = static_cast<suseconds_t>((a.duration_s - static_cast<double>(t.it_value.tv_sec)) * 1e6);
    if (t.it_value.tv_sec == 0 && t.it_value.tv_usec == 0) t.it_value.tv_usec = 1;
    setitimer(ITIMER_REAL, &t, nullptr);
  }
  int exec_errno = 0;
  ssize_t got = read(pipefd[0], &exec_errno, sizeof exec_errno);
  close(pipefd[0]);
  // Wait without reaping first: while the child is a zombie its pid cannot be reused, so a signal
  // forwarded up to the moment g_child is cleared still reaches the program, never a stranger.
  siginfo_t info = {};
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {}
  g_child = 0;
  if (a.duration_s > 0) {
    itimerval off = {};
    setitimer(ITIMER_REAL, &off, nullptr);
  }
  int status = 0;
  struct rusage usage = {};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {}
  // The end phase: Ctrl-C now stops aiflame's own work (end_phase_interrupt), nothing to forward.
  static std::vector<Publish> pending;  // handed to the handler once complete (below)
  g_pending_force = a.force;
  sa.sa_handler = end_phase_interrupt;
  sigfillset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  sa.sa_handler = SIG_DFL;
  for (int sig : {SIGQUIT, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    std::cerr << "aiflame: cannot run '" << a.command[0] << "': " << std::strerror(exec_errno) << "\n";
    // As a shell: 127 when there is no such command, 126 when it exists but cannot be executed.
    return exec_errno == ENOENT || exec_errno == ENOTDIR ? 127 : 126;
  }
  int rc = exit_status_of(status);
  auto t_exit = std::chrono::steady_clock::now();
  if (WIFSIGNALED(status) && !a.quiet())
    std::cerr << "aiflame: the program was killed by signal " << WTERMSIG(status) << " (" << strsignal(WTERMSIG(status)) << ")\n";
  // A failure of aiflame's own from here on: one line that gives the program's status too, and 125.
  auto own_failure = [&](const std::string& what) {
    std::cerr << "aiflame: " << what << " (the program exited with status " << rc << "; aiflame exits with "
              << kRecordOwnFailure << ")\n";
    return kRecordOwnFailure;
  };
  // The program ran unprofiled as the first line said it would (--require-profile refuses instead):
  // its status is the one a wrapped job's caller needs; 125 is for a profile lost unforeseen.
  if (!problem.empty()) return rc;

  auto files = per_process_files(prefix);
  if (files.empty() && !driver_present()) {
    std::string why = "no NVIDIA driver here (libcuda.so.1 not found), so the program ran unprofiled: install the "
                      "NVIDIA driver, or record on a machine with a GPU";
    if (!a.quiet()) std::cerr << "aiflame: " << why << "\n";
    Publish empty = previous;
    empty.tmp = prefix + "." + std::to_string(pid);
    if (Status st = write_empty_profile(empty.tmp, pid, a.command, why); !st) {
      unlink(empty.tmp.c_str());
      return own_failure("cannot write the profile " + output + ": " + st.error());
    }
    int named = publish_profile(empty, a.force);
    if (!named) {
      int e = errno;
      unlink(empty.tmp.c_str());
      return own_failure("cannot name the profile " + output + ": " + std::strerror(e));
    }
    if (named == 2) std::cerr << "aiflame: " << taken_note(output, empty.published) << "\n";
    return rc;
  }
  if (files.empty()) {
    std::cerr << "aiflame: no profile was written: the command made no CUDA call (or the injection library could not "
                 "start; see the messages above)\n";
    return rc;
  }
  // A file left empty is a profile whose every write failed (the injection library writes the
  // header when it starts): not "no CUDA call", a lost profile.
  std::vector<std::string> lost;
  for (auto it = files.begin(); it != files.end();) {
    if (file_size(*it) > 0) {
      ++it;
      continue;
    }
    lost.push_back(it->substr(prefix.size() + 1));
    unlink(it->c_str());
    it = files.erase(it);
  }
  const bool several = files.size() + lost.size() > 1;
  for (const auto& f : files) {
    std::string pid_text = f.substr(prefix.size() + 1);
    if (several) {
      // FILE.<pid> names are new in every run: one that is taken is kept, and this one is FILE.<pid>-2.
      pending.push_back(plan_publish(f, output + "." + pid_text));
      pending.back().had_previous = false;
    } else {
      pending.push_back(previous);
      pending.back().tmp = f;
    }
  }
  std::string note = "\naiflame: interrupted: the profiles are kept as they were recorded, without the native and "
                     "GPU names of this step (aiflame report names what it can)\n";
  g_interrupt_note = note.c_str();
  g_pending = &pending;
  std::vector<ProcessRow> rows;
  GpuSymbolizerOptions gpu{a.sass_timeout_s > 0, find_nvdisasm(a.nvdisasm)};
  std::vector<std::string> notes;
  FinalizeStats fin;
  std::vector<std::string> failures;
  for (auto& pub : pending) {
    const std::string& f = pub.tmp;
    auto p = finalize_profile(f, gpu, &notes, &fin, static_cast<int>(a.sass_timeout_s * 1000));
    if (!p) {
      failures.push_back("symbolizing " + pub.final_name + " failed: " + p.error());
      p = read_profile(f, BatchReading::Skip);
    }
    // Named now, with the interrupt blocked: the handler never moves a file this loop is naming.
    sigset_t block, old;
    sigfillset(&block);
    sigprocmask(SIG_BLOCK, &block, &old);
    int named = publish_profile(pub, a.force);
    int e = errno;
    pub.done = 1;
    sigprocmask(SIG_SETMASK, &old, nullptr);
    const std::string name = named ? std::string(pub.published) : pub.tmp;
    if (!named) failures.push_back("cannot name the profile " + pub.final_name + " (" + std::strerror(e) + "); it is kept as " + pub.tmp);
    if (named == 2) std::cerr << "aiflame: " << taken_note(pub.final_name, name) << "\n";
    if (a.quiet()) continue;
    if (!p) {
      std::cerr << "aiflame: " << p.error() << "\n";
      continue;
    }
    auto streamed = stream_attribution_stats(name, *p);
    if (!streamed) {
      std::cerr << "aiflame: " << streamed.error() << "\n";
      continue;
    }
    const AttributionStats& stats = *streamed;
    if (!several) {
      print_summary(*p, stats, name, std::cerr);
      print_top_summary(name, std::cerr);
    } else rows.push_back(process_row(*p, stats, name));
    if (stats.samples > 0)  // PC sampling was on
      if (auto shape = serialized_streams(*p))
        std::cerr << "aiflame: " << (several ? name + ": " : "") << serialized_streams_hint(*shape) << "\n";
  }
  g_pending = nullptr;
  if (!a.quiet() && rows.size() > 1) {
    // A launcher's tree (torchrun, mpirun, DataLoader workers): one line per CUDA process and a total.
    std::cerr << "aiflame: " << rows.size() << " CUDA processes recorded:\n";
    print_process_table(rows, std::cerr);
    std::cerr << "aiflame: `aiflame report " << output << ".*` draws them in one picture (--group-by rank|device|process)\n";
  }
  if (!a.quiet())
    for (const auto& n : notes) std::cerr << "aiflame: " << n << "\n";
  if (!a.quiet()) {
    using secs = std::chrono::duration<double>;
    std::cerr << "aiflame: the program ran " << std::fixed << std::setprecision(2)
              << secs(t_exit - t_start).count() << " s (CPU " << usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6
              << " s user, " << usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6 << " s system, peak RSS "
              << usage.ru_maxrss / 1024 << " MB); symbolizing and the summary took "
              << secs(std::chrono::steady_clock::now() - t_exit).count() << " s (native frames "
              << fin.native_s << " s for " << fin.native_addresses << " addresses, GPU source lines " << fin.gpu_lines_s
              << " s for " << fin.gpu_instructions << " instructions, SASS " << fin.sass.stats().seconds << " s for "
              << fin.sass.stats().kernels << " kernels of " << fin.sass.stats().cubins << " cubins)\n";
  }
  if (!lost.empty()) {
    std::string pids;
    for (const auto& l : lost) pids += (pids.empty() ? "" : ", ") + l;
    failures.push_back("the profile of process " + pids + " is lost: the injection library could not write it (0 bytes; " +
                       "is the disk of " + output + " full?)");
  }
  if (failures.empty()) return rc;
  for (size_t i = 0; i + 1 < failures.size(); i++) std::cerr << "aiflame: " << failures[i] << "\n";
  return own_failure(failures.back());
}

}  // namespace aiflame
