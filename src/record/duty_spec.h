// Duty-cycled recording (`aiflame record --duty W/P`): the option's value and the files a duty-cycled
// recording leaves in its directory. The recording itself is record/duty_cycle.cpp (injection library).
//
// A duty-cycled recording opens a window of W every P (both with units: 500ms, 2s, 1m, 1h), records
// everything today's recording does inside it, and detaches from the vendor's profiling library
// between windows (for CUPTI: cuptiFinalize), so that the program runs at its own speed there.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace aiflame {

// The default duty (`--duty on`): a 1-s window every 90 s. 1 s holds 40,000 GPU samples of a training
// loop on the H100 (bench/RESULTS.md), and 90 s spaces the windows so that what a window costs (its
// launches at the recorded cost, the opening's stall) stays near 0.5% of the run while a window still
// comes at least every 2 minutes (the period is jittered by up to 10%, see duty_cycle.cpp).
inline constexpr uint32_t kDefaultDutyWindowMs = 1000;
inline constexpr uint32_t kDefaultDutyPeriodMs = 90000;

struct DutySpec {
  uint32_t window_ms = 0;  // 0: not duty-cycled
  uint32_t period_ms = 0;
};

// "on" or "default" (the default duty), "off" (not duty-cycled), or "W/P" with each a number and a
// unit of ms, s, m or h ("2s/60s", "500ms/1m"). The window is at least 100 ms, the period at most 24 h
// and at least twice the window. False for anything else.
bool parse_duty_spec(std::string_view text, DutySpec* out);
// A duration with a unit as above ("90s", "1.5h", "250ms"), in milliseconds; false when it is not one.
// A bare number is seconds.
bool parse_duration_ms(std::string_view text, double* ms);

// The window files of one process in a duty directory: DIR/window-<seq>.<pid>, seq from 1, zero-padded
// to 6 digits so that names sort in time order.
std::string duty_window_prefix(const std::string& dir, uint64_t seq);
// Those of `pid` in `dir`, oldest (lowest seq) first, with their sizes.
struct DutyFile {
  std::string path;
  uint64_t seq = 0, bytes = 0;
};
std::vector<DutyFile> duty_window_files(const std::string& dir, int pid);
// Deletes the oldest window files of `pid` while more than `keep` are left (0: no count limit) or
// while they take more than `max_bytes` together (0: no size limit); the newest one always stays.
// Returns the paths deleted.
std::vector<std::string> rotate_duty_files(const std::string& dir, int pid, uint32_t keep, uint64_t max_bytes);

}  // namespace aiflame
