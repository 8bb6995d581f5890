#include "record/recorder.h"

#include <fmt/format.h>

#include <ctime>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>

#include "record/measure/capture_stats.h"
#include "record/crash_report.h"
#include "record/module_map.h"
#include "record/unwind/object_table.h"
#include "record/unwind/shared_rows.h"
#include "util/hot_pages.h"
#include "util/hot_path.h"
#include "util/tls_offsets.h"

namespace aiflame {

namespace {
std::atomic<uint64_t> g_recorder_serial{1};
}  // namespace

Recorder::Recorder()
    : serial_(g_recorder_serial.fetch_add(1)),
      tallies_(new LaunchTally[kTallies + 1]),
      strings_(writer_),
      stacks_(writer_, strings_),
      autograd_(writer_, strings_) {
  // Set before any launch can reach the tracker (which calls it only with deferred tracking): `record
  // --pid` starts the backend before the collector, and ThreadSanitizer found the waker written in
  // start_collector while an engine thread's backward launch called it (2026-11-27). Woken before its
  // thread runs, the scanner finds woken_ set.
  autograd_.set_waker([this] { wake_caller_scanner(); });
}

bool Recorder::start(const RecordOptions& opt, const ProcessRecord& process, std::string* error) {
  opt_ = opt;
  clock_ = TscClock();
  std::string path = opt.output + "." + std::to_string(getpid());
  if (!writer_.open(path, /*overwrite=*/true, error)) return false;
  writer_.add(process);
  autograd_ab_ = opt.measure.autograd_ab;
  if (opt.measure.launch_ab && !launch_ab_state_) launch_ab_state_ = std::make_unique<LaunchAB>();
  launch_ab_ = opt.measure.launch_ab;
  capture_probe_ = opt.measure.capture_probe;
  if ((capture_probe_ == 2 || capture_probe_ == 3) && !hist_) {
    hist_ = std::make_unique<LaunchHistogram::Thread[]>(kTallies + 1);
    outliers_ = std::make_unique<LaunchOutliers>();
  }
  start_ticks_ = clock_.now();
  if (capture_probe_ == 4) tls_probe_ = std::make_unique<TlsProbe>();
  measured_ = autograd_ab_ || capture_probe_ || hist_;
  if (opt.measure.capture_stats) {
    CaptureStats::enable();
    hot_pages_audit(true);
  }
  stacks_.set_verify_memos(opt.measure.verify_memos);
  stacks_.set_probe_lines(opt.measure.capture_probe == 1);
  started_ = true;
  return true;
}

namespace {
// What the launch path keeps per thread, in one thread-local (one TLS lookup per launch in the
// injection library, whose thread-locals are reached through __tls_get_addr): the launch API call
// this thread is inside, if any (graph nodes created during stream capture belong to it), its thread
// id, and its launch tally.
struct LaunchThread {
  bool in_launch = false;
  // The launch is a deferred backward launch: what a graph node captured in
  // it needs to name its stack now (Recorder::graph_node_stack), its BackwardNote kept field by field
  // in the struct's gaps (a BackwardNote itself would take the thread-local past one line, and the
  // injection library's thread-locals past glibc's 512-byte static TLS surplus).
  bool deferred = false;
  bool note_node = false, note_forward = false;
  uint32_t launch_stack = 0;
  uint32_t tid = 0;
  uint32_t note_caller = 0;
  uint64_t timestamp = 0;
  uint64_t note_seq = 0, note_tid = 0;
  int32_t note_graph_task = -1;
  uint32_t prev_duration = 0;  // the last launch call's entry to exit (ns), for the next launch's record
  uint64_t recorder = 0;  // the serial of the recorder whose tally this is
  Recorder::LaunchTally* tally = nullptr;

