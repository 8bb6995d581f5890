// The vendor-neutral hub of the injection library: a GPU backend (record/gpu_backend.h) feeds it
// launches, kernels, sample batches and code objects through the typed methods below, each of which
// writes the record and counts it (the counters go into the End record); it owns the profile file, the
// stack capture and the collector thread.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "profile/profile_writer.h"
#include "record/autograd/autograd_tracker.h"
#include "record/measure/launch_ab.h"
#include "record/record_options.h"
#include "record/stack_capture.h"
#include "record/string_table.h"
#include "record/measure/launch_histogram.h"
#include "record/measure/tls_probe.h"
#include "util/tsc_clock.h"

namespace aiflame {

class Recorder {
 public:
  Recorder();

  // Opens OUTPUT.<pid> and writes the process record. False (with *error) when the file cannot be made.
  bool start(const RecordOptions& opt, const ProcessRecord& process, std::string* error);
  bool started() const { return started_; }
  const RecordOptions& options() const { return opt_; }

  // Called on the launching thread at every kernel launch (the backend's launch callback).
  void on_launch(uint32_t api, uint32_t correlation_id, uint64_t site, uint64_t timestamp, uint32_t device = kNoDevice);
  // At the launch call's exit. `now(ctx)`, when given, reads on_launch's clock, and only for a launch
  // that was recorded (a launch the backend skipped pays no clock read): the call's duration, written
  // with the thread's next launch (LaunchRecord::prev_duration).
  void on_launch_exit(uint64_t (*now)(const void* ctx) = nullptr, const void* ctx = nullptr);
  // The CPU stack that is creating a graph node on this thread: the launch being captured into a
  // graph (stream capture), or the stack of an explicit add-node call.
  uint32_t graph_node_stack(uint64_t node_id);

  // What a backend emits besides launches. Each writes the record and counts it.
  // A GPU code object (cubin, Level Zero module binary) the first time it is loaded.
  void add_code_object(const CodeObjectRecord& r);
  // A device's stall-reason names (index -> name), before its first sample batch.
  void add_stall_reasons(const StallReasonsRecord& r);
  // A batch of samples. `counted_samples`: the samples to count (a backend leaves out reasons that are
  // subsets of others); `pc_records`: the instruction records the vendor delivered.
  void add_sample_batch(const PcBatchRecord& b, uint64_t counted_samples, uint64_t pc_records);
  // One kernel execution (start, end, grid, correlation id of its launch).
  void add_kernel(const KernelRecord& r);
  // A kernel node of a graph, with the stack that created it (graph_node_stack) or the node it copies.
  void add_graph_node(const GraphNodeRecord& r);
  // Kernel records the vendor dropped (buffers full).
  void add_dropped_records(uint64_t n) { counters_.dropped_records += n; }
  // A sampling window closed after `ns` nanoseconds (backends with sampling windows).
  void add_window(uint64_t ns) {
    counters_.windows++;
    counters_.window_ns += ns;
  }
  // A GPU was left unsampled because another process samples it.
  void note_sampling_declined() { counters_.sampling_declined = true; }

  // Duty-cycled recording (record/duty_cycle.cpp): told of each code object and sample batch written,
  // so that a later window can carry the code objects of modules loaded in an earlier one. Set before
  // the backend starts; empty otherwise.
  std::function<void(const CodeObjectRecord&)> on_code_object;
  std::function<void(const PcBatchRecord&)> on_sample_batch;

  // The collector thread: every interval, runs `drain` (backend's buffers) and flushes the file.
  void start_collector(std::function<void()> drain);
  void stop_collector();

  // Prints "aiflame: <text>" on stderr once per distinct text and keeps it in the profile.
  void warn(const std::string& text);

  uint32_t intern(std::string_view s) { return strings_.intern(s); }
  ProfileWriter& writer() { return writer_; }
  StackCapture& stacks() { return stacks_; }
  AutogradTracker& autograd() { return autograd_; }
  // false: a backward launch's walk memo keyed by its depth alone, not its autograd node's class too
  // (a test's control: an engine thread's launches, which have no Python frames, then share one key per
  // depth, more native paths than its memos).
  void set_memo_key_node(bool on) { memo_key_node_ = on; }
  // Sets the autograd tracker up from the options and starts it (torch looked for now, then by the
  // collector until found).
  void start_autograd(const RecordOptions& opt);
  void write_modules_if_changed();

