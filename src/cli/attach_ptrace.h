// Loading the injection library into a running process, as a debugger's `call dlopen(...)` does:
// ptrace stops one thread of the target that waits in a system call, makes it call libc's dlopen and
// the library's attach entry point, then puts its registers back and lets it go (the kernel restarts
// the interrupted system call, so the program never sees it). x86-64 Linux with glibc >= 2.34 (where
// libc.so.6 exports dlopen).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace aiflame {

// What a refused ptrace depends on, gathered so that the diagnosis is a pure function (tested).
struct PtraceFacts {
  int yama_scope = -1;        // /proc/sys/kernel/yama/ptrace_scope, -1 when Yama is absent
  bool cap_sys_ptrace = false;  // in our effective capabilities
  bool same_uid = true;       // the target runs as our user
  bool is_root = false;
  int tracer_pid = 0;         // a debugger or strace already attached
};
PtraceFacts ptrace_facts(pid_t pid);
// The one line that explains why ptrace of `pid` was refused (EPERM) and names the fix.
std::string ptrace_refusal(pid_t pid, const PtraceFacts& f);

// Why the executable's ELF header rules out injection (32-bit, another architecture), or "" when it
// is a 64-bit x86-64 program. `path` is /proc/PID/exe for a running process.
std::string elf_target_problem(const std::string& path);

// A mapping of /proc/PID/maps.
struct Mapping {
  uint64_t lo = 0, hi = 0, offset = 0;
  std::string path;
};
std::vector<Mapping> read_maps(pid_t pid);

// The run-time address of `symbol` (default version) of the loaded object whose file name starts with
// `file_prefix` ("libc.so.6"), from its dynamic symbol table; an error names what is missing.
Result<uint64_t> remote_symbol(pid_t pid, const std::vector<Mapping>& maps, const std::string& file_prefix,
                               const std::string& symbol);

struct InjectResult {
  int attach_rc = 0;   // what aiflame_attach returned (0: a session started in the target)
  bool unloaded = false;  // the library was unloaded again (attach refused before it started anything)
};

// Everything before ptrace: the process exists, is 64-bit x86-64, uses glibc >= 2.34 and can see
// `library` at the same path (same mount namespace). An error is one line naming the fix.
Status check_target(pid_t pid, const std::string& library);

// Loads `library` into `pid` and calls its `aiflame_attach(options)`. When that returns non-zero
// (refused before starting anything) the library is closed again. Waits up to `timeout_ms` for a
// thread of the target that sits in a blocking system call (a safe point: it holds no lock of
// malloc or the loader).
Result<InjectResult> inject_and_attach(pid_t pid, const std::string& library, const std::string& options,
                                       int timeout_ms = 5000);

}  // namespace aiflame
