// Kernel-serialized PC sampling with start/stop control, as NVIDIA's sample sets it up
// (shared/reference/pc_sampling_serialized.cu): shared by the window-cost probes
// (serialized_cost.cu, serialized_modules.cu). Header-only: each probe is one nvcc command.
#pragma once
#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CU(x) do { CUptiResult r = (x); if (r != CUPTI_SUCCESS) { const char* s; cuptiGetResultString(r, &s); printf("CUPTI FAIL %s: %s\n", #x, s); } } while (0)

struct SerializedSampling {
  CUcontext ctx = nullptr;
  CUpti_PCSamplingData cfgbuf = {}, out = {};
  unsigned long long samples = 0;  // summed over every drain
  std::vector<uint32_t> idx;
  std::vector<char*> names;

  // Enables sampling on ctx: every stall reason, kernel-serialized, start/stop control, the given
  // period (0: CUPTI's default).
  // continuous: CUPTI's continuous collection (still with start/stop control) instead.
  // hw_mb: CUPTI's hardware buffer in MB (0: CUPTI's default, 512 MB in CUDA 13's documentation).
  void enable(CUcontext c, int period_log2, bool continuous = false, size_t hw_mb = 0) {
    ctx = c;
    CUpti_PCSamplingEnableParams pe = {CUpti_PCSamplingEnableParamsSize}; pe.ctx = ctx; CU(cuptiPCSamplingEnable(&pe));
    size_t nsr = 0; CUpti_PCSamplingGetNumStallReasonsParams p1 = {CUpti_PCSamplingGetNumStallReasonsParamsSize}; p1.ctx = ctx; p1.numStallReasons = &nsr; CU(cuptiPCSamplingGetNumStallReasons(&p1));
    idx.resize(nsr); names.resize(nsr); for (auto& n : names) n = (char*)calloc(CUPTI_STALL_REASON_STRING_SIZE, 1);
    CUpti_PCSamplingGetStallReasonsParams p2 = {CUpti_PCSamplingGetStallReasonsParamsSize}; p2.ctx = ctx; p2.numStallReasons = nsr; p2.stallReasonIndex = idx.data(); p2.stallReasons = names.data(); CU(cuptiPCSamplingGetStallReasons(&p2));
    if (!cfgbuf.pPcData) { cfgbuf = buffer(10000, nsr); out = buffer(10000, nsr); }
    std::vector<CUpti_PCSamplingConfigurationInfo> cfg; CUpti_PCSamplingConfigurationInfo c0 = {};
    c0.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON; c0.attributeData.stallReasonData.stallReasonCount = nsr; c0.attributeData.stallReasonData.pStallReasonIndex = idx.data(); cfg.push_back(c0); c0 = {};
    c0.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER; c0.attributeData.samplingDataBufferData.samplingDataBuffer = &cfgbuf; cfg.push_back(c0); c0 = {};
    c0.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE; c0.attributeData.collectionModeData.collectionMode = continuous ? CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS : CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED; cfg.push_back(c0); c0 = {};
    c0.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL; c0.attributeData.enableStartStopControlData.enableStartStopControl = 1; cfg.push_back(c0); c0 = {};
    if (hw_mb) { c0.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE; c0.attributeData.hardwareBufferSizeData.hardwareBufferSize = hw_mb << 20; cfg.push_back(c0); c0 = {}; }
    if (period_log2) { c0.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD; c0.attributeData.samplingPeriodData.samplingPeriod = period_log2; cfg.push_back(c0); }
    CUpti_PCSamplingConfigurationInfoParams pc = {CUpti_PCSamplingConfigurationInfoParamsSize}; pc.ctx = ctx; pc.numAttributes = cfg.size(); pc.pPCSamplingConfigurationInfo = cfg.data(); CU(cuptiPCSamplingSetConfigurationAttribute(&pc));
  }
  // Fetches what CUPTI holds (kernel-serialized sampling wants it after every kernel).
  void drain() {
    for (int g = 0; g < 1000; g++) {
      CUpti_PCSamplingGetDataParams p = {CUpti_PCSamplingGetDataParamsSize}; p.ctx = ctx; p.pcSamplingData = &out;
      if (cuptiPCSamplingGetData(&p) != CUPTI_SUCCESS) break;
      for (size_t i = 0; i < out.totalNumPcs; i++) for (size_t k = 0; k < out.pPcData[i].stallReasonCount; k++) samples += out.pPcData[i].stallReason[k].samples;
      out.totalNumPcs = 0;
      if (!out.remainingNumPcs) break;
    }
  }
  // A window: cuCtxSynchronize then Start; cuCtxSynchronize, Stop, drain.
  void start() { cuCtxSynchronize(); CUpti_PCSamplingStartParams p = {CUpti_PCSamplingStartParamsSize}; p.ctx = ctx; CU(cuptiPCSamplingStart(&p)); }
  void stop() { cuCtxSynchronize(); CUpti_PCSamplingStopParams p = {CUpti_PCSamplingStopParamsSize}; p.ctx = ctx; CU(cuptiPCSamplingStop(&p)); drain(); }
  void disable() { CUpti_PCSamplingDisableParams p = {CUpti_PCSamplingDisableParamsSize}; p.ctx = ctx; CU(cuptiPCSamplingDisable(&p)); }

 private:
  static CUpti_PCSamplingData buffer(size_t npc, size_t nsr) {
    CUpti_PCSamplingData d = {}; d.size = sizeof(d); d.collectNumPcs = npc; d.pPcData = (CUpti_PCSamplingPCData*)calloc(npc, sizeof(CUpti_PCSamplingPCData));
    for (size_t i = 0; i < npc; i++) { d.pPcData[i].size = sizeof(CUpti_PCSamplingPCData); d.pPcData[i].stallReason = (CUpti_PCSamplingStallReason*)calloc(nsr, sizeof(CUpti_PCSamplingStallReason)); }
    return d;
  }
};
