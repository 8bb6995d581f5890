// `aiflame demo`: records the bundled matrix-multiply demo when a GPU is present, otherwise renders
// the recording of it made on an H100 that ships with aiflame.
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>

#include "cli/commands.h"

namespace aiflame {

void add_demo_command(CLI::App& app, DemoArgs& a) {
  auto* sub = app.add_subcommand("demo", "Profile the bundled matrix-multiply demo and write PREFIX.svg and PREFIX.folded");
  sub->add_option("--prefix", a.prefix, "Output name prefix")->capture_default_str();
  sub->add_flag("-f,--force", a.force, "Overwrite PREFIX.aiflame, PREFIX.svg and PREFIX.folded");
  sub->add_flag("--bundled", a.bundled, "Render the bundled H100 recording even when a GPU is present");
}

namespace {

bool file_exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// A usable NVIDIA GPU: the driver library loads, initializes and reports a device.
bool have_gpu() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return false;
  auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(h, "cuInit"));
  auto count = reinterpret_cast<int (*)(int*)>(dlsym(h, "cuDeviceGetCount"));
  int n = 0;
  // cuInit here loads no injection: CUDA_INJECTION64_PATH is not set in this process.
  bool ok = init && count && init(0) == 0 && count(&n) == 0 && n > 0;
  return ok;
}

int run_self(const std::string& self, std::vector<std::string> args) {
  args.insert(args.begin(), self);
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    execv(self.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

std::string bundled_profile() {
  for (const std::string& p : {self_dir() + "/../share/aiflame/demo_matmul.aiflame",
                               std::string(AIFLAME_SOURCE_DIR) + "/tests/data/demo_matmul.aiflame"})
    if (file_exists(p)) return p;
  return {};
}

}  // namespace

int run_demo(const DemoArgs& a, const std::string&) {
  std::string self = self_dir() + "/aiflame";
  std::string profile;
  std::string demo_bin = self_dir() + "/aiflame_demo_matmul";
  if (!a.bundled && have_gpu() && file_exists(demo_bin)) {
    profile = a.prefix + ".aiflame";
    std::cerr << "aiflame: recording the matrix-multiply demo (" << demo_bin << ")\n";
    std::vector<std::string> args = {"record", "-o", profile};
    if (a.force) args.push_back("--force");
    args.insert(args.end(), {"--", demo_bin});
    int rc = run_self(self, args);
    if (rc != 0) {
      std::cerr << "aiflame: the demo failed (exit status " << rc << ")\n";
      return rc;
    }
  } else {
    profile = bundled_profile();
    if (profile.empty()) {
      std::cerr << "aiflame: no GPU here and the bundled demo profile (tests/data/demo_matmul.aiflame) is missing\n";
      return 1;
    }
    std::cerr << "aiflame: " << (a.bundled ? "as asked" : (file_exists(demo_bin) ? "no GPU found" : "the demo program was not built (no nvcc)"))
              << ": rendering the bundled H100 recording " << profile << "\n";
  }
  std::vector<std::string> svg = {"report", profile, "-o", a.prefix + ".svg", "--title", "AI Flame Graph: matrix multiply demo"};
  std::vector<std::string> folded = {"report", profile, "-o", a.prefix + ".folded", "-q"};
  if (a.force) svg.push_back("--force"), folded.push_back("--force");
  int rc = run_self(self, svg);
  if (rc == 0) rc = run_self(self, folded);
  if (rc == 0) std::cerr << "aiflame: open " << a.prefix << ".svg in a browser\n";
  return rc;
}

}  // namespace aiflame
