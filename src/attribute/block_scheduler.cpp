#include "attribute/block_scheduler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

namespace aiflame {
namespace {

// What an SM holds: warps, blocks, registers, shared memory (bytes).
constexpr int kResources = 4;
using Res = std::array<int64_t, kResources>;

Res capacity(const SmLimits& sm) {
  return {int64_t{sm.threads} / 32, int64_t{sm.blocks}, int64_t{sm.registers}, int64_t{sm.shared}};
}

// What one block of the run takes of an SM. Registers are allocated per warp in units of 256 and
// shared memory in units of 128 bytes, plus what the driver reserves per block (CUDA's occupancy
// calculator does the same for compute capability 7.0 and later). A block takes at most a whole SM:
// a launch that ran had blocks that fit one.
Res block_usage(const GridRun& r, const SmLimits& sm) {
  const int64_t warps = r.threads ? (int64_t{r.threads} + 31) / 32 : 1;
  const int64_t regs = r.registers ? (int64_t{r.registers} * 32 + 255) / 256 * 256 * warps : 0;
  const int64_t shared = (int64_t{r.shared} + 127) / 128 * 128 + sm.shared_reserved;
  Res u{warps, 1, regs, shared};
  const Res cap = capacity(sm);
  for (int i = 0; i < kResources; i++) u[i] = std::min(u[i], cap[i]);
  return u;
}

// Blocks of usage `use` that fit in `free`.
int64_t fit(const Res& free, const Res& use) {
  int64_t k = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < kResources; i++)
    if (use[i] > 0) k = std::min(k, std::max<int64_t>(0, free[i]) / use[i]);
  return k;
}

// Blocks of one run placed together on each SM of a class, ending together.
struct Cohort {
  uint32_t run;
  int64_t blocks;
  uint64_t end;
  bool operator==(const Cohort&) const = default;
  bool operator<(const Cohort& o) const { return run != o.run ? run < o.run : end < o.end; }
};

// SMs in the same state. The scheduler's choices depend only on an SM's state, so SMs that were
// given the same blocks at the same times stay one class: a simulation costs per class, not per SM
// or per block (at most one class per SM).
struct SmClass {
  int64_t count;
  Res free;
  std::vector<Cohort> cohorts;  // sorted
};

// A run that has started and not ended, in launch order.
struct Live {
  uint32_t run;
  int64_t pending;   // blocks not yet placed
  int64_t resident;  // blocks on SMs
};

struct Static {
  std::vector<Res> use;
  std::vector<int64_t> warps;
  std::vector<uint64_t> duration;  // of one block (one cohort of blocks: grid_cohorts), as fitted
  // Simulation steps left (classes and runs visited) before the model gives up on the device: a
  // hostile or pathological profile must not make a report take hours.
  mutable int64_t budget = 0;
  mutable std::vector<int64_t> k;      // dispatch's scratch: blocks that fit per class
  mutable std::vector<size_t> order;   // and the classes, emptiest first
};

struct Sim {
  std::vector<SmClass> classes;
  std::vector<Live> live;
  uint64_t now = 0;
};

// Places pending blocks at `now`: runs in launch order (an earlier grid takes what fits first), each
// spread breadth-first, one block per SM before two, emptiest SMs first.
void dispatch(Sim& s, const Static& st) {
  std::vector<int64_t>& k = st.k;
  std::vector<size_t>& order = st.order;
  for (Live& l : s.live) {
    if (l.pending <= 0) continue;
    const Res& use = st.use[l.run];
    const size_t n = s.classes.size();
    k.assign(n, 0);
    int64_t total = 0, top = 0;
    for (size_t c = 0; c < n; c++) {
      k[c] = fit(s.classes[c].free, use);
      total += k[c] * s.classes[c].count;
      top = std::max(top, k[c]);
    }
    if (total == 0) continue;
    // Level L: every SM gets min(k, L) blocks; the rest one more, on the emptiest SMs that take it.
    int64_t level = top;
    if (l.pending < total) {  // the largest level whose blocks do not exceed the pending ones
      auto placed = [&](int64_t v) {
        int64_t sum = 0;
        for (size_t c = 0; c < n; c++) sum += std::min(k[c], v) * s.classes[c].count;
        return sum;
      };
      int64_t lo = 0, hi = top;  // placed(lo) <= pending < placed(hi)
      while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        (placed(mid) <= l.pending ? lo : hi) = mid;
      }
      level = lo;
    }
    int64_t extra = l.pending;
    for (size_t c = 0; c < n; c++) extra -= std::min(k[c], level) * s.classes[c].count;
    order.resize(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.classes[a].free[0] > s.classes[b].free[0]; });
    const uint64_t end = s.now + st.duration[l.run];
    auto place = [&](SmClass& sc, int64_t blocks) {
      if (blocks <= 0) return;
      for (int i = 0; i < kResources; i++) sc.free[i] -= blocks * use[i];
      auto it = std::find_if(sc.cohorts.begin(), sc.cohorts.end(), [&](const Cohort& h) { return h.run == l.run && h.end == end; });
      if (it != sc.cohorts.end()) it->blocks += blocks;
      else sc.cohorts.insert(std::upper_bound(sc.cohorts.begin(), sc.cohorts.end(), Cohort{l.run, blocks, end}), Cohort{l.run, blocks, end});
      l.pending -= blocks * sc.count;
      l.resident += blocks * sc.count;
    };
    for (size_t c : order) {
      int64_t base = std::min(k[c], level);
      int64_t more = extra > 0 && k[c] > level ? std::min(extra, s.classes[c].count) : 0;
      extra -= more;
      if (more > 0 && more < s.classes[c].count) {  // part of the class gets one block more: split it
        SmClass part = s.classes[c];
        part.count = more;
        s.classes[c].count -= more;
        place(part, base + 1);
        s.classes.push_back(std::move(part));
        place(s.classes[c], base);
      } else {
        place(s.classes[c], base + (more > 0 ? 1 : 0));
      }
    }
  }
}

