// The CUPTI backend's logic without a GPU: a fake CUPTI (function table) drives it through
// subscription failures, sampling refusals, a sampling buffer drain, activity buffers of kernel
// records (read back through cuptiActivityGetNextRecord by the real on_activity_buffer), graph-node
// callbacks and module loads, and the tests check what ends up in the written profile.
#include "record/cupti/cupti_backend.h"
#include "record/sampling_windows.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "profile/profile.h"
#include "test_util.h"

// libcuda's cuGraphNodeGetType, as the backend finds it (dlsym on the process, the test binary exports
// it): the node types the tests give (by node handle), a kernel node otherwise.
namespace aiflame {
namespace {
std::vector<std::pair<CUgraphNode, CUgraphNodeType>> g_node_types;
}  // namespace
}  // namespace aiflame
extern "C" CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  *type = CU_GRAPH_NODE_TYPE_KERNEL;
  for (const auto& [n, t] : aiflame::g_node_types)
    if (n == node) *type = t;
  return CUDA_SUCCESS;
}
// libcuda's device queries, as the backend finds them: device ordinal d has 100 + d SMs.
extern "C" CUresult CUDAAPI cuDeviceGet(CUdevice* dev, int ordinal) {
  *dev = ordinal;
  return CUDA_SUCCESS;
}
// Each SM has an H100's limits; other attributes are not known.
extern "C" CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attr, CUdevice dev) {
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 100 + dev; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *value = 32; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *value = 65536; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 233472; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *value = 1024; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

namespace aiflame {
namespace {

// The fake's activity buffers: one record per fixed-size slot (real CUPTI's layout is its own; only
// cuptiActivityGetNextRecord reads it, and the fake's reads the fake's).
constexpr size_t kActivitySlot = sizeof(CUpti_ActivityKernel10);

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
  size_t hardware_buffer = 0;         // as configured (0: not set, CUPTI's default)
  uint32_t correlation = 0;           // what the next GetData's records carry
  uint64_t now = 1000, tick = 1000;   // cuptiGetTimestamp: now += tick per call
  bool real_clock = false;            // cuptiGetTimestamp: the steady clock instead
  uint32_t device = 0;                // what cuptiGetDeviceId says
  // Activity: the callbacks registered, and the records the next flush delivers in one buffer.
  CUpti_BuffersCallbackRequestFunc buffer_requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc buffer_completed = nullptr;
  std::vector<CUpti_ActivityKernel10> activity;  // kind set per record (a memcpy kind is not a kernel)
  int flushes = 0, buffers_delivered = 0, records_read = 0;
  // Graph nodes: ids by handle (the handle's value as the id), or a failing lookup.
  bool graph_node_id_fails = false;
  int cubin_crc_calls = 0;
  int launch_callback = -1;  // cuLaunchKernel's driver callback as last switched: 1 on, 0 off, -1 never
  int kernel_records = -1;   // CONCURRENT_KERNEL records as last switched: 1 on, 0 off, -1 never
};
FakeCupti fake;

// A kernel record as CUPTI 13 fills it.
CUpti_ActivityKernel10 kernel_record(uint32_t correlation, uint64_t start, uint64_t end, const char* name) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = correlation;
  k.start = start;
  k.end = end;
  k.deviceId = 1;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = 64; k.gridY = 2; k.gridZ = 1;
  k.blockX = 256; k.blockY = 1; k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 4096;
  k.dynamicSharedMemory = 100;
  k.name = name;
  return k;
}

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
  a.cuptiEnableCallback = [](uint32_t on, CUpti_SubscriberHandle, CUpti_CallbackDomain d, CUpti_CallbackId id) {
    if (d == CUPTI_CB_DOMAIN_DRIVER_API && id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) fake.launch_callback = on ? 1 : 0;
    return CUPTI_SUCCESS;
  };
  a.cuptiActivityRegisterCallbacks = [](CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done) {
    fake.buffer_requested = req;
    fake.buffer_completed = done;
    return CUPTI_SUCCESS;
  };
  a.cuptiActivityEnable = [](CUpti_ActivityKind k) {
    if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) fake.kernel_records = 1;
    return CUPTI_SUCCESS;
  };
  a.cuptiActivityDisable = [](CUpti_ActivityKind k) {
    if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) fake.kernel_records = 0;
    return CUPTI_SUCCESS;
  };
  // As CUPTI does on a flush: asks the tool for a buffer, fills it, hands it back complete (the tool
  // frees it).
  a.cuptiActivityFlushAll = [](uint32_t) {
    fake.flushes++;
    if (fake.activity.empty() || !fake.buffer_requested) return CUPTI_SUCCESS;
    uint8_t* buf = nullptr;
    size_t size = 0, max_records = 0;
    fake.buffer_requested(&buf, &size, &max_records);
    size_t n = std::min(fake.activity.size(), size / kActivitySlot);
    for (size_t i = 0; i < n; i++) std::memcpy(buf + i * kActivitySlot, &fake.activity[i], kActivitySlot);
    fake.activity.erase(fake.activity.begin(), fake.activity.begin() + static_cast<ptrdiff_t>(n));
    fake.buffers_delivered++;
    fake.buffer_completed(nullptr, 0, buf, size, n * kActivitySlot);
    return CUPTI_SUCCESS;
  };
  a.cuptiActivityGetNextRecord = [](uint8_t* buffer, size_t valid, CUpti_Activity** r) {
    uint8_t* next = *r ? reinterpret_cast<uint8_t*>(*r) + kActivitySlot : buffer;
    if (next + kActivitySlot > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *r = reinterpret_cast<CUpti_Activity*>(next);
    fake.records_read++;
    return CUPTI_SUCCESS;
  };
  a.cuptiGetGraphNodeId = [](CUgraphNode node, uint64_t* id) {
    if (fake.graph_node_id_fails) return CUPTI_ERROR_INVALID_PARAMETER;
    *id = reinterpret_cast<uint64_t>(node);
    return CUPTI_SUCCESS;
  };
  a.cuptiGetGraphId = [](CUgraph graph, uint32_t* id) {
    *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(graph));
    return CUPTI_SUCCESS;
  };
  // The CRC of the image: here its first 8 bytes (the tests' images differ there).
  a.cuptiGetCubinCrc = [](CUpti_GetCubinCrcParams* p) {
    fake.cubin_crc_calls++;
    if (p->size != CUpti_GetCubinCrcParamsSize || p->cubinSize < 8) return CUPTI_ERROR_INVALID_PARAMETER;
    std::memcpy(&p->cubinCrc, p->cubin, 8);
    return CUPTI_SUCCESS;
  };
  a.cuptiActivityGetNumDroppedRecords = [](CUcontext, uint32_t, size_t* n) { *n = 0; return CUPTI_SUCCESS; };
  a.cuptiGetTimestamp = [](uint64_t* t) {
    // Launching threads read the clock together in the windows tests (ThreadSanitizer: a race on now).
    static std::mutex clock_mu;
    std::lock_guard<std::mutex> lock(clock_mu);
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
      if (info.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE)
        fake.hardware_buffer = info.attributeData.hardwareBufferSizeData.hardwareBufferSize;
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
    g_node_types.clear();
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
  // One of a launch's API callbacks (enter or exit), on the calling thread.
  static void at(CUpti_ApiCallbackSite where, uint32_t correlation,
                 CUpti_CallbackId api = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) {
    CUpti_CallbackData cb{};
    cb.callbackSite = where;
    cb.correlationId = correlation;
    cb.context = reinterpret_cast<CUcontext>(0x1234);
    cb.symbolName = "kernel";
    fake.callback(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, api, &cb);
  }
  // A launch; `inside` runs between its API enter and exit callbacks (where stream capture creates
  // graph nodes).
  template <class F = void (*)()>
  void launch(uint32_t correlation, F inside = [] {}, CUpti_CallbackId api = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) {
    at(CUPTI_API_ENTER, correlation, api);
    fake.correlation = correlation;  // the kernel sampled while the window is open
    fake.pcs_to_deliver = 1;
    inside();
    at(CUPTI_API_EXIT, correlation, api);
  }
  void graph_node(uintptr_t node, uintptr_t graph, uintptr_t original = 0) {
    CUpti_GraphData g{};
    g.node = reinterpret_cast<CUgraphNode>(node);
    g.graph = reinterpret_cast<CUgraph>(graph);
    g.originalNode = reinterpret_cast<CUgraphNode>(original);
    CUpti_ResourceData rd{};
    rd.context = reinterpret_cast<CUcontext>(0x1234);
    rd.resourceDescriptor = &g;
    fake.callback(nullptr, CUPTI_CB_DOMAIN_RESOURCE,
                  original ? CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED : CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, &rd);
  }
  void load_module(const std::string& image) {
    CUpti_ModuleResourceData m{};
    m.moduleId = 1;
    m.cubinSize = image.size();
    m.pCubin = image.data();
    CUpti_ResourceData rd{};
    rd.context = reinterpret_cast<CUcontext>(0x1234);
    rd.resourceDescriptor = &m;
    fake.callback(nullptr, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED, &rd);
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
  RecordOptions o;
  o.pc_mode = PcMode::Continuous;  // --full
  Harness h(o);
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
  RecordOptions o;
  o.pc_mode = PcMode::Continuous;  // --full
  Harness h(o);
  fake.device = 3;
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  for (uint32_t i = 1; i <= 100; i++) h.launch(i);
  b.stop();
  Profile p = h.finish();
  ASSERT_EQ(p.launches.size(), 100u);
  for (const auto& l : p.launches) EXPECT_EQ(l.device, 3u);
  EXPECT_EQ(p.sm_count(3), 103u);  // the device's SMs, from libcuda, for attribution's SMs x time
  // and each SM's limits, for the block-scheduler model
  const StallReasonsRecord* limits = p.sm_limits(3);
  ASSERT_NE(limits, nullptr);
  EXPECT_EQ(limits->max_threads_per_sm, 2048u);
  EXPECT_EQ(limits->max_blocks_per_sm, 32u);
  EXPECT_EQ(limits->registers_per_sm, 65536u);
  EXPECT_EQ(limits->shared_per_sm, 233472u);
  EXPECT_EQ(limits->shared_reserved_per_block, 1024u);
  EXPECT_EQ(fake.mode, CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS);
  EXPECT_EQ(fake.start_stop, 0u);
  EXPECT_EQ(fake.starts + fake.stops, 0);
}

// Continuous mode's hardware buffer follows the period and the drain interval (continuous_hw_buffer_mb):
// 32 MiB at the default period, where CUPTI's default of 512 MiB cost every fork() of the program ~5 ms.
TEST(CuptiBackend, ContinuousModeSizesTheHardwareBufferByThePeriod) {
  struct Case {
    uint32_t period, interval, measure_mb;
    size_t want_mib;
  } cases[] = {{kDefaultPeriodLog2, 10, 0, 32}, {12, 10, 0, 512}, {15, 10, 0, 128},
               {0, 10, 0, 512},  // CUPTI's own period: its default size
               {22, 10, 200, 200}};  // AIFLAME_LAB=continuous_hw_buffer_mb
  for (const Case& c : cases) {
    RecordOptions o;
    o.pc_mode = PcMode::Continuous;
    o.period_log2 = c.period;
    o.interval_ms = c.interval;
    o.measure.continuous_hw_buffer_mb = c.measure_mb;
    Harness h(o);
    fake.hardware_buffer = 0;
    CuptiBackend b(h.rec, fake_api());
    ASSERT_TRUE(b.start());
    h.create_context(b);
    h.launch(1);
    b.stop();
    h.finish();
    EXPECT_EQ(fake.hardware_buffer, c.want_mib << 20) << "period " << c.period << ", measure " << c.measure_mb;
  }
}

TEST(ContinuousHwBuffer, ShrinksWithThePeriodGrowsWithTheIntervalAndStaysInBounds) {
  EXPECT_EQ(continuous_hw_buffer_mb(0, 10), 512u);
  EXPECT_EQ(continuous_hw_buffer_mb(13, 10), 512u);
  EXPECT_EQ(continuous_hw_buffer_mb(14, 10), 256u);
  EXPECT_EQ(continuous_hw_buffer_mb(17, 10), 32u);
  EXPECT_EQ(continuous_hw_buffer_mb(22, 100), 32u);   // 512 * 10 >> 9 = 10
  EXPECT_EQ(continuous_hw_buffer_mb(22, 5000), 500u);  // 512 * 500 >> 9
  for (uint32_t interval : {1u, 10u, 100u, 10000u})
    for (uint32_t p = 5; p <= 31; p++) {
      const uint32_t mb = continuous_hw_buffer_mb(p, interval);
      EXPECT_GE(mb, 32u);
      EXPECT_LE(mb, 512u);
      if (p > 5) {
        EXPECT_LE(mb, continuous_hw_buffer_mb(p - 1, interval)) << "period " << p;  // finer: not smaller
      }
      if (interval > 1) {
        EXPECT_GE(mb, continuous_hw_buffer_mb(p, 1)) << "interval " << interval;
      }
    }
}

// Kernel times come in activity buffers: CUPTI asks for a buffer, fills it, hands it back; the backend
// reads each record through cuptiActivityGetNextRecord and writes one kernel record per kernel, skipping
// other kinds. Attribution rests on these (the launch's correlation id, the kernel's time span).
TEST(CuptiBackend, ActivityBuffersBecomeKernelRecords) {
  Harness h;
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  ASSERT_NE(fake.buffer_requested, nullptr);
  h.create_context(b);
  for (uint32_t i = 1; i <= 3; i++) h.launch(i);
  static const char kName[] = "_Z6kernelPf";
  fake.activity.push_back(kernel_record(1, 5000, 6000, kName));
  CUpti_ActivityKernel10 copy = kernel_record(99, 1, 2, kName);
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;  // not a kernel: skipped
  fake.activity.push_back(copy);
  fake.activity.push_back(kernel_record(2, 6000, 9000, kName));
  CUpti_ActivityKernel10 nameless = kernel_record(3, 9000, 9500, nullptr);
  nameless.kind = CUPTI_ACTIVITY_KIND_KERNEL;  // serialized kernels are read the same
  nameless.graphId = 5;
  nameless.graphNodeId = 0x77;
  fake.activity.push_back(nameless);
  b.stop();  // flushes: the buffer comes back complete
  EXPECT_EQ(fake.buffers_delivered, 1);
  EXPECT_EQ(fake.records_read, 4);
  EXPECT_EQ(h.rec.counters().kernels.load(), 3u);
  Profile p = h.finish();
  ASSERT_EQ(p.kernels.size(), 3u);
  const KernelRow& k1 = p.kernels[0];
  EXPECT_EQ(k1.correlation_id, 1u);
  EXPECT_EQ(k1.start, 5000u);
  EXPECT_EQ(k1.end, 6000u);
  EXPECT_EQ(k1.device, 1u);
  EXPECT_EQ(k1.stream, 7u);
  EXPECT_EQ(p.str(k1.name), "_Z6kernelPf");
  EXPECT_EQ(k1.graph_node_id, 0u);
  EXPECT_EQ(k1.threads, 256u);  // what a block holds of an SM, for the block-scheduler model
  EXPECT_EQ(k1.registers, 40u);
  EXPECT_EQ(k1.shared, 4196u);
  EXPECT_EQ(p.kernels[1].correlation_id, 2u);
  EXPECT_EQ(p.kernels[1].end - p.kernels[1].start, 3000u);
  EXPECT_EQ(p.str(p.kernels[2].name), "[unknown kernel]");
  EXPECT_EQ(p.kernels[2].graph_node_id, 0x77u);
  ASSERT_TRUE(p.end.has_value());
  EXPECT_EQ(p.end->kernels, 3u);
  // Each kernel record joins a launch of the same correlation id.
  ASSERT_EQ(p.launches.size(), 3u);
  for (size_t i = 0; i < 3; i++) EXPECT_EQ(p.launches[i].correlation_id, p.kernels[i].correlation_id);
}

// A buffer CUPTI delivers after stop() (the process's exit, after the profile was closed) is freed and
// not read; one delivered before by a context's teardown is read.
TEST(CuptiBackend, ActivityBufferAfterStopIsNotRead) {
  Harness h;
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  static const char kName[] = "_Z1kv";
  fake.activity.push_back(kernel_record(1, 10, 20, kName));
  CUpti_ResourceData rd{};
  rd.context = reinterpret_cast<CUcontext>(0x1234);
  fake.callback(nullptr, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &rd);
  EXPECT_EQ(fake.buffers_delivered, 1);  // the teardown flushed
  b.stop();
  fake.activity.push_back(kernel_record(2, 30, 40, kName));
  fake.buffer_completed(nullptr, 0, nullptr, 0, 0);  // a null buffer: nothing to free or read
  {
    uint8_t* buf = nullptr;
    size_t size = 0, max = 0;
    fake.buffer_requested(&buf, &size, &max);
    std::memcpy(buf, &fake.activity[0], kActivitySlot);
    int read_before = fake.records_read;
    fake.buffer_completed(nullptr, 0, buf, size, kActivitySlot);
    EXPECT_EQ(fake.records_read, read_before);
  }
  Profile p = h.finish();
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].correlation_id, 1u);
}

