// A fatal signal in the profiled process prints which part of aiflame (if any) the crashing thread
// was in, and its stack, before the signal takes its usual course. Installed by the injection library
// at every recording (not by `record --pid`, which does not touch a running program's handlers): a
// rare crash under recording must leave its cause (2026-11-27: one hf_gpt2.py run in ~35 killed by
// SIGSEGV with nothing to go on, since the report was only on with AIFLAME_DEBUG=1).
#pragma once
#include "util/hot_path.h"
#include "util/tls_offsets.h"

namespace aiflame {

enum class Phase : int { None = 0, LaunchCallback, Unwind, PythonWalk, PythonNames, Collector, ActivityBuffer, Builder };

// The calling thread's current phase: a thread-local int, read and written inline (the launch path
// sets two phases a launch: four calls of ~7 instructions each when they were out of line).
extern thread_local constinit int t_phase;
inline void set_phase(Phase p) { t_phase = static_cast<int>(p); }
inline Phase current_phase() { return static_cast<Phase>(t_phase); }

// The thread-local's address taken once for the scope's read and two writes (util/hot_path.h), as
// the thread pointer plus its offset (util/tls_offsets.h).
struct PhaseScope {
  int* at;
  int saved;
  explicit PhaseScope(Phase p) : at(AIFLAME_TLS(tls::kPhase, t_phase)), saved(*at) { *at = static_cast<int>(p); }
  ~PhaseScope() { *at = saved; }
};

// What the calling thread works on, named in a crash report (the unwind-table builder's object); null
// for nothing. The string must outlive the setting.
void set_crash_subject(const char* what);

// Calls fn(arg) with SIGSEGV and SIGBUS on this thread turned into a return of false (*sig: which),
// once install_crash_report() is in place and no later handler of the program's keeps the signal to
// itself. For code that reads memory it cannot prove mapped, or that must not take the program down
// with it (the unwind-table builder, off the launch path). fn must hold no lock the rest of the
// process waits on, and leaves what it allocated when it faults (destructors do not run).
bool run_guarded(void (*fn)(void*), void* arg, int* sig);
// Whether run_guarded would catch a fault now: the reporter is the installed handler of SIGSEGV and
// SIGBUS (not replaced by a later handler of the program's, nor never installed, as in `record --pid`).
bool guard_active();

// Installs the reporter for SIGSEGV, SIGBUS, SIGILL, SIGFPE, chaining to the previous handlers. It
// prints only where the signal would end the process (no previous handler) or the thread was inside
// aiflame: a program that handles such signals itself (a runtime's guard pages) hears nothing of it.
void install_crash_report();

}  // namespace aiflame
