#include "cli/attach_ptrace.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace aiflame {
namespace {

std::string proc(pid_t pid, const std::string& rest) { return "/proc/" + std::to_string(pid) + rest; }

std::string base_name(const std::string& p) { return p.substr(p.rfind('/') + 1); }

// "Key:\tvalue ..." of /proc/PID/status, or "".
std::string status_field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, key.size() + 1, key + ":") == 0) return line.substr(key.size() + 1);
  return {};
}

}  // namespace

PtraceFacts ptrace_facts(pid_t pid) {
  PtraceFacts f;
  std::ifstream y("/proc/sys/kernel/yama/ptrace_scope");
  if (!(y >> f.yama_scope)) f.yama_scope = -1;
  std::string cap = status_field("/proc/self/status", "CapEff");
  uint64_t eff = std::strtoull(cap.c_str(), nullptr, 16);
  f.cap_sys_ptrace = (eff >> 19) & 1;  // CAP_SYS_PTRACE
  std::istringstream uids(status_field(proc(pid, "/status"), "Uid"));
  long real = -1;
  uids >> real;
  f.same_uid = real < 0 || static_cast<uid_t>(real) == getuid();
  f.is_root = geteuid() == 0;
  f.tracer_pid = std::atoi(status_field(proc(pid, "/status"), "TracerPid").c_str());
  return f;
}

std::string ptrace_refusal(pid_t pid, const PtraceFacts& f) {
  std::string p = "process " + std::to_string(pid);
  if (f.tracer_pid > 0)
    return p + " is already traced by process " + std::to_string(f.tracer_pid) +
           " (a debugger or strace): detach that first";
  if (f.yama_scope == 3)
    return "ptrace is disabled on this machine (kernel.yama.ptrace_scope = 3, which only a reboot clears): start the "
           "program under `aiflame record -- CMD` instead";
  if (f.is_root && !f.cap_sys_ptrace)
    return "ptrace of " + p + " refused: aiflame runs as root without CAP_SYS_PTRACE (a container?): start the "
           "container with --cap-add=SYS_PTRACE, or run aiflame on the host";
  if (!f.cap_sys_ptrace) {
    if (!f.same_uid) return p + " runs as another user: run aiflame as that user, or as root (sudo)";
    if (f.yama_scope == 1)
      return "ptrace of " + p + " refused: kernel.yama.ptrace_scope = 1 lets a process trace only its own children; "
             "run aiflame with sudo, or allow it with `sudo sysctl kernel.yama.ptrace_scope=0`";
    if (f.yama_scope == 2)
      return "ptrace of " + p + " refused: kernel.yama.ptrace_scope = 2 lets only administrators trace; run aiflame "
             "with sudo (CAP_SYS_PTRACE)";
  }
  return "ptrace of " + p + " refused (EPERM): run aiflame as root with CAP_SYS_PTRACE (containers: --cap-add=SYS_PTRACE); "
         "a security module (AppArmor, SELinux) may also forbid it";
}

std::string elf_target_problem(const std::string& path) {
  unsigned char h[20] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(h), sizeof h)) return "cannot read the program's ELF header (" + path + ")";
  if (std::memcmp(h, ELFMAG, SELFMAG) != 0) return "the program (" + path + ") is not an ELF executable";
  if (h[EI_CLASS] == ELFCLASS32)
    return "the program is a 32-bit executable: aiflame attaches to 64-bit x86-64 programs only (CUDA has no 32-bit "
           "host support)";
  uint16_t machine = static_cast<uint16_t>(h[18] | h[19] << 8);
  if (h[EI_CLASS] != ELFCLASS64 || h[EI_DATA] != ELFDATA2LSB || machine != EM_X86_64)
    return "the program is not an x86-64 executable (ELF machine " + std::to_string(machine) +
           "): aiflame attaches to x86-64 programs only; start it under `aiflame record -- CMD` instead";
  return {};
}

std::vector<Mapping> read_maps(pid_t pid) {
  std::vector<Mapping> out;
  std::ifstream in(proc(pid, "/maps"));
  std::string line;
  while (std::getline(in, line)) {
    Mapping m;
    char perms[8] = {};
    unsigned long long lo = 0, hi = 0, off = 0, inode = 0;
    int consumed = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %llu %n", &lo, &hi, perms, &off, &inode, &consumed) < 5)
      continue;
    m.lo = lo;
    m.hi = hi;
    m.offset = off;
    if (consumed > 0 && static_cast<size_t>(consumed) < line.size()) m.path = line.substr(static_cast<size_t>(consumed));
    out.push_back(std::move(m));
  }
  return out;
}

