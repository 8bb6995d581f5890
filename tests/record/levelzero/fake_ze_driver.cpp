// A Level Zero driver of our own, for testing the Level Zero backend without Intel hardware: Debian's
// real loader (libze_loader.so.1) loads it through ZE_ENABLE_ALT_DRIVERS, the loader's variable for
// alternate drivers, and the real tracing layer sits between the program and it.
//
// It implements what tests/record/levelzero/ze_test_program.cpp and the backend call: one driver, its
// devices, contexts, immediate and regular command lists and queues, event pools with kernel
// timestamps, modules from a native binary (an ELF with one .text.<kernel> section per kernel) and
// kernels. A kernel "runs" when it is appended to an immediate list (or its list is executed): it
// spins for its known time and, when an EU-stall streamer is open on its device, adds EU-stall
// reports of a known mix at instruction pointers inside the kernel's code, in the 64-byte layout of the
// hardware's EU-stall records (29-bit IP in 8-byte units, then one 8-bit count per stall reason).
//
// The truth (what the test checks the report against), per execution:
//   kernel_a (300 us): 30 reports at +0x10 with sbid 1, 10 at +0x20 with send 1
//   kernel_b (300 us): 10 at +0x00 with active 1, 10 at +0x30 with pipestall 1, 20 at +0x20 with control 1
// Failure paths, by environment: FAKE_ZE_DEVICES=N (0: a driver with no devices), FAKE_ZE_NO_EU_STALL=1
// (no "EuStallSampling" group), FAKE_ZE_STREAMER_REFUSED=1 (open refused as under a paranoid
// observation setting), FAKE_ZE_STREAM_CAPACITY=N (reports the stream holds between reads; more are
// dropped and the next read says so).
#include <elf.h>
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_api.h>
#include <level_zero/zet_ddi.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

long env_long(const char* name, long dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : dflt;
}

constexpr size_t kReportBytes = 64;
// The stall-reason counters of one report, in the order of their bit fields after the 29-bit IP.
enum Reason { kActive, kOther, kControl, kPipestall, kSend, kDistAcc, kSbid, kSync, kInstFetch, kReasons };
// The metrics of the group, in the order compute-runtime reports them ("IP" first).
const char* const kMetricNames[] = {"IP",        "Active",    "ControlStall", "PipeStall",       "SendStall",
                                    "DistStall", "SbidStall", "SyncStall",    "InstrFetchStall", "OtherStall"};
const Reason kMetricReason[] = {kActive, kActive, kControl, kPipestall, kSend, kDistAcc, kSbid, kSync, kInstFetch, kOther};
constexpr uint32_t kMetrics = 10;

struct Device;
struct Streamer {
  Device* device = nullptr;
  std::mutex mu;
  std::vector<uint8_t> data;
  bool dropped = false;
};
struct Device {
  uint32_t index = 0;
  std::mutex mu;
  Streamer* streamer = nullptr;
};
struct Context {};
struct Kernel {
  std::string name;
  uint64_t base = 0;
  uint64_t size = 0;
  uint64_t duration_ns = 0;
};
struct Module {
  std::string binary;
  std::map<std::string, std::pair<uint64_t, uint64_t>> sections;  // kernel -> (offset in module, size)
  uint64_t base = 0;
};
struct EventPool {
  bool timestamps = false;
};
struct Event {
  EventPool* pool = nullptr;
  std::atomic<bool> signaled{false};
  uint64_t start = 0, end = 0;
};
struct Launch {
  Kernel* kernel;
  Event* event;
};
struct CommandList {
  Device* device = nullptr;
  bool immediate = false;
  std::vector<Launch> launches;
};
struct Metric {
  uint32_t index;
};
struct MetricGroup {
  Metric metrics[kMetrics];
};

// Handles are the addresses of these objects; the loader passes them through unchanged with one driver.
int g_driver;
std::vector<std::unique_ptr<Device>>& devices() {
  static std::vector<std::unique_ptr<Device>> d;
  return d;
}
MetricGroup g_group;
std::atomic<uint64_t> g_module_count{0};

template <class T, class H> T* of(H h) { return reinterpret_cast<T*>(h); }
template <class H, class T> H handle(T* p) { return reinterpret_cast<H>(p); }