// Runs' shares of their SMs' warps over dt, summed into weights.
void integrate(const Sim& s, const Static& st, uint64_t dt, std::vector<double>* weights) {
  if (!weights || !dt) return;
  for (const SmClass& c : s.classes) {
    double warps = 0;
    for (const Cohort& h : c.cohorts) warps += static_cast<double>(h.blocks * st.warps[h.run]);
    if (!(warps > 0)) continue;
    for (const Cohort& h : c.cohorts)
      (*weights)[h.run] += static_cast<double>(c.count) * static_cast<double>(dt) *
                           static_cast<double>(h.blocks * st.warps[h.run]) / warps;
  }
}

// Merges classes in the same state.
void merge(Sim& s) {
  if (s.classes.size() < 2) return;
  std::sort(s.classes.begin(), s.classes.end(), [](const SmClass& a, const SmClass& b) {
    if (a.free != b.free) return a.free < b.free;
    return a.cohorts < b.cohorts;
  });
  size_t out = 0;
  for (size_t i = 1; i < s.classes.size(); i++) {
    if (s.classes[i].free == s.classes[out].free && s.classes[i].cohorts == s.classes[out].cohorts)
      s.classes[out].count += s.classes[i].count;
    else if (++out != i)
      s.classes[out] = std::move(s.classes[i]);
  }
  s.classes.resize(out + 1);
}

// Simulates until `until` (events at it included) or, with watch set, until that run has ended;
// returns the watched run's end (0 if it did not end). weights and ends may be null (a trial).
uint64_t advance(Sim& s, const Static& st, uint64_t until, int64_t watch, std::vector<double>* weights,
                 std::vector<uint64_t>* ends) {
  for (;;) {
    st.budget -= static_cast<int64_t>(s.classes.size() + s.live.size());
    if (st.budget < 0) return 0;
    dispatch(s, st);
    uint64_t t = std::numeric_limits<uint64_t>::max();
    for (const SmClass& c : s.classes)
      for (const Cohort& h : c.cohorts) t = std::min(t, h.end);
    if (t == std::numeric_limits<uint64_t>::max()) return 0;  // idle: every started run has ended
    if (t > until) {
      integrate(s, st, until - s.now, weights);
      s.now = until;
      return 0;
    }
    integrate(s, st, t - s.now, weights);
    s.now = t;
    for (SmClass& c : s.classes) {
      auto ended = std::stable_partition(c.cohorts.begin(), c.cohorts.end(), [&](const Cohort& h) { return h.end > t; });
      for (auto it = ended; it != c.cohorts.end(); ++it) {
        for (int i = 0; i < kResources; i++) c.free[i] += it->blocks * st.use[it->run][i];
        for (Live& l : s.live)
          if (l.run == it->run) l.resident -= it->blocks * c.count;
      }
      c.cohorts.erase(ended, c.cohorts.end());
    }
    uint64_t watched = 0;
    std::erase_if(s.live, [&](const Live& l) {
      if (l.pending > 0 || l.resident > 0) return false;
      if (ends) (*ends)[l.run] = t;
      if (static_cast<int64_t>(l.run) == watch) watched = t;
      return true;
    });
    merge(s);
    if (watched) return watched;
  }
}

