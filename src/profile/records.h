// The recorded data, vendor-neutral: what the injection library writes and the report reads.
// docs/format.md documents how each record is encoded.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace aiflame {

// Record type tags inside a chunk. Values are part of the on-disk format: append, never renumber.
enum class RecordType : uint8_t {
  Process = 1,
  String = 2,
  StallReasons = 3,
  Module = 4,
  Stack = 5,
  Launch = 6,
  Kernel = 7,
  PcBatch = 8,
  CodeObject = 9,  // a GPU code object (was Cubin)
  Symbol = 10,
  Warning = 11,
  End = 12,
  GraphNode = 20,  // numbered apart from the GPU-symbol records added beside it
  GpuLine = 13,
  GpuInstruction = 14,  // a sampled instruction's name (was GpuSass)
  BackwardCaller = 21,  // autograd (format version 2): see BackwardStackRecord
  BackwardStack = 22,
  AutogradSummary = 23,
  // Never in a file: a launch the recorder's thread buffer holds with a BackwardNote, whose stack id
  // the writer has resolved (ProfileWriter::BackwardResolver) before the Launch record is written.
  DeferredLaunch = 0xF0,
  // Never in a file: a launch as a thread buffer holds it (ProfileWriter::RingLaunch), encoded as a
  // Launch record when the buffer is taken.
  BufferedLaunch = 0xF1,
  // Never in a file: a stack new to the process as a thread buffer holds it (ProfileWriter::
  // add_buffered_stack), encoded as a Stack record when the buffer is taken.
  BufferedStack = 0xF2,
};

struct ProcessRecord {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  std::string command;       // argv joined by spaces
  std::string hostname;
  int64_t start_realtime_ns = 0;   // CLOCK_REALTIME at start
  uint64_t start_timestamp = 0;    // GPU-profiler clock (ns) at start; all timestamps below use this clock
  uint32_t backend_version = 0;    // e.g. CUPTI API version
  uint32_t driver_version = 0;
  uint32_t sampling_period_log2 = 0;  // 0: the backend's default period
  uint32_t interval_ms = 0;
  std::string backend;             // "cupti"
  std::string tool_version;
  // Set by distributed launchers (torchrun, mpirun...) through RANK/LOCAL_RANK/WORLD_SIZE; -1/0 when not.
  int32_t rank = -1;
  int32_t local_rank = -1;
  int32_t world_size = 0;
  // PC sampling mode: 0 continuous (samples split over the kernel's executions in their drain
  // window), 1 windows (kernel-serialized windows; samples carry their launch's correlation id).
  uint32_t pc_mode = 0;
  uint32_t windows_per_s = 0;  // windows mode: mean windows opened per second
  uint32_t window_us = 0;      // windows mode: least length of one window
};

struct StringRecord {
  uint32_t id = 0;
  std::string text;
};

// Stall reason names by hardware index, for one device, and what attribution needs of the device.
struct StallReasonsRecord {
  uint32_t device = 0;
  std::vector<std::pair<uint32_t, std::string>> reasons;
  // The device's streaming multiprocessors (added later; 0: not known). The sampler takes warps per
  // SM, so an execution's expected samples follow the SMs it occupies times its time (attribution.cpp).
  uint32_t sm_count = 0;
  // Per SM, what blocks are placed against (added later still, from cuDeviceGetAttribute; 0: not
  // known, and attribution then falls back to SMs x time).
  uint32_t max_threads_per_sm = 0;
  uint32_t max_blocks_per_sm = 0;
  uint32_t registers_per_sm = 0;
  uint32_t shared_per_sm = 0;           // bytes
  uint32_t shared_reserved_per_block = 0;  // bytes the driver keeps of each block's shared memory
};

// A loaded ELF object of the process (native code).
struct ModuleRecord {
  uint32_t id = 0;
  std::string path;
  uint64_t load_bias = 0;  // runtime address - ELF virtual address
  uint64_t lo = 0, hi = 0; // runtime address range of its loaded segments
  std::string build_id;    // hex, may be empty
};

struct PyFrame {
  uint32_t file = 0;      // string id
  uint32_t function = 0;  // string id
  uint32_t line = 0;
  bool operator==(const PyFrame&) const = default;
};