// Graph nodes: a node created inside a launch (stream capture) carries that launch's stack; one created
// outside any launch (cuGraphAddKernelNode) a stack of its own; a clone names its original and carries
// no stack. Nodes that run no kernel (memcpy, memset) and nodes CUPTI cannot name are left out.
TEST(CuptiBackend, GraphNodeCallbacksRecordNodesWithTheirStacks) {
  Harness h;
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  g_node_types = {{reinterpret_cast<CUgraphNode>(0x30), CU_GRAPH_NODE_TYPE_MEMCPY}};
  h.launch(1, [&] { h.graph_node(0x10, 0x3); });  // captured: the launch's stack
  h.graph_node(0x20, 0x3);                        // added by hand: its own site
  h.graph_node(0x30, 0x3);                        // a memcpy node: left out
  h.graph_node(0x11, 0x4, 0x10);                  // instantiated: a clone of 0x10
  fake.graph_node_id_fails = true;
  h.graph_node(0x40, 0x3);                        // no id: left out
  fake.graph_node_id_fails = false;
  h.launch(2, [] {}, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch);
  b.stop();
  Profile p = h.finish();
  ASSERT_EQ(p.graph_nodes.size(), 3u);
  ASSERT_EQ(p.launches.size(), 2u);
  const GraphNodeRecord& captured = p.graph_nodes.at(0x10);
  EXPECT_EQ(captured.graph_id, 3u);
  EXPECT_EQ(captured.stack_id, p.launches[0].stack_id);
  EXPECT_EQ(captured.original_node_id, 0u);
  const GraphNodeRecord& added = p.graph_nodes.at(0x20);
  EXPECT_NE(added.stack_id, 0u);
  EXPECT_NE(added.stack_id, captured.stack_id);
  EXPECT_TRUE(p.stacks.count(added.stack_id));
  const GraphNodeRecord& clone = p.graph_nodes.at(0x11);
  EXPECT_EQ(clone.original_node_id, 0x10u);
  EXPECT_EQ(clone.graph_id, 4u);
  EXPECT_EQ(clone.stack_id, 0u);
  EXPECT_FALSE(p.graph_nodes.count(0x30));
  EXPECT_FALSE(p.graph_nodes.count(0x40));
}