namespace {

const Mapping* find_object(const std::vector<Mapping>& maps, const std::string& prefix) {
  for (const auto& m : maps)
    if (m.offset == 0 && !m.path.empty() && m.path[0] == '/' && base_name(m.path).compare(0, prefix.size(), prefix) == 0)
      return &m;
  return nullptr;
}

}  // namespace

Result<uint64_t> remote_symbol(pid_t pid, const std::vector<Mapping>& maps, const std::string& file_prefix,
                               const std::string& symbol) {
  const Mapping* m = find_object(maps, file_prefix);
  if (!m) return Error{"process " + std::to_string(pid) + " has no " + file_prefix + " loaded"};
  // The file as the target sees it (its mount namespace).
  std::string path = proc(pid, "/root") + m->path;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{"cannot open " + path + ": " + std::strerror(errno)};
  elf_version(EV_CURRENT);
  Elf* e = elf_begin(fd, ELF_C_READ, nullptr);
  uint64_t found = 0;
  bool have = false;
  uint64_t first_load = UINT64_MAX;
  if (e) {
    size_t nph = 0;
    elf_getphdrnum(e, &nph);
    for (size_t i = 0; i < nph; i++) {
      GElf_Phdr ph;
      if (gelf_getphdr(e, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) first_load = std::min<uint64_t>(first_load, ph.p_vaddr);
    }
    Elf_Data* versym = nullptr;
    Elf_Scn* dynsym = nullptr;
    GElf_Shdr dynsym_hdr{};
    for (Elf_Scn* s = elf_nextscn(e, nullptr); s; s = elf_nextscn(e, s)) {
      GElf_Shdr sh;
      if (!gelf_getshdr(s, &sh)) continue;
      if (sh.sh_type == SHT_DYNSYM) {
        dynsym = s;
        dynsym_hdr = sh;
      } else if (sh.sh_type == SHT_GNU_versym) {
        versym = elf_getdata(s, nullptr);
      }
    }
    if (Elf_Data* d = dynsym ? elf_getdata(dynsym, nullptr) : nullptr) {
      size_t n = dynsym_hdr.sh_entsize ? dynsym_hdr.sh_size / dynsym_hdr.sh_entsize : 0;
      uint64_t hidden = 0;  // a compatibility version (dlopen@GLIBC_2.2.5), used only when no default one exists
      for (size_t i = 0; i < n && !have; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(d, static_cast<int>(i), &sym) || sym.st_value == 0 || sym.st_shndx == SHN_UNDEF) continue;
        const char* name = elf_strptr(e, dynsym_hdr.sh_link, sym.st_name);
        if (!name || symbol != name) continue;
        GElf_Versym v = 0;
        if (versym && gelf_getversym(versym, static_cast<int>(i), &v) && (v & 0x8000)) {
          hidden = sym.st_value;
          continue;
        }
        found = sym.st_value;
        have = true;
      }
      if (!have && hidden) {
        found = hidden;
        have = true;
      }
    }
    elf_end(e);
  }
  close(fd);
  if (!have) return Error{m->path + " has no symbol " + symbol};
  if (first_load == UINT64_MAX) first_load = 0;
  return m->lo - (first_load & ~uint64_t{0xfff}) + found;
}

Status check_target(pid_t pid, const std::string& library) {
  std::string p = "process " + std::to_string(pid);
  struct stat st;
  if (pid <= 0 || stat(proc(pid, "").c_str(), &st) != 0) return Error{"no process with pid " + std::to_string(pid)};
  std::string state = status_field(proc(pid, "/status"), "State");
  if (state.find('Z') != std::string::npos) return Error{p + " has exited (a zombie): nothing to attach to"};
  if (pid == getpid()) return Error{"aiflame cannot attach to itself"};
  // Reading the executable needs the same permission as ptrace: the first place a refusal shows.
  if (access(proc(pid, "/exe").c_str(), R_OK) != 0 && errno == EACCES) return Error{ptrace_refusal(pid, ptrace_facts(pid))};
  if (std::string why = elf_target_problem(proc(pid, "/exe")); !why.empty()) return Error{p + ": " + why};
  auto maps = read_maps(pid);
  if (maps.empty()) return Error{p + ": cannot read " + proc(pid, "/maps") + " (a kernel thread?)"};
  if (!find_object(maps, "libc.so.6")) {
    for (const auto& m : maps)
      if (base_name(m.path).find("musl") != std::string::npos)
        return Error{p + " uses musl libc, not glibc: aiflame attaches to glibc programs only; start it under "
                         "`aiflame record -- CMD` instead"};
    return Error{p + " has no glibc (libc.so.6) loaded (statically linked?): aiflame attaches to dynamically linked "
                     "glibc programs only; start it under `aiflame record -- CMD` instead"};
  }
  if (!remote_symbol(pid, maps, "libc.so.6", "dlopen"))
    return Error{p + " runs a glibc older than 2.34 (its libc.so.6 exports no dlopen): start the program under "
                     "`aiflame record -- CMD` instead"};
  struct stat ours, theirs;
  if (stat(library.c_str(), &ours) != 0) return Error{"cannot read " + library + ": " + std::strerror(errno)};
  if (stat((proc(pid, "/root") + library).c_str(), &theirs) != 0 || ours.st_dev != theirs.st_dev ||
      ours.st_ino != theirs.st_ino)
    return Error{p + " runs in another mount namespace (a container?) where " + library +
                 " is not the same file: run aiflame inside that container"};
  return Ok{};
}

