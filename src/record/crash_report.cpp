#include "record/crash_report.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <iterator>

namespace aiflame {
namespace {

thread_local int t_phase = 0;
struct sigaction g_previous[32];

const char* phase_name(int p) {
  static const char* names[] = {"the program (not aiflame)", "aiflame's launch callback", "native unwinding",
                                "the Python frame walk", "naming Python frames", "aiflame's collector thread",
                                "reading kernel activity records", "aiflame's unwind-table builder"};
  return p >= 0 && p < static_cast<int>(std::size(names)) ? names[p] : "?";
}

bool has_handler(const struct sigaction& a) {
  if (a.sa_flags & SA_SIGINFO) return a.sa_sigaction != nullptr;
  return a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN;
}

void on_fatal(int sig, siginfo_t* info, void* ctx) {
  struct sigaction& prev = g_previous[sig];
  if (t_phase != 0 || !has_handler(prev)) {
    char line[256];
    // The stack only for a crash inside aiflame. A program's own crash gets the line alone: backtrace()
    // there can hang (the unwinder's locks may be held by the thread that crashed, or by another), and
    // one hf_gpt2.py run on the H100 hung for 200 s after "stack:" instead of dying (bench/RESULTS.md,
    // seventeenth session). What a program does on its own crash is not aiflame's to change.
    const bool ours = t_phase != 0;
    int n = std::snprintf(line, sizeof line, "aiflame: signal %d at address %p in %s%s\n", sig,
                          info ? info->si_addr : nullptr, phase_name(t_phase), ours ? "; stack:" : "");
    (void)!write(2, line, static_cast<size_t>(n));
    if (ours) {
      void* frames[64];
      int k = backtrace(frames, 64);
      backtrace_symbols_fd(frames, k, 2);
    }
  }
  // Hand the signal to whoever had it before (Python's faulthandler, the default action).
  if (has_handler(prev)) {
    if (prev.sa_flags & SA_SIGINFO) return prev.sa_sigaction(sig, info, ctx);
    return prev.sa_handler(sig);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void set_phase(Phase p) { t_phase = static_cast<int>(p); }
Phase current_phase() { return static_cast<Phase>(t_phase); }

void install_crash_report() {
  // backtrace() loads libgcc's unwinder at its first call (dlopen, malloc): done here, not in the
  // handler, where the heap may be what broke.
  void* warm[2];
  (void)backtrace(warm, 2);
  struct sigaction sa = {};
  sa.sa_sigaction = on_fatal;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) sigaction(sig, &sa, &g_previous[sig]);
}

}  // namespace aiflame
