// Intel backend: Level Zero through the loader's tracing layer and the "EuStallSampling" metric
// group (/work/shared/seeds/level-zero-eu-stall-sampling.txt), fed into the Recorder hub like CUPTI's.
//   launches      zeCommandListAppendLaunch{Kernel,CooperativeKernel,KernelIndirect,MultipleKernelsIndirect}
//                 prologues (immediate command lists included) -> Recorder::on_launch on that thread
//   code objects  zeModuleCreate's epilogue: zeModuleGetNativeBinary -> add_code_object
//   kernels       zeKernelCreate's epilogue: name and base address (zexKernelGetBaseAddress)
//   samples       per device, a metric streamer on the EU-stall group, read and calculated by the
//                 collector -> add_sample_batch (IPs turned into kernel offsets by the address-shift rule)
//   kernel times  the launch's signal event (ours, from a timestamp pool, when the program gave none)
//                 -> zeEventQueryKernelTimestamp -> add_kernel
// Never throws into the tracing layer; every failure is one warning and the program runs on.
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "record/gpu_backend.h"
#include "record/levelzero/eu_stall_values.h"
#include "record/levelzero/ze_api.h"
#include "record/recorder.h"

namespace aiflame {

// The Level Zero backend for `rec`, or null with *why (no loader loaded, or one without tracing).
std::unique_ptr<GpuBackend> make_levelzero_backend(Recorder& rec, const RecordOptions& opt, std::string* why);

// LaunchRecord::api of Level Zero launches.
enum class ZeLaunchApi : uint32_t { Kernel = 1, Cooperative = 2, Indirect = 3, MultipleIndirect = 4 };

class LevelZeroBackend final : public GpuBackend {
 public:
  LevelZeroBackend(Recorder& rec, ZeApi api, uint32_t sampling_period_ns) : rec_(rec), api_(api), period_ns_(sampling_period_ns) {}
  ~LevelZeroBackend() override;
  const char* name() const override { return "levelzero"; }
  uint32_t version() const override { return ZE_API_VERSION_CURRENT; }
  std::span<const char* const> runtime_libraries() const override {
    static constexpr const char* kLibraries[] = {"libze_loader.so", "libze_tracing_layer.so", "libze_intel_gpu.so",
                                                 "libaiflame_ze_preload"};
    return kLibraries;
  }
  uint64_t timestamp() const override;
  bool start() override;
  void drain() override;
  void stop() override;

  // The tracing layer's callbacks (static trampolines in ze_backend.cpp route here).
  void context_created(ze_driver_handle_t driver, ze_context_handle_t ctx);
  void context_destroying(ze_context_handle_t ctx);
  void module_created(ze_device_handle_t device, ze_module_handle_t module);
  void kernel_created(ze_module_handle_t module, const char* name, ze_kernel_handle_t kernel);
  void list_created(ze_context_handle_t ctx, ze_device_handle_t device, ze_command_list_handle_t list, bool immediate);
  void list_ending(ze_command_list_handle_t list, bool destroyed);
  void launch(ZeLaunchApi api, ze_command_list_handle_t list, ze_kernel_handle_t kernel, const ze_group_count_t* groups,
              ze_event_handle_t* signal);
  void launch_exit() { rec_.on_launch_exit(); }
  void event_ending(ze_event_handle_t event);

 private:
  struct Device {
    uint32_t index = 0;
    ze_device_handle_t handle = nullptr;
    uint64_t host0 = 0, device0 = 0;  // one pair of zeDeviceGetGlobalTimestamps: kernel ticks -> our clock
    double ns_per_tick = 1;
    uint64_t tick_mask = ~0ull;       // kernelTimestampValidBits
    zet_metric_group_handle_t group = nullptr;
    zet_metric_streamer_handle_t streamer = nullptr;
    ze_context_handle_t streamer_context = nullptr;
    EuStallLayout layout;
    uint64_t last_read = 0;
    bool sampling_tried = false;
    bool reasons_written = false;  // its StallReasons record (once, though a later context opens again)
  };
  struct Kernel {
    uint32_t name = 0;  // string id
    uint64_t code_object = 0;
    uint32_t base_ip = 0;
    bool has_base = false;
  };
  struct List {
    ze_context_handle_t ctx = nullptr;
    Device* device = nullptr;
    bool immediate = false;
    std::vector<ze_event_handle_t> used_events;  // ours, appended to this regular list
  };
  struct Pending {
    ze_event_handle_t event = nullptr;
    bool ours = false;
    ze_command_list_handle_t list = nullptr;
    bool immediate = false;
    ze_context_handle_t ctx = nullptr;
    uint32_t correlation_id = 0;
    uint32_t device = 0;
    uint32_t name = 0;
    int32_t grid[3] = {0, 0, 0};
  };
  struct EventPool {
    ze_event_pool_handle_t pool = nullptr;  // the one events are taken from
    uint32_t next = 0;
    std::vector<ze_event_handle_t> free;
    // Every pool and event made for the context, destroyed before it is (the specification wants a
    // context's objects gone first).
    std::vector<ze_event_pool_handle_t> pools;
    std::vector<ze_event_handle_t> events;
  };

  Device* device_locked(ze_device_handle_t d);
  void open_sampling_locked(Device& d, ze_context_handle_t ctx);
  void read_samples_locked(Device& d, uint64_t now);
  void close_sampling_locked(Device& d);
  ze_event_handle_t our_event_locked(ze_context_handle_t ctx);
  // Reads a pending launch's times when its event has signalled; true when it is done with.
  bool collect_locked(Pending& p, bool final);
  void release_locked(const Pending& p);
  uint64_t to_host_ns(const Device& d, uint64_t ticks) const;
  bool check(ze_result_t r, const char* call, const std::string& fix = {});

  Recorder& rec_;
  ZeApi api_;
  const uint32_t period_ns_;
  bool pc_sampling_ = true, keep_images_ = true;  // the options, copied in start()
  zel_tracer_handle_t tracer_ = nullptr;
  std::atomic<bool> stopped_{false};
  std::atomic<uint32_t> next_correlation_{1};
  // One lock for the tables below: the launch path takes it once (the kernel's name, the list's
  // device, a timestamp event when the program gave none).
  std::mutex mu_;
  ze_driver_handle_t driver_ = nullptr;
  using BaseAddressFn = ze_result_t (*)(ze_kernel_handle_t, uint64_t*);
  BaseAddressFn base_address_ = nullptr;
  bool base_address_looked_up_ = false;
  std::map<ze_device_handle_t, std::unique_ptr<Device>> devices_;
  std::map<ze_module_handle_t, std::pair<uint64_t, uint32_t>> modules_;  // -> (code object id, device)
  std::set<uint64_t> code_objects_;
  std::map<ze_kernel_handle_t, Kernel> kernels_;
  // Kernels by base IP, per code object: an IP belongs to the kernel with the greatest base at or below it.
  std::map<uint32_t, Kernel> by_ip_;
  std::map<ze_command_list_handle_t, List> lists_;
  std::map<ze_context_handle_t, EventPool> pools_;
  std::vector<Pending> pending_;
  uint64_t untimed_ = 0;  // launches whose event gave no times (not a timestamp event)
};

}  // namespace aiflame