// Module loads: each cubin is written once (by CUPTI's CRC), with its bytes unless --no-cubins, and the
// device of the context that loaded it.
TEST(CuptiBackend, ModuleLoadsWriteEachCubinOnce) {
  for (bool keep : {true, false}) {
    RecordOptions o;
    o.keep_cubins = keep;
    Harness h(o);
    fake.device = 2;
    CuptiBackend b(h.rec, fake_api());
    ASSERT_TRUE(b.start());
    h.create_context(b);
    std::string a("\x01\0\0\0\0\0\0\0cubin-a", 15), c("\x02\0\0\0\0\0\0\0cubin-c!", 16);
    h.load_module(a);
    h.load_module(c);
    h.load_module(a);            // loaded again (another context, a reload): not written again
    h.load_module(std::string("\x03", 1));  // CUPTI refuses the CRC: warned, not written
    b.stop();
    EXPECT_EQ(fake.cubin_crc_calls, 4);
    EXPECT_EQ(h.rec.counters().cubins.load(), 2u);
    Profile p = h.finish();
    ASSERT_EQ(p.cubins.size(), 2u) << "keep " << keep;
    EXPECT_EQ(p.cubins.at(1).image, keep ? a : "");
    EXPECT_EQ(p.cubins.at(2).image, keep ? c : "");
    EXPECT_EQ(p.cubins.at(2).device, 2u);
    ASSERT_EQ(p.warnings.size(), 1u);
    EXPECT_NE(p.warnings[0].find("cuptiGetCubinCrc failed"), std::string::npos) << p.warnings[0];
  }
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

// AIFLAME_LAB=launch_ab: in slices without the launch path, the callback returns before any stack or
// record; the recorder still counts each launch's interval to the next for its kind of slice.
TEST(CuptiBackend, LaunchAbSkipsTheLaunchPathInSomeSlices) {
  RecordOptions o;
  o.measure.launch_ab = true;
  Harness h(o);
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  uint32_t n = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);  // ~40 slices
  while (std::chrono::steady_clock::now() < end) {
    h.launch(++n);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  b.stop();
  const LaunchAB::Result ab = h.rec.launch_ab();
  const size_t recorded = h.finish().launches.size();
  EXPECT_GT(recorded, n / 5) << "slices with the launch path record their launches";
  EXPECT_LT(recorded, n - n / 5) << "slices without it record none";
  ASSERT_TRUE(ab.valid);
  EXPECT_EQ(ab.on_intervals + ab.off_intervals + ab.long_intervals, n - 1u);
}

// AIFLAME_LAB=callback_ab: the collector's drains switch CUPTI's launch callbacks off, then on again a
// slice later (100-300 ms); without the switch they stay on.
TEST(CuptiBackend, CallbackAbSwitchesTheLaunchCallbacksInSlices) {
  for (uint32_t ab : {0u, 1u}) {
    RecordOptions o;
    o.measure.callback_ab = ab;
    Harness h(o);
    CuptiBackend b(h.rec, fake_api());
    ASSERT_TRUE(b.start());
    h.create_context(b);
    EXPECT_EQ(fake.launch_callback, 1);
    b.drain();
    EXPECT_EQ(fake.launch_callback, ab ? 0 : 1) << "ab " << ab;
    int seen_on_again = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(350);
    while (std::chrono::steady_clock::now() < end) {
      b.drain();
      seen_on_again += fake.launch_callback == 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (ab) {
      EXPECT_GT(seen_on_again, 0) << "switched on again within 300 ms";
    }
    b.stop();
    h.finish();
  }
}

// AIFLAME_LAB=callback_ab=2 switches the kernel records (the launch callbacks stay on), only without PC
// sampling: with it, CUPTI refuses to switch them on again, so the switch says so and leaves them.
TEST(CuptiBackend, CallbackAbSwitchesKernelRecordsOnlyWithoutPcSampling) {
  for (bool sampling : {false, true}) {
    RecordOptions o;
    o.measure.callback_ab = 2;
    o.pc_sampling = sampling;
    Harness h(o);
    CuptiBackend b(h.rec, fake_api());
    ASSERT_TRUE(b.start());
    h.create_context(b);
    EXPECT_EQ(fake.kernel_records, 1);
    b.drain();
    EXPECT_EQ(fake.kernel_records, sampling ? 1 : 0) << "sampling " << sampling;
    EXPECT_EQ(fake.launch_callback, 1) << "sampling " << sampling;
    b.stop();
    Profile p = h.finish();
    const bool warned = std::any_of(p.warnings.begin(), p.warnings.end(),
                                    [](const std::string& w) { return w.find("--no-pc-sampling") != std::string::npos; });
    EXPECT_EQ(warned, sampling);
  }
}

// AIFLAME_LAB=callback_ab=4 switches continuous PC sampling itself, at the exit of the launch after the
// collector asked (from the collector, CUPTI hung the program): that launch takes what CUPTI holds,
// then disables sampling (no GetData while off, the launch callbacks and records untouched); 2-4 s
// later the launch after a drain enables and configures it again. Without PC sampling it says so
// and does nothing.
TEST(CuptiBackend, CallbackAbSwitchesPcSamplingAtALaunchInSlicesOfSeconds) {
  for (bool sampling : {true, false}) {
    RecordOptions o;
    o.measure.callback_ab = 4;
    o.pc_sampling = sampling;
    Harness h(o);
    CuptiBackend b(h.rec, fake_api());
    ASSERT_TRUE(b.start());
    h.create_context(b);
    EXPECT_EQ(fake.enables, sampling ? 1 : 0);
    b.drain();
    EXPECT_EQ(fake.disables, 0) << "not by the collector";
    uint32_t n = 0;
    h.launch(++n);  // delivers one record to the next GetData
    EXPECT_EQ(fake.disables, sampling ? 1 : 0) << "sampling " << sampling;
    EXPECT_EQ(fake.launch_callback, 1);
    EXPECT_EQ(fake.kernel_records, 1);
    if (sampling) {
      EXPECT_EQ(fake.pcs_to_deliver, 0) << "drained before the switch";
      h.launch(++n);
      b.drain();
      EXPECT_EQ(fake.pcs_to_deliver, 1) << "no GetData while sampling is off";
      const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(4500);
      while (fake.enables < 2 && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        b.drain();
        h.launch(++n);
      }
      EXPECT_EQ(fake.enables, 2) << "enabled again within 4 s";
      EXPECT_EQ(fake.disables, 1);
      EXPECT_EQ(fake.mode, static_cast<uint32_t>(CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS)) << "configured again";
      b.drain();
      EXPECT_EQ(fake.pcs_to_deliver, 0) << "fetched again once on";
    }
    b.stop();
    Profile p = h.finish();
    const bool warned = std::any_of(p.warnings.begin(), p.warnings.end(),
                                    [](const std::string& w) { return w.find("PC sampling is off") != std::string::npos; });
    EXPECT_EQ(warned, !sampling);
    if (sampling) {
      EXPECT_GE(p.batch_records, 2u) << "the batches before the switch and after it";
    }
  }
}

// AIFLAME_LAB=callback_ab=12: no launch callback at all, except to carry a sampling switch: the
// collector turns them on with its ask, and the launch that switches turns them off again.
TEST(CuptiBackend, CallbackAbFloorTurnsTheLaunchCallbacksOnOnlyToSwitchSampling) {
  RecordOptions o;
  o.measure.callback_ab = 12;
  Harness h(o);
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  EXPECT_EQ(fake.launch_callback, 0) << "off from the start";
  b.drain();
  EXPECT_EQ(fake.launch_callback, 1) << "on to carry the switch";
  h.launch(1);
  EXPECT_EQ(fake.disables, 1);
  EXPECT_EQ(fake.launch_callback, 0) << "off again after it";
  b.stop();
  h.finish();
}

// AIFLAME_LAB=callback_ab=7: sampling, the launch callbacks and the kernel records switched together, in
// the order CUPTI allows: off at a launch's exit, sampling first (records cannot come on while it is
// enabled); on from the collector, records and callbacks first, then sampling at the next launch.
TEST(CuptiBackend, CallbackAbSwitchesSamplingWithCallbacksAndRecordsInCuptisOrder) {
  RecordOptions o;
  o.measure.callback_ab = 7;
  Harness h(o);
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  ASSERT_EQ(fake.enables, 1);
  b.drain();
  EXPECT_EQ(fake.kernel_records, 1) << "off only at a launch";
  uint32_t n = 0;
  h.launch(++n);
  EXPECT_EQ(fake.disables, 1);
  EXPECT_EQ(fake.kernel_records, 0);
  EXPECT_EQ(fake.launch_callback, 0);
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(4500);
  while (fake.kernel_records != 1 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    b.drain();
  }
  EXPECT_EQ(fake.kernel_records, 1) << "records on from the collector, while sampling is still disabled";
  EXPECT_EQ(fake.launch_callback, 1);
  EXPECT_EQ(fake.enables, 1) << "sampling waits for a launch";
  h.launch(++n);
  EXPECT_EQ(fake.enables, 2);
  EXPECT_EQ(fake.launch_callback, 1) << "the callbacks stay on in an on slice";
  b.stop();
  Profile p = h.finish();
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
}

// The library makes its backend before it starts the Recorder with the options (injection.cpp):
// the measurement switches must still reach the backend (a copy taken at construction held the
// defaults, and no switch took effect on the GPU machine).
TEST(CuptiBackend, SwitchesTakeEffectWhenTheRecorderStartsAfterTheBackendIsMade) {
  fake = FakeCupti{};
  std::string path = test::temp_path("backend_order");
  Recorder rec;
  CuptiBackend b(rec, fake_api());
  RecordOptions o;
  o.measure.skip_launches = 1;
  o.measure.free_names = true;
  o.output = path;
  o.quiet = true;
  ProcessRecord pr;
  std::string err;
  ASSERT_TRUE(rec.start(o, pr, &err)) << err;
  ASSERT_TRUE(b.start());
  CUpti_ResourceData rd{};
  rd.context = reinterpret_cast<CUcontext>(0x1234);
  fake.callback(nullptr, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &rd);
  for (uint32_t i = 1; i <= 5; i++) {
    CUpti_CallbackData cb{};
    cb.callbackSite = CUPTI_API_ENTER;
    cb.correlationId = i;
    cb.context = rd.context;
    fake.callback(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
  }
  b.stop();
  rec.finish(0);
  auto p = read_profile(path + "." + std::to_string(getpid()));
  std::remove((path + "." + std::to_string(getpid())).c_str());
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->launches.size(), 0u);  // skip_launches=1: the callback returns at once
}

// Windows mode: kernel-serialized sampling with start/stop control in short windows, opened at a
// launch's entry once one is due and closed at a launch's exit once it has lasted its length, both on
// the launching thread (Stop from another thread hung on the H100: bench/probes/serialized_where.cu at d9aa39d);
// each window's samples carry their launches' correlation ids.
TEST(CuptiBackend, WindowsModeOpensAndClosesWindowsAtLaunches) {
  RecordOptions o;
  o.pc_mode = PcMode::Windows;
  o.windows_per_s = 1000;  // a window every 0.5-1.5 ms (fake time)
  o.window_us = 10;
  o.window_launches = 100000;  // windows close by time here
  o.window_budget_permille = 0;  // a fixed rate
  Harness h(o);
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  EXPECT_EQ(fake.mode, CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED);
  EXPECT_EQ(fake.start_stop, 1u);
  uint64_t t0 = fake.now;
  for (uint32_t i = 1; i <= 10000; i++) {
    h.launch(i);
    if (i % 1000 == 0) b.drain_all();  // the collector's tick never fetches data mid-window
    EXPECT_LE(fake.starts - fake.stops, 1);
  }
  double mean_gaps = static_cast<double>(fake.now - t0) / 1e6;  // how many 1-ms mean gaps the run lasted
  b.stop();
  EXPECT_EQ(fake.starts, fake.stops);  // stop() closes a window left open
  EXPECT_GE(fake.starts, 5);
  EXPECT_NEAR(fake.starts, mean_gaps, mean_gaps * 0.5);
  Profile p = h.finish();
  ASSERT_TRUE(p.end.has_value());
  EXPECT_EQ(p.end->windows, static_cast<uint64_t>(fake.stops));
  EXPECT_GE(p.end->window_ns, p.end->windows * 10000);  // each lasts at least its length
  ASSERT_FALSE(p.batches.empty());
  for (const auto& batch : p.batches) {
    ASSERT_FALSE(batch.samples.empty());
    EXPECT_NE(batch.samples[0].correlation_id, 0u);
  }
}

// Issue 24's floor (measurement switches): with AIFLAME_LAB=win_never and AIFLAME_LAB=win_never_nocb the
// windows mode leaves PC sampling enabled (kept between windows, none ever opened) and switches the
// launch callbacks off once the context's sampling is set up, so that CUPTI does nothing per launch
// but what enabled sampling costs; without NOCB the callbacks stay on (the earlier floors' setting).
TEST(CuptiBackend, WindowsFloorLeavesSamplingEnabledAndLaunchCallbacksOff) {
  for (bool nocb : {false, true}) {
    RecordOptions o;
    o.pc_mode = PcMode::Windows;
    o.kernel_activity = false;
    o.measure.win_disable_between = false;
    o.measure.win_never = true;
    o.measure.win_never_nocb = nocb;
    Harness h(o);
    CuptiBackend b(h.rec, fake_api());
    ASSERT_TRUE(b.start());
    EXPECT_EQ(fake.launch_callback, 1);
    h.create_context(b);
    EXPECT_EQ(fake.enables, 1);
    EXPECT_EQ(fake.disables, 0);
    EXPECT_EQ(fake.mode, CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED);
    EXPECT_EQ(fake.launch_callback, nocb ? 0 : 1) << "nocb " << nocb;
    for (uint32_t i = 1; i <= 100; i++) h.launch(i);
    EXPECT_EQ(fake.starts, 0);  // never a window (no libcuda here: no priming window either)
    b.stop();
    h.finish();
  }
}

// AIFLAME_LAB=win_continuous: the windows mode configures CUPTI's continuous collection with start/stop
// control (what enabled sampling costs in that mode); kernel-serialized otherwise.
TEST(CuptiBackend, WindowsModeTakesContinuousCollectionWhenAsked) {
  for (bool continuous : {false, true}) {
    RecordOptions o;
    o.pc_mode = PcMode::Windows;
    o.measure.win_continuous = continuous;
    Harness h(o);
    CuptiBackend b(h.rec, fake_api());
    ASSERT_TRUE(b.start());
    h.create_context(b);
    EXPECT_EQ(fake.mode, continuous ? CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS
                                    : CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED);
    EXPECT_EQ(fake.start_stop, 1u);
    b.stop();
    h.finish();
  }
}

// Windows of one launch each at a fixed rate (about one a millisecond of the fake clock), sampling
// kept enabled between them: the arrangement that hung eight threads on the H100.
RecordOptions one_launch_windows() {
  RecordOptions o;
  o.pc_mode = PcMode::Windows;
  o.windows_per_s = 1000;
  o.window_us = 10;
  o.window_launches = 1;
  o.window_budget_permille = 0;
  o.measure.win_disable_between = false;
  return o;
}

// A kernel of another thread inside a kernel-serialized window is never fetched after, and eight
// threads on eight streams hung on the H100 with windows of one launch: a window opens only once the launches of other threads already past their entry have
// reached their exit (given up after 2 ms, never a wait without end), and a count left by a launch
// whose exit never came (the callbacks went off meanwhile) is dropped when the callbacks come back on.
TEST(CuptiBackend, AWindowOpensOnlyOnceOtherThreadsLaunchesInFlightHaveEnded) {
  Harness h(one_launch_windows());
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  h.launch(1);  // the first window is due at once: it opens and closes on this launch
  ASSERT_EQ(fake.starts, 1);
  ASSERT_EQ(fake.stops, 1);
  // Another thread's launch enters while no window is due, and stays inside its driver call.
  std::atomic<int> phase{0};
  std::thread other([&] {
    Harness::at(CUPTI_API_ENTER, 2);
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
    Harness::at(CUPTI_API_EXIT, 2);
    phase = 3;
  });
  while (phase.load() != 1) std::this_thread::yield();
  fake.now += 10'000'000;  // a window is due
  h.launch(3);
  EXPECT_EQ(fake.starts, 1) << "a window started while another thread's launch was in flight";
  phase = 2;
  while (phase.load() != 3) std::this_thread::yield();
  other.join();
  fake.now += 10'000'000;
  h.launch(4);
  EXPECT_EQ(fake.starts, 2) << "no window once the other thread's launch had ended";
  EXPECT_EQ(fake.stops, 2);
  // A launch whose exit is never delivered: the window's close switched the callbacks off.
  std::thread gone([&] { Harness::at(CUPTI_API_ENTER, 5); });
  gone.join();
  fake.now += 10'000'000;
  b.tick_windows();  // the window thread: a window is due, the callbacks come back on (a new epoch)
  EXPECT_EQ(fake.launch_callback, 1);
  // A launch that entered its driver call while the callbacks were off has no entry callback and is
  // not counted: for the callbacks' first millisecond no window opens, and those launches are not
  // recorded (no sample can name them).
  h.launch(6);
  EXPECT_EQ(fake.starts, 2) << "a window opened at once when the callbacks came back on";
  fake.now += CuptiBackend::kCallbacksGraceNs;
  auto t0 = std::chrono::steady_clock::now();
  h.launch(7);
  EXPECT_EQ(fake.starts, 3) << "a count left by a launch whose exit never came held the window back";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2));
  b.stop();
  Profile p = h.finish();
  std::vector<uint32_t> recorded;
  for (const auto& l : p.launches) recorded.push_back(l.correlation_id);
  EXPECT_EQ(std::count(recorded.begin(), recorded.end(), 6u), 0) << "a launch outside every window was recorded";
  EXPECT_EQ(std::count(recorded.begin(), recorded.end(), 7u), 1);
}