  // Writes the End record and closes the file; the counters below go into it.
  void finish(uint64_t end_timestamp);

  struct Counters {
    alignas(64) std::atomic<uint64_t> collector_cpu_ns{0};
    std::atomic<uint64_t> kernels{0}, pc_records{0}, samples{0}, dropped_samples{0}, cubins{0}, dropped_records{0};
    std::atomic<bool> sampling_declined{false};  // a GPU was left unsampled because another process samples it
    std::atomic<uint64_t> windows{0}, window_ns{0};  // backends with sampling windows
  };
  const Counters& counters() const { return counters_; }

  // Launches, launches whose native stack was walked, and clock ticks spent in on_launch, per
  // launching thread: written by that thread alone with plain stores and summed at the end. Issue 22:
  // shared atomics took a locked increment each and their line moved between the threads that launch
  // (the forward thread and autograd's engine thread, or eight threads on eight streams).
  struct alignas(64) LaunchTally {
    std::atomic<uint64_t> launches{0}, unwound{0}, ticks{0};
    // Launches whose native stack was walked (no memo of the thread held: a call path new to it), and
    // their ticks: the summary tells them from the launches that took a memo, since a run's walks crowd
    // into its first steps (issue 22: 0.1-0.3 us of a default-length loop's figure on the H100); the
    // AIFLAME_LAB=autograd_ab figures compare walked launches apart from the others.
    std::atomic<uint64_t> walks{0}, walk_ticks{0};
    std::atomic<uint64_t> off_launches{0}, off_ticks{0};  // AIFLAME_LAB=autograd_ab: launches in slices without tracking
    // AIFLAME_LAB=autograd_ab: of those, the launches walked in full (no memo held) and their ticks.
    std::atomic<uint64_t> off_walked{0}, off_walked_ticks{0};
    LaunchAB::ThreadState ab_last;  // AIFLAME_LAB=launch_ab: this thread's previous launch
    // AIFLAME_LAB=capture_probe=2, launches that took their memo: their count, and ticks of on_launch, the
    // autograd reads (first, again), the capture (first, again) and the Python walk alone (warm).
    std::atomic<uint64_t> probe_n{0}, probe_ticks[6] = {};
  };
  struct LaunchTotals {
    uint64_t launches = 0, unwound = 0, capture_ns = 0;
    uint64_t walked = 0, walked_ns = 0;  // LaunchTally::walks
  };
  LaunchTotals launch_totals() const;
  // AIFLAME_LAB=autograd_ab=1 (a measurement of issue 23 item 5 in one run, so that the host's drift
  // between runs cancels): the autograd tracking is skipped in every other slice of 2^27 clock ticks
  // (40-70 ms); the capture cost per launch of the two kinds of slices. A step whose forward and
  // backward fall in different slices finds fewer forward launches, so "with" reads a little high.
  //
  // A walked launch costs 5-15 us and a memo's 0.3-1 us (H200), and a training run's
  // walks crowd into its first steps, so a slice that holds more of them reads tens of times the
  // tracking's cost: one resnet_train run read +0.73 us, another -0.05. stratified_us() compares walked
  // launches with walked ones and the others with the others, weighted by each kind's share of all
  // launches, so that the walks' uneven spread between slices cancels.
  struct AutogradAB {
    uint64_t with_launches = 0, with_ns = 0, without_launches = 0, without_ns = 0;
    uint64_t with_walked = 0, with_walked_ns = 0, without_walked = 0, without_walked_ns = 0;
    double raw_us() const;         // with minus without, per launch, all launches together
    double stratified_us() const;  // the same per kind (walked or not), weighted; raw_us() if a kind lacks one side
  };
  AutogradAB autograd_ab() const;
  // AIFLAME_LAB=capture_probe=4's figures (rounds 0 without it).
  TlsProbe::Figures tls_probe() const { return tls_probe_ ? tls_probe_->figures(clock_.ns_per_tick()) : TlsProbe::Figures{}; }
  // AIFLAME_LAB=capture_probe=2 (issue 22): after each launch that took its memo, the autograd tracking's
  // reads, the Python walk and the capture run again at once (their code and data now warm) and are
  // timed against their first runs: what the launch path costs the host with its caches warm, and so
  // how much of it is misses. Microseconds per such launch.
  struct PhaseProbe {
    uint64_t launches = 0;
    double on_launch_us = 0, autograd_us = 0, autograd_again_us = 0, capture_us = 0, capture_again_us = 0,
           python_again_us = 0;
  };
  PhaseProbe phase_probe() const;
  // AIFLAME_LAB=capture_probe=2 or 3: the launches of one kind summed over the threads (empty otherwise).
  LaunchHistogram::Summary launch_histogram(LaunchHistogram::Kind k) const {
    return hist_ ? LaunchHistogram::summarize(hist_.get(), kTallies + 1, k, clock_.ns_per_tick()) : LaunchHistogram::Summary{};
  }
  // The same probes' slowest launches (slowest first; empty otherwise).
  std::vector<LaunchOutlier> slowest_launches() const { return outliers_ ? outliers_->slowest() : std::vector<LaunchOutlier>{}; }