namespace {

// System calls a thread blocks in while it holds no lock of malloc or of the dynamic loader: its
// registers can be borrowed for a call of dlopen. Preferred first: plain sleeps and event waits.
int safe_rank(long nr) {
  switch (nr) {
    case 35: case 230: case 7: case 271: case 23: case 270: case 232: case 281: case 441: case 34: case 130:
      return 0;  // nanosleep, clock_nanosleep, poll, ppoll, select, pselect6, epoll_wait(2), pause, sigsuspend
    case 0: case 45: case 47: case 43: case 288: case 61: case 247: case 128:
      return 1;  // read, recvfrom, recvmsg, accept(4), wait4, waitid, rt_sigtimedwait
    case 202:
      return 2;  // futex: a lock or condition wait (the thread waits for a lock, it does not hold it)
    default:
      return -1;
  }
}

// Threads of `pid` blocked in a safe system call, best first.
std::vector<pid_t> candidate_threads(pid_t pid) {
  std::vector<std::pair<int, pid_t>> c;
  DIR* d = opendir(proc(pid, "/task").c_str());
  if (!d) return {};
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    pid_t tid = std::atoi(e->d_name);
    std::ifstream in(proc(pid, "/task/" + std::to_string(tid) + "/syscall"));
    std::string first;
    if (!(in >> first) || first == "running") continue;
    int rank = safe_rank(std::strtol(first.c_str(), nullptr, 10));
    if (rank >= 0) c.push_back({rank * 2 + (tid == pid ? 1 : 0), tid});  // the main thread last among equals
  }
  closedir(d);
  std::sort(c.begin(), c.end());
  std::vector<pid_t> out;
  for (auto& [rank, tid] : c) out.push_back(tid);
  return out;
}

// Waits for `tid` to stop; 1: stopped (*status), 0: timed out, -1: gone.
int wait_stop(pid_t tid, int timeout_ms, int* status) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    pid_t r = waitpid(tid, status, __WALL | WNOHANG);
    if (r == tid) return WIFSTOPPED(*status) ? 1 : -1;
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() > until) return 0;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

bool is_event_stop(int status) { return (status >> 16) == PTRACE_EVENT_STOP; }

// One seized thread: its registers (general and extended: a syscall wrapper may keep values in vector
// registers across the syscall) are saved at the stop and always put back before it is let go.
class Borrowed {
 public:
  explicit Borrowed(pid_t tid) : tid_(tid) {}
  ~Borrowed() { release(); }

