// `aiflame record [options] -- CMD [ARGS...]`: runs CMD with the injection library and turns what
// each CUDA process of it wrote into a finished profile.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>

#include <chrono>
#include <climits>
#include <iomanip>
#include <cstring>
#include <iostream>

#include "attribute/attribution.h"
#include "attribute/profile_flame.h"
#include "cli/commands.h"
#include "cli/duty_command.h"
#include "cli/finalize.h"
#include "cli/process_table.h"
#include "symbolize/nvidia/nvdisasm.h"
#include "cli/stream_hint.h"
#include "cli/summary.h"
#include "profile/profile_writer.h"
#include "record/record_options.h"

namespace aiflame {

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

void add_record_command(CLI::App& app, RecordArgs& a) {
  auto* sub = app.add_subcommand("record", "Run a command and record GPU samples, kernels and launch stacks");
  sub->add_option("-o,--output", a.output,
                  "Profile file to write (an existing one is kept as FILE.old; several CUDA processes: FILE.<pid> each). "
                  "Checked before the program starts: a missing or read-only directory, a directory as FILE or a "
                  "full disk is said in one line, and the program then runs unprofiled")
      ->capture_default_str();
  sub->add_flag("-f,--force", a.force, "Overwrite the output file instead of rotating it to FILE.old");
  sub->add_flag("--require-profile", a.require_profile,
                "Do not start the program when its profile cannot be written (exit 2) instead of running it unprofiled");
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
  sub->add_option("--pid", a.pids, "Attach to running process(es) instead of starting one (repeat or comma-separate "
                  "for several): no restart, no environment variable; needs ptrace (root, or the same user)")
      ->delimiter(',')->check(CLI::PositiveNumber);
  sub->add_option("--duration", a.duration_s, "With --pid: seconds to record, then detach (default: until Ctrl-C)")
      ->check(CLI::NonNegativeNumber);
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

// A profile this run created, under its run-unique name, and the name it gets at the end.
struct Publish {
  std::string tmp, final_name, old_name;
  volatile sig_atomic_t done = 0;
};

// Moves whatever is at final_name out of the way (to old_name, or replaced with force), then names
// the profile. Only calls that are safe in a signal handler: the end phase's interrupt publishes too.
bool publish_now(const Publish& p, bool force) {
  struct stat st;
  if (!force && lstat(p.final_name.c_str(), &st) == 0) rename(p.final_name.c_str(), p.old_name.c_str());
  return rename(p.tmp.c_str(), p.final_name.c_str()) == 0;
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
      if (!p.done && publish_now(p, g_pending_force)) p.done = 1;
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

int run_record(const RecordArgs& a) {
  if (a.command.empty() == a.pids.empty()) {
    std::cerr << (a.command.empty() ? "aiflame: record needs a command after -- (or --pid PID to attach to a running program)\n"
                                    : "aiflame: record takes either a command or --pid, not both\n");
    return 2;
  }
  if (a.pids.empty() && (a.duration_s > 0 || a.wait)) {
    std::cerr << "aiflame: --duration and --wait go with --pid (attaching to a running program)\n";
    return 2;
  }
  std::string lib = find_library(a);
  if (lib.empty() || !exists(lib)) {
    std::cerr << "aiflame: injection library libaiflame_cupti.so not found next to aiflame; pass --lib PATH or set AIFLAME_LIB\n";
    return 2;
  }
  // Windows mode gives exact samples and costs about 2% of a long single-threaded training run on the
  // H100, but it ran eight threads on eight streams 4x slower or hung them, and its few windows leave
  // short runs nearly without samples (bench/RESULTS.md, "Recorder v2, third session").
  if (a.option("pc_mode") == "windows" && !std::getenv("AIFLAME_EXPERIMENTAL")) {
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
  if (!a.pids.empty()) {
    // Attaching: the processes write FILE.<pid> themselves (attach_command.cpp), and the CLI names FILE at
    // the end; an existing FILE is moved aside now, as before #25's run prefix.
    if (exists(output)) {
      if (a.force) {
        unlink(output.c_str());
      } else if (rename(output.c_str(), (output + ".old").c_str()) != 0) {
        std::cerr << "aiflame: cannot move the existing " << output << " to .old: " << std::strerror(errno) << "\n";
        return 2;
      }
    }
    return run_attach(a, lib, output);
  }
  auto t_start = std::chrono::steady_clock::now();

  if (problem.empty()) setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
  // The options given, in the variables of the schema; the others keep the environment's values (the
  // measurement switches of bench/) or the library's defaults.
  auto options = a.options;
  options["output"] = prefix;
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
  int exec_errno = 0;
  ssize_t got = read(pipefd[0], &exec_errno, sizeof exec_errno);
  close(pipefd[0]);
  // Wait without reaping first: while the child is a zombie its pid cannot be reused, so a signal
  // forwarded up to the moment g_child is cleared still reaches the program, never a stranger.
  siginfo_t info = {};
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {}
  g_child = 0;
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
    return 127;
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
  if (!problem.empty()) return own_failure("no profile was written: cannot record to " + output + ": " + problem);

  auto files = per_process_files(prefix);
  if (files.empty() && !driver_present()) {
    std::string why = "no NVIDIA driver here (libcuda.so.1 not found), so the program ran unprofiled: install the "
                      "NVIDIA driver, or record on a machine with a GPU";
    if (!a.quiet()) std::cerr << "aiflame: " << why << "\n";
    Publish empty{prefix + "." + std::to_string(pid), output, output + ".old"};
    if (Status st = write_empty_profile(empty.tmp, pid, a.command, why); !st) {
      unlink(empty.tmp.c_str());
      return own_failure("cannot write the profile " + output + ": " + st.error());
    }
    if (!publish_now(empty, a.force)) {
      int e = errno;
      unlink(empty.tmp.c_str());
      return own_failure("cannot name the profile " + output + ": " + std::strerror(e));
    }
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
    std::string final_name = several ? output + "." + pid_text : output;
    pending.push_back({f, final_name, final_name + ".old"});
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
    bool named = publish_now(pub, a.force);
    int e = errno;
    pub.done = 1;
    sigprocmask(SIG_SETMASK, &old, nullptr);
    const std::string& name = named ? pub.final_name : pub.tmp;
    if (!named) failures.push_back("cannot name the profile " + pub.final_name + " (" + std::strerror(e) + "); it is kept as " + pub.tmp);
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
    if (!several) print_summary(*p, stats, name, std::cerr);
    else rows.push_back(process_row(*p, stats, name));
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
