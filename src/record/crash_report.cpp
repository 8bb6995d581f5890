#include "record/crash_report.h"

#include <execinfo.h>
#include <setjmp.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <iterator>

#include "util/loaded_objects.h"

namespace aiflame {

thread_local constinit int t_phase = 0;
AIFLAME_TLS_ENROLL(tls::kPhase, t_phase);

namespace {

thread_local const char* t_subject = nullptr;  // what the thread works on (set_crash_subject)
thread_local sigjmp_buf* t_guard = nullptr;    // run_guarded's, while it runs
struct sigaction g_previous[32];
// aiflame's own object (this library, or the test executable), found at install: its frames are
// printed as offsets into it, which addr2line resolves against the unstripped build.
const OwnObject* g_self = nullptr;

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

// An address, as an offset into aiflame's object when it is one of its own.
int format_address(char* out, size_t size, uint64_t a) {
  if (g_self && a >= g_self->lo && a < g_self->hi)
    return std::snprintf(out, size, "%#llx (%s+%#llx)", static_cast<unsigned long long>(a), g_self->name,
                         static_cast<unsigned long long>(a - g_self->bias));
  return std::snprintf(out, size, "%#llx", static_cast<unsigned long long>(a));
}

void on_fatal(int sig, siginfo_t* info, void* ctx) {
  // A fault inside run_guarded on this thread: back to it (the handler stays installed for the next).
  if (t_guard && (sig == SIGSEGV || sig == SIGBUS)) siglongjmp(*t_guard, sig);
  // As SA_RESETHAND did: a second fault of this kind takes the default action. (Not the flag itself:
  // a fault run_guarded recovers from must find the handler still in place.)
  signal(sig, SIG_DFL);
  struct sigaction& prev = g_previous[sig];
  if (t_phase != 0 || !has_handler(prev)) {
    char line[640];
    // The stack only for a crash inside aiflame. A program's own crash gets the line alone: backtrace()
    // there can hang (the unwinder's locks may be held by the thread that crashed, or by another), and
    // one hf_gpt2.py run on the H100 hung for 200 s after "stack:" instead of dying. The frames are printed as addresses, not through backtrace_symbols_fd: its
    // dladdr() takes the loader's lock, which a thread in dlopen may hold while it waits for the lock
    // the crashed thread held (one such report hung after "stack:" while the unwind-table builder read
    // objects inside dl_iterate_phdr).
    const bool ours = t_phase != 0;
    char pc[192] = "?";
    if (ctx) format_address(pc, sizeof pc, static_cast<uint64_t>(static_cast<ucontext_t*>(ctx)->uc_mcontext.gregs[REG_RIP]));
    int n = std::snprintf(line, sizeof line, "aiflame: signal %d (code %d) at address %p, pc %s, in %s%s%s%s\n", sig,
                          info ? info->si_code : 0, info ? info->si_addr : nullptr, pc, phase_name(t_phase),
                          t_subject ? " (" : "", t_subject ? t_subject : "", t_subject ? ")" : "");
    if (n > static_cast<int>(sizeof line) - 1) n = static_cast<int>(sizeof line) - 1;
    (void)!write(2, line, static_cast<size_t>(n));
    if (ours) {
      (void)!write(2, "aiflame: stack:\n", 16);
      void* frames[64];
      int k = backtrace(frames, 64);
      for (int i = 0; i < k; i++) {
        char a[192];
        format_address(a, sizeof a, reinterpret_cast<uint64_t>(frames[i]));
        n = std::snprintf(line, sizeof line, "aiflame:   #%d %s\n", i, a);
        if (n > 0) (void)!write(2, line, std::min(static_cast<size_t>(n), sizeof line - 1));
      }
    }
  }
  // Hand the signal to whoever had it before (Python's faulthandler, the default action).
  if (has_handler(prev)) {
    if (prev.sa_flags & SA_SIGINFO) return prev.sa_sigaction(sig, info, ctx);
    return prev.sa_handler(sig);
  }
  raise(sig);
}

}  // namespace

void set_crash_subject(const char* what) { t_subject = what; }

bool run_guarded(void (*fn)(void*), void* arg, int* sig) {
  sigjmp_buf buf;
  sigjmp_buf* const outer = t_guard;
  if (int s = sigsetjmp(buf, 1)) {  // the signal mask as it was here (the fault's signal unblocked)
    t_guard = outer;
    if (sig) *sig = s;
    return false;
  }
  t_guard = &buf;
  fn(arg);
  t_guard = outer;
  return true;
}

bool guard_active() {
  for (int sig : {SIGSEGV, SIGBUS}) {
    struct sigaction cur = {};
    if (sigaction(sig, nullptr, &cur) != 0 || !(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != on_fatal) return false;
  }
  return true;
}

void install_crash_report() {
  // backtrace() loads libgcc's unwinder at its first call (dlopen, malloc): done here, not in the
  // handler, where the heap may be what broke.
  void* warm[2];
  (void)backtrace(warm, 2);
  g_self = &own_object();
  struct sigaction sa = {};
  sa.sa_sigaction = on_fatal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) sigaction(sig, &sa, &g_previous[sig]);
}

}  // namespace aiflame