// ---- EU-stall reports --------------------------------------------------------------------------
void put_bits(uint8_t* r, unsigned bit, unsigned width, uint64_t value) {
  for (unsigned i = 0; i < width; i++)
    if (value >> i & 1) r[(bit + i) / 8] |= static_cast<uint8_t>(1u << ((bit + i) % 8));
}
uint64_t get_bits(const uint8_t* r, unsigned bit, unsigned width) {
  uint64_t v = 0;
  for (unsigned i = 0; i < width; i++)
    if (r[(bit + i) / 8] >> ((bit + i) % 8) & 1) v |= 1ull << i;
  return v;
}

void add_reports(Device& d, const Kernel& k, uint64_t offset, Reason reason, int n) {
  std::lock_guard<std::mutex> l(d.mu);
  Streamer* s = d.streamer;
  if (!s) return;
  std::lock_guard<std::mutex> ls(s->mu);
  const size_t capacity = static_cast<size_t>(env_long("FAKE_ZE_STREAM_CAPACITY", 1 << 20));
  for (int i = 0; i < n; i++) {
    if (s->data.size() / kReportBytes >= capacity) {
      s->dropped = true;
      return;
    }
    uint8_t r[kReportBytes] = {};
    put_bits(r, 0, 29, ((k.base + offset) >> 3) & 0x1fffffff);
    put_bits(r, 29 + 8 * reason, 8, 1);
    s->data.insert(s->data.end(), r, r + kReportBytes);
  }
}

void run_kernel(Device& d, Kernel& k, Event* e) {
  // Its time is the known one even when the host is busy and the spin overruns: the reports below are
  // a fixed number per execution, as a GPU's are in proportion to an execution's time.
  const uint64_t start = now_ns(), end = start + k.duration_ns;
  while (now_ns() < end) {
  }
  if (k.name == "kernel_a") {
    add_reports(d, k, 0x10, kSbid, 30);
    add_reports(d, k, 0x20, kSend, 10);
  } else if (k.name == "kernel_b") {
    add_reports(d, k, 0x00, kActive, 10);
    add_reports(d, k, 0x30, kPipestall, 10);
    add_reports(d, k, 0x20, kControl, 20);
  }
  if (e) {
    e->start = start;
    e->end = end;
    e->signaled = true;
  }
}

// The kernels of a native binary: its .text.<name> sections.
bool read_sections(Module& m) {
  const std::string& b = m.binary;
  if (b.size() < sizeof(Elf64_Ehdr) || std::memcmp(b.data(), ELFMAG, SELFMAG) != 0) return false;
  Elf64_Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof eh);
  if (eh.e_shoff == 0 || eh.e_shoff + uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr) > b.size()) return false;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), b.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));
  if (eh.e_shstrndx >= sh.size()) return false;
  const Elf64_Shdr& names = sh[eh.e_shstrndx];
  for (const auto& s : sh) {
    if (s.sh_name >= names.sh_size) continue;
    std::string name(b.data() + names.sh_offset + s.sh_name);
    if (name.rfind(".text.", 0) == 0) m.sections[name.substr(6)] = {s.sh_offset, s.sh_size};
  }
  return !m.sections.empty();
}

