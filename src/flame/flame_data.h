// The report-side model every writer consumes: weighted stacks of typed frames, root to leaf.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "flame/frame.h"
#include "flame/frame_list.h"
#include "flame/process_totals.h"

namespace aiflame {

// A stack or kernel that belongs to no recorded process (folded and iaprof inputs).
inline constexpr uint32_t kNoProcess = UINT32_MAX;

// Frames interned as small integers: each distinct (name, kind) is stored once and stacks hold ids.
using FrameId = uint32_t;
class FrameTable {
 public:
  FrameTable() = default;
  FrameTable(const FrameTable& other) { *this = other; }
  FrameTable& operator=(const FrameTable& other);
  // Moving keeps the deque's elements where they are, so the index's views stay valid.
  FrameTable(FrameTable&&) noexcept = default;
  FrameTable& operator=(FrameTable&&) noexcept = default;

  FrameId intern(std::string_view name, FrameKind kind);
  FrameId intern(const Frame& f) { return intern(f.name, f.kind); }
  const Frame& operator[](FrameId id) const { return frames_[id]; }
  size_t size() const { return frames_.size(); }

 private:
  struct Key {
    std::string_view name;
    FrameKind kind;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  std::deque<Frame> frames_;  // a deque: growing it never moves a frame, so keys may view the names
  std::unordered_map<Key, FrameId, KeyHash> ids_;
};

struct WeightedStack {
  FrameList frames;  // root first
  uint64_t count = 0;
  uint32_t process = kNoProcess;  // index into FlameData::processes
  uint64_t estimated = 0;  // of count: samples the attribution's model split between launch stacks
};

// Samples of one stack at one time: the time series behind heatmaps and timed outputs.
struct TimedCount {
  uint32_t stack = 0;    // index into FlameData::stacks
  uint32_t device = 0;
  uint64_t time_ns = 0;  // since FlameData::start_ns (estimated; see docs/attribution.md)
  double weight = 0;     // samples; fractional where a batch's samples were split between launches
};

// One kernel execution, for trace outputs.
struct KernelSpan {
  std::string name;        // frame name of the kernel
  uint32_t device = 0, stream = 0;
  uint64_t start_ns = 0, end_ns = 0;  // since FlameData::start_ns
  int32_t cpu_stack = -1;  // index into FlameData::cpu_stacks, -1 when the launch is unknown
  uint32_t correlation_id = 0;
  uint32_t process = kNoProcess;  // index into FlameData::processes
  uint32_t launch_tid = 0;  // the thread that launched it (0: not known), FrameOptions::launch_threads
  uint64_t launch_ns = 0;   // when, since FlameData::start_ns (valid where launch_tid is)
  uint64_t launch_dur_ns = 0;  // how long the launch call took (0: not recorded)
  FrameName launch_api;     // the API call ("cuLaunchKernel"; empty: not known)
};

// An object file a native frame lives in, as a recorded process mapped it (for formats that carry
// addresses: pprof's Mappings).
struct NativeModule {
  std::string path;
  std::string build_id;  // hex, may be empty
  uint64_t start = 0, limit = 0;  // runtime address range of its loaded segments
  uint64_t file_offset = 0;       // ELF virtual address of `start` (the file offset for the first segment)
};

// Where a frame's code is, beyond its name: a native frame's module and address, a Python frame's
// full file path (frames show the basename). A frame is a name, so one name keeps the first address
// it was seen at.
struct FrameOrigin {
  uint32_t module = UINT32_MAX;  // index into FlameData::modules, UINT32_MAX when none
  uint64_t address = 0;          // the call instruction's address (return address - 1)
  std::string file;              // a Python frame's file as recorded
};

// What the report's header says about the run(s) behind a picture.
struct RunSummary {
  std::string command;
  std::vector<uint32_t> devices;
  uint64_t samples = 0;
  uint64_t dropped = 0;
  double attributed = 0;     // samples that reached a launch stack
  uint32_t interval_ms = 10; // the collection interval: the heatmap's row height
  uint32_t processes = 0;
};

// A whole picture: stacks plus what the writers that show more than one flame graph need.
struct FlameData {
  std::string title;
  std::string subtitle;
  std::vector<WeightedStack> stacks;
  // Optional: filled from recorded profiles, empty for inputs that have no times (folded files).
  std::vector<TimedCount> timeline;
  std::vector<KernelSpan> kernels;
  std::vector<std::vector<Frame>> cpu_stacks;  // launch stacks (process frame first) of `kernels`
  std::string process;     // process name
  uint32_t pid = 0;
  uint64_t start_ns = 0;   // profiler clock at the start of the profile
  uint64_t duration_ns = 0;
  // The spans [begin, end) of the timeline (ns from start_ns) that some profile recorded, when the
  // merged profiles leave gaps (the windows of a duty-cycled recording); empty: all of it.
  std::vector<std::pair<uint64_t, uint64_t>> recorded;
  RunSummary summary;
  // The recorded processes behind the picture with their totals, one per profile; stacks and kernel
  // spans point into it. Empty for inputs that name no process of their own (folded, iaprof).
  std::vector<ProcessRow> processes;
  // Names of the CPU frames that are the user's own code (attribute/user_code.h), for the HTML
  // report's launch sites; empty where the input does not tell (folded, iaprof).
  std::unordered_set<FrameName> user_frames;
  // Origins of CPU frames by name, and the modules they point into; empty for inputs that do not tell.
  std::vector<NativeModule> modules;
  std::unordered_map<FrameName, FrameOrigin> origins;
  uint64_t total() const {
    uint64_t t = 0;
    for (const auto& s : stacks) t += s.count;
    return t;
  }
};

}  // namespace aiflame
