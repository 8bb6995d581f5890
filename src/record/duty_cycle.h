// Duty-cycled recording in the program (`aiflame record --duty W/P`, with a command or --pid): a
// thread of the injection library opens a window every period, records it into a profile of its own
// in the output directory (record/duty_spec.h names the files) and detaches from the vendor library
// again, so that between windows no callback, activity kind or sampling of it is on.
//
// What a window needs from before it opened:
//  - the code objects (cubins) of modules loaded in an earlier window are kept in the directory
//    (.cubins.<pid>/) and written into each later window that samples them;
//  - the native unwinder's tables belong to the process (unwind::ObjectTable), built once;
//  - the per-thread stack memos and writer buffers are reused (keyed by the recorder's serial).
// A window whose sampling stays silent (launches, no sample by its middle) is closed and opened again
// with a fresh subscription, twice at most; the window log says so.
//
// The window log DIR/windows.<pid>.log holds one line per window (key=value words; the CLI's summary
// reads it): seq, file, start (CLOCK_REALTIME ns), prepare/subscribe/enable/close ms, length ms,
// launches, kernels, samples, silent (0/1), retry (the recovery attempt, 0 for a scheduled window).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "record/record_options.h"

namespace aiflame {

struct DutyRun {
  RecordOptions opt;  // opt.output is the directory
  std::vector<std::string> warnings;  // the options' warnings, into the first window's profile
  // Polled every 50 ms: true, with *reason, when the recording is to end (`record --pid`: the stop
  // file, the duration, the CLI gone). Empty: until the process exits.
  std::function<bool(std::string* reason)> should_stop;
};

// Runs the duty cycle on the calling thread until should_stop says so or the process exits; the
// reason ("exit" at process exit). A window open then is closed and detached.
std::string run_duty_cycle(DutyRun run);
// At process exit (atexit): closes the open window without detaching (the vendor library is being
// torn down with the process) and ends the cycle.
void duty_cycle_at_exit();

}  // namespace aiflame
