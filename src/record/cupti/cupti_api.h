// The CUPTI entry points aiflame uses, as a table of function pointers filled at run time from the
// libcupti that matches the program's CUDA. Tests fill the table with fakes (see tests/record).
#pragma once
#include <cupti.h>
#include <cupti_pcsampling.h>

#include <string>

namespace aiflame {

// CUPTI API versions: CUDA 12.0 is 18 (kernel records as CUpti_ActivityKernel9); PC sampling
// records carry correlationId from 22; CUDA 13 is 130000 and up.
inline constexpr uint32_t kCuptiApiMinimum = 18;
inline constexpr uint32_t kCuptiApiWithPcCorrelation = 22;

struct CuptiApi {
#define AIFLAME_CUPTI_FUNCTIONS(X)                 \
  X(cuptiGetVersion)                               \
  X(cuptiGetResultString)                          \
  X(cuptiSubscribe)                                \
  X(cuptiUnsubscribe)                              \
  X(cuptiEnableCallback)                           \
  X(cuptiGetTimestamp)                             \
  X(cuptiGetDeviceId)                              \
  X(cuptiGetContextId)                             \
  X(cuptiActivityRegisterCallbacks)                \
  X(cuptiActivityEnable)                           \
  X(cuptiActivityFlushAll)                         \
  X(cuptiActivityGetNextRecord)                    \
  X(cuptiActivityGetNumDroppedRecords)             \
  X(cuptiGetCubinCrc)                              \
  X(cuptiPCSamplingEnable)                         \
  X(cuptiPCSamplingDisable)                        \
  X(cuptiPCSamplingGetNumStallReasons)             \
  X(cuptiPCSamplingGetStallReasons)                \
  X(cuptiPCSamplingSetConfigurationAttribute)      \
  X(cuptiPCSamplingGetData)                        \
  X(cuptiPCSamplingStart)                          \
  X(cuptiPCSamplingStop)
#define AIFLAME_DECLARE(name) decltype(&::name) name = nullptr;
  AIFLAME_CUPTI_FUNCTIONS(AIFLAME_DECLARE)
#undef AIFLAME_DECLARE

  // Optional (graph-node stacks are left out when missing).
  decltype(&::cuptiGetGraphNodeId) cuptiGetGraphNodeId = nullptr;
  decltype(&::cuptiGetGraphId) cuptiGetGraphId = nullptr;
  // Optional (activity buffer tuning is skipped when missing).
  decltype(&::cuptiActivitySetAttribute) cuptiActivitySetAttribute = nullptr;
  // Optional (windows mode switches kernel records off between windows only when present).
  decltype(&::cuptiActivityDisable) cuptiActivityDisable = nullptr;
  // Optional (attach: detaching needs it).
  decltype(&::cuptiFinalize) cuptiFinalize = nullptr;

  std::string library_path;
  uint32_t version = 0;

  // "CUPTI_ERROR_X" for a result code.
  std::string result_string(CUptiResult r) const;
};

// Finds and opens libcupti: one already loaded in the process, then `explicit_path` (AIFLAME_CUPTI)
// alone when it is given, otherwise next to the loaded
// CUDA runtime (pip's nvidia/cuda_runtime -> nvidia/cuda_cupti), $CUDA_HOME, /usr/local/cuda, then
// the loader's search path. On failure returns false and explains in *error what was tried.
bool load_cupti(CuptiApi* api, const std::string& explicit_path, std::string* error);

}  // namespace aiflame