// Under eight threads on eight streams a window's cuptiPCSamplingStop hung on the H100 even with the
// callbacks' grace millisecond (a launch blocked in its driver call outlasts it): a due window opens
// only if a single thread launched in the millisecond after the launch callbacks came back on; with
// launches of two threads seen there (at an entry, or at the exit of a launch whose entry came while
// the callbacks were off) the window is skipped and the callbacks go off until the next one is due.
TEST(CuptiBackend, NoWindowOpensWhileSeveralThreadsLaunch) {
  Harness h(one_launch_windows());
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  h.launch(1);  // the first window, at start-up
  ASSERT_EQ(fake.starts, 1);
  ASSERT_EQ(fake.launch_callback, 0);
  for (bool exit_only : {false, true}) {
    fake.now += 10'000'000;
    b.tick_windows();
    ASSERT_EQ(fake.launch_callback, 1);
    h.launch(10);  // this thread, in the grace millisecond
    // Another thread: a whole launch, or only the exit of one that entered while the callbacks were off.
    std::thread([&] {
      if (!exit_only) Harness::at(CUPTI_API_ENTER, 11);
      Harness::at(CUPTI_API_EXIT, 11);
    }).join();
    fake.now += CuptiBackend::kCallbacksGraceNs;
    h.launch(12);
    EXPECT_EQ(fake.starts, 1) << "a window opened while two threads launched (exit only: " << exit_only << ")";
    EXPECT_EQ(fake.launch_callback, 0) << "the callbacks stayed on after the skipped window";
  }
  // One thread alone in the grace millisecond: the window opens after it.
  fake.now += 10'000'000;
  b.tick_windows();
  h.launch(20);
  h.launch(21);
  fake.now += CuptiBackend::kCallbacksGraceNs;
  h.launch(22);
  EXPECT_EQ(fake.starts, 2);
  EXPECT_EQ(fake.stops, 2);
  b.stop();
  h.finish();
}

