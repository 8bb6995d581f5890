// The CUPTI backend's logic without a GPU: a fake CUPTI (function table) drives it through
// subscription failures, sampling refusals and a sampling buffer drain.
#include "record/cupti/cupti_backend.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "profile/profile.h"
#include "test_util.h"

namespace aiflame {
namespace {

// State the fake CUPTI functions read; reset by each test.
struct FakeCupti {
  CUptiResult subscribe = CUPTI_SUCCESS;
  CUptiResult pc_enable = CUPTI_SUCCESS;
  int pcs_to_deliver = 0;  // PC records the next GetData fills in (continuous), or the range holds
  int range_pcs = 0;       // start/stop: records of ended ranges, waiting in the configured buffer
  CUpti_CallbackFunc callback = nullptr;
  CUpti_PCSamplingData* buffer = nullptr;
  int enables = 0, disables = 0;
  int starts = 0, stops = 0;
  uint32_t mode = 0, start_stop = 0;  // as configured
  uint32_t correlation = 0;           // what the next GetData's records carry
  uint64_t now = 1000, tick = 1000;   // cuptiGetTimestamp: now += tick per call
  bool real_clock = false;            // cuptiGetTimestamp: the steady clock instead
  uint32_t device = 0;                // what cuptiGetDeviceId says
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
  a.cuptiGetTimestamp = [](uint64_t* t) {
    *t = fake.real_clock ? static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())
                         : fake.now += fake.tick;
    return CUPTI_SUCCESS;
  };
  a.cuptiPCSamplingStart = [](CUpti_PCSamplingStartParams*) { fake.starts++; return CUPTI_SUCCESS; };
  // As CUPTI does at a range's end: the range's records go to the buffer given at configuration.
  a.cuptiPCSamplingStop = [](CUpti_PCSamplingStopParams*) {
    fake.stops++;
    fake.range_pcs += fake.pcs_to_deliver;
    fake.pcs_to_deliver = 0;
    if (fake.buffer) fake.buffer->totalNumPcs = static_cast<size_t>(fake.range_pcs);
    return CUPTI_SUCCESS;
  };
  a.cuptiGetDeviceId = [](CUcontext, uint32_t* d) { *d = fake.device; return CUPTI_SUCCESS; };
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
    for (size_t i = 0; i < p->numAttributes; i++) {
      const auto& info = p->pPCSamplingConfigurationInfo[i];
      if (info.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
        fake.buffer = static_cast<CUpti_PCSamplingData*>(info.attributeData.samplingDataBufferData.samplingDataBuffer);
      if (info.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE)
        fake.mode = info.attributeData.collectionModeData.collectionMode;
      if (info.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL)
        fake.start_stop = info.attributeData.enableStartStopControlData.enableStartStopControl;
    }
    return CUPTI_SUCCESS;
  };
  a.cuptiPCSamplingGetData = [](CUpti_PCSamplingGetDataParams* p) {
    auto* d = static_cast<CUpti_PCSamplingData*>(p->pcSamplingData);
    d->totalNumPcs = 0;  // the caller's buffer is emptied first...
    d->remainingNumPcs = 0;
    int n = fake.pcs_to_deliver;
    if (fake.start_stop) {  // ...then ended ranges' records move out of the configured buffer
      n = fake.buffer->totalNumPcs ? fake.range_pcs : 0;  // nothing left when the two are one buffer
      fake.range_pcs = 0;
      fake.buffer->totalNumPcs = 0;
    } else {
      fake.pcs_to_deliver = 0;
    }
    d->totalNumPcs = static_cast<size_t>(n);
    for (int i = 0; i < n; i++) {
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
      pc.correlationId = fake.correlation;
    }
    return CUPTI_SUCCESS;
  };
  return a;
}

struct Harness {
  std::string path = test::temp_path("backend");
  Recorder rec;
  explicit Harness(RecordOptions o = {}) {
    fake = FakeCupti{};
    o.measure.free_names = true;  // the fake's strdup'd names are freed at stop (leak checks)
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
  void launch(uint32_t correlation) {
    CUpti_CallbackData cb{};
    cb.callbackSite = CUPTI_API_ENTER;
    cb.correlationId = correlation;
    cb.context = reinterpret_cast<CUcontext>(0x1234);
    cb.symbolName = "kernel";
    fake.callback(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
    fake.correlation = correlation;  // the kernel sampled while the window is open
    fake.pcs_to_deliver = 1;
    cb.callbackSite = CUPTI_API_EXIT;
    fake.callback(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
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
  EXPECT_EQ(h.rec.counters().samples.load(), 10u);  // 2 PCs x 5 issued samples; the not-issued 3s are a subset
  Profile p = h.finish();
  ASSERT_EQ(p.batches.size(), 1u);
  const PcBatchRecord& batch = p.batches[0];
  ASSERT_EQ(batch.samples.size(), 4u);
  EXPECT_EQ(p.str(batch.samples[0].function), "_Z6kernelPf");
  EXPECT_EQ(batch.samples[2].pc_offset, 0x10u);
  EXPECT_EQ(batch.samples[0].code_object_id, 42u);
  EXPECT_GT(batch.timestamp, batch.prev_timestamp);
  ASSERT_EQ(p.stall_reasons.size(), 1u);
  EXPECT_EQ(p.stall_reason_name(0, 8), "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued");
}

TEST(CuptiBackend, ContinuousModeNeverStartsOrStopsAndLaunchesCarryTheirDevice) {
  Harness h;
  fake.device = 3;
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  for (uint32_t i = 1; i <= 100; i++) h.launch(i);
  b.stop();
  Profile p = h.finish();
  ASSERT_EQ(p.launches.size(), 100u);
  for (const auto& l : p.launches) EXPECT_EQ(l.device, 3u);
  EXPECT_EQ(fake.mode, CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS);
  EXPECT_EQ(fake.start_stop, 0u);
  EXPECT_EQ(fake.starts + fake.stops, 0);
}

TEST(CuptiBackend, SkipLaunchesSwitchRecordsNoLaunch) {
  for (uint32_t skip : {1u, 2u}) {
    RecordOptions o;
    o.measure.skip_launches = skip;
    Harness h(o);
    CuptiBackend b(h.rec, fake_api());
    ASSERT_TRUE(b.start());
    h.create_context(b);
    for (uint32_t i = 1; i <= 10; i++) h.launch(i);
    b.stop();
    EXPECT_EQ(h.finish().launches.size(), 0u) << "skip " << skip;
  }
}

// Windows mode: serialized sampling with start/stop control, opened by the window thread (never
// from a launch callback, where CUPTI 13.0 hangs) for short windows; each window's data is fetched
// right after it stops, and carries the launches' correlation ids.
TEST(CuptiBackend, WindowsModeOpensShortSerializedWindowsOutsideLaunchCallbacks) {
  RecordOptions o;
  o.pc_mode = PcMode::Windows;
  o.windows_per_s = 1000;  // a window every 0.5-1.5 ms
  o.window_us = 10;
  Harness h(o);
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  EXPECT_EQ(fake.mode, CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED);
  EXPECT_EQ(fake.start_stop, 1u);
  for (uint32_t i = 1; i <= 100; i++) h.launch(i);
  EXPECT_EQ(fake.starts + fake.stops, 0);  // launches alone never start or stop sampling
  // The window thread's loop, by hand, between launches: a launch and a tick every 2 us (one
  // timestamp each) for 20 ms, about 20 windows; each tick says how long to sleep until the next event.
  uint64_t max_wait = 0;
  for (uint32_t i = 101; i <= 10100; i++) {
    h.launch(i);
    max_wait = std::max(max_wait, b.tick_windows());
    if (i % 1000 == 0) b.drain_all();  // the collector's tick must not fetch data mid-window
  }
  EXPECT_LE(max_wait, 1500000u);  // never longer than the longest gap
  EXPECT_LE(fake.starts - fake.stops, 1);  // the last window may still be open...
  b.stop();
  EXPECT_EQ(fake.starts, fake.stops);  // ...and stop() closes it
  EXPECT_GE(fake.starts, 12);
  EXPECT_LE(fake.starts, 40);
  Profile p = h.finish();
  ASSERT_TRUE(p.end.has_value());
  EXPECT_EQ(p.end->windows, static_cast<uint64_t>(fake.stops));
  // Each window lasts its length (10 us), closed at the first tick after it: 10-12 us.
  EXPECT_GE(p.end->window_ns, p.end->windows * 10000);
  EXPECT_LE(p.end->window_ns, p.end->windows * 13000);
  ASSERT_EQ(p.batches.size(), static_cast<size_t>(fake.stops));
  for (const auto& batch : p.batches) {
    ASSERT_FALSE(batch.samples.empty());
    EXPECT_NE(batch.samples[0].correlation_id, 0u);
    EXPECT_GE(batch.timestamp - batch.prev_timestamp, 10000u);  // the window's span
  }
}

// The real thread: windows open and close on their own while the program launches, and stop() ends
// the thread and closes the window it left open.
TEST(CuptiBackend, WindowThreadRunsWindowsAndStopEndsIt) {
  RecordOptions o;
  o.pc_mode = PcMode::Windows;
  o.windows_per_s = 1000;
  o.window_us = 10;
  Harness h(o);
  fake.real_clock = true;
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  b.start_window_thread();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // about 50 windows
  b.stop();  // joins the thread: fake is read only after this
  EXPECT_GE(fake.stops, 3);
  EXPECT_EQ(fake.starts, fake.stops);
}

}  // namespace
}  // namespace aiflame
