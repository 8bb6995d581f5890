// The CUPTI backend's logic without a GPU: a fake CUPTI (function table) drives it through
// subscription failures, sampling refusals and a sampling buffer drain.
#include "record/cupti/cupti_backend.h"

#include <gtest/gtest.h>

#include <cstring>

#include "profile/profile.h"
#include "test_util.h"

namespace aiflame {
namespace {

// State the fake CUPTI functions read; reset by each test.
struct FakeCupti {
  CUptiResult subscribe = CUPTI_SUCCESS;
  CUptiResult pc_enable = CUPTI_SUCCESS;
  int pcs_to_deliver = 0;  // PC records the next GetData fills in
  CUpti_CallbackFunc callback = nullptr;
  CUpti_PCSamplingData* buffer = nullptr;
  int enables = 0, disables = 0;
};
FakeCupti fake;

CuptiApi fake_api() {
  CuptiApi a;
  a.version = 130001;
  a.cuptiGetResultString = [](CUptiResult r, const char** s) {
    *s = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
         : r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES          ? "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"
                                                             : "CUPTI_ERROR_UNKNOWN";
    return CUPTI_SUCCESS;
  };
  a.cuptiSubscribe = [](CUpti_SubscriberHandle*, CUpti_CallbackFunc cb, void*) {
    fake.callback = cb;
    return fake.subscribe;
  };
  a.cuptiEnableCallback = [](uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId) { return CUPTI_SUCCESS; };
  a.cuptiActivityRegisterCallbacks = [](CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) { return CUPTI_SUCCESS; };
  a.cuptiActivityEnable = [](CUpti_ActivityKind) { return CUPTI_SUCCESS; };
  a.cuptiActivityFlushAll = [](uint32_t) { return CUPTI_SUCCESS; };
  a.cuptiActivityGetNumDroppedRecords = [](CUcontext, uint32_t, size_t* n) { *n = 0; return CUPTI_SUCCESS; };
  a.cuptiGetTimestamp = [](uint64_t* t) { static uint64_t now = 1000; *t = now += 1000; return CUPTI_SUCCESS; };
  a.cuptiGetDeviceId = [](CUcontext, uint32_t* d) { *d = 0; return CUPTI_SUCCESS; };
  a.cuptiGetContextId = [](CUcontext, uint32_t* c) { *c = 1; return CUPTI_SUCCESS; };
  a.cuptiPCSamplingEnable = [](CUpti_PCSamplingEnableParams*) { fake.enables++; return fake.pc_enable; };
  a.cuptiPCSamplingDisable = [](CUpti_PCSamplingDisableParams*) { fake.disables++; return CUPTI_SUCCESS; };
  a.cuptiPCSamplingGetNumStallReasons = [](CUpti_PCSamplingGetNumStallReasonsParams* p) {
    *p->numStallReasons = 2;
    return CUPTI_SUCCESS;
  };
  a.cuptiPCSamplingGetStallReasons = [](CUpti_PCSamplingGetStallReasonsParams* p) {
    p->stallReasonIndex[0] = 7;
    std::strcpy(p->stallReasons[0], "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
    p->stallReasonIndex[1] = 8;
    std::strcpy(p->stallReasons[1], "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued");
    return CUPTI_SUCCESS;
  };
  a.cuptiPCSamplingSetConfigurationAttribute = [](CUpti_PCSamplingConfigurationInfoParams* p) {
    for (size_t i = 0; i < p->numAttributes; i++)
      if (p->pPCSamplingConfigurationInfo[i].attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
        fake.buffer = static_cast<CUpti_PCSamplingData*>(
            p->pPCSamplingConfigurationInfo[i].attributeData.samplingDataBufferData.samplingDataBuffer);
    return CUPTI_SUCCESS;
  };
  a.cuptiPCSamplingGetData = [](CUpti_PCSamplingGetDataParams* p) {
    auto* d = static_cast<CUpti_PCSamplingData*>(p->pcSamplingData);
    d->totalNumPcs = static_cast<size_t>(fake.pcs_to_deliver);
    d->remainingNumPcs = 0;
    for (int i = 0; i < fake.pcs_to_deliver; i++) {
      auto& pc = d->pPcData[i];
      // One string shared by both records, as CUPTI does: freeing it per record would double-free.
      static char* shared = nullptr;
      if (i == 0) shared = strdup("_Z6kernelPf");
      pc.functionName = shared;
      pc.pcOffset = 0x10 * static_cast<uint64_t>(i);
      pc.cubinCrc = 42;
      pc.stallReasonCount = 2;
      pc.stallReason[0] = {7, 5};
      pc.stallReason[1] = {8, 3};  // the not-issued subset: kept, never counted twice
    }
    fake.pcs_to_deliver = 0;
    return CUPTI_SUCCESS;
  };
  return a;
}

struct Harness {
  std::string path = test::temp_path("backend");
  Recorder rec;
  Harness() {
    fake = FakeCupti{};
    setenv("AIFLAME_FREE_NAMES", "1", 1);  // the fake's strdup'd names are freed at stop (leak checks)
    RecordOptions o;
    o.output = path;
    o.quiet = true;
    ProcessRecord p;
    std::string err;
    EXPECT_TRUE(rec.start(o, p, &err)) << err;
  }
  Profile finish() {
    rec.finish(99);
    auto p = read_profile(path + "." + std::to_string(getpid()));
    EXPECT_TRUE(p.ok()) << p.error();
    std::remove((path + "." + std::to_string(getpid())).c_str());
    return p.ok() ? std::move(*p) : Profile{};
  }
  void create_context(CuptiBackend&) {
    CUpti_ResourceData rd{};
    rd.context = reinterpret_cast<CUcontext>(0x1234);
    fake.callback(nullptr, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &rd);
  }
};

TEST(CuptiBackend, SecondSubscriberGivesOneWarningThatNamesTheFix) {
  Harness h;
  fake.subscribe = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  CuptiBackend b(h.rec, fake_api());
  EXPECT_FALSE(b.start());
  Profile p = h.finish();
  ASSERT_EQ(p.warnings.size(), 2u);
  EXPECT_NE(p.warnings[0].find("MULTIPLE_SUBSCRIBERS"), std::string::npos);
  EXPECT_NE(p.warnings[0].find("another CUPTI tool"), std::string::npos);
  EXPECT_NE(p.warnings[1].find("runs on unprofiled"), std::string::npos);
}

TEST(CuptiBackend, NoPermissionForSamplingKeepsRecordingLaunches) {
  Harness h;
  fake.pc_enable = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  h.create_context(b);  // a second context does not try (and warn) again
  EXPECT_EQ(fake.enables, 1);
  b.drain_all();
  b.stop();
  Profile p = h.finish();
  ASSERT_EQ(p.warnings.size(), 2u);
  EXPECT_NE(p.warnings[0].find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos);
  EXPECT_NE(p.warnings[1].find("launches and kernel times are still recorded"), std::string::npos);
  EXPECT_TRUE(p.batches.empty());
}

TEST(CuptiBackend, DrainTurnsTheSamplingBufferIntoOneBatch) {
  Harness h;
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  ASSERT_NE(fake.buffer, nullptr);
  fake.pcs_to_deliver = 2;
  b.drain_all();
  b.stop();
  EXPECT_EQ(fake.disables, 1);
  EXPECT_EQ(h.rec.samples.load(), 10u);  // 2 PCs x 5 issued samples; the not-issued 3s are a subset
  Profile p = h.finish();
  ASSERT_EQ(p.batches.size(), 1u);
  const PcBatchRecord& batch = p.batches[0];
  ASSERT_EQ(batch.samples.size(), 4u);
  EXPECT_EQ(p.str(batch.samples[0].function), "_Z6kernelPf");
  EXPECT_EQ(batch.samples[2].pc_offset, 0x10u);
  EXPECT_EQ(batch.samples[0].cubin_crc, 42u);
  EXPECT_GT(batch.timestamp, batch.prev_timestamp);
  ASSERT_EQ(p.stall_reasons.size(), 1u);
  EXPECT_EQ(p.stall_reason_name(0, 8), "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued");
}

}  // namespace
}  // namespace aiflame