// AIFLAME_LAB=win_skip_max=N: the window due when the callbacks come back on opens at the launch K after
// the first one past the grace millisecond, K uniform in [0, N) and drawn anew for each window, so that
// windows of one launch do not always take the launch that follows a pause. The launches passed over
// are not recorded (no sample can name them).
TEST(CuptiBackend, ADueWindowPassesOverAUniformNumberOfLaunches) {
  for (uint32_t skip_max : {0u, 8u}) {
    RecordOptions o = one_launch_windows();
    o.measure.win_skip_max = skip_max;
    Harness h(o);
    CuptiBackend b(h.rec, fake_api());
    ASSERT_TRUE(b.start());
    h.create_context(b);
    std::vector<uint32_t> windowed;
    uint32_t id = 0;
    while (fake.starts == 0 && id < 64) h.launch(++id);  // the first window, at start-up
    ASSERT_EQ(fake.starts, 1);
    windowed.push_back(id);
    std::map<int, int> seen;  // K: windows
    for (int w = 0; w < 400; w++) {
      fake.now += 10'000'000;
      b.tick_windows();
      ASSERT_EQ(fake.launch_callback, 1);
      fake.now += CuptiBackend::kCallbacksGraceNs;
      const int starts = fake.starts;
      int k = 0;
      for (; fake.starts == starts && k < 64; k++) h.launch(++id);
      ASSERT_EQ(fake.starts, starts + 1) << "no window within 64 launches";
      windowed.push_back(id);
      seen[k - 1]++;
    }
    if (skip_max == 0) {
      EXPECT_EQ(seen.size(), 1u);
      EXPECT_EQ(seen.begin()->first, 0) << "the window did not open at the first launch";
    } else {
      EXPECT_EQ(seen.size(), 8u) << "every K in [0, 8) should come up in 400 windows";
      EXPECT_EQ(seen.begin()->first, 0);
      EXPECT_EQ(seen.rbegin()->first, 7);
      for (auto [k, n] : seen) EXPECT_GT(n, 20) << "K = " << k << " came up " << n << " times in 400";
    }
    b.stop();
    Profile p = h.finish();
    std::set<uint32_t> recorded;
    for (const auto& l : p.launches) recorded.insert(l.correlation_id);
    for (uint32_t c : windowed) EXPECT_TRUE(recorded.count(c)) << c;
    EXPECT_EQ(recorded.size(), windowed.size()) << "launches passed over were recorded";
  }
}