  void keep(const BackwardNote& n) {
    note_caller = n.caller, note_graph_task = n.graph_task, note_node = n.node, note_forward = n.forward;
    note_seq = n.seq, note_tid = n.tid;
  }
  BackwardNote note() const {
    BackwardNote n;
    n.caller = note_caller, n.graph_task = note_graph_task, n.node = note_node, n.forward = note_forward;
    n.seq = note_seq, n.tid = note_tid;
    return n;
  }
};
static_assert(sizeof(LaunchThread) <= 64, "one line, and the TLS block inside glibc's static surplus");
thread_local constinit LaunchThread t_launch;
AIFLAME_TLS_ENROLL(tls::kLaunch, t_launch);

// A launch's record and its thread's state, after the autograd tracking named its stack (`ag`): the
// product's launch path and the measured one (Recorder::launch_lean, on_launch_measured).
__attribute__((always_inline)) inline void write_launch(ProfileWriter& writer, LaunchThread& thread, uint64_t serial,
                                                        const AutogradTracker::Launch& ag, uint32_t api,
                                                        uint32_t correlation_id, uint64_t timestamp, uint32_t device,
                                                        bool unwound) {
  thread.in_launch = true;
  thread.launch_stack = ag.stack_id;
  thread.deferred = ag.deferred && !ag.note.forward;
  thread.timestamp = timestamp;  // on_launch_exit's start (and a deferred launch's, graph_node_stack)
  if (thread.deferred) thread.keep(ag.note);
  LaunchRecord rec;
  rec.correlation_id = correlation_id;
  rec.tid = thread.tid;
  rec.timestamp = timestamp;
  rec.stack_id = ag.stack_id;
  rec.api = api;
  rec.native_unwound = unwound;
  rec.device = device;
  // A duration left by another recorder on this thread (an earlier duty-cycle window, a recording
  // before this one) is not of a launch this profile holds.
  rec.prev_duration = thread.recorder == serial ? thread.prev_duration : 0;
  thread.prev_duration = 0;
  // No lock: a buffer of this thread, taken by the collector's flush (which resolves a deferred
  // backward launch's stack id: AutogradTracker::resolve).
  if (ag.deferred)
    writer.add_buffered(rec, ag.note);
  else
    writer.add_buffered(rec);
}

// A tally's counter: plain stores on this thread's own tally (no other thread writes it), atomic adds
// on the shared overflow tally.
__attribute__((always_inline)) inline void tally_add(bool shared, std::atomic<uint64_t>& a, uint64_t v) {
  if (shared)
    a.fetch_add(v, std::memory_order_relaxed);
  else
    a.store(a.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}
}  // namespace

AIFLAME_HOT void Recorder::on_launch_exit(uint64_t (*now)(const void*), const void* ctx) {
  LaunchThread& t = *AIFLAME_TLS(tls::kLaunch, t_launch);
  // Only a launch that was recorded (write_launch opened it) has its duration kept.
  if (t.in_launch && now) {
    const uint64_t end = now(ctx);
    if (end > t.timestamp) t.prev_duration = static_cast<uint32_t>(std::min<uint64_t>(end - t.timestamp, UINT32_MAX));
  }
  t.in_launch = false;
}

bool Recorder::launch_ab_slow(uint64_t site) {
  LaunchTally& t = tally();
  if (&t == &tallies_[kTallies]) return false;  // past kTallies threads: always on, not counted
  return launch_ab_state_->off(clock_.now(), site, t.ab_last);
}

Recorder::LaunchTally& Recorder::tally() {
  LaunchThread& t = t_launch;
  if (t.recorder != serial_) {
    uint32_t k = tally_count_.fetch_add(1, std::memory_order_relaxed);
    t.tally = &tallies_[std::min<size_t>(k, kTallies)];
    t.recorder = serial_;
  }
  return *t.tally;
}

void Recorder::start_autograd(const RecordOptions& opt) {
  // Windows mode with the launch callbacks on only around windows records no launch between them.
  autograd_.set_launches_sampled(opt.pc_sampling && opt.pc_mode == PcMode::Windows && opt.measure.win_toggle_callbacks);
  // The forward table and the backward launches' stacks are filled by the collector's flush, off the
  // launch path (the tracker resolves at the launch only where a test asks it to).
  autograd_.set_deferred(true);
  autograd_.set_light(opt.measure.autograd_light);
  if (!opt.autograd) autograd_.disable("off: AIFLAME_AUTOGRAD=0");
  autograd_.init(opt.python, [this](const std::string& note) { warn(note); });
}

Recorder::AutogradAB Recorder::autograd_ab() const {
  uint64_t launches = 0, ticks = 0, off_launches = 0, off_ticks = 0;
  uint64_t walked = 0, walked_ticks = 0, off_walked = 0, off_walked_ticks = 0;
  for (size_t i = 0; i <= kTallies; i++) {
    const LaunchTally& t = tallies_[i];
    launches += t.launches.load(std::memory_order_relaxed);
    ticks += t.ticks.load(std::memory_order_relaxed);
    off_launches += t.off_launches.load(std::memory_order_relaxed);
    off_ticks += t.off_ticks.load(std::memory_order_relaxed);
    walked += t.walks.load(std::memory_order_relaxed);
    walked_ticks += t.walk_ticks.load(std::memory_order_relaxed);
    off_walked += t.off_walked.load(std::memory_order_relaxed);
    off_walked_ticks += t.off_walked_ticks.load(std::memory_order_relaxed);
  }
  auto ns = [&](uint64_t t) { return static_cast<uint64_t>(static_cast<double>(t) * clock_.ns_per_tick()); };
  AutogradAB ab{launches - off_launches, ns(ticks - off_ticks), off_launches, ns(off_ticks)};
  ab.with_walked = walked - off_walked;
  ab.with_walked_ns = ns(walked_ticks - off_walked_ticks);
  ab.without_walked = off_walked;
  ab.without_walked_ns = ns(off_walked_ticks);
  return ab;
}

namespace {
double per_launch_us(uint64_t ns, uint64_t n) { return n ? static_cast<double>(ns) / 1e3 / static_cast<double>(n) : 0.0; }
}  // namespace

double Recorder::AutogradAB::raw_us() const {
  return per_launch_us(with_ns, with_launches) - per_launch_us(without_ns, without_launches);
}

double Recorder::AutogradAB::stratified_us() const {
  const uint64_t with_memo = with_launches - with_walked, without_memo = without_launches - without_walked;
  const uint64_t walked = with_walked + without_walked, memo = with_memo + without_memo;
  if (walked + memo == 0) return 0.0;
  // A kind seen on one side only tells nothing about the difference: then the raw figure.
  if ((walked && (!with_walked || !without_walked)) || (memo && (!with_memo || !without_memo))) return raw_us();
  double d = 0.0;
  if (walked)
    d += static_cast<double>(walked) * (per_launch_us(with_walked_ns, with_walked) - per_launch_us(without_walked_ns, without_walked));
  if (memo)
    d += static_cast<double>(memo) * (per_launch_us(with_ns - with_walked_ns, with_memo) -
                                      per_launch_us(without_ns - without_walked_ns, without_memo));
  return d / static_cast<double>(walked + memo);
}

Recorder::PhaseProbe Recorder::phase_probe() const {
  uint64_t n = 0, t[6] = {};
  for (size_t i = 0; i <= kTallies; i++) {
    n += tallies_[i].probe_n.load(std::memory_order_relaxed);
    for (int k = 0; k < 6; k++) t[k] += tallies_[i].probe_ticks[k].load(std::memory_order_relaxed);
  }
  auto us = [&](int k) { return n ? static_cast<double>(t[k]) * clock_.ns_per_tick() / 1e3 / static_cast<double>(n) : 0.0; };
  return {n, us(0), us(1), us(2), us(3), us(4), us(5)};
}

Recorder::LaunchTotals Recorder::launch_totals() const {
  LaunchTotals s;
  uint64_t ticks = 0, walk_ticks = 0;
  for (size_t i = 0; i <= kTallies; i++) {
    s.launches += tallies_[i].launches.load(std::memory_order_relaxed);
    s.unwound += tallies_[i].unwound.load(std::memory_order_relaxed);
    ticks += tallies_[i].ticks.load(std::memory_order_relaxed);
    s.walked += tallies_[i].walks.load(std::memory_order_relaxed);
    walk_ticks += tallies_[i].walk_ticks.load(std::memory_order_relaxed);
  }
  const double ns_per_tick = clock_.ns_per_tick();
  s.capture_ns = static_cast<uint64_t>(static_cast<double>(ticks) * ns_per_tick);
  s.walked_ns = static_cast<uint64_t>(static_cast<double>(walk_ticks) * ns_per_tick);
  return s;
}

uint32_t Recorder::graph_node_stack(uint64_t) {
  LaunchThread& t = t_launch;
  if (t.in_launch) {
    // A graph node captured during a deferred backward launch (torch.compile's CUDA graphs of a
    // backward pass): its record is written now, so its stack is resolved now, not at the next flush.
    // The thread buffers are taken and resolved first (no chunk written), so that the forward launches
    // still in them are in the forward table. Graph capture is rare (once per graph).
    if (t.deferred) {
      t.deferred = false;
      writer_.resolve_deferred();
      LaunchRecord rec;
      rec.stack_id = t.launch_stack;
      rec.timestamp = t.timestamp;
      std::vector<BackwardStackRecord> fresh;
      t.launch_stack = autograd_.resolve_uncounted(rec, t.note(), &fresh);
      for (const auto& f : fresh) writer_.add(f);
    }
    return t.launch_stack;
  }
  // An explicit cuGraphAddKernelNode: a site of its own, told apart by its Python stack and depth.
  constexpr uint64_t kAddNodeSite = 0x67726170686e6f64ull;  // "graphnod"
  return stacks_.capture(kAddNodeSite).stack_id;
}

// A launch as the product records it: on_launch_measured's steps without its measurements' branches
// (each a test the launch runs with the branch predictors cold, since the program ran between two
// launches), so that the launch path is as few instructions as it takes (callgrind on BM_OnLaunchCold:
// 1,118 distinct instructions on 95 code lines a launch, against 1,426 on 139 before).
AIFLAME_HOT void Recorder::on_launch(uint32_t api, uint32_t correlation_id, uint64_t site, uint64_t timestamp, uint32_t device) {
  if (measured_ || CaptureStats::on()) [[unlikely]]
    return on_launch_measured(api, correlation_id, site, timestamp, device);
  launch_lean(api, correlation_id, site, timestamp, device);
}

AIFLAME_HOT __attribute__((always_inline)) inline void Recorder::launch_lean(
    uint32_t api, uint32_t correlation_id, uint64_t site, uint64_t timestamp, uint32_t device) {
  PhaseScope phase(Phase::LaunchCallback);
  const uint64_t t0 = clock_.now();
  writer_.prefetch_buffered();
  const AutogradTracker::Pending pending = autograd_.before_capture();  // prefetches what it will write
  const StackCapture::Result st =
      stacks_.capture(site ^ (static_cast<uint64_t>(api) << 48), true, memo_key_node_ ? pending.node_type : 0);
  LaunchThread& thread = *AIFLAME_TLS(tls::kLaunch, t_launch);
  if (!thread.tid) [[unlikely]]
    thread.tid = static_cast<uint32_t>(gettid());
  const AutogradTracker::Launch ag = autograd_.on_launch(st.stack_id, pending, timestamp);
  write_launch(writer_, thread, serial_, ag, api, correlation_id, timestamp, device, st.unwound);
  LaunchTally& tally = thread.recorder == serial_ ? *thread.tally : this->tally();
  const uint64_t dt = clock_.now() - t0;
  const bool shared = &tally == &tallies_[kTallies];
  tally_add(shared, tally.launches, 1);
  if (st.unwound) tally_add(shared, tally.unwound, 1);
  tally_add(shared, tally.ticks, dt);
  if (st.walked) [[unlikely]] {
    tally_add(shared, tally.walks, 1);
    tally_add(shared, tally.walk_ticks, dt);
  }
}

// With the capture stats, the probes' histograms or an A/B switch on (record_options.cpp's measurement
// settings).
void Recorder::on_launch_measured(uint32_t api, uint32_t correlation_id, uint64_t site, uint64_t timestamp,
                                  uint32_t device) {
  if (tls_probe_) tls_probe_->run();  // before the launch's own timer
  if (autograd_ab_ == 5 && !CaptureStats::on() && !hist_ && !((clock_.now() >> 27) & 1)) {
    // AIFLAME_LAB=autograd_ab=5, a slice with the product's launch path (which tallies its walks): its
    // figures counted as the other kinds' "with" side below.
    launch_lean(api, correlation_id, site, timestamp, device);
    return;
  }
  PhaseScope phase(Phase::LaunchCallback);
  const uint64_t t0 = clock_.now();
  // AIFLAME_LAB=autograd_ab: a slice without the tracking (1) or without the capture's predicted memo (2).
  const bool ab_slice = autograd_ab_ && ((t0 >> 27) & 1);
  const bool ab_off = ab_slice && autograd_ab_ == 1;
  const bool stats = CaptureStats::on();
  uint64_t cw = stats ? CaptureStats::now() : 0;
  writer_.prefetch_buffered();
  uint64_t c0 = stats ? CaptureStats::now() : 0;
  const bool phases = capture_probe_ == 2;  // AIFLAME_LAB=capture_probe=2: the parts' first runs timed
  const uint64_t p0 = phases ? clock_.now() : 0;
  AutogradTracker::Pending pending =
      ab_off ? AutogradTracker::Pending{} : autograd_.before_capture(!(ab_slice && autograd_ab_ == 3));  // prefetches what it will write
  uint64_t c0b = stats ? CaptureStats::now() : 0;
  const uint64_t p1 = phases ? clock_.now() : 0;
  const uint64_t key_salt = memo_key_node_ ? pending.node_type : 0;
  // The histogram probes (AIFLAME_LAB=capture_probe=2 or 3): whether a stack was interned or a fallback ran
  // during the capture.
  LaunchHistogram::Thread* const hists = hist_.get();
  const uint64_t stacks_before = hists ? stacks_.stacks() : 0, fallbacks_before = hists ? stacks_.fallbacks() : 0;
  StackCapture::Result st =
      stacks_.capture(site ^ (static_cast<uint64_t>(api) << 48), !(ab_slice && autograd_ab_ == 2), key_salt,
                      !(ab_slice && autograd_ab_ == 4), !(ab_slice && autograd_ab_ == 5));
  const uint64_t p2 = phases ? clock_.now() : 0;
  uint64_t c1 = stats ? CaptureStats::now() : 0;
  LaunchThread& thread = *AIFLAME_TLS(tls::kLaunch, t_launch);
  if (!thread.tid) thread.tid = static_cast<uint32_t>(gettid());
  const AutogradTracker::Launch ag =
      ab_off ? AutogradTracker::Launch{st.stack_id} : autograd_.on_launch(st.stack_id, pending, timestamp);
  uint64_t c2 = stats ? CaptureStats::now() : 0;
  write_launch(writer_, thread, serial_, ag, api, correlation_id, timestamp, device, st.unwound);
  if (stats) {
    CaptureStats& cs = CaptureStats::instance();
    uint64_t c3 = CaptureStats::now();
    cs.add(CaptureStats::Autograd, c0, c0b);
    cs.add(CaptureStats::Autograd, c1, c2);
    if (pending.valid && pending.graph_task >= 0) {
      cs.add(CaptureStats::AutogradBackward, c0, c0b);
      cs.add(CaptureStats::AutogradBackward, c1, c2);
      cs.backward_launches.fetch_add(1, std::memory_order_relaxed);
      if (st.walked) cs.backward_walked.fetch_add(1, std::memory_order_relaxed);
    }
    cs.add(CaptureStats::Write, cw, c0);  // the record's prefetch
    cs.add(CaptureStats::Write, c2, c3);
    cs.add(CaptureStats::Total, cw, c3);
    cs.launches.fetch_add(1, std::memory_order_relaxed);
  }
  LaunchTally& tally = thread.recorder == serial_ ? *thread.tally : this->tally();
  const uint64_t dt = clock_.now() - t0;
  const bool shared = &tally == &tallies_[kTallies];
  auto add = [shared](std::atomic<uint64_t>& a, uint64_t v) { tally_add(shared, a, v); };
  add(tally.launches, 1);
  if (st.unwound) add(tally.unwound, 1);
  add(tally.ticks, dt);
  if (st.walked) {
    add(tally.walks, 1);
    add(tally.walk_ticks, dt);
  }
  LaunchHistogram::Thread* hist = hists ? &hists[&tally - tallies_.get()] : nullptr;
  if (hist) {
    const bool memo = st.unwound && !st.walked;
    hist->add(memo ? LaunchHistogram::Memo : LaunchHistogram::Walked, dt);
    if (memo) hist->add(st.predicted ? LaunchHistogram::MemoPredicted : LaunchHistogram::MemoSearched, dt);
    if (memo && hist->last_end) hist->add(LaunchHistogram::kind_after_gap(t0 - hist->last_end), dt);
    hist->last_end = t0 + dt;
    if (outliers_->worth(dt)) {
      LaunchOutlier o;
      o.ticks = dt;
      o.at_ticks = t0 - start_ticks_;
      o.tid = thread.tid;
      o.nth = tally.launches.load(std::memory_order_relaxed);
      o.walked = !memo;
      o.new_stack = stacks_.stacks() != stacks_before;
      o.fallback = stacks_.fallbacks() != fallbacks_before;
      outliers_->add(o);
    }
  }
  if (phases && st.unwound && !st.walked) {
    // Each part again at once, its code and data now warm; before_capture reads torch's state again
    // and prefetches. The second capture is called from here, so its stack differs from the first's
    // in one frame: a second path under the same key (depth and Python frames), with a memo of its
    // own after its first launch. Each capture checks the memo that followed the previous one first
    // (StackCapture::capture), so both take theirs with one check; before 79aa9ee's order each
    // checked the other's first, and both figures held a failed check.
    const uint64_t q0 = clock_.now();
    if (!ab_off) (void)autograd_.before_capture();
    const uint64_t q1 = clock_.now();
    stacks_.probe_python();
    const uint64_t q2 = clock_.now();
    (void)stacks_.capture(site ^ (static_cast<uint64_t>(api) << 48), true, key_salt);
    const uint64_t q3 = clock_.now();
    add(tally.probe_n, 1);
    add(tally.probe_ticks[0], dt);
    add(tally.probe_ticks[1], p1 - p0);
    add(tally.probe_ticks[2], q1 - q0);
    add(tally.probe_ticks[3], p2 - p1);
    add(tally.probe_ticks[4], q3 - q2);
    add(tally.probe_ticks[5], q2 - q1);
    hist->add(LaunchHistogram::CaptureFirst, p2 - p1);
    hist->add(LaunchHistogram::CaptureAgain, q3 - q2);
  }
  if (autograd_ab_) {
    if (ab_slice) {
      add(tally.off_launches, 1);
      add(tally.off_ticks, dt);
      if (st.walked) {
        add(tally.off_walked, 1);
        add(tally.off_walked_ticks, dt);
      }
    }
  }
}

void Recorder::add_code_object(const CodeObjectRecord& r) {
  writer_.add(r);
  counters_.cubins++;
  if (on_code_object) on_code_object(r);
}

void Recorder::add_stall_reasons(const StallReasonsRecord& r) { writer_.add(r); }

void Recorder::add_sample_batch(const PcBatchRecord& b, uint64_t counted_samples, uint64_t pc_records) {
  writer_.add(b);
  counters_.samples += counted_samples;
  counters_.pc_records += pc_records;
  counters_.dropped_samples += b.dropped_samples;
  if (on_sample_batch) on_sample_batch(b);
}

void Recorder::add_kernel(const KernelRecord& r) {
  writer_.add(r);
  counters_.kernels++;
}

void Recorder::add_graph_node(const GraphNodeRecord& r) { writer_.add(r); }

void Recorder::warn(const std::string& text) {
  {
    std::lock_guard<std::mutex> lock(warn_mu_);
    if (!warned_.insert(text).second) return;
  }
  if (!opt_.quiet) std::fprintf(stderr, "aiflame: %s\n", text.c_str());
  if (started_) writer_.add(WarningRecord{text});
}

void Recorder::write_modules_if_changed() {
  std::lock_guard<std::mutex> lock(modules_mu_);
  for (auto& m : read_loaded_modules()) {
    if (modules_written_.insert({m.path, m.lo}).second) {
      m.id = static_cast<uint32_t>(modules_written_.size());
      writer_.add(m);
    }
  }
}

void Recorder::wake_caller_scanner() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    woken_ = true;
  }
  wake_cv_.notify_one();
}

