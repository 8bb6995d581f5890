// The Level Zero entry points the backend uses, as a table of function pointers taken at run time from
// the loader the program has already loaded (libze_loader.so.1): the injection library never links
// it, so that it still loads into CUDA programs on machines without Level Zero.
#pragma once
#include <level_zero/layers/zel_tracing_api.h>
#include <level_zero/layers/zel_tracing_register_cb.h>
#include <level_zero/ze_api.h>
#include <level_zero/zet_api.h>

#include <string>

namespace aiflame {

struct ZeApi {
#define AIFLAME_ZE_FUNCTIONS(X)                          \
  X(zeDriverGet)                                         \
  X(zeDriverGetApiVersion)                               \
  X(zeDriverGetProperties)                               \
  X(zeDriverGetExtensionFunctionAddress)                 \
  X(zeDeviceGet)                                         \
  X(zeDeviceGetProperties)                               \
  X(zeDeviceGetGlobalTimestamps)                         \
  X(zeModuleGetNativeBinary)                             \
  X(zeEventPoolCreate)                                   \
  X(zeEventPoolDestroy)                                  \
  X(zeEventCreate)                                       \
  X(zeEventDestroy)                                      \
  X(zeEventQueryStatus)                                  \
  X(zeEventHostReset)                                    \
  X(zeEventQueryKernelTimestamp)                         \
  X(zetMetricGroupGet)                                   \
  X(zetMetricGroupGetProperties)                         \
  X(zetMetricGet)                                        \
  X(zetMetricGetProperties)                              \
  X(zetContextActivateMetricGroups)                      \
  X(zetMetricStreamerOpen)                               \
  X(zetMetricStreamerReadData)                           \
  X(zetMetricStreamerClose)                              \
  X(zetMetricGroupCalculateMetricValues)                 \
  X(zelTracerCreate)                                     \
  X(zelTracerDestroy)                                    \
  X(zelTracerSetEnabled)                                 \
  X(zelTracerContextCreateRegisterCallback)              \
  X(zelTracerContextDestroyRegisterCallback)             \
  X(zelTracerModuleCreateRegisterCallback)               \
  X(zelTracerKernelCreateRegisterCallback)               \
  X(zelTracerCommandListCreateRegisterCallback)          \
  X(zelTracerCommandListCreateImmediateRegisterCallback) \
  X(zelTracerCommandListDestroyRegisterCallback)         \
  X(zelTracerCommandListResetRegisterCallback)           \
  X(zelTracerCommandListAppendLaunchKernelRegisterCallback) \
  X(zelTracerCommandListAppendLaunchCooperativeKernelRegisterCallback) \
  X(zelTracerCommandListAppendLaunchKernelIndirectRegisterCallback) \
  X(zelTracerCommandListAppendLaunchMultipleKernelsIndirectRegisterCallback) \
  X(zelTracerEventDestroyRegisterCallback)               \
  X(zelTracerEventHostResetRegisterCallback)
#define AIFLAME_DECLARE(name) decltype(&::name) name = nullptr;
  AIFLAME_ZE_FUNCTIONS(AIFLAME_DECLARE)
#undef AIFLAME_DECLARE
};

// Fills `api` from the loaded libze_loader.so.1. False with *error naming what is missing (no loader
// loaded; a loader without the tracing API).
bool load_ze(ZeApi* api, std::string* error);

}  // namespace aiflame