  // Seizes and stops the thread; false with *error when it cannot (or is not at a safe point).
  bool stop(std::string* error) {
    if (ptrace(PTRACE_SEIZE, tid_, nullptr, nullptr) != 0) {
      *error = errno == EPERM ? "EPERM" : std::string("ptrace(SEIZE): ") + std::strerror(errno);
      return false;
    }
    seized_ = true;
    if (ptrace(PTRACE_INTERRUPT, tid_, nullptr, nullptr) != 0) {
      *error = std::string("ptrace(INTERRUPT): ") + std::strerror(errno);
      return false;
    }
    for (;;) {
      int st = 0;
      int r = wait_stop(tid_, 2000, &st);
      if (r <= 0) {
        *error = r == 0 ? "the thread did not stop" : "the thread exited";
        if (r < 0) seized_ = false;
        return false;
      }
      if (is_event_stop(st)) break;
      // A signal arrived first: let it be delivered as it would have been; the interrupt stop follows.
      ptrace(PTRACE_CONT, tid_, nullptr, reinterpret_cast<void*>(static_cast<uintptr_t>(WSTOPSIG(st))));
    }
    if (ptrace(PTRACE_GETREGS, tid_, nullptr, &saved_) != 0) {
      *error = std::string("ptrace(GETREGS): ") + std::strerror(errno);
      return false;
    }
    xstate_.resize(1 << 16);
    iovec iov{xstate_.data(), xstate_.size()};
    if (ptrace(PTRACE_GETREGSET, tid_, reinterpret_cast<void*>(NT_X86_XSTATE), &iov) == 0) {
      xstate_.resize(iov.iov_len);
    } else {
      xstate_.clear();
      if (ptrace(PTRACE_GETFPREGS, tid_, nullptr, &fp_) != 0) {
        *error = std::string("ptrace(GETFPREGS): ") + std::strerror(errno);
        return false;
      }
    }
    regs_saved_ = true;
    scratch_ = saved_.rsp - 256;  // below the 128-byte red zone, with margin
    return true;
  }

  // In a system call that holds no loader or malloc lock (checked again now that it is stopped).
  bool at_safe_point() const { return static_cast<long>(saved_.orig_rax) >= 0 && safe_rank(static_cast<long>(saved_.orig_rax)) >= 0; }

  // Calls fn(a0, a1) in the thread, on its stack below what put_string() copied there; returns rax.
  Result<uint64_t> call(uint64_t fn, uint64_t a0, uint64_t a1, int timeout_ms) {
    user_regs_struct r = saved_;
    r.rip = fn;
    r.rdi = a0;
    r.rsi = a1;
    r.rax = 0;
    r.orig_rax = static_cast<unsigned long long>(-1);  // no syscall restart for this resumption
    uint64_t sp = ((scratch_ - 64) & ~uint64_t{15}) - 8;  // at entry rsp+8 is 16-aligned, as after a call
    if (!poke(sp, 0)) return Error{std::string("ptrace(POKEDATA): ") + std::strerror(errno)};  // return to 0: a fault we catch
    r.rsp = sp;
    if (ptrace(PTRACE_SETREGS, tid_, nullptr, &r) != 0) return Error{std::string("ptrace(SETREGS): ") + std::strerror(errno)};
    if (ptrace(PTRACE_CONT, tid_, nullptr, nullptr) != 0) return Error{std::string("ptrace(CONT): ") + std::strerror(errno)};
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count());
      int st = 0;
      int w = wait_stop(tid_, std::max(left, 1), &st);
      if (w < 0) {
        seized_ = regs_saved_ = false;
        return Error{"the process exited during the call"};
      }
      if (w == 0) {
        // Stuck (a lock?): stop it where it is; release() puts the registers back.
        ptrace(PTRACE_INTERRUPT, tid_, nullptr, nullptr);
        for (int i = 0; i < 100 && wait_stop(tid_, 100, &st) == 1 && !is_event_stop(st); i++)
          ptrace(PTRACE_CONT, tid_, nullptr, reinterpret_cast<void*>(static_cast<uintptr_t>(WSTOPSIG(st))));
        return Error{"the call did not return within " + std::to_string(timeout_ms / 1000) + " s"};
      }
      if (is_event_stop(st)) {
        ptrace(PTRACE_CONT, tid_, nullptr, nullptr);
        continue;
      }
      int sig = WSTOPSIG(st);
      user_regs_struct now{};
      ptrace(PTRACE_GETREGS, tid_, nullptr, &now);
      if (sig == SIGSEGV && now.rip == 0) return static_cast<uint64_t>(now.rax);
      if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE)
        return Error{std::string("the call faulted (") + strsignal(sig) + ")"};
      ptrace(PTRACE_CONT, tid_, nullptr, reinterpret_cast<void*>(static_cast<uintptr_t>(sig)));  // the program's own signal
    }
  }

  // Copies bytes (NUL-terminated string) below the red zone of the thread's stack; returns where.
  Result<uint64_t> put_string(const std::string& s) {
    size_t n = (s.size() + 1 + 7) & ~size_t{7};
    scratch_ = (scratch_ - n) & ~uint64_t{15};
    std::string buf = s;
    buf.resize(n, '\0');
    for (size_t i = 0; i < n; i += 8) {
      uint64_t w;
      std::memcpy(&w, buf.data() + i, 8);
      if (!poke(scratch_ + i, w)) return Error{std::string("ptrace(POKEDATA): ") + std::strerror(errno)};
    }
    return scratch_;
  }

  std::string read_string(uint64_t at, size_t max = 1024) {
    std::string s;
    while (at && s.size() < max) {
      errno = 0;
      long w = ptrace(PTRACE_PEEKDATA, tid_, reinterpret_cast<void*>(at), nullptr);
      if (errno) break;
      const char* c = reinterpret_cast<const char*>(&w);
      for (int i = 0; i < 8; i++) {
        if (!c[i]) return s;
        s += c[i];
      }
      at += 8;
    }
    return s;
  }

  void release() {
    if (!seized_) return;
    if (regs_saved_) {
      ptrace(PTRACE_SETREGS, tid_, nullptr, &saved_);
      if (!xstate_.empty()) {
        iovec iov{xstate_.data(), xstate_.size()};
        ptrace(PTRACE_SETREGSET, tid_, reinterpret_cast<void*>(NT_X86_XSTATE), &iov);
      } else {
        ptrace(PTRACE_SETFPREGS, tid_, nullptr, &fp_);
      }
    }
    // Saved registers at a syscall stop (orig_rax = the call, rax = -ERESTART...): the kernel restarts it.
    ptrace(PTRACE_DETACH, tid_, nullptr, nullptr);
    seized_ = regs_saved_ = false;
  }

 private:
  bool poke(uint64_t at, uint64_t w) {
    return ptrace(PTRACE_POKEDATA, tid_, reinterpret_cast<void*>(at), reinterpret_cast<void*>(w)) == 0;
  }

  pid_t tid_;
  bool seized_ = false, regs_saved_ = false;
  user_regs_struct saved_{};
  user_fpregs_struct fp_{};
  std::vector<uint8_t> xstate_;
  uint64_t scratch_ = 0;
};

}  // namespace