void Recorder::start_collector(std::function<void()> drain) {
  // backward()'s callers are read by a thread of their own, woken by an engine thread's first backward
  // launch of a graph task: the caller's stack must be read while backward() still runs, and the
  // collector can be busy for longer than a whole backward pass (draining CUPTI, writing modules). On
  // the collector, one graph task in 25 lost its caller on gpt_train and hf_gpt2 (H200, 2026-11-27).
  if (autograd_.deferred()) {  // (its waker was set in the constructor)
    caller_scanner_ = std::thread([this] {
      set_phase(Phase::Collector);
      std::unique_lock<std::mutex> lock(wake_mu_);
      while (!stop_.load()) {
        wake_cv_.wait(lock, [&] { return woken_ || stop_.load(); });
        woken_ = false;
        if (stop_.load()) break;
        lock.unlock();
        autograd_.serve_callers();
        lock.lock();
      }
    });
  }
  collector_ = std::thread([this, drain = std::move(drain)] {
    set_phase(Phase::Collector);
    hot_pages_stock();
    unwind::shared_rows_back();
    uint32_t ms = opt_.interval_ms;
    uint32_t ticks = 0;
    while (!stop_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      if (stop_.load()) break;
      drain();
      hot_pages_stock();  // regions ready for threads' first launches (util/hot_pages.h)
      // The module list rarely changes; look every 100 ticks (and at exit).
      if (ticks++ % 100 == 0) {
        write_modules_if_changed();
        autograd_.poll();  // torch imported after CUDA started
      }
      // Callers asked for and not found yet (the scanner tries each up to three times): again, before
      // their launches are resolved in this flush.
      autograd_.serve_callers();
      std::lock_guard<std::mutex> lock(collector_mu_);
      writer_.flush();
      timespec ts{};
      if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        counters_.collector_cpu_ns.store(static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec));
    }
  });
}