// A window belongs to the thread that opened it: another thread's launch exit neither fetches nor
// closes it (a non-opening thread that closed the window while others launched hung eight threads on
// the H100), and another thread's launch entry waits until the owner closes it, at most 50 ms (the
// owner may be blocked in backward() on autograd's engine thread), then launches into it.
TEST(CuptiBackend, OtherThreadsWaitForTheOwnersWindowAndNeverCloseIt) {
  RecordOptions o;
  o.pc_mode = PcMode::Windows;
  o.windows_per_s = 1000;
  o.window_us = 10;
  o.window_launches = 1000;
  o.window_budget_permille = 0;
  Harness h(o);
  CuptiBackend b(h.rec, fake_api());
  ASSERT_TRUE(b.start());
  h.create_context(b);
  using namespace std::chrono;
  Harness::at(CUPTI_API_ENTER, 1);  // the first window is due at once: this thread opens it
  ASSERT_EQ(fake.starts, 1);
  fake.now += 1'000'000;  // the window has outlasted its length
  std::thread([&] { Harness::at(CUPTI_API_EXIT, 2); }).join();
  EXPECT_EQ(fake.stops, 0) << "another thread's launch exit closed the window";
  // The owner does not launch again: the other thread waits its 50 ms, launches, and leaves it open.
  std::thread([&] {
    auto t0 = steady_clock::now();
    Harness::at(CUPTI_API_ENTER, 3);
    EXPECT_GE(steady_clock::now() - t0, milliseconds(50)) << "did not wait for the owner";
    Harness::at(CUPTI_API_EXIT, 3);
  }).join();
  EXPECT_EQ(fake.stops, 0) << "a thread that did not open the window closed it";
  // The owner closes it while another thread waits: that one goes on after the close.
  std::atomic<int> stops_seen{-1};
  std::atomic<int64_t> waited_ms{0};
  std::thread other([&] {
    auto t0 = steady_clock::now();
    Harness::at(CUPTI_API_ENTER, 4);
    waited_ms = duration_cast<milliseconds>(steady_clock::now() - t0).count();
    stops_seen = fake.stops;
  });
  std::this_thread::sleep_for(milliseconds(2));
  Harness::at(CUPTI_API_EXIT, 1);  // the owner's exit closes it
  other.join();
  EXPECT_EQ(fake.stops, 1);
  EXPECT_TRUE(stops_seen == 1 || waited_ms >= 50) << "launched into the open window without waiting";
  b.stop();
  h.finish();
}