Result<InjectResult> inject_and_attach(pid_t pid, const std::string& library, const std::string& options,
                                       int timeout_ms) {
  auto maps = read_maps(pid);
  uint64_t fn[4];
  const char* names[4] = {"dlopen", "dlsym", "dlclose", "dlerror"};
  for (int i = 0; i < 4; i++) {
    auto a = remote_symbol(pid, maps, "libc.so.6", names[i]);
    if (!a) return Error{a.error()};
    fn[i] = *a;
  }
  // A thread waiting in a system call; threads running code may be inside malloc or the loader.
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string last;
  for (;;) {
    for (pid_t tid : candidate_threads(pid)) {
      Borrowed t(tid);
      std::string err;
      if (!t.stop(&err)) {
        if (err == "EPERM") return Error{ptrace_refusal(pid, ptrace_facts(pid))};
        last = err;
        continue;
      }
      if (!t.at_safe_point()) continue;  // it moved on; ~Borrowed lets it go unchanged
      auto path = t.put_string(library);
      auto sym = path ? t.put_string("aiflame_attach") : path;
      auto opts = sym ? t.put_string(options) : sym;
      if (!opts) return Error{opts.error()};
      constexpr uint64_t kRtldNow = 2;
      auto handle = t.call(fn[0], *path, kRtldNow, 20000);
      if (!handle) return Error{"loading the library in process " + std::to_string(pid) + " failed: " + handle.error()};
      if (*handle == 0) {
        auto msg = t.call(fn[3], 0, 0, 2000);
        return Error{"the process could not load " + library + ": " + (msg ? t.read_string(*msg) : "dlopen failed")};
      }
      auto entry = t.call(fn[1], *handle, *sym, 2000);
      if (!entry || *entry == 0) {
        (void)t.call(fn[2], *handle, 0, 2000);
        return Error{library + " has no aiflame_attach entry point (an older build?)"};
      }
      auto rc = t.call(*entry, *opts, 0, 10000);
      if (!rc) return Error{"aiflame_attach in process " + std::to_string(pid) + " failed: " + rc.error()};
      InjectResult res;
      res.attach_rc = static_cast<int32_t>(*rc & 0xffffffffu);
      if (res.attach_rc != 0) res.unloaded = (t.call(fn[2], *handle, 0, 2000) ? true : false);
      return res;
    }
    if (std::chrono::steady_clock::now() > until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Error{"no thread of process " + std::to_string(pid) + " waited in a system call within " +
               std::to_string(timeout_ms / 1000) + " s (every thread kept computing" + (last.empty() ? "" : "; " + last) +
               "): aiflame borrows a waiting thread to load its library safely; try again"};
}

}  // namespace aiflame
