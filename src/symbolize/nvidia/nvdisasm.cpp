#include "symbolize/nvidia/nvdisasm.h"

#include <fcntl.h>
#include <gelf.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

extern char** environ;

namespace aiflame {
namespace {

bool is_executable(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A kernel's label line: "_Z12matmul_basicPKfS0_Pfi:" (not ".L_x_0:" or ".text.x:").
bool function_label(std::string_view line, std::string& name) {
  if (line.size() < 2 || line.back() != ':' || line.front() == '.' || line.front() == '/') return false;
  std::string_view n = line.substr(0, line.size() - 1);
  if (n.find_first_of(" \t,;") != std::string_view::npos) return false;
  name = std::string(n);
  return true;
}

// "/*0a30*/  @P0 LDG.E R4, [R2.64] ;" -> offset 0xa30, mnemonic "LDG.E".
bool instruction(std::string_view line, uint64_t& offset, std::string& mnemonic) {
  if (line.size() < 5 || line.substr(0, 2) != "/*") return false;
  size_t close = line.find("*/");
  if (close == std::string_view::npos || close == 2) return false;
  offset = 0;
  for (char c : line.substr(2, close - 2)) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0 || offset >> 60) return false;
    offset = offset * 16 + static_cast<uint64_t>(d);
  }
  std::string_view rest = trim(line.substr(close + 2));
  if (!rest.empty() && rest.front() == '@') {  // predicate guard
    size_t sp = rest.find_first_of(" \t");
    if (sp == std::string_view::npos) return false;
    rest = trim(rest.substr(sp));
  }
  size_t end = rest.find_first_of(" \t;");
  std::string_view op = rest.substr(0, end);
  if (op.empty() || !(op.front() >= 'A' && op.front() <= 'Z')) return false;
  mnemonic = std::string(op);
  return true;
}

}  // namespace

std::string find_nvdisasm(const std::string& explicit_path) {
  if (!explicit_path.empty()) return is_executable(explicit_path) ? explicit_path : "";
  if (const char* path = std::getenv("PATH")) {
    std::string_view p(path);
    while (!p.empty()) {
      size_t colon = p.find(':');
      std::string dir(p.substr(0, colon));
      if (!dir.empty() && is_executable(dir + "/nvdisasm")) return dir + "/nvdisasm";
      if (colon == std::string_view::npos) break;
      p.remove_prefix(colon + 1);
    }
  }
  if (const char* home = std::getenv("CUDA_HOME"); home && *home)
    if (is_executable(std::string(home) + "/bin/nvdisasm")) return std::string(home) + "/bin/nvdisasm";
  if (is_executable("/usr/local/cuda/bin/nvdisasm")) return "/usr/local/cuda/bin/nvdisasm";
  return "";
}

SassListing parse_nvdisasm(std::string_view listing) {
  SassListing out;
  std::string function, label;
  bool at_label = false;     // the next instruction starts `function`
  uint64_t function_start = 0;
  while (!listing.empty()) {
    size_t nl = listing.find('\n');
    std::string_view line = trim(listing.substr(0, nl));
    listing.remove_prefix(nl == std::string_view::npos ? listing.size() : nl + 1);
    // A trailing comment column (-plr prints register life ranges there) is not part of the line.
    if (size_t c = line.find("//"); c != std::string_view::npos && c > 0) line = trim(line.substr(0, c));
    uint64_t offset;
    std::string mnemonic;
    if (line.rfind("//-----", 0) == 0 || line.rfind(".section", 0) == 0) {
      function.clear();  // a new section: instructions before the next kernel label belong to none
      at_label = false;
    } else if (function_label(line, label)) {
      function = label;
      at_label = true;
    } else if (!function.empty() && instruction(line, offset, mnemonic)) {
      if (at_label) { function_start = offset; at_label = false; }
      if (offset >= function_start) out[function][offset - function_start] = std::move(mnemonic);
    }
  }
  return out;
}

namespace {

struct TempFile {
  std::string path;
  ~TempFile() { if (!path.empty()) unlink(path.c_str()); }
};

// Writes image to a new temporary file; empty path on failure.
bool write_temp(std::string_view image, TempFile& f) {
  const char* dir = std::getenv("TMPDIR");
  std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/aiflame-XXXXXX.cubin";
  int fd = mkstemps(tmpl.data(), 6);
  if (fd < 0) return false;
  f.path = tmpl;
  size_t done = 0;
  while (done < image.size()) {
    ssize_t n = write(fd, image.data() + done, image.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) { close(fd); return false; }
    done += static_cast<size_t>(n);
  }
  return close(fd) == 0;
}

}  // namespace

std::vector<size_t> function_symbols(std::string_view image, const std::set<std::string>& names) {
  std::vector<size_t> out;
  static const bool elf_ready = elf_version(EV_CURRENT) != EV_NONE;
  if (!elf_ready) return out;
  Elf* e = elf_memory(const_cast<char*>(image.data()), image.size());
  if (!e) return out;
  for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    Elf_Data* data = nullptr;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize || !(data = elf_getdata(scn, nullptr)))
      continue;
    for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC) continue;
      const char* name = elf_strptr(e, sh.sh_link, sym.st_name);
      if (name && names.count(name)) out.push_back(i);
    }
    break;
  }
  elf_end(e);
  return out;
}

const std::string& nvdisasm_not_found_note() {
  static const std::string note =
      "nvdisasm not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): GPU instructions show their offsets only; "
      "install the CUDA toolkit or pass --nvdisasm PATH";
  return note;
}

Result<SassListing> disassemble(const std::string& tool, std::string_view image, int timeout_ms,
                                const std::vector<size_t>& functions) {
  TempFile cubin;
  if (!write_temp(image, cubin)) return Error{"cannot write a temporary cubin: " + std::string(std::strerror(errno))};
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Error{"pipe: " + std::string(std::strerror(errno))};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args{tool, "-c"};
  if (!functions.empty()) {
    std::string list;
    for (size_t f : functions) list += (list.empty() ? "" : ",") + std::to_string(f);
    args.insert(args.end(), {"-fun", list});
  }
  args.push_back(cubin.path);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, tool.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    return Error{tool + ": " + std::strerror(rc)};
  }
  std::string text;
  bool timed_out = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) { timed_out = true; break; }
    pollfd p{out_pipe[0], POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) { timed_out = r == 0; break; }
    ssize_t n = read(out_pipe[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  // A tool that closed its output may still run: it gets what is left of the time limit.
  int status = 0;
  while (!timed_out) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() >= deadline) { timed_out = true; break; }
    usleep(2000);
  }
  if (timed_out) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  }
  if (timed_out) return Error{tool + " gave no answer in " + std::to_string(timeout_ms / 1000) + " s"};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error{tool + " failed (" + (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                                          : "signal " + std::to_string(WTERMSIG(status))) + ")"};
  SassListing listing = parse_nvdisasm(text);
  if (listing.empty()) return Error{tool + " printed no instructions"};
  return listing;
}

}  // namespace aiflame
