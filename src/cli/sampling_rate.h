// `record --rate HZ`: a sampling rate in samples per second per SM, turned into the period the GPU
// takes. NVIDIA's PC sampling takes one warp's PC per SM every 2^N cycles of the SM clock
// (CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD), so
//   rate = SM clock / 2^N   and   N = round(log2(SM clock / HZ)), N in 5..31,
// which gives HZ within a factor of sqrt(2). The clock is device 0's maximum SM clock as the driver
// reports it (CU_DEVICE_ATTRIBUTE_CLOCK_RATE); a GPU that runs below it (idle, power-capped) samples
// proportionally less often in wall-clock time, as a cycle-based period must.
#pragma once
#include <string>

namespace aiflame {

// A clock for the mapping when no driver can be asked: H100 SXM's maximum SM clock.
inline constexpr double kNominalSmClockHz = 1.98e9;

// N in 5..31 for `hz` samples per second per SM at `clock_hz`.
unsigned period_log2_for_rate(double hz, double clock_hz);

// Device 0's maximum SM clock in Hz from the driver (libcuda, opened here and initialised), or 0 when
// there is no driver or no device. `where` says which device it read.
double device_sm_clock_hz(std::string* where);

}  // namespace aiflame
