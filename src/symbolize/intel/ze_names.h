// Intel's names, for the frames of profiles recorded through Level Zero (backend "levelzero"): the
// libraries whose frames are the runtime's. The stall reasons are recorded under iaprof's names
// already (record/levelzero/eu_stall_values.h) and are leaves as they are.
#pragma once
#include <span>

namespace aiflame {

// File-name prefixes of Intel's GPU runtime (the Level Zero loader and layers, the GPU driver, SYCL,
// the Unified Runtime, IGC) and of aiflame's preloaded object.
std::span<const char* const> intel_runtime_library_prefixes();

}  // namespace aiflame