// An interned CPU stack; frames are stored leaf first.
struct StackRecord {
  uint32_t id = 0;
  std::vector<uint64_t> native;  // return addresses, leaf first
  std::vector<PyFrame> python;   // leaf first
};

inline constexpr uint32_t kNoDevice = 0xffffffffu;

struct LaunchRecord {
  uint32_t correlation_id = 0;
  uint32_t tid = 0;
  uint64_t timestamp = 0;
  uint32_t stack_id = 0;
  uint32_t api = 0;          // backend's API id (CUPTI driver cbid)
  bool native_unwound = false;  // native part unwound at this launch (else reused from the stack cache)
  uint32_t device = kNoDevice;  // the GPU of the launch's context (added later; older files: unknown)
  // How long the previous launch call this thread recorded took, from the launch callback's entry to
  // its exit, in the backend's clock (ns, capped at 2^32-1; 0: not known). Known only once the call
  // has returned, so it rides on the thread's next launch (added later; older files: 0).
  uint32_t prev_duration = 0;
};

struct KernelRecord {
  uint32_t correlation_id = 0;
  uint64_t start = 0, end = 0;
  uint32_t device = 0, context = 0, stream = 0;
  uint32_t name = 0;         // string id (mangled name)
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  uint64_t graph_id = 0;     // non-zero when run by a graph launch
  uint64_t graph_node_id = 0;  // the graph node that ran it (0: not run by a graph, or not recorded)
  // What its blocks hold of an SM, for attribution's block-scheduler model (added later; 0: not known).
  uint32_t registers = 0;       // per thread
  uint32_t static_shared = 0;   // bytes per block
  uint32_t dynamic_shared = 0;  // bytes per block
};

// A node of a CUDA graph: created by stream capture or an explicit add-node call (stack_id: the CPU
// stack that did it), or cloned from another node when a graph is instantiated or cloned.
struct GraphNodeRecord {
  uint64_t node_id = 0;
  uint64_t graph_id = 0;
  uint32_t stack_id = 0;          // 0 for clones
  uint64_t original_node_id = 0;  // non-zero for clones
};

// Kernels launched by PyTorch's autograd engine threads (the backward pass) carry no Python frames of
// their own. The recorder adds two facts: the Python stack of the thread that called backward() (a
// BackwardCaller, interned) and the stack of the forward launch that created the autograd node being
// evaluated (found through the node's sequence number). A launch from an engine thread then names a
// BackwardStack instead of its Stack; the report composes caller -> [backward] -> forward Python
// frames -> the launch's own frames.
inline constexpr uint32_t kBackwardStackBit = 0x40000000u;  // BackwardStack ids; Stack ids stay below

struct BackwardCallerRecord {
  uint32_t id = 0;             // own id space, from 1
  std::vector<PyFrame> python; // leaf first (the leaf is torch's backward entry, e.g. _engine_run_backward)
};

// Not a record of the file: what a backward launch's stack id is resolved from off the launch path
// (AutogradTracker::resolve): backward()'s caller (0: none found), and the
// sequence number and torch thread id of the autograd node being evaluated (node: one was current).
// forward: a forward launch instead, the first of its thread after a new node (seq: peek(), tid: the
// thread's torch id), which the resolver remembers for the backward launches that look for it.
struct BackwardNote {
  uint32_t caller = 0;
  bool node = false;
  bool forward = false;
  uint64_t seq = 0;
  uint64_t tid = 0;
  // A backward launch whose caller was not known at the launch: its graph task, whose caller the
  // collector finds while backward() runs (AutogradTracker::serve_callers); -1 otherwise.
  int32_t graph_task = -1;
};

struct BackwardStackRecord {
  uint32_t id = 0;             // kBackwardStackBit set; what Launch.stack_id (and GraphNode.stack_id) name
  uint32_t stack_id = 0;       // the launch's own Stack (the engine thread's frames)
  uint32_t caller_id = 0;      // BackwardCaller; 0: not found
  uint32_t forward_stack_id = 0;  // the Stack of the forward launch that created the node; 0: not known
};

