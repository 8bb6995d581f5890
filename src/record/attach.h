// Attaching to a running program (`aiflame record --pid`): the CLI loads the injection library into
// the process with ptrace and calls aiflame_attach(options). The entry point only checks that CUDA's
// driver is loaded and starts one thread; that thread finds the contexts the program already has,
// subscribes to CUPTI, records until told to stop, then detaches (cuptiFinalize) and closes the profile.
// It reports to the CLI through a status file, one line per event:
//   started            recording
//   refused <why>      nothing recorded; <why> is one line naming the fix
//   done <reason>      the profile is closed (reason: duration, stopped, cli-gone, exit)
#pragma once
#include <map>
#include <string>

#include "profile/records.h"
#include "record/record_options.h"
#include "record/stack_capture.h"

namespace aiflame {

// The options text: one NAME=VALUE a line, the AIFLAME_* names of record_options.h plus
//   AIFLAME_ATTACH_STATUS=path, AIFLAME_ATTACH_STOP=path (stop when it exists),
//   AIFLAME_ATTACH_DURATION_MS=N (0: until stopped), AIFLAME_ATTACH_CLI_PID=N (stop when it is gone).
std::map<std::string, std::string> parse_attach_text(const char* text);

// aiflame_attach's return values (the CLI unloads the library again when it is not 0).
inline constexpr int kAttachStarted = 0;
inline constexpr int kAttachNoDriver = 2;
inline constexpr int kAttachBusy = 3;
inline constexpr int kAttachBadOptions = 4;

// From injection.cpp: what a recording started with the program writes first.
ProcessRecord injection_process_record(const RecordOptions& opt);
void injection_skip_own_frames(StackCapture& st);

}  // namespace aiflame

extern "C" int aiflame_attach(const char* options);
