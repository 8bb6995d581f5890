// `aiflame record [options] -- CMD [ARGS...]`: runs CMD with the injection library and turns what
// each CUDA process of it wrote into a finished profile.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <iomanip>
#include <cstring>
#include <iostream>

#include "attribute/attribution.h"
#include "attribute/profile_flame.h"
#include "cli/commands.h"
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
  sub->add_option("-o,--output", a.output, "Profile file to write (an existing one is kept as FILE.old)")
      ->capture_default_str();
  sub->add_flag("-f,--force", a.force, "Overwrite the output file instead of rotating it to FILE.old");
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
  sub->add_option("command", a.command, "The command to profile, after --")->required()->expected(-1);
}

namespace {

pid_t g_child = 0;

void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
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
void write_empty_profile(const std::string& path, pid_t pid, const std::vector<std::string>& command,
                         const std::string& why) {
  ProfileWriter w;
  std::string error;
  if (!w.open(path, /*overwrite=*/false, &error)) return;
  ProcessRecord p;
  p.pid = static_cast<uint32_t>(pid);
  p.ppid = static_cast<uint32_t>(getpid());
  for (const auto& arg : command) p.command += (p.command.empty() ? "" : " ") + arg;
  p.tool_version = AIFLAME_VERSION;
  w.add(p);
  w.add(WarningRecord{why});
  w.add(EndRecord{});
  w.close();
}

std::vector<std::string> per_process_files(const std::string& output, time_t since) {
  std::string dir = output.substr(0, output.rfind('/'));
  std::string base = output.substr(output.rfind('/') + 1) + ".";
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
    if (lstat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime >= since) found.push_back(full);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

int run_record(const RecordArgs& a) {
  std::string lib = find_library(a);
  if (lib.empty() || !exists(lib)) {
    std::cerr << "aiflame: injection library libaiflame_cupti.so not found next to aiflame; pass --lib PATH or set AIFLAME_LIB\n";
    return 2;
  }
  // Windows mode does not work with CUPTI 13.0 on the H100 (kernel-serialized sampling delivered no
  // sample, and start/stop from a second thread deadlocked a launch; bench/RESULTS.md).
  if (a.option("pc_mode") == "windows" && !std::getenv("AIFLAME_EXPERIMENTAL")) {
    std::cerr << "aiflame: --pc-mode windows is experimental: with CUPTI 13.0 it recorded no GPU sample and could hang "
                 "the program (bench/RESULTS.md); use the default continuous mode, or set AIFLAME_EXPERIMENTAL=1 to try it\n";
    return 2;
  }
  if (!a.nvdisasm.empty() && find_nvdisasm(a.nvdisasm).empty()) {
    std::cerr << "aiflame: --nvdisasm " << a.nvdisasm << " is not an executable file; pass the path of CUDA's nvdisasm\n";
    return 2;
  }
  std::string output = absolute(a.output);
  if (exists(output)) {
    if (a.force) {
      unlink(output.c_str());
    } else if (rename(output.c_str(), (output + ".old").c_str()) != 0) {
      std::cerr << "aiflame: cannot move the existing " << output << " to .old: " << std::strerror(errno) << "\n";
      return 2;
    }
  }
  time_t started = time(nullptr);
  auto t_start = std::chrono::steady_clock::now();

  setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
  // The options given, in the variables of the schema; the others keep the environment's values (the
  // measurement switches of bench/) or the library's defaults.
  auto options = a.options;
  options["output"] = output;
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
  int status = 0;
  struct rusage usage = {};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {}
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    std::cerr << "aiflame: cannot run '" << a.command[0] << "': " << std::strerror(exec_errno) << "\n";
    return 127;
  }
  int rc = exit_status_of(status);
  auto t_exit = std::chrono::steady_clock::now();
  if (WIFSIGNALED(status) && !a.quiet())
    std::cerr << "aiflame: the program was killed by signal " << WTERMSIG(status) << " (" << strsignal(WTERMSIG(status)) << ")\n";

  auto files = per_process_files(output, started);
  if (files.empty() && !driver_present()) {
    std::string why = "no NVIDIA driver here (libcuda.so.1 not found), so the program ran unprofiled: install the "
                      "NVIDIA driver, or record on a machine with a GPU";
    std::cerr << "aiflame: " << why << "\n";
    write_empty_profile(output, pid, a.command, why);
    return rc;
  }
  if (files.empty()) {
    std::cerr << "aiflame: no profile was written: the command made no CUDA call (or the injection library could not "
                 "start; see the messages above)\n";
    return rc;
  }
  if (files.size() == 1 && rename(files[0].c_str(), output.c_str()) == 0) files[0] = output;
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
    auto streamed = stream_attribution_stats(f, *p);
    if (!streamed) {
      std::cerr << "aiflame: " << streamed.error() << "\n";
      continue;
    }
    const AttributionStats& stats = *streamed;
    if (files.size() == 1) print_summary(*p, stats, f, std::cerr);
    else rows.push_back(process_row(*p, stats, f));
    if (stats.samples > 0)  // PC sampling was on
      if (auto shape = serialized_streams(*p))
        std::cerr << "aiflame: " << (files.size() > 1 ? f + ": " : "") << serialized_streams_hint(*shape) << "\n";
  }
  if (!a.quiet() && files.size() > 1) {
    // A launcher's tree (torchrun, mpirun, DataLoader workers): one line per CUDA process and a total.
    std::cerr << "aiflame: " << files.size() << " CUDA processes recorded:\n";
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
  return rc;
}

}  // namespace aiflame