// Written when recording ends: what the autograd tracking did (state "on", or why it was off).
struct AutogradSummaryRecord {
  std::string state;
  std::string torch_version;   // empty when torch was not loaded
  uint64_t backward_launches = 0;  // launches from engine threads inside a backward call
  uint64_t with_caller = 0;        // of which the backward() caller's stack was found
  uint64_t with_node = 0;          // of which an autograd node (other than AccumulateGrad) was current
  uint64_t with_forward = 0;       // of which the node's forward launch stack was found
};

struct PcSample {
  uint32_t function = 0;     // string id (mangled name)
  uint64_t code_object_id = 0;
  uint64_t pc_offset = 0;
  uint32_t stall_reason = 0; // hardware stall reason index
  uint32_t count = 0;
  uint32_t correlation_id = 0;  // 0 when the backend gives none (continuous mode)
};

// One drain of the sampling buffer. prev_timestamp is the previous poll; the samples ran between the
// previous batch of the context that had samples (minus CUPTI's decode lag) and timestamp.
struct PcBatchRecord {
  uint64_t timestamp = 0;
  uint64_t prev_timestamp = 0;
  uint32_t device = 0;
  uint32_t context = 0;
  uint64_t total_samples = 0;
  uint64_t dropped_samples = 0;
  bool hardware_buffer_full = false;
  std::vector<PcSample> samples;
};

// A GPU code object loaded by the program (a cubin for CUDA), named by `id` in samples and symbols
// (code_object_id: CUPTI's cubin CRC).
struct CodeObjectRecord {
  uint64_t id = 0;
  uint32_t device = 0;
  std::string image;  // the code object's bytes, an ELF for CUDA (may be empty when not kept)
};

// One level of an instruction's source position. GPU: the kernel's own line (function empty) or a
// line inside an inlined device function (its mangled name). Native: a function (demangled) and the
// line in it, the outermost being the symbol's function.
struct SourceFrame {
  std::string function;
  std::string file;
  uint32_t line = 0;
  bool operator==(const SourceFrame&) const = default;
};
using GpuSourceFrame = SourceFrame;

// A symbolized native address, added when recording ends (or by the report).
struct SymbolRecord {
  uint64_t address = 0;
  uint32_t module = 0;     // module id
  std::string function;    // demangled; empty when unknown
  uint64_t offset = 0;     // address - function start, or module-relative when unknown
  // Added later (absent in older files): from the module's DWARF, the function and the functions
  // inlined into it at this address, outermost first, each with its line (the call site of the next
  // level, the instruction's own line for the last). Empty without debug information.
  std::vector<SourceFrame> levels;
};

// Source position of one sampled GPU instruction, from the cubin's line table; added when recording ends.
// frames run from the kernel's line to the innermost inlined function's; empty: the cubin has no line
// for this instruction (built without -lineinfo).
struct GpuLineRecord {
  uint64_t code_object_id = 0;
  uint32_t function = 0;   // string id of the kernel's mangled name, as in PcSample
  uint64_t pc_offset = 0;
  std::vector<GpuSourceFrame> frames;
};

// The name of one sampled GPU instruction, its mnemonic (SASS "FFMA", "LDG.E.128" from nvdisasm),
// added when recording ends.
struct GpuInstructionRecord {
  uint64_t code_object_id = 0;
  uint32_t function = 0;   // string id, as in PcSample
  uint64_t pc_offset = 0;
  std::string mnemonic;
};

struct WarningRecord {
  std::string text;
};

struct EndRecord {
  uint64_t timestamp = 0;
  uint64_t launches = 0;
  uint64_t launches_unwound = 0;
  uint64_t stacks = 0;
  uint64_t pc_records = 0;
  uint64_t samples = 0;
  uint64_t dropped_samples = 0;
  uint64_t kernels = 0;
  uint64_t cubins = 0;
  uint64_t dropped_records = 0;   // activity records CUPTI reported dropped
  uint64_t capture_ns = 0;        // CPU time spent capturing stacks on launch threads
  uint64_t collector_cpu_ns = 0;  // CPU time of aiflame's collector thread (draining, writing)
  uint64_t windows = 0;           // windows mode: sampling windows opened and closed
  uint64_t window_ns = 0;         // windows mode: their summed length
  // Of `launches`: those whose native stack was walked (no memo held: a call path new to the thread),
  // and their part of capture_ns (absent in older files: 0).
  uint64_t walked_launches = 0;
  uint64_t walked_ns = 0;
};

}  // namespace aiflame
