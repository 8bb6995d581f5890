// What a GPU vendor's backend implements. CUPTI (record/cupti/) is the one backend today; this is
// where another vendor plugs in.
//
// A backend subscribes to its vendor's callbacks in start() and from then on reports to the Recorder
// hub (record/recorder.h) that it was constructed with, through its typed methods, which write each
// record and count it:
//   - a kernel launch on the launching thread:          Recorder::on_launch / on_launch_exit
//   - a kernel node of a graph created or copied:        Recorder::graph_node_stack + add_graph_node
//   - a GPU code object loaded (cubin, module binary):   Recorder::add_code_object
//   - a device's stall-reason names (index -> name):     Recorder::add_stall_reasons
//   - a batch of sampled instructions with stall counts: Recorder::add_sample_batch
//   - a kernel execution (start, end, correlation id):   Recorder::add_kernel
//   - kernel records lost, windows closed, a GPU left to another sampler, a failure: add_dropped_records,
//     add_window, note_sampling_declined, warn
// Contexts and devices are the backend's own business: it learns of them from its vendor's callbacks
// (CUPTI's CONTEXT_CREATED; Level Zero's zeContextCreate) and enables sampling per device there.
//
// An Intel Level Zero backend (EU-stall sampling through Level Zero's tools API, zet)
// would provide: start() registering tracing-layer callbacks on zeCommandListAppendLaunchKernel (->
// on_launch), zeModuleCreate (zeModuleGetNativeBinary -> add_code_object) and zeKernelCreate (the
// kernel's base address, to turn instruction pointers into offsets), then opening a metric streamer of
// the "EU stall sampling" group per device and giving its stall reasons (ACTIVE, SEND, ...) to
// add_stall_reasons; drain() reading zetMetricStreamerReadData and calculating the IP metrics into one
// add_sample_batch per device; kernel times from its event timestamps (add_kernel); stop() closing
// the streamers. timestamp() is the clock its records carry.
//
// The rules of the injection library hold for every backend: nothing throws into the vendor's
// callbacks, no avoidable lock on the launch path, options are read once at start (RecordOptions).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace aiflame {

class Recorder;
struct RecordOptions;

// Backends whose sampling runs in short windows (CUPTI's kernel-serialized mode): the window thread.
class SamplingWindowControl {
 public:
  virtual ~SamplingWindowControl() = default;
  // Between windows: readies what a due window needs (windows themselves open and close on the
  // launching threads); returns the nanoseconds until the next window is due.
  virtual uint64_t tick_windows() = 0;
  // Starts the thread that calls tick_windows() (when the options ask for windows); stop() ends it.
  virtual void start_window_thread() = 0;
};

// Backends that can join a program already running and leave it again (`aiflame record --pid`,
// record/attach.cpp): the vendor's contexts made before the backend was there, and detaching.
class AttachControl {
 public:
  virtual ~AttachControl() = default;
  // Before start(): finds the contexts the program has made so far; how many (0: none yet).
  virtual size_t find_existing_contexts() = 0;
  // Empty when the backend can detach from the program again; else one line why not.
  virtual std::string cannot_detach() const = 0;
  // After start() failed: the refusal line "<code> <why>" (code cupti-busy: another profiler holds the
  // vendor's only subscription in this process).
  virtual std::string start_refusal() const = 0;
  // After start(): sampling on the contexts find_existing_contexts() found.
  virtual void attach_existing_contexts() = 0;
  // The collector thread, after drain(): contexts first seen at a launch, adopted off the launch path.
  virtual void adopt_new_contexts() = 0;
  // Ends what start() began (as stop() does) and detaches from the program, which runs on.
  virtual void detach() = 0;
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  // "cupti": the ProcessRecord's backend field.
  virtual const char* name() const = 0;
  // The vendor library's API version (ProcessRecord::backend_version).
  virtual uint32_t version() const = 0;
  // The vendor's libraries whose frames are left out of launch stacks (the launch callback runs in them).
  virtual std::span<const char* const> runtime_libraries() const = 0;
  // The clock of the backend's records (kernel start/end, batch times), in nanoseconds.
  virtual uint64_t timestamp() const = 0;
  // Subscribes to the vendor's callbacks. False when nothing can be recorded (warned through the
  // Recorder); the program runs on.
  virtual bool start() = 0;
  // The collector thread, every interval: moves what the vendor buffered into the Recorder.
  virtual void drain() = 0;
  // At exit: a last drain, sampling disabled, pending kernel records flushed. Callbacks after it are
  // ignored.
  virtual void stop() = 0;
  // Optional capabilities: null when the backend has none.
  virtual SamplingWindowControl* sampling_windows() { return nullptr; }
  virtual AttachControl* attach_control() { return nullptr; }
};

// The backend for this process: loads the vendor library the options and the machine point at. Null
// with *why when none can be loaded (then nothing is recorded). The backend reports to `rec`.
std::unique_ptr<GpuBackend> make_gpu_backend(Recorder& rec, const RecordOptions& opt, std::string* why);

// The runtime whose first call started the recording (injection.cpp): CUDA's cuInit loads the library
// through CUDA_INJECTION64_PATH, Level Zero's zeInit reaches it through the preloaded
// libaiflame_ze_preload.so (record/levelzero/ze_preload.c).
enum class GpuVendor { Cuda, LevelZero };
std::unique_ptr<GpuBackend> make_gpu_backend(Recorder& rec, const RecordOptions& opt, std::string* why, GpuVendor vendor);

}  // namespace aiflame