// Blocks of the run's grid (a grid of unknown size fills the GPU once).
int64_t grid_blocks(const GridRun& r, const SmLimits& sm) {
  return r.blocks ? int64_t{r.blocks} : int64_t{blocks_per_sm(r, sm)} * sm.sms;
}

// What the simulation places of a run: its blocks, or for a grid of more than kMaxWaves waves alone,
// cohorts of m consecutive blocks of one slot taken as one block m times as long (the fitted duration
// is then a cohort's). Only the last wave's shape is coarser; a simulation step costs per cohort.
constexpr int64_t kMaxWaves = 64;
int64_t grid_cohorts(const GridRun& r, const SmLimits& sm) {
  const int64_t b = grid_blocks(r, sm), cap = int64_t{blocks_per_sm(r, sm)} * sm.sms;
  const int64_t waves = (b + cap - 1) / cap, m = (waves + kMaxWaves - 1) / kMaxWaves;
  return (b + m - 1) / m;
}

// Simulation steps allowed per device: a base and so many per execution (a run of two streams side by
// side takes a few hundred per execution: its fit's trials over the executions beside it).
constexpr int64_t kBudgetBase = 10'000'000, kBudgetPerRun = 4'000;

// A run that overlaps no other: waves of blocks_per_sm x SMs, the last one on min(rest, SMs) SMs.
double alone(const GridRun& r, const SmLimits& sm) {
  const int64_t cap = int64_t{blocks_per_sm(r, sm)} * sm.sms, b = grid_blocks(r, sm);
  const int64_t full = b / cap, rest = b % cap;
  const double span = static_cast<double>(r.end - r.start);
  const double d = span / static_cast<double>(full + (rest > 0));
  return d * static_cast<double>(full * sm.sms + std::min<int64_t>(rest, sm.sms));
}

// The block duration d in [1, span] whose simulated end end_with(d) is target (end_with grows with d,
// piecewise linearly: its slope is the waves run one after another). Regula falsi with the Illinois
// step, to a tolerance of 1/4096 of the span: a few trials where bisection takes twelve.
template <class EndWith>
uint64_t fit_duration(EndWith&& end_with, uint64_t span, uint64_t target) {
  uint64_t lo = 1, hi = span;
  double f_lo = static_cast<double>(end_with(lo)) - static_cast<double>(target);
  if (f_lo >= 0) return lo;
  double f_hi = static_cast<double>(end_with(hi)) - static_cast<double>(target);
  if (f_hi <= 0) return hi;
  const uint64_t tolerance = std::max<uint64_t>(1, span / 4096);
  int side = 0;
  for (int iter = 0; iter < 40 && hi - lo > tolerance; iter++) {
    double x = static_cast<double>(lo) + static_cast<double>(hi - lo) * (-f_lo) / (f_hi - f_lo);
    uint64_t d = std::clamp<uint64_t>(static_cast<uint64_t>(x), lo + 1, hi - 1);
    double f = static_cast<double>(end_with(d)) - static_cast<double>(target);
    if (std::abs(f) <= static_cast<double>(tolerance)) return d;
    if (f < 0) {
      lo = d, f_lo = f;
      if (side == -1) f_hi /= 2;
      side = -1;
    } else {
      hi = d, f_hi = f;
      if (side == 1) f_lo /= 2;
      side = 1;
    }
  }
  return hi;
}

}  // namespace