// ---- core --------------------------------------------------------------------------------------
ze_result_t Init(ze_init_flags_t) {
  if (devices().empty()) {
    long n = env_long("FAKE_ZE_DEVICES", 1);
    for (long i = 0; i < n; i++) {
      devices().push_back(std::make_unique<Device>());
      devices().back()->index = static_cast<uint32_t>(i);
    }
    for (uint32_t i = 0; i < kMetrics; i++) g_group.metrics[i].index = i;
  }
  return ZE_RESULT_SUCCESS;
}
ze_result_t DriverGet(uint32_t* count, ze_driver_handle_t* drivers) {
  if (*count == 0 || !drivers) {
    *count = 1;
    return ZE_RESULT_SUCCESS;
  }
  drivers[0] = handle<ze_driver_handle_t>(&g_driver);
  *count = 1;
  return ZE_RESULT_SUCCESS;
}
ze_result_t DriverGetApiVersion(ze_driver_handle_t, ze_api_version_t* v) {
  *v = ZE_API_VERSION_1_4;
  return ZE_RESULT_SUCCESS;
}
ze_result_t DriverGetProperties(ze_driver_handle_t, ze_driver_properties_t* p) {
  p->driverVersion = 0x01020003;
  std::memset(&p->uuid, 0x5a, sizeof p->uuid);
  return ZE_RESULT_SUCCESS;
}
ze_result_t KernelGetBaseAddress(ze_kernel_handle_t k, uint64_t* base) {
  *base = of<Kernel>(k)->base;
  return ZE_RESULT_SUCCESS;
}
ze_result_t DriverGetExtensionFunctionAddress(ze_driver_handle_t, const char* name, void** fn) {
  if (std::strcmp(name, "zexKernelGetBaseAddress") == 0) {
    *fn = reinterpret_cast<void*>(&KernelGetBaseAddress);
    return ZE_RESULT_SUCCESS;
  }
  return ZE_RESULT_ERROR_INVALID_ARGUMENT;
}
ze_result_t DeviceGet(ze_driver_handle_t, uint32_t* count, ze_device_handle_t* out) {
  uint32_t n = static_cast<uint32_t>(devices().size());
  if (*count == 0 || !out) {
    *count = n;
    return ZE_RESULT_SUCCESS;
  }
  if (*count > n) *count = n;
  for (uint32_t i = 0; i < *count; i++) out[i] = handle<ze_device_handle_t>(devices()[i].get());
  return ZE_RESULT_SUCCESS;
}
ze_result_t DeviceGetProperties(ze_device_handle_t d, ze_device_properties_t* p) {
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x8086;
  p->deviceId = 0x0bd5;
  p->numSlices = 1;
  p->numSubslicesPerSlice = 4;
  p->numEUsPerSubslice = 8;
  p->numThreadsPerEU = 8;
  std::memset(&p->uuid, 0, sizeof p->uuid);
  p->uuid.id[0] = static_cast<uint8_t>(of<Device>(d)->index);
  std::snprintf(p->name, sizeof p->name, "aiflame fake GPU %u", of<Device>(d)->index);
  p->timerResolution = 1;  // nanoseconds per tick (ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES)
  p->timestampValidBits = 64;
  p->kernelTimestampValidBits = 64;
  return ZE_RESULT_SUCCESS;
}
ze_result_t DeviceGetGlobalTimestamps(ze_device_handle_t, uint64_t* host, uint64_t* device) {
  *host = *device = now_ns();
  return ZE_RESULT_SUCCESS;
}
ze_result_t ContextCreate(ze_driver_handle_t, const ze_context_desc_t*, ze_context_handle_t* out) {
  *out = handle<ze_context_handle_t>(new Context);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ContextDestroy(ze_context_handle_t c) {
  delete of<Context>(c);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ModuleCreate(ze_context_handle_t, ze_device_handle_t, const ze_module_desc_t* desc, ze_module_handle_t* out,
                         ze_module_build_log_handle_t* log) {
  if (log) *log = nullptr;
  if (desc->format != ZE_MODULE_FORMAT_NATIVE || !desc->pInputModule) return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
  auto m = std::make_unique<Module>();
  m->binary.assign(reinterpret_cast<const char*>(desc->pInputModule), desc->inputSize);
  if (!read_sections(*m)) return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
  // Above 4 GiB, so that only the low 32 bits of a kernel's address meet the 29-bit IPs.
  m->base = 0x00007ff812340000ull + (g_module_count++ << 24);
  *out = handle<ze_module_handle_t>(m.release());
  return ZE_RESULT_SUCCESS;
}
ze_result_t ModuleDestroy(ze_module_handle_t m) {
  delete of<Module>(m);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ModuleGetNativeBinary(ze_module_handle_t h, size_t* size, uint8_t* data) {
  const std::string& b = of<Module>(h)->binary;
  if (data) std::memcpy(data, b.data(), std::min(*size, b.size()));
  *size = b.size();
  return ZE_RESULT_SUCCESS;
}
ze_result_t KernelCreate(ze_module_handle_t h, const ze_kernel_desc_t* desc, ze_kernel_handle_t* out) {
  Module& m = *of<Module>(h);
  auto it = m.sections.find(desc->pKernelName);
  if (it == m.sections.end()) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  auto* k = new Kernel;
  k->name = it->first;
  k->base = m.base + it->second.first;
  k->size = it->second.second;
  k->duration_ns = 300000;
  *out = handle<ze_kernel_handle_t>(k);
  return ZE_RESULT_SUCCESS;
}
ze_result_t KernelDestroy(ze_kernel_handle_t k) {
  delete of<Kernel>(k);
  return ZE_RESULT_SUCCESS;
}
ze_result_t KernelSetGroupSize(ze_kernel_handle_t, uint32_t, uint32_t, uint32_t) { return ZE_RESULT_SUCCESS; }
ze_result_t CommandListCreate(ze_context_handle_t, ze_device_handle_t d, const ze_command_list_desc_t*,
                              ze_command_list_handle_t* out) {
  auto* l = new CommandList;
  l->device = of<Device>(d);
  *out = handle<ze_command_list_handle_t>(l);
  return ZE_RESULT_SUCCESS;
}
ze_result_t CommandListCreateImmediate(ze_context_handle_t, ze_device_handle_t d, const ze_command_queue_desc_t*,
                                       ze_command_list_handle_t* out) {
  auto* l = new CommandList;
  l->device = of<Device>(d);
  l->immediate = true;
  *out = handle<ze_command_list_handle_t>(l);
  return ZE_RESULT_SUCCESS;
}
ze_result_t CommandListDestroy(ze_command_list_handle_t l) {
  delete of<CommandList>(l);
  return ZE_RESULT_SUCCESS;
}
ze_result_t CommandListClose(ze_command_list_handle_t) { return ZE_RESULT_SUCCESS; }
ze_result_t CommandListReset(ze_command_list_handle_t l) {
  of<CommandList>(l)->launches.clear();
  return ZE_RESULT_SUCCESS;
}
ze_result_t AppendLaunchKernel(ze_command_list_handle_t h, ze_kernel_handle_t k, const ze_group_count_t*,
                               ze_event_handle_t signal, uint32_t, ze_event_handle_t*) {
  CommandList& l = *of<CommandList>(h);
  if (l.immediate)
    run_kernel(*l.device, *of<Kernel>(k), of<Event>(signal));
  else
    l.launches.push_back({of<Kernel>(k), of<Event>(signal)});
  return ZE_RESULT_SUCCESS;
}
ze_result_t AppendLaunchCooperativeKernel(ze_command_list_handle_t h, ze_kernel_handle_t k, const ze_group_count_t* g,
                                          ze_event_handle_t signal, uint32_t n, ze_event_handle_t* w) {
  return AppendLaunchKernel(h, k, g, signal, n, w);
}
ze_result_t CommandQueueCreate(ze_context_handle_t, ze_device_handle_t d, const ze_command_queue_desc_t*,
                               ze_command_queue_handle_t* out) {
  *out = handle<ze_command_queue_handle_t>(d);  // a queue is its device here
  return ZE_RESULT_SUCCESS;
}
ze_result_t CommandQueueDestroy(ze_command_queue_handle_t) { return ZE_RESULT_SUCCESS; }
ze_result_t CommandQueueExecuteCommandLists(ze_command_queue_handle_t, uint32_t n, ze_command_list_handle_t* lists,
                                            ze_fence_handle_t) {
  for (uint32_t i = 0; i < n; i++) {
    CommandList& l = *of<CommandList>(lists[i]);
    for (auto& launch : l.launches) run_kernel(*l.device, *launch.kernel, launch.event);
  }
  return ZE_RESULT_SUCCESS;
}
ze_result_t CommandQueueSynchronize(ze_command_queue_handle_t, uint64_t) { return ZE_RESULT_SUCCESS; }
ze_result_t EventPoolCreate(ze_context_handle_t, const ze_event_pool_desc_t* desc, uint32_t, ze_device_handle_t*,
                            ze_event_pool_handle_t* out) {
  auto* p = new EventPool;
  p->timestamps = (desc->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) != 0;
  *out = handle<ze_event_pool_handle_t>(p);
  return ZE_RESULT_SUCCESS;
}
ze_result_t EventPoolDestroy(ze_event_pool_handle_t p) {
  delete of<EventPool>(p);
  return ZE_RESULT_SUCCESS;
}
ze_result_t EventCreate(ze_event_pool_handle_t p, const ze_event_desc_t*, ze_event_handle_t* out) {
  auto* e = new Event;
  e->pool = of<EventPool>(p);
  *out = handle<ze_event_handle_t>(e);
  return ZE_RESULT_SUCCESS;
}
ze_result_t EventDestroy(ze_event_handle_t e) {
  delete of<Event>(e);
  return ZE_RESULT_SUCCESS;
}
ze_result_t EventHostSynchronize(ze_event_handle_t e, uint64_t) {
  return of<Event>(e)->signaled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}
ze_result_t EventQueryStatus(ze_event_handle_t e) { return of<Event>(e)->signaled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY; }
ze_result_t EventHostReset(ze_event_handle_t e) {
  of<Event>(e)->signaled = false;
  return ZE_RESULT_SUCCESS;
}
ze_result_t EventQueryKernelTimestamp(ze_event_handle_t h, ze_kernel_timestamp_result_t* r) {
  Event& e = *of<Event>(h);
  if (!e.pool->timestamps) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!e.signaled) return ZE_RESULT_NOT_READY;
  r->global.kernelStart = r->context.kernelStart = e.start;
  r->global.kernelEnd = r->context.kernelEnd = e.end;
  return ZE_RESULT_SUCCESS;
}

// ---- tools: the EU-stall metric group and its streamer -----------------------------------------
ze_result_t MetricGroupGet(zet_device_handle_t, uint32_t* count, zet_metric_group_handle_t* out) {
  uint32_t n = env_long("FAKE_ZE_NO_EU_STALL", 0) ? 0 : 1;
  if (*count == 0 || !out) {
    *count = n;
    return ZE_RESULT_SUCCESS;
  }
  *count = std::min(*count, n);
  if (*count) out[0] = handle<zet_metric_group_handle_t>(&g_group);
  return ZE_RESULT_SUCCESS;
}
ze_result_t MetricGroupGetProperties(zet_metric_group_handle_t, zet_metric_group_properties_t* p) {
  std::snprintf(p->name, sizeof p->name, "EuStallSampling");
  std::snprintf(p->description, sizeof p->description, "EU stall sampling");
  p->samplingType = ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED;
  p->domain = 100;
  p->metricCount = kMetrics;
  return ZE_RESULT_SUCCESS;
}
ze_result_t MetricGet(zet_metric_group_handle_t, uint32_t* count, zet_metric_handle_t* out) {
  if (*count == 0 || !out) {
    *count = kMetrics;
    return ZE_RESULT_SUCCESS;
  }
  *count = std::min(*count, kMetrics);
  for (uint32_t i = 0; i < *count; i++) out[i] = handle<zet_metric_handle_t>(&g_group.metrics[i]);
  return ZE_RESULT_SUCCESS;
}
ze_result_t MetricGetProperties(zet_metric_handle_t m, zet_metric_properties_t* p) {
  uint32_t i = of<Metric>(m)->index;
  std::snprintf(p->name, sizeof p->name, "%s", kMetricNames[i]);
  std::snprintf(p->description, sizeof p->description, "%s", kMetricNames[i]);
  std::snprintf(p->component, sizeof p->component, "XVE");
  p->metricType = i == 0 ? ZET_METRIC_TYPE_IP_EXP : ZET_METRIC_TYPE_EVENT;
  p->resultType = ZET_VALUE_TYPE_UINT64;
  std::snprintf(p->resultUnits, sizeof p->resultUnits, i == 0 ? "Address" : "Events");
  return ZE_RESULT_SUCCESS;
}
// One row of kMetrics values per IP: the reports of the same IP summed, as the driver does.
ze_result_t MetricGroupCalculateMetricValues(zet_metric_group_handle_t, zet_metric_group_calculation_type_t, size_t size,
                                             const uint8_t* data, uint32_t* count, zet_typed_value_t* values) {
  std::map<uint64_t, std::array<uint64_t, kReasons>> by_ip;
  for (size_t off = 0; off + kReportBytes <= size; off += kReportBytes) {
    const uint8_t* r = data + off;
    auto& row = by_ip[get_bits(r, 0, 29)];
    for (int k = 0; k < kReasons; k++) row[k] += get_bits(r, 29 + 8 * k, 8);
  }
  uint32_t need = static_cast<uint32_t>(by_ip.size() * kMetrics);
  if (*count == 0 || !values) {
    *count = need;
    return ZE_RESULT_SUCCESS;
  }
  uint32_t n = 0;
  for (const auto& [ip, row] : by_ip) {
    if (n + kMetrics > *count) break;
    for (uint32_t m = 0; m < kMetrics; m++) {
      values[n + m].type = ZET_VALUE_TYPE_UINT64;
      values[n + m].value.ui64 = m == 0 ? ip : row[kMetricReason[m]];
    }
    n += kMetrics;
  }
  *count = n;
  return ZE_RESULT_SUCCESS;
}
ze_result_t ContextActivateMetricGroups(zet_context_handle_t, zet_device_handle_t, uint32_t, zet_metric_group_handle_t*) {
  return ZE_RESULT_SUCCESS;
}
ze_result_t MetricStreamerOpen(zet_context_handle_t, zet_device_handle_t d, zet_metric_group_handle_t,
                               zet_metric_streamer_desc_t*, ze_event_handle_t, zet_metric_streamer_handle_t* out) {
  if (env_long("FAKE_ZE_STREAMER_REFUSED", 0)) return ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS;
  Device& dev = *of<Device>(d);
  std::lock_guard<std::mutex> l(dev.mu);
  if (dev.streamer) return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
  dev.streamer = new Streamer;
  dev.streamer->device = &dev;
  *out = handle<zet_metric_streamer_handle_t>(dev.streamer);
  return ZE_RESULT_SUCCESS;
}
ze_result_t MetricStreamerReadData(zet_metric_streamer_handle_t h, uint32_t max_reports, size_t* size, uint8_t* data) {
  Streamer& s = *of<Streamer>(h);
  std::lock_guard<std::mutex> l(s.mu);
  size_t avail = std::min(s.data.size(), size_t(max_reports) * kReportBytes);
  if (*size == 0 || !data) {
    *size = avail;
    return ZE_RESULT_SUCCESS;
  }
  size_t n = std::min(*size, avail) / kReportBytes * kReportBytes;
  std::memcpy(data, s.data.data(), n);
  s.data.erase(s.data.begin(), s.data.begin() + static_cast<ptrdiff_t>(n));
  *size = n;
  if (s.dropped) {
    s.dropped = false;
    return ZE_RESULT_WARNING_DROPPED_DATA;
  }
  return ZE_RESULT_SUCCESS;
}
ze_result_t MetricStreamerClose(zet_metric_streamer_handle_t h) {
  Streamer* s = of<Streamer>(h);
  std::lock_guard<std::mutex> l(s->device->mu);
  s->device->streamer = nullptr;
  delete s;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

// ---- the tables the loader asks every driver for -----------------------------------------------
#define FAKE_TABLE(fn, type) \
  extern "C" __attribute__((visibility("default"))) ze_result_t fn(ze_api_version_t, type* t) { \
    std::memset(t, 0, sizeof *t);                                                                  \
    fill(t);                                                                                       \
    return ZE_RESULT_SUCCESS;                                                                      \
  }

namespace {
template <class T> void fill(T*) {}
void fill(ze_global_dditable_t* t) { t->pfnInit = Init; }
void fill(ze_driver_dditable_t* t) {
  t->pfnGet = DriverGet;
  t->pfnGetApiVersion = DriverGetApiVersion;
  t->pfnGetProperties = DriverGetProperties;
  t->pfnGetExtensionFunctionAddress = DriverGetExtensionFunctionAddress;
}
void fill(ze_device_dditable_t* t) {
  t->pfnGet = DeviceGet;
  t->pfnGetProperties = DeviceGetProperties;
  t->pfnGetGlobalTimestamps = DeviceGetGlobalTimestamps;
}
void fill(ze_context_dditable_t* t) {
  t->pfnCreate = ContextCreate;
  t->pfnDestroy = ContextDestroy;
}
void fill(ze_command_queue_dditable_t* t) {
  t->pfnCreate = CommandQueueCreate;
  t->pfnDestroy = CommandQueueDestroy;
  t->pfnExecuteCommandLists = CommandQueueExecuteCommandLists;
  t->pfnSynchronize = CommandQueueSynchronize;
}
void fill(ze_command_list_dditable_t* t) {
  t->pfnCreate = CommandListCreate;
  t->pfnCreateImmediate = CommandListCreateImmediate;
  t->pfnDestroy = CommandListDestroy;
  t->pfnClose = CommandListClose;
  t->pfnReset = CommandListReset;
  t->pfnAppendLaunchKernel = AppendLaunchKernel;
  t->pfnAppendLaunchCooperativeKernel = AppendLaunchCooperativeKernel;
}
void fill(ze_event_pool_dditable_t* t) {
  t->pfnCreate = EventPoolCreate;
  t->pfnDestroy = EventPoolDestroy;
}
void fill(ze_event_dditable_t* t) {
  t->pfnCreate = EventCreate;
  t->pfnDestroy = EventDestroy;
  t->pfnHostSynchronize = EventHostSynchronize;
  t->pfnQueryStatus = EventQueryStatus;
  t->pfnHostReset = EventHostReset;
  t->pfnQueryKernelTimestamp = EventQueryKernelTimestamp;
}
void fill(ze_module_dditable_t* t) {
  t->pfnCreate = ModuleCreate;
  t->pfnDestroy = ModuleDestroy;
  t->pfnGetNativeBinary = ModuleGetNativeBinary;
  t->pfnCreate = ModuleCreate;
}
void fill(ze_kernel_dditable_t* t) {
  t->pfnCreate = KernelCreate;
  t->pfnDestroy = KernelDestroy;
  t->pfnSetGroupSize = KernelSetGroupSize;
}
void fill(zet_context_dditable_t* t) { t->pfnActivateMetricGroups = ContextActivateMetricGroups; }
void fill(zet_metric_group_dditable_t* t) {
  t->pfnGet = MetricGroupGet;
  t->pfnGetProperties = MetricGroupGetProperties;
  t->pfnCalculateMetricValues = MetricGroupCalculateMetricValues;
}
void fill(zet_metric_dditable_t* t) {
  t->pfnGet = MetricGet;
  t->pfnGetProperties = MetricGetProperties;
}
void fill(zet_metric_streamer_dditable_t* t) {
  t->pfnOpen = MetricStreamerOpen;
  t->pfnReadData = MetricStreamerReadData;
  t->pfnClose = MetricStreamerClose;
}
}  // namespace

FAKE_TABLE(zeGetGlobalProcAddrTable, ze_global_dditable_t)
FAKE_TABLE(zeGetDriverProcAddrTable, ze_driver_dditable_t)
FAKE_TABLE(zeGetDeviceProcAddrTable, ze_device_dditable_t)
FAKE_TABLE(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
FAKE_TABLE(zeGetContextProcAddrTable, ze_context_dditable_t)
FAKE_TABLE(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)
FAKE_TABLE(zeGetCommandListProcAddrTable, ze_command_list_dditable_t)
FAKE_TABLE(zeGetEventProcAddrTable, ze_event_dditable_t)
FAKE_TABLE(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
FAKE_TABLE(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t)
FAKE_TABLE(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)
FAKE_TABLE(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
FAKE_TABLE(zeGetFenceProcAddrTable, ze_fence_dditable_t)
FAKE_TABLE(zeGetImageProcAddrTable, ze_image_dditable_t)
FAKE_TABLE(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
FAKE_TABLE(zeGetKernelProcAddrTable, ze_kernel_dditable_t)
FAKE_TABLE(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
FAKE_TABLE(zeGetMemProcAddrTable, ze_mem_dditable_t)
FAKE_TABLE(zeGetModuleProcAddrTable, ze_module_dditable_t)
FAKE_TABLE(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)
FAKE_TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
FAKE_TABLE(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
FAKE_TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)
FAKE_TABLE(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
FAKE_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t)
FAKE_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t)
FAKE_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t)
FAKE_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
FAKE_TABLE(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
FAKE_TABLE(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
FAKE_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t)
FAKE_TABLE(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
FAKE_TABLE(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
FAKE_TABLE(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
FAKE_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t)
FAKE_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
FAKE_TABLE(zesGetDeviceProcAddrTable, zes_device_dditable_t)
FAKE_TABLE(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)
FAKE_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t)
FAKE_TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t)
FAKE_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
FAKE_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t)
FAKE_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
FAKE_TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
FAKE_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t)
FAKE_TABLE(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
FAKE_TABLE(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
FAKE_TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t)
FAKE_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t)
FAKE_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t)
FAKE_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
FAKE_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
FAKE_TABLE(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