  // AIFLAME_LAB=launch_ab: true if the launch entering now falls in a slice without the launch path
  // (the backend then returns from its callback at once). Always false without the switch.
  bool launch_ab_off(uint64_t site) { return launch_ab_ && launch_ab_slow(site); }
  LaunchAB::Result launch_ab() const { return launch_ab_state_ ? launch_ab_state_->result(clock_.ns_per_tick()) : LaunchAB::Result{}; }

 private:
  void launch_lean(uint32_t api, uint32_t correlation_id, uint64_t site, uint64_t timestamp, uint32_t device);
  void on_launch_measured(uint32_t api, uint32_t correlation_id, uint64_t site, uint64_t timestamp, uint32_t device);
  bool launch_ab_slow(uint64_t site);
  LaunchTally& tally();  // this thread's (the shared overflow tally past kTallies threads)
  static constexpr size_t kTallies = 256;
  const uint64_t serial_;  // tells this recorder's per-thread state from another's (tests make several)
  bool memo_key_node_ = true;  // set_memo_key_node
  uint32_t autograd_ab_ = 0;  // AIFLAME_LAB=autograd_ab: 1, slices without the tracking; 2, without the predicted memo; 3, torch called
  bool launch_ab_ = false;    // AIFLAME_LAB=launch_ab
  unsigned capture_probe_ = 0;     // AIFLAME_LAB=capture_probe
  std::unique_ptr<TlsProbe> tls_probe_;  // AIFLAME_LAB=capture_probe=4
  bool measured_ = false;  // a switch above on: launches go through on_launch_measured
  std::unique_ptr<LaunchAB> launch_ab_state_;  // with the switch only (its strata take 256 KB)
  std::unique_ptr<LaunchTally[]> tallies_;  // [kTallies] is the overflow tally, updated atomically
  // AIFLAME_LAB=capture_probe=2 or 3: per tally (the overflow one's counts may lose a launch to a race).
  std::unique_ptr<LaunchHistogram::Thread[]> hist_;
  std::unique_ptr<LaunchOutliers> outliers_;  // with hist_
  uint64_t start_ticks_ = 0;                  // clock_ at start
  std::atomic<uint32_t> tally_count_{0};
  TscClock clock_;
  Counters counters_;
  ProfileWriter writer_;
  StringTable strings_;
  StackCapture stacks_;
  AutogradTracker autograd_;  // backward kernels under the Python that caused them (PyTorch)
  RecordOptions opt_;
  bool started_ = false;
  std::mutex warn_mu_;
  std::set<std::string> warned_;
  std::mutex modules_mu_;
  std::set<std::pair<std::string, uint64_t>> modules_written_;
  std::thread collector_;
  std::atomic<bool> stop_{false};
  std::mutex collector_mu_;
  // Deferred autograd tracking: the thread that reads backward()'s callers (AutogradTracker::set_waker).
  std::thread caller_scanner_;
  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  bool woken_ = false;
  void wake_caller_scanner();
};

}  // namespace aiflame