uint32_t blocks_per_sm(const GridRun& r, const SmLimits& sm) {
  return static_cast<uint32_t>(std::max<int64_t>(1, fit(capacity(sm), block_usage(r, sm))));
}

std::vector<double> expected_sm_time(const std::vector<GridRun>& runs, const SmLimits& sm,
                                     const std::vector<bool>* needed) {
  return expected_sm_time(runs, sm, nullptr, needed);
}

std::vector<double> expected_sm_time(const std::vector<GridRun>& runs, const SmLimits& sm,
                                     std::vector<uint64_t>* simulated_end, const std::vector<bool>* needed) {
  std::vector<double> weight(runs.size(), 0.0);
  if (simulated_end) simulated_end->assign(runs.size(), 0);
  if (runs.empty() || !sm.known()) return weight;
  int64_t budget = kBudgetBase + kBudgetPerRun * static_cast<int64_t>(runs.size());
  std::vector<uint32_t> order(runs.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return runs[a].start < runs[b].start; });
  auto span_of = [&](const GridRun& r) { return r.end > r.start ? r.end - r.start : uint64_t{1}; };
  // Groups of runs that overlap (transitively); a group of one needs no simulation.
  size_t first = 0;
  while (first < order.size()) {
    size_t last = first + 1;
    uint64_t reach = runs[order[first]].start + span_of(runs[order[first]]);
    while (last < order.size() && runs[order[last]].start < reach)
      reach = std::max(reach, runs[order[last]].start + span_of(runs[order[last]])), last++;
    bool simulate = last > first + 1;
    if (simulate && needed) {
      simulate = false;
      for (size_t i = first; i < last; i++) simulate = simulate || (*needed)[order[i]];
    }
    if (!simulate) {
      for (size_t i = first; i < last; i++) {
        GridRun r = runs[order[i]];
        r.end = r.start + span_of(r);
        weight[order[i]] = alone(r, sm);
        if (simulated_end) (*simulated_end)[order[i]] = r.end;
      }
      first = last;
      continue;
    }
    // The group, in launch order: local index i is run order[first + i].
    const size_t n = last - first;
    Static st;
    st.budget = budget;
    st.use.resize(n), st.warps.resize(n), st.duration.assign(n, 1);
    for (size_t i = 0; i < n; i++) {
      st.use[i] = block_usage(runs[order[first + i]], sm);
      st.warps[i] = st.use[i][0];
    }
    Sim chain;
    chain.classes.push_back({int64_t{sm.sms}, capacity(sm), {}});
    chain.now = runs[order[first]].start;
    std::vector<double> w(n, 0.0);
    std::vector<uint64_t> ends(n, 0);
    for (size_t i = 0; i < n; i++) {
      const GridRun& r = runs[order[first + i]];
      chain.now = std::max(chain.now, r.start);
      const Live joined{static_cast<uint32_t>(i), grid_cohorts(r, sm), 0};
      const uint64_t span = span_of(r), target = r.start + span;
      // The block duration whose simulated end is the recorded one: end(d) grows with d.
      auto end_with = [&](uint64_t d) {
        Sim trial = chain;
        st.duration[i] = d;
        trial.live.push_back(joined);
        return advance(trial, st, std::numeric_limits<uint64_t>::max(), static_cast<int64_t>(i), nullptr, nullptr);
      };
      // Every block placed at the start (the free slots hold the grid): one wave, the span itself.
      int64_t room = 0;
      for (const SmClass& c : chain.classes) room += fit(c.free, st.use[i]) * c.count;
      uint64_t d = span;
      if (room < joined.pending) d = fit_duration(end_with, span, target);
      st.duration[i] = d;
      chain.live.push_back(joined);
      const uint64_t until = i + 1 < n ? runs[order[first + i + 1]].start : std::numeric_limits<uint64_t>::max();
      advance(chain, st, until, -1, &w, &ends);
    }
    if (st.budget < 0) return {};
    budget = st.budget;
    for (size_t i = 0; i < n; i++) {
      weight[order[first + i]] = w[i];
      if (simulated_end) (*simulated_end)[order[first + i]] = ends[i];
    }
    first = last;
  }
  return weight;
}

}  // namespace aiflame