void Recorder::stop_collector() {
  stop_.store(true);
  wake_caller_scanner();
  if (caller_scanner_.joinable()) caller_scanner_.join();
  if (collector_.joinable()) collector_.join();
}

void Recorder::finish(uint64_t end_timestamp) {
  if (!started_) return;
  write_modules_if_changed();
  autograd_.finish();
  // A fault of the unwind-table builder (ObjectTable::build_now) leaves the program running: said here.
  if (std::string note = unwind::ObjectTable::instance().fault_note(); !note.empty()) warn(note);
  EndRecord end;
  end.timestamp = end_timestamp;
  const LaunchTotals totals = launch_totals();
  end.launches = totals.launches;
  end.launches_unwound = totals.unwound;
  end.stacks = stacks_.stacks();
  end.pc_records = counters_.pc_records;
  end.samples = counters_.samples;
  end.dropped_samples = counters_.dropped_samples;
  end.kernels = counters_.kernels;
  end.cubins = counters_.cubins;
  end.dropped_records = counters_.dropped_records;
  end.capture_ns = totals.capture_ns;
  end.walked_launches = totals.walked;
  end.walked_ns = totals.walked_ns;
  end.collector_cpu_ns = counters_.collector_cpu_ns;
  end.windows = counters_.windows;
  end.window_ns = counters_.window_ns;
  writer_.add(end);
  if (CaptureStats::on()) std::fprintf(stderr, "aiflame: %s\n", CaptureStats::instance().line().c_str());
  if (autograd_ab_) {
    const AutogradAB ab = autograd_ab();
    std::fprintf(stderr,
                 "aiflame: %s A/B: stack capture %.3f us per launch with %s (%llu launches, %llu walked), "
                 "%.3f without (%llu, %llu walked): %+.3f us; walked and memo launches compared apart: %+.3f us\n",
                 autograd_ab_ == 1   ? "autograd"
                 : autograd_ab_ == 2 ? "predicted-memo"
                 : autograd_ab_ == 3 ? "torch-tls"
                 : autograd_ab_ == 4 ? "python-state"
                                     : "lean-path",
                 per_launch_us(ab.with_ns, ab.with_launches),
                 autograd_ab_ == 1   ? "the tracking"
                 : autograd_ab_ == 2 ? "the predicted memo checked first"
                 : autograd_ab_ == 3 ? "torch's thread-locals read in place"
                 : autograd_ab_ == 4 ? "Python's initialized flag and thread state read in place"
                                     : "the launch path without the measurements' branches",
                 static_cast<unsigned long long>(ab.with_launches),
                 static_cast<unsigned long long>(ab.with_walked), per_launch_us(ab.without_ns, ab.without_launches),
                 static_cast<unsigned long long>(ab.without_launches), static_cast<unsigned long long>(ab.without_walked),
                 ab.raw_us(), ab.stratified_us());
  }
  if (capture_probe_ == 2) {
    const PhaseProbe p = phase_probe();
    std::fprintf(stderr,
                 "aiflame: phase probe: %llu launches from their memo: on_launch %.3f us; autograd reads %.3f, again at "
                 "once %.3f; capture %.3f, again at once %.3f (its Python walk alone, warm: %.3f)\n",
                 static_cast<unsigned long long>(p.launches), p.on_launch_us, p.autograd_us, p.autograd_again_us,
                 p.capture_us, p.capture_again_us, p.python_again_us);
  }
  if (hist_) {
    const double us15 = 32768 * clock_.ns_per_tick() / 1e3, us18 = 8 * us15;
    const std::string what[LaunchHistogram::kKinds] = {
        "on_launch, launches from their memo", "on_launch, launches walked", "capture of a launch from its memo",
        "the same capture again at once",
        fmt::format("on_launch from a memo, under {:.1f} us (2^15 ticks) after the thread's previous launch", us15),
        fmt::format("on_launch from a memo, {:.1f} to {:.1f} us after", us15, us18),
        fmt::format("on_launch from a memo, {:.1f} us or more after", us18),
        "on_launch from the memo predicted by the Python fingerprint", "on_launch from a memo searched for"};
    for (int k = 0; k < LaunchHistogram::kKinds; k++) {
      if (capture_probe_ != 2 && (k == LaunchHistogram::CaptureFirst || k == LaunchHistogram::CaptureAgain)) continue;
      const auto s = launch_histogram(static_cast<LaunchHistogram::Kind>(k));
      std::fprintf(stderr, "aiflame: launch histogram: %s: %s\n", what[k].c_str(), LaunchHistogram::line(s).c_str());
    }
    std::fprintf(stderr, "aiflame: launch histogram: the slowest launches: %s\n",
                 LaunchOutliers::line(outliers_->slowest(), clock_.ns_per_tick()).c_str());
  }
  if (capture_probe_ == 1) {
    const StackCapture::LineProbe p = stacks_.line_probe();
    const double n = static_cast<double>(std::max<uint64_t>(p.launches, 1)), ns = clock_.ns_per_tick();
    std::fprintf(stderr,
                 "aiflame: stack-line probe: %llu launches, %.1f lines on %.1f pages each; loading them took %.3f us, "
                 "again at once %.3f us\n",
                 static_cast<unsigned long long>(p.launches), static_cast<double>(p.lines) / n, static_cast<double>(p.pages) / n,
                 static_cast<double>(p.cold_ticks) * ns / 1e3 / n, static_cast<double>(p.hot_ticks) * ns / 1e3 / n);
  }
  if (tls_probe_) {
    const TlsProbe::Figures f = tls_probe_->figures(clock_.ns_per_tick());
    std::fprintf(stderr,
                 "aiflame: TLS probe: %llu launches; a thread-local through its TLS descriptor %.1f ns first, %.1f "
                 "again at once; a global %.1f ns first, %.1f again (each in a function of its own, 8 of each)\n",
                 static_cast<unsigned long long>(f.rounds), f.tls_ns[0], f.tls_ns[1], f.global_ns[0], f.global_ns[1]);
  }
  if (launch_ab_) {
    const LaunchAB::Result ab = launch_ab();
    if (!ab.valid)
      std::fprintf(stderr, "aiflame: launch A/B: no figure (%llu intervals after launches with the launch path, %llu without)\n",
                   static_cast<unsigned long long>(ab.on_intervals), static_cast<unsigned long long>(ab.off_intervals));
    else
      std::fprintf(stderr,
                   "aiflame: launch A/B: %+.3f us per launch, kernel by kernel (halves %+.3f, %+.3f; %.1f%% of intervals "
                   "compared); a thread's next launch came %.3f us after a launch with the launch path (%llu), %.3f us "
                   "after one without (%llu; %llu intervals over 2^18 ticks left out), %+.3f; the launch path's own "
                   "timer read %.3f us per launch\n",
                   ab.cost_us, ab.half_us[0], ab.half_us[1], 100.0 * ab.compared, ab.on_us,
                   static_cast<unsigned long long>(ab.on_intervals), ab.off_us,
                   static_cast<unsigned long long>(ab.off_intervals), static_cast<unsigned long long>(ab.long_intervals),
                   ab.raw_us, per_launch_us(totals.capture_ns, totals.launches));
  }
  if (autograd_ab_ || CaptureStats::on())
    std::fprintf(stderr, "aiflame: launching threads found their record buffer full %llu times\n",
                 static_cast<unsigned long long>(writer_.full_handovers()));
  if (opt_.measure.verify_memos) {
    const StackCapture::MemoCheck c = stacks_.memo_check();
    const StackCapture::Donors d = stacks_.donors();
    std::fprintf(stderr,
                 "aiflame: memo check: %llu launches took their memo (%llu by the Python fingerprint, %llu another call "
                 "path's: %llu such memos checked), each walked again in full: %llu got another stack\n",
                 static_cast<unsigned long long>(c.checked), static_cast<unsigned long long>(c.by_fingerprint),
                 static_cast<unsigned long long>(d.took), static_cast<unsigned long long>(d.checked),
                 static_cast<unsigned long long>(c.differed));
  }
  if (!writer_.close()) std::fprintf(stderr, "aiflame: writing the profile failed: %s\n", writer_.error().c_str());
  started_ = false;
}

}  // namespace aiflame
