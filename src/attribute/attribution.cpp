#include "attribute/attribution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "attribute/block_scheduler.h"
#include "attribute/launch_index.h"

namespace aiflame {
namespace {

struct Execution {
  uint64_t start, end;
  uint32_t stack_id;
  // Its weight per nanosecond: the SMs it held, fewer while the same kernel ran beside it on another
  // stream (see sm_time()); 1 throughout when the SM count is not known and nothing overlaps.
  float share = 1.0f;
  uint32_t blocks = 0;  // its grid's blocks (0: not known)
};

struct Share {
  uint32_t stack;
  double fraction;
  uint64_t time;  // GPU-time-weighted middle of the executions that make up this share
};

// Per stack: summed weight and weight x time. A batch window holds few launch stacks of one kernel,
// so a vector searched from the back (the stack just added to) beats a map; normalise() sorts it.
struct Weights {
  std::vector<std::pair<uint32_t, std::pair<double, double>>> by_stack;
  std::pair<double, double>& operator[](uint32_t stack) {
    for (auto it = by_stack.rbegin(); it != by_stack.rend(); ++it)
      if (it->first == stack) return it->second;
    return by_stack.emplace_back(stack, std::pair{0.0, 0.0}).second;
  }
  auto begin() const { return by_stack.begin(); }
  auto end() const { return by_stack.end(); }
};

// Shares in stack order, as a map by stack gave them (the order the samples come out in).
void normalise(Weights& w, std::vector<Share>& out) {
  std::sort(w.by_stack.begin(), w.by_stack.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double total = 0;
  for (const auto& [k, v] : w) total += v.first;
  out.clear();
  if (!(total > 0)) return;
  for (const auto& [k, v] : w) {
    // A stack whose executions had no duration here (a kernel at the clock's last nanosecond) has no
    // share; a time past the clock (rounding near 2^64) is its end. profile_reader_fuzz: 0/0 cast.
    if (!(v.first > 0)) continue;
    double t = v.second / v.first;
    out.push_back({k, v.first / total, t >= 0x1p64 ? UINT64_MAX : t > 0 ? static_cast<uint64_t>(t) : 0});
  }
}

struct FunctionRuns {
  std::vector<Execution> runs;  // sorted by start
  uint64_t max_duration = 0;
  std::vector<Share> whole_run;  // shares over the whole run (fallback)
  // Samples come out of CUPTI in the order they ran: batch by batch, a function's samples consume its
  // executions' expected samples in time order (order_window).
  // The executions' summed weight W(t) (share x the part of each span before t), at each end time:
  // (t, W(t)), ascending in both. W is linear between them (exactly so when nothing overlaps).
  std::vector<std::pair<uint64_t, double>> curve;
  double per_weight = 0;     // the function's samples (without correlation id) per unit of weight; 0: unknown
  double consumed = 0;       // its samples in the batches attributed so far
  // The point a segment of the curve starts from: the one before `it`, or (first start, 0).
  std::pair<uint64_t, double> segment_start(std::vector<std::pair<uint64_t, double>>::const_iterator it) const {
    return it == curve.begin() ? std::pair<uint64_t, double>{runs.front().start, 0.0} : *std::prev(it);
  }
  // W(t).
  double weight_at(uint64_t t) const {
    auto it = std::lower_bound(curve.begin(), curve.end(), t, [](const auto& c, uint64_t v) { return c.first < v; });
    if (it == curve.end()) return curve.empty() ? 0.0 : curve.back().second;
    const auto [t0, w0] = segment_start(it);
    if (t <= t0 || it->first <= t0) return w0;
    return w0 + (it->second - w0) * static_cast<double>(t - t0) / static_cast<double>(it->first - t0);
  }
  // The time at which W reaches w.
  uint64_t time_at(double w) const {
    if (curve.empty() || !(w > 0)) return runs.empty() ? 0 : runs.front().start;
    auto it = std::lower_bound(curve.begin(), curve.end(), w, [](const auto& c, double v) { return c.second < v; });
    if (it == curve.end()) return curve.back().first;
    const auto [t0, w0] = segment_start(it);
    double part = it->second > w0 ? (w - w0) / (it->second - w0) : 1.0;
    return t0 + static_cast<uint64_t>(part * static_cast<double>(it->first - t0));
  }
};

// The SMs an execution of `blocks` blocks wants of a device's `sms` (see sm_time).
float sm_want(uint32_t blocks, uint32_t sms) {
  if (!sms) return 1.0f;
  return static_cast<float>(blocks ? std::min(blocks, sms) : sms);
}

// FunctionRuns::curve from its runs (sorted by start, shares set).
void weight_curve(FunctionRuns& fr) {
  std::vector<std::pair<uint64_t, double>> events;  // (time, +rate at a start / -rate at an end)
  events.reserve(2 * fr.runs.size());
  for (const auto& e : fr.runs) events.emplace_back(e.start, e.share), events.emplace_back(e.end, -static_cast<double>(e.share));
  std::sort(events.begin(), events.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  fr.curve.clear();
  fr.curve.reserve(fr.runs.size());
  double w = 0, rate = 0;
  uint64_t t0 = events.empty() ? 0 : events.front().first;
  for (const auto& [t, d] : events) {
    w += rate * static_cast<double>(t - t0);
    t0 = t;
    rate = std::max(0.0, rate + d);
    if (d < 0) {
      if (!fr.curve.empty() && fr.curve.back().first == t) fr.curve.back().second = w;
      else fr.curve.emplace_back(t, w);
    }
  }
}

// The part of the batch window [lo, hi] in which a batch's n samples of a function ran, by their
// order: CUPTI hands samples out in the order they ran, so the function's samples of earlier batches
// (fr.consumed) used up its executions' expected samples up to some time, and this batch's take the
// next n. The wide window alone (about 300 ms: CUPTI's decode lag) gave a batch of one path's samples
// to another path's executions that had ended 100-200 ms before it: the thin arrangement at 334
// rounds read 71.5% for path_heavy, where the truth is 75%; in order, 75.8%. The order is an estimate
// (a function's samples per unit of weight over the whole profile; dropped samples unknown), so the
// part never leaves [lo, hi]; without the function's total, or if the part misses the window, the
// window is taken whole. (Widening the part by half the batch's share on each side gave the first,
// large batch the whole run: 70.7% there.)
std::pair<uint64_t, uint64_t> order_window(FunctionRuns& fr, uint64_t n, uint64_t lo, uint64_t hi) {
  if (!(fr.per_weight > 0) || !n) return {lo, hi};
  const double w0 = fr.consumed / fr.per_weight, w1 = (fr.consumed + static_cast<double>(n)) / fr.per_weight;
  fr.consumed += static_cast<double>(n);
  const uint64_t a = std::max(lo, fr.time_at(w0)), z = std::min(hi, fr.time_at(w1));
  if (z <= a) return {lo, hi};
  return {a, z};
}

// What an execution's samples follow. The sampler takes one warp per SM each period, so an execution
// is expected to get samples in proportion to the SMs it occupies times the time it occupies them, not
// to its time alone. Measured on the 3:1 test's thin arrangement (bench_kernels split thin: path_heavy's
// 132-block grid of one block per SM three times a round, path_light's 4-block grid once a round, 32
// times as long, on another stream): time alone gave path_heavy 9% where the truth is 75%.
// 1. An execution of b blocks wants o = min(b, S) of the device's S SMs (blocks spread over SMs before
//    they stack; a grid of unknown size wants them all).
// 2. While the function's executions running at an instant want D > S SMs in all, each gets its o in
//    proportion, o * S / D: its rate is o * min(1, S / D(t)), and its weight over its span
//    o * (P(end) - P(start)), P being the running integral of min(1, S / D). Two grids of 4096 blocks
//    on two streams (o = S each) split the instants they share evenly; by durations alone the path
//    running beside the other got 2.2 points too much.
// 3. An execution slowed by another does no more work than it does alone: its weight is at most o
//    times the median duration of the executions from its launch stack with its grid that overlapped
//    nothing. The thin arrangement needs this: beside path_light's 4 SMs, path_heavy's 132 blocks run
//    in two waves (92 us instead of 47, measured on an H200), its second wave on 4 SMs; steps 1-2
//    alone gave path_heavy 85.5%.
// Without the SM count (files recorded before it was), S = 1 and o = 1: each instant is split evenly
// between the k executions running, as before, and step 3 is left out. `share` holds o on entry and
// the weight per nanosecond of the span on return; `runs` is sorted by start.
void sm_time(std::vector<Execution>& runs, uint32_t sms) {
  const double S = sms ? sms : 1;
  std::vector<bool> overlapped(runs.size(), false);
  bool overlap = false;
  uint64_t reach = 0;
  size_t holder = 0;  // the execution reaching furthest so far: it overlaps any that starts before
  for (size_t i = 0; i < runs.size(); i++) {
    if (runs[i].start < reach) overlap = overlapped[i] = overlapped[holder] = true;
    if (runs[i].end > reach) reach = runs[i].end, holder = i;
  }
  if (!overlap) return;  // alone, each execution gets the o it wants: share = o as it came
  std::vector<std::pair<uint64_t, int64_t>> events;  // (time, +o start / -o end), ends first at a tie
  events.reserve(2 * runs.size());
  for (const auto& e : runs) {
    auto o = static_cast<int64_t>(e.share);
    events.emplace_back(e.start, o), events.emplace_back(e.end, -o);
  }
  std::sort(events.begin(), events.end());
  std::vector<std::pair<uint64_t, double>> integral;  // P at each event time
  integral.reserve(events.size());
  double p = 0;
  int64_t demand = 0;
  uint64_t t0 = events.front().first;
  for (const auto& [t, d] : events) {
    if (demand > 0) p += static_cast<double>(t - t0) * std::min(1.0, S / static_cast<double>(demand));
    t0 = t;
    demand += d;
    if (integral.empty() || integral.back().first != t) integral.emplace_back(t, p);
  }
  auto at = [&](uint64_t t) {
    return std::lower_bound(integral.begin(), integral.end(), t, [](const auto& x, uint64_t v) { return x.first < v; })->second;
  };
  // Step 3: the median duration alone of each (launch stack, grid).
  std::unordered_map<uint64_t, std::vector<uint64_t>> alone;
  if (sms)
    for (size_t i = 0; i < runs.size(); i++)
      if (!overlapped[i]) alone[uint64_t{runs[i].stack_id} << 32 | runs[i].blocks].push_back(runs[i].end - runs[i].start);
  std::unordered_map<uint64_t, double> median_alone;
  for (auto& [key, d] : alone) {
    std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
    median_alone[key] = static_cast<double>(d[d.size() / 2]);
  }
  for (size_t i = 0; i < runs.size(); i++) {
    Execution& e = runs[i];
    double span = static_cast<double>(e.end - e.start), weight = e.share * (at(e.end) - at(e.start));
    if (overlapped[i])
      if (auto m = median_alone.find(uint64_t{e.stack_id} << 32 | e.blocks); m != median_alone.end())
        weight = std::min(weight, e.share * m->second);
    e.share = static_cast<float>(weight / span);
  }
}

// Per kernel of the profile (in its order), its weight per nanosecond from the block-scheduler model:
// its expected samples (SM-nanoseconds) over its span; NaN for kernels of devices without recorded
// limits (or whose simulation ran out of steps), which sm_time() weighs instead. Empty when no
// device is modeled.
std::vector<float> modeled_shares(const Profile& p, LaunchIndex& launches, std::unordered_set<uint32_t>& modeled) {
  std::unordered_map<uint32_t, std::vector<uint32_t>> by_device;  // kernel indices of modeled devices
  for (uint32_t i = 0; i < p.kernels.size(); i++)
    if (p.sm_limits(p.kernels[i].device)) by_device[p.kernels[i].device].push_back(i);
  if (by_device.empty()) return {};
  std::vector<float> share(p.kernels.size(), std::numeric_limits<float>::quiet_NaN());
  // A kernel function launched from one stack gets all its samples whatever its executions weigh:
  // only groups of overlapping executions that hold a function from several stacks are simulated.
  std::unordered_map<uint64_t, std::pair<uint32_t, bool>> stacks;  // device << 32 | function -> (a stack, several)
  for (const KernelRow& k : p.kernels) {
    const uint32_t stack = launches.stack_of(k);
    auto [it, fresh] = stacks.try_emplace(uint64_t{k.device} << 32 | k.name, stack, false);
    if (!fresh && it->second.first != stack) it->second.second = true;
  }
  for (const auto& [device, kernels] : by_device) {
    const StallReasonsRecord& d = *p.sm_limits(device);
    const SmLimits sm{d.sm_count, d.max_threads_per_sm, d.max_blocks_per_sm, d.registers_per_sm, d.shared_per_sm,
                      d.shared_reserved_per_block};
    std::vector<GridRun> grids;
    std::vector<bool> needed;
    grids.reserve(kernels.size());
    needed.reserve(kernels.size());
    for (uint32_t i : kernels) {
      const KernelRow& k = p.kernels[i];
      grids.push_back({k.start, std::max(k.end, k.start + 1), k.blocks, k.threads, k.registers, k.shared});
      needed.push_back(stacks[uint64_t{k.device} << 32 | k.name].second);
    }
    const std::vector<double> w = expected_sm_time(grids, sm, &needed);
    if (w.empty()) continue;
    modeled.insert(device);
    for (size_t j = 0; j < kernels.size(); j++)
      share[kernels[j]] = static_cast<float>(w[j] / static_cast<double>(grids[j].end - grids[j].start));
  }
  return share;
}

}  // namespace

bool is_duplicate_stall_reason(const std::string& name) {
  static const std::string suffix = "_not_issued";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

namespace {
uint64_t exact_key(uint32_t corr, uint32_t fn) { return (static_cast<uint64_t>(corr) << 32) | fn; }
}  // namespace

namespace {

// A "_not_issued" count's key: the instruction, its base reason, and the launch where one is known.
struct NotIssuedKey {
  uint32_t function;
  uint64_t cubin;
  uint64_t pc;
  uint32_t reason;
  uint32_t correlation;
  bool operator==(const NotIssuedKey&) const = default;
};
struct NotIssuedHash {
  size_t operator()(const NotIssuedKey& k) const {
    uint64_t h = k.cubin * 0x9e3779b97f4a7c15ull ^ (k.pc + 0x7f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
    h ^= ((static_cast<uint64_t>(k.function) << 32) | k.reason) * 0x94d049bb133111ebull;
    return static_cast<size_t>(h ^ (h >> 31) ^ k.correlation);
  }
};

}  // namespace

struct Attributor::State {
  explicit State(const Profile& p) : launches(p) {}
  LaunchIndex launches;
  std::unordered_map<uint64_t, FunctionRuns> runs;  // device << 32 | function -> executions
  // device << 32 | context -> timestamp of the last batch that carried samples (see add_batch).
  std::unordered_map<uint64_t, uint64_t> last_delivery;
  // Windows mode: (correlation id, function) -> the stack and middle time of that very execution.
  // Built when the first sample with a correlation id comes (continuous mode has none).
  std::unordered_map<uint64_t, std::pair<uint32_t, uint64_t>> exact;
  bool exact_built = false;
  void build_exact(const Profile& p) {
    exact_built = true;
    for (const auto& k : p.kernels)
      if (k.correlation_id) exact.try_emplace(exact_key(k.correlation_id, k.name), launches.stack_of(k), k.start / 2 + k.end / 2);
  }
  std::map<std::pair<uint32_t, uint32_t>, bool> duplicate;     // (device, reason) -> is "_not_issued"
  bool is_duplicate(const Profile& p, uint32_t device, uint32_t reason) {
    auto [it, fresh] = duplicate.try_emplace({device, reason}, false);
    if (fresh) it->second = is_duplicate_stall_reason(p.stall_reason_name(device, reason));
    return it->second;
  }
  // (device, "X_not_issued" index) -> index of X, to pair each count with its not-issued subset.
  std::map<std::pair<uint32_t, uint32_t>, std::optional<uint32_t>> base_of;
  // Both of the above by device and reason index, for the per-sample path (small indices only).
  std::unordered_map<uint32_t, std::vector<int32_t>> reason_kind;
  // A batch's "_not_issued" counts, and its functions' shares (and whether inside the window).
  std::unordered_map<NotIssuedKey, uint64_t, NotIssuedHash> not_issued;
  // Per function, kept across batches so that no batch allocates them again (a long profile has
  // tens of thousands of batches of tens of functions each): valid for the batch numbered `batch`.
  struct Split {
    uint64_t batch = 0;
    std::vector<Share> shares;
    bool in_window = false;
  };
  std::unordered_map<uint32_t, Split> split;
  std::unordered_map<uint32_t, uint64_t> in_batch;
  uint64_t batches = 0;
  Weights weights;  // scratch
};

namespace {

enum : int32_t { kUnknownReason = -3, kDuplicateWithoutBase = -2, kCounted = -1 };  // else: the base's index
constexpr uint64_t kDecodeLatencyNs = 200'000'000;
constexpr uint32_t kMaxTabledReason = 4096;

}  // namespace

Attributor::Attributor(const Profile& p, uint64_t lag_ns) : p_(p), lag_ns_(lag_ns), s_(std::make_unique<State>(p)) {
  if (lag_ns_ == 0) {
    // CUPTI's decode thread wakes every 100 ms (its default sleep span, left alone: setting it crashed
    // CUPTI 13.0), so a sample reaches GetData up to about two spans after it ran (the demo's last
    // samples came 176 ms after its last kernel ended, tests/data/demo_matmul.aiflame).
    uint64_t interval_ns = (p.process && p.process->interval_ms ? p.process->interval_ms : 10) * 1000000ull;
    lag_ns_ = std::max<uint64_t>(2 * interval_ns, kDecodeLatencyNs);
  }

  LaunchIndex& launches = s_->launches;

  // Executions per (device, function). Kernels whose launch was not seen keep stack 0.
  auto& runs = s_->runs;
  {  // exact sizes first: vectors grown one execution at a time keep up to twice their memory
    std::unordered_map<uint64_t, size_t> counts;
    for (const auto& k : p.kernels) counts[uint64_t{k.device} << 32 | k.name]++;
    runs.reserve(counts.size());
    for (const auto& [key, n] : counts) runs[key].runs.reserve(n);
  }
  // Where the device's SM limits were recorded, each execution's weight is its expected samples from
  // the block-scheduler model (block_scheduler.h), over all the device's executions; elsewhere (files
  // recorded before the limits were) sm_time() below.
  std::unordered_set<uint32_t> modeled_devices;
  const std::vector<float> modeled = modeled_shares(p, launches, modeled_devices);
  FunctionRuns* last = nullptr;  // kernels come in runs of one function: look the map up per change
  uint64_t last_key = 0;
  uint32_t sms = 0;
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const KernelRow& k = p.kernels[i];
    uint32_t stack = launches.stack_of(k);
    uint64_t key = uint64_t{k.device} << 32 | k.name;
    if (!last || key != last_key) last = &runs[key], last_key = key, sms = p.sm_count(k.device);
    auto& fr = *last;
    fr.runs.push_back({k.start, std::max(k.end, k.start + 1), stack, modeled.empty() || std::isnan(modeled[i]) ? sm_want(k.blocks, sms) : modeled[i], k.blocks});
  }
  for (auto& [key, fr] : runs) {
    std::sort(fr.runs.begin(), fr.runs.end(), [](const Execution& a, const Execution& b) { return a.start < b.start; });
    if (!modeled_devices.count(static_cast<uint32_t>(key >> 32))) sm_time(fr.runs, p.sm_count(static_cast<uint32_t>(key >> 32)));
    Weights w;
    for (const auto& e : fr.runs) {
      fr.max_duration = std::max(fr.max_duration, e.end - e.start);
      double span = static_cast<double>(e.end - e.start), d = span * e.share;
      w[e.stack_id].first += d;
      w[e.stack_id].second += d * (static_cast<double>(e.start) + span / 2);
    }
    normalise(w, fr.whole_run);
    weight_curve(fr);
  }
  // Each function's samples per unit of weight, from its samples over the whole profile (the
  // reader's tally; a profile built in memory has its batches).
  Profile::SampleTally counted;
  const auto* tally = &p.continuous_samples;
  if (tally->empty() && !p.batches.empty()) {
    for (const auto& b : p.batches) Profile::tally(counted, b);
    tally = &counted;
  }
  std::unordered_map<uint64_t, uint64_t> totals;
  for (const auto& [key, n] : *tally) {
    const auto& [device, function, reason] = key;
    if (!s_->is_duplicate(p, device, reason)) totals[uint64_t{device} << 32 | function] += n;
  }
  // Executions after the last batch delivered none of their samples (a run cut short, a kernel
  // still running when the recording ended): the rate is taken over the executions before it.
  uint64_t last_batch = p.last_batch_timestamp;
  for (const auto& b : p.batches) last_batch = std::max(last_batch, b.timestamp);
  for (const auto& [key, n] : totals)
    if (auto it = runs.find(key); it != runs.end() && !it->second.curve.empty())
      if (double w = it->second.weight_at(last_batch); w > 0) it->second.per_weight = static_cast<double>(n) / w;
}

Attributor::~Attributor() = default;

void Attributor::add_batch(const PcBatchRecord& b, std::vector<AttributedSample>& out) {
  const Profile& p = p_;
  auto is_dup = [&](uint32_t device, uint32_t reason) { return s_->is_duplicate(p, device, reason); };
  auto base_reason = [&](uint32_t device, uint32_t dup) {
    auto [it, fresh] = s_->base_of.try_emplace({device, dup});
    if (fresh) {
      std::string name = p.stall_reason_name(device, dup);
      name.resize(name.size() - std::string_view("_not_issued").size());
      for (const auto& t : p.stall_reasons)
        for (const auto& [idx, n] : t.reasons)
          if (n == name && (t.device == device || !it->second)) it->second = idx;
    }
    return it->second;
  };

  // kCounted, kDuplicateWithoutBase, or the base reason's index of a "_not_issued" duplicate.
  std::vector<int32_t>& table = s_->reason_kind[b.device];
  auto kind_of = [&](uint32_t reason) -> int32_t {
    auto classify = [&] {
      if (!is_dup(b.device, reason)) return int32_t{kCounted};
      auto base = base_reason(b.device, reason);
      return base && *base < kMaxTabledReason ? static_cast<int32_t>(*base) : int32_t{kDuplicateWithoutBase};
    };
    if (reason >= kMaxTabledReason) return classify();  // a hostile index: no table that large
    if (reason >= table.size()) table.resize(reason + 1, kUnknownReason);
    if (table[reason] == kUnknownReason) table[reason] = classify();
    return table[reason];
  };

  stats_.dropped += b.dropped_samples;
  // Per batch, kept between batches so that their buckets are not allocated again each time.
  auto& not_issued = s_->not_issued;
  auto& split = s_->split;
  not_issued.clear();
  const uint64_t batch = ++s_->batches;
  auto& in_batch = s_->in_batch;  // the batch's samples without correlation id, by function
  in_batch.clear();
  for (const auto& s : b.samples) {
    int32_t k = kind_of(s.stall_reason);
    if (k >= 0)
      not_issued[{s.function, s.code_object_id, s.pc_offset, static_cast<uint32_t>(k), s.correlation_id}] += s.count;
    else if (k == kCounted && !s.correlation_id)
      in_batch[s.function] += s.count;
  }
  // The window the batch's samples ran in. CUPTI's decode thread hands samples out about every 100 ms
  // (its default sleep span, which aiflame leaves alone: setting it crashed CUPTI 13.0), while aiflame
  // polls every interval (10 ms), so most polls come back empty and say nothing about when the next
  // batch's samples ran: a batch holds what ran since the previous batch that had samples, plus the lag.
  // (Starting at the previous poll, with a 20 ms lag, put 100-200 ms of samples into the executions of
  // the last 30 ms: when a kernel's launch stacks changed within that time, the stack running at the
  // end got them all; the two-stream 3:1 test at 300 rounds gave path_a 78-79% instead of 75%.)
  uint64_t& delivered = s_->last_delivery[uint64_t{b.device} << 32 | b.context];
  uint64_t since = delivered ? std::min(delivered, b.prev_timestamp) : b.prev_timestamp;
  if (!b.samples.empty()) delivered = b.timestamp;
  uint64_t lo = since > lag_ns_ ? since - lag_ns_ : 0;
  uint64_t hi = b.timestamp;
  for (const auto& s : b.samples) {
    if (kind_of(s.stall_reason) != kCounted) continue;
    stats_.samples += s.count;
    if (s.correlation_id) {
      AttributedSample a{0, s.function, s.code_object_id, s.pc_offset, s.stall_reason, b.device, double(s.count), 0,
                         lo / 2 + hi / 2};
      if (!s_->exact_built) s_->build_exact(p);
      if (auto e = s_->exact.find(exact_key(s.correlation_id, s.function)); e != s_->exact.end())
        std::tie(a.stack_id, a.time_ns) = e->second;
      else  // the kernel record was lost: the launch record still names the stack
        a.stack_id = s_->launches.stack_of_launch(s.correlation_id);
      if (!not_issued.empty())
        if (auto ni = not_issued.find({s.function, s.code_object_id, s.pc_offset, s.stall_reason, s.correlation_id});
            ni != not_issued.end())
          a.not_issued = static_cast<double>(std::min<uint64_t>(ni->second, s.count));
      if (a.stack_id) {
        stats_.attributed += a.weight;
        stats_.in_window += a.weight;
        stats_.exact += a.weight;
      }
      out.push_back(a);
      continue;
    }
    State::Split& sp = split[s.function];
    if (sp.batch != batch) {
      sp.batch = batch;
      sp.shares.clear();
      sp.in_window = false;
      auto rit = s_->runs.find(uint64_t{b.device} << 32 | s.function);
      if (rit != s_->runs.end()) {
        FunctionRuns& fr = rit->second;
        auto [from_t, to_t] = order_window(fr, in_batch[s.function], lo, hi);
        Weights& w = s_->weights;
        w.by_stack.clear();
        uint64_t from = from_t > fr.max_duration ? from_t - fr.max_duration : 0;
        auto it = std::lower_bound(fr.runs.begin(), fr.runs.end(), from,
                                   [](const Execution& e, uint64_t t) { return e.start < t; });
        for (; it != fr.runs.end() && it->start < to_t; ++it) {
          uint64_t a = std::max(it->start, from_t), z = std::min(it->end, to_t);
          if (z > a) {
            double span = static_cast<double>(z - a), d = span * it->share;
            w[it->stack_id].first += d;
            w[it->stack_id].second += d * (static_cast<double>(a) + span / 2);
          }
        }
        normalise(w, sp.shares);
        sp.in_window = !sp.shares.empty();
        if (!sp.in_window) sp.shares = fr.whole_run;
      }
    }
    const auto& shares = sp.shares;
    const bool in_window = sp.in_window;
    AttributedSample a{0, s.function, s.code_object_id, s.pc_offset, s.stall_reason, b.device, 0, 0, lo / 2 + hi / 2};
    uint64_t idle = 0;
    if (!not_issued.empty())
      if (auto ni = not_issued.find({s.function, s.code_object_id, s.pc_offset, s.stall_reason, s.correlation_id});
          ni != not_issued.end())
        idle = std::min<uint64_t>(ni->second, s.count);
    if (shares.empty()) {
      a.weight = s.count;
      a.not_issued = static_cast<double>(idle);
      out.push_back(a);
      continue;
    }
    // One launch stack: the launch is known whatever the timing; several: the model placed them.
    a.estimated = shares.size() > 1;
    for (const Share& sh : shares) {
      a.stack_id = sh.stack;
      a.weight = sh.fraction * s.count;
      a.not_issued = sh.fraction * static_cast<double>(idle);
      // Outside the window (fallback shares) the executions' times say nothing about this batch.
      a.time_ns = in_window ? sh.time : lo / 2 + hi / 2;
      if (sh.stack) stats_.attributed += a.weight;
      if (sh.stack && a.estimated) stats_.estimated += a.weight;
      if (sh.stack && in_window) stats_.in_window += a.weight;
      out.push_back(a);
    }
  }
}

AttributionResult attribute_samples(const Profile& p, uint64_t lag_ns) {
  AttributionResult res;
  size_t records = 0;
  for (const auto& b : p.batches) records += b.samples.size();
  res.samples.reserve(records);  // at least one each; growing a vector of a million costs page faults twice
  Attributor attributor(p, lag_ns);
  for (const auto& b : p.batches) attributor.add_batch(b, res.samples);
  res.stats = attributor.stats();
  return res;
}

}  // namespace aiflame
