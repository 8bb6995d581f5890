#include "symbolize/intel/iga.h"

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
#include <memory>
#include <vector>

extern char** environ;

namespace aiflame {
namespace {

bool executable(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

struct ElfEnd {
  void operator()(Elf* e) const { elf_end(e); }
};
using ElfPtr = std::unique_ptr<Elf, ElfEnd>;
ElfPtr open_elf(std::string_view image) {
  static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
  if (!ready || image.empty()) return nullptr;
  return ElfPtr(elf_memory(const_cast<char*>(image.data()), image.size()));
}

}  // namespace

std::string find_iga64() {
  if (const char* path = std::getenv("PATH")) {
    std::string_view p(path);
    while (!p.empty()) {
      size_t colon = p.find(':');
      std::string dir(p.substr(0, colon));
      if (!dir.empty() && executable(dir + "/iga64")) return dir + "/iga64";
      if (colon == std::string_view::npos) break;
      p.remove_prefix(colon + 1);
    }
  }
  return "";
}

const std::string& iga64_not_found_note() {
  static const std::string note =
      "iga64 not found on PATH: Intel GPU instructions show their offsets only; install Intel's GPU "
      "assembler (Debian: apt-get install libigc-tools)";
  return note;
}

std::map<uint64_t, std::string> parse_iga_listing(std::string_view listing) {
  std::map<uint64_t, std::string> out;
  while (!listing.empty()) {
    size_t nl = listing.find('\n');
    std::string_view line = trim(listing.substr(0, nl));
    listing.remove_prefix(nl == std::string_view::npos ? listing.size() : nl + 1);
    if (line.size() < 8 || line.substr(0, 2) != "/*") continue;
    size_t open = line.find('['), close = line.find(']'), end = line.find("*/");
    if (open == std::string_view::npos || close == std::string_view::npos || end == std::string_view::npos || open > close ||
        close > end || close == open + 1)
      continue;
    uint64_t offset = 0;
    bool ok = true;
    for (char c : line.substr(open + 1, close - open - 1)) {
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0 || offset >> 60) {
        ok = false;
        break;
      }
      offset = offset * 16 + static_cast<uint64_t>(d);
    }
    if (!ok) continue;
    std::string_view rest = trim(line.substr(end + 2));
    if (!rest.empty() && rest.front() == '(') {  // predicate "(W&f0.0)" or "(f0.0)"
      size_t p = rest.find(')');
      if (p == std::string_view::npos) continue;
      rest = trim(rest.substr(p + 1));
    }
    std::string_view op = rest.substr(0, rest.find_first_of(" \t("));
    if (op.empty() || !(op.front() >= 'a' && op.front() <= 'z')) continue;
    out[offset] = std::string(op);
  }
  return out;
}

std::string zebin_kernel_code(std::string_view image, const std::string& name) {
  ElfPtr e = open_elf(image);
  size_t shstrndx = 0;
  if (!e || elf_kind(e.get()) != ELF_K_ELF || elf_getshdrstrndx(e.get(), &shstrndx) != 0) return "";
  const std::string want = ".text." + name;
  for (Elf_Scn* scn = elf_nextscn(e.get(), nullptr); scn; scn = elf_nextscn(e.get(), scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS) continue;
    const char* n = elf_strptr(e.get(), shstrndx, sh.sh_name);
    if (!n || want != n) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    return d && d->d_buf ? std::string(static_cast<const char*>(d->d_buf), d->d_size) : "";
  }
  return "";
}

std::string zebin_iga_platform(std::string_view image, uint32_t* core) {
  *core = 0;
  ElfPtr e = open_elf(image);
  if (!e || elf_kind(e.get()) != ELF_K_ELF) return "";
  for (Elf_Scn* scn = elf_nextscn(e.get(), nullptr); scn; scn = elf_nextscn(e.get(), scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (!d) continue;
    GElf_Nhdr nh;
    size_t off = 0, name_off = 0, desc_off = 0;
    while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
      // IntelGT note 2 (INTELGT_NOTE_GFXCORE_FAMILY): the GPU core, in compute-runtime's GFXCORE_FAMILY.
      if (nh.n_namesz == 8 && std::memcmp(static_cast<const char*>(d->d_buf) + name_off, "IntelGT", 8) == 0 && nh.n_type == 2 &&
          nh.n_descsz >= 4)
        std::memcpy(core, static_cast<const char*>(d->d_buf) + desc_off, 4);
    }
  }
  switch (*core) {
    case 12: return "9";         // IGFX_GEN9_CORE
    case 15: case 16: return "11";  // IGFX_GEN11_CORE, IGFX_GEN11LP_CORE
    case 18: return "12p1";      // IGFX_GEN12LP_CORE
    case 0x0c05: return "12p5";  // IGFX_XE_HP_CORE
    case 0x0c07: return "12p71"; // IGFX_XE_HPG_CORE
    case 0x0c08: return "12p72"; // IGFX_XE_HPC_CORE
    default: return "";          // Xe2 and later: Debian 12's iga64 has no platform for them
  }
}

Result<std::map<uint64_t, std::string>> iga_disassemble(const std::string& tool, const std::string& platform,
                                                        std::string_view code, int timeout_ms) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/aiflame-XXXXXX.krn";
  int fd = mkstemps(path.data(), 4);
  if (fd < 0) return Error{"cannot write a temporary kernel: " + std::string(std::strerror(errno))};
  struct Unlink {
    std::string p;
    ~Unlink() { unlink(p.c_str()); }
  } remove{path};
  bool written = write(fd, code.data(), code.size()) == static_cast<ssize_t>(code.size());
  if (close(fd) != 0 || !written) return Error{"cannot write a temporary kernel"};
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Error{"pipe: " + std::string(std::strerror(errno))};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args{tool, "-d", "-p=" + platform, "-Xprint-pc", "-n", "--color=never", path};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, tool.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    return Error{tool + ": " + std::strerror(rc)};
  }
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  char buf[16384];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd p{out[0], POLLIN, 0};
    int r = left > 0 ? poll(&p, 1, static_cast<int>(left)) : 0;
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) timed_out = true;
    if (r <= 0) break;
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return Error{tool + " gave no answer in " + std::to_string(timeout_ms / 1000) + " s"};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return Error{tool + " -d -p=" + platform + " failed"};
  auto listing = parse_iga_listing(text);
  if (listing.empty()) return Error{tool + " printed no instructions"};
  return listing;
}

}  // namespace aiflame