// --window-launches: a window closes after that many launches of its thread, before its length.
TEST(CuptiBackend, AWindowHoldsAtMostItsLaunches) {
  for (uint32_t k : {1u, 3u}) {
    RecordOptions o;
    o.pc_mode = PcMode::Windows;
    o.windows_per_s = 1000;
    o.window_us = 10'000'000;  // 10 s: never reached
    o.window_launches = k;
    o.window_budget_permille = 0;
    Harness h(o);
    CuptiBackend b(h.rec, fake_api());
    ASSERT_TRUE(b.start());
    h.create_context(b);
    for (uint32_t i = 1; i <= k; i++) {
      EXPECT_EQ(fake.stops, 0) << k;
      h.launch(i);
    }
    EXPECT_EQ(fake.starts, 1) << k;
    EXPECT_EQ(fake.stops, 1) << k;
    b.stop();
    h.finish();
  }
}

// The controller: each window's cost (its length, plus the wait for an idle GPU before it) over the
// budget spaces the next one, so that windows take about the budgeted share of the run.
TEST(CuptiBackend, WindowsTakeTheirBudgetedShareOfTheRun) {
  for (uint32_t permille : {20u, 100u}) {
    RecordOptions o;
    o.pc_mode = PcMode::Windows;
    o.windows_per_s = 100000;  // no cap that binds
    o.window_us = 50;
    o.window_launches = 100000;
    o.window_budget_permille = permille;
    Harness h(o);
    CuptiBackend b(h.rec, fake_api());
    ASSERT_TRUE(b.start());
    h.create_context(b);
    uint64_t t0 = fake.now;
    for (uint32_t i = 1; i <= 200000; i++) h.launch(i);
    uint64_t elapsed = fake.now - t0;
    b.stop();
    Profile p = h.finish();
    ASSERT_TRUE(p.end.has_value());
    ASSERT_GE(p.end->windows, 20u) << permille;
    double share = static_cast<double>(p.end->window_ns) / static_cast<double>(elapsed);
    EXPECT_NEAR(share, permille / 1000.0, permille / 1000.0 * 0.3) << permille;
  }
}

// A context's first window carries CUPTI's one-time start (276-660 ms for one launch on the H100):
// it must not space the next window by its cost.
TEST(CuptiBackend, TheFirstWindowsOneTimeCostDoesNotSilenceTheRest) {
  SamplingWindows w(1000, 10, 1, 0.02);
  ASSERT_EQ(w.decide(0), SamplingWindows::Action::Open);
  ASSERT_EQ(w.decide(500'000'000), SamplingWindows::Action::Close);  // 500 ms, the slow first window
  EXPECT_LE(w.next_event(), 500'000'000u + 1'000'000u);  // 10 us / 2% = 0.5 ms, jittered up to 0.75
  ASSERT_EQ(w.decide(w.next_event()), SamplingWindows::Action::Open);
  uint64_t opened = w.next_event() - 10'000;
  ASSERT_EQ(w.decide(opened + 400'000), SamplingWindows::Action::Close);  // a later 400-us window is charged
  EXPECT_GE(w.next_event(), opened + 400'000 + 10'000'000u);  // 400 us / 2% = 20 ms, jittered down to 10
}

}  // namespace
}  // namespace aiflame
