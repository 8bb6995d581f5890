// Duty-cycled recording on the CLI's side (duty_command.cpp): the run, and the summary read from the
// window logs the library writes (record/duty_cycle.h).
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace aiflame {

struct DutyWindow {
  uint64_t samples = 0, launches = 0;
  double length_ms = 0, open_ms = 0, prepare_ms = 0, subscribe_ms = 0, enable_ms = 0, close_ms = 0;
  double start_ns = 0;
  bool silent = false, retry = false;
};
struct DutySummary {
  double window_ms = 0, period_ms = 0, first_start_ns = 0;
  std::vector<DutyWindow> windows;  // every process's, in log order
  std::vector<std::string> notes;   // "waiting no-context", "stopped <why>"
};
DutySummary summarize_duty_dir(const std::string& dir);
// Windows opened, samples each, duty reached (of run_s; 0: not said), silent windows, opening cost.
void print_duty_summary(const DutySummary& s, double run_s, std::ostream& out);

// `record --duty`: `lib` is the injection library run_record found.
int run_duty_record(const RecordArgs& a, const std::string& lib);

}  // namespace aiflame
