// With AIFLAME_DEBUG=1, a fatal signal in the profiled process prints which part of aiflame (if any)
// the crashing thread was in, and its stack, before the signal takes its usual course.
#pragma once

namespace aiflame {

enum class Phase : int { None = 0, LaunchCallback, Unwind, PythonWalk, PythonNames, Collector, ActivityBuffer };

// The calling thread's current phase; cheap (a thread-local int).
void set_phase(Phase p);
Phase current_phase();

struct PhaseScope {
  Phase saved;
  explicit PhaseScope(Phase p) : saved(current_phase()) { set_phase(p); }
  ~PhaseScope() { set_phase(saved); }
};

// Installs the reporter for SIGSEGV, SIGBUS, SIGILL, SIGFPE, chaining to the previous handlers.
void install_crash_report();

}  // namespace aiflame
