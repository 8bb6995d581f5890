#include "record/autograd/autograd_tracker.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "record/measure/capture_stats.h"
#include "record/debug_log.h"
#include "util/hot_pages.h"
#include "util/hot_path.h"
#include "util/tls_offsets.h"

namespace aiflame {
namespace {

constexpr uint64_t kAccumulateGrad = UINT64_MAX;  // AccumulateGrad's sequence number: no forward op made it
constexpr int kLookAhead = 16;   // launches after a node's creation searched for its forward stack
constexpr int kCallerTries = 3;  // scans per thread and graph task before its caller is given up
constexpr size_t kMaxCallers = 16;

uint64_t slot_key(uint64_t seq, uint64_t tid) { return ((seq + 1) << 12) | (tid & 0xfff); }

void bump(std::atomic<uint64_t>& c) { c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

}  // namespace

// Per launching thread, one cache line: the last sequence number remembered, torch's id of the
// thread, what kind of thread it is, and the graph task of its last backward launch with that task's
// caller. Trivially destructible: still readable when CUPTI calls back during the process's exit.
struct alignas(64) AutogradTracker::ThreadState {
  enum Kind : uint8_t { Unknown, Forward, Engine };
  uint64_t owner = 0;  // the tracker's serial number
  uint64_t last_seq = ~0ull;
  uint64_t tid = 0;
  int graph_task = -2;
  uint32_t caller = 0;
  Kind kind = Unknown;
  bool self = false;
  uint8_t tries = 0;
  bool asked = false;      // deferred: this graph task's caller asked of the collector (ask_caller)
  uint16_t last_set = 0;   // engine threads: the set of their last backward launch
  uint16_t next_set = 0;   // and the set the launch after it took last time (prefetched)
  BackwardCounts* counts = nullptr;  // engine threads: their counts (the tracker's)
  // Where torch's thread-locals are read in place (torch_tls.h): this thread's base, null where the
  // functions are called; the offsets from it (and the GraphTask's id), copied here from the tracker
  // so that the launch reads no other line for them.
  const char* tls = nullptr;
  int16_t seq_off = 0, task_off = 0, node_off = 0, task_id_off = 0;
};
static_assert(sizeof(AutogradTracker::ThreadState) == 64);

namespace {
// The thread's backward sets: in its hot pages, kept across trackers (cleared for a new one), null
// again once the thread's region is released (a CUPTI callback during the exit maps a new one).
thread_local constinit AutogradTracker::BackwardCache* t_sets = nullptr;
AIFLAME_TLS_ENROLL(tls::kAutogradSets, t_sets);
thread_local constinit AutogradTracker::ThreadState t_autograd;
AIFLAME_TLS_ENROLL(tls::kAutograd, t_autograd);

AutogradTracker::ThreadState& thread_state(uint64_t owner) {
  AutogradTracker::ThreadState& t = *AIFLAME_TLS(tls::kAutograd, t_autograd);  // (util/tls_offsets.h)
  if (t.owner != owner) {
    t = AutogradTracker::ThreadState();
    t.owner = owner;
    if (t_sets) std::memset(static_cast<void*>(t_sets), 0, sizeof *t_sets);  // another tracker's ids (tests)
  }
  return t;
}
}  // namespace

void AutogradTracker::init(bool python, Warn warn) {
  python_ = python;
  warn_ = std::move(warn);
  if (disabled_) return;  // disable()
  if (python_) frames_.init();
  TorchApi api = resolve_torch();
  if (api.library.empty()) {
    state_ = "off: torch is not loaded";
    debug("autograd: torch is not loaded (looked again every second)");
    return;
  }
  start(api);
}

void AutogradTracker::init_with(const TorchApi& api, bool python, Warn warn) {
  python_ = python;
  warn_ = std::move(warn);
  if (python_) frames_.init();
  start(api);
}

AutogradTracker::~AutogradTracker() {
  if (deferred()) writer_.set_backward_resolver(nullptr);
}

void AutogradTracker::poll() {
  emit_late();
  if (disabled_ || started_.load()) return;
  TorchApi api = resolve_torch();
  if (!api.library.empty()) start(api);
}

void AutogradTracker::start(const TorchApi& api) {
  if (started_.exchange(true)) return;
  api_ = api;
  if (!read_in_place_) {
    tls_why_ = "switched off";
  } else if (api_.graph_task_id && api_.peek && api_.current_node) {
    tls_ = resolve_torch_tls(api_, &tls_why_);
    if (tls_) {
      tls_why_.clear();
      debug("autograd: torch's thread-locals read in place: sequence number at %+d, graph task at %+d (its id at %+d), "
            "current node at %+d",
            tls_->seq, tls_->task, tls_->task_id, tls_->node);
    } else {
      debug("autograd: torch's functions called at every launch (%s)", tls_why_.c_str());
    }
  }
  debug("autograd: %s torch %s; graph_task_id %p current_node %p peek %p thread_id %p; node layout %s",
        api_.library.c_str(), api_.version.c_str(), reinterpret_cast<void*>(api_.graph_task_id),
        reinterpret_cast<void*>(api_.current_node), reinterpret_cast<void*>(api_.peek),
        reinterpret_cast<void*>(api_.thread_id), api_.node_layout ? "known" : "unknown");
  if (!api_.graph_task_id) {
    off("autograd: " + api_.problem + "; backward kernels keep the engine's stacks");
    return;
  }
  bool node = api_.current_node && api_.peek && api_.thread_id && api_.node_layout &&
              api_.node_sequence_nr + 8 <= UINT16_MAX && api_.node_thread_id + 8 <= UINT16_MAX;
  if (node && launches_sampled_) {
    node = false;
    api_.problem = "windows mode records only the launches inside its windows, so the forward launches are unseen";
  }
  hot_.graph_task_id = api_.graph_task_id;
  hot_.peek = api_.peek;
  hot_.current_node = api_.current_node;
  hot_.thread_id = api_.thread_id;
  hot_.node_sequence_nr = static_cast<uint16_t>(api_.node_sequence_nr);
  hot_.node_thread_id = static_cast<uint16_t>(api_.node_thread_id);
  if (node) {
    table_.reset(new Slot[kSlots]);
    hot_.table = table_.get();
    hot_.node_on.store(true);
  } else {
    warn_("autograd: " + api_.problem + "; backward kernels sit under backward() but not under their forward code");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = node ? "on" : "on without forward stacks: " + api_.problem;
  }
  if (deferred()) writer_.set_backward_resolver(this);
  hot_.ready.store(true, std::memory_order_release);
}

void AutogradTracker::off_now_or_later(bool later, const std::string& note) {
  if (!later) return off(note);
  std::lock_guard<std::mutex> lock(late_mu_);
  if (late_note_.empty()) late_note_ = note;
}

void AutogradTracker::emit_late() {
  std::string note;
  {
    std::lock_guard<std::mutex> lock(late_mu_);
    note.swap(late_note_);
  }
  if (!note.empty()) off(note);
}

void AutogradTracker::off(const std::string& note) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = "off: " + note;
  }
  if (warn_) warn_(note);
}

AIFLAME_HOT AutogradTracker::Pending AutogradTracker::before_capture(bool in_place) {
  Pending p;
  if (!hot_.ready.load(std::memory_order_acquire)) return p;
  p.valid = true;
  ThreadState& t = thread_state(hot_.serial);
  p.thread = &t;
  if (t.kind == ThreadState::Unknown) resolve_thread(t);
  const char* const tls = in_place ? t.tls : nullptr;
  const bool node_on = hot_.node_on.load(std::memory_order_relaxed);
  auto graph_task = [&] { return tls ? torch_tls_graph_task(tls, t.task_off, t.task_id_off) : hot_.graph_task_id(); };
  if (hot_.light == 2) {
    if (t.kind == ThreadState::Unknown) t.kind = graph_task() < 0 ? ThreadState::Forward : ThreadState::Engine;
    p.graph_task = t.kind == ThreadState::Engine ? (t.graph_task >= 0 ? t.graph_task : graph_task()) : -1;
    return p;
  }
  if (t.kind != ThreadState::Forward) {
    p.graph_task = graph_task();
    if (t.kind == ThreadState::Unknown) t.kind = p.graph_task < 0 ? ThreadState::Forward : ThreadState::Engine;
  }
  if (p.graph_task < 0) {
    if (!node_on) return p;
    p.forward = true;
    p.seq = tls ? torch_tls_seq(tls, t.seq_off) : hot_.peek();
    if (p.seq != t.last_seq && t.tid && !hot_.light && !hot_.defer) __builtin_prefetch(&hot_.table[slot_index(p.seq, t.tid)], 1);
    return p;
  }
  if (t.counts && !hot_.light && !hot_.defer) {
    __builtin_prefetch(t.counts, 1);
    if (AutogradTracker::BackwardCache* const sets = *AIFLAME_TLS(tls::kAutogradSets, t_sets))
      __builtin_prefetch(&sets->sets[t.next_set]);
  }
  if (!node_on) return p;
  // The node this thread evaluates: alive while it does (current_node's reference is only a copy of
  // the thread-local's, which torch holds until the node's apply returns, after this launch).
  std::shared_ptr<void> held;
  const char* n = tls ? torch_tls_node(tls, t.node_off) : static_cast<const char*>((held = hot_.current_node()).get());
  if (!n) return p;
  std::memcpy(&p.seq, n + hot_.node_sequence_nr, sizeof p.seq);
  std::memcpy(&p.tid, n + hot_.node_thread_id, sizeof p.tid);
  std::memcpy(&p.node_type, n, sizeof p.node_type);  // the vptr (torch_api.h: at 0)
  p.node = true;
  // The node's forward launch is looked up from seq + 1 on (its op launches after making it).
  if (p.seq != kAccumulateGrad && !hot_.light && !hot_.defer) __builtin_prefetch(&hot_.table[slot_index(p.seq + 1, p.tid)]);
  return p;
}

void AutogradTracker::resolve_thread(ThreadState& t) {
  t.tls = nullptr;
  if (!tls_) return;
  const char* base = torch_tls_base_here(*tls_, api_);
  if (!base) {
    debug("autograd: a thread's reads of torch's thread-locals differ from its functions: that thread calls them");
    return;
  }
  t.tls = base;
  t.seq_off = static_cast<int16_t>(tls_->seq);
  t.task_off = static_cast<int16_t>(tls_->task);
  t.node_off = static_cast<int16_t>(tls_->node);
  t.task_id_off = static_cast<int16_t>(tls_->task_id);
  threads_in_place_.fetch_add(1, std::memory_order_relaxed);
}

std::string AutogradTracker::in_place_state() const { return tls_why_; }

AIFLAME_HOT AutogradTracker::Launch AutogradTracker::on_launch(uint32_t stack_id, const Pending& p, uint64_t timestamp) {
  if (!p.valid) return {stack_id};
  if (p.graph_task < 0) {
    // (node_on only goes off after start: a forward launch read seq whenever it is on here.)
    if (p.forward && !hot_.light && hot_.node_on.load(std::memory_order_relaxed)) {
      if (hot_.defer) return defer_forward(stack_id, p);
      remember_forward(stack_id, p, timestamp);
    }
    return {stack_id};
  }
  return on_backward(stack_id, p);
}

AIFLAME_HOT void AutogradTracker::remember_forward(uint32_t stack_id, const Pending& p, uint64_t timestamp) {
  ThreadState& t = *p.thread;
  const uint64_t seq = p.seq;
  // No node created since this thread's last launch: the slot already holds the first launch after it.
  if (seq == t.last_seq) return;
  t.last_seq = seq;
  if (!t.tid) t.tid = hot_.thread_id();
  store_forward(seq, t.tid, stack_id, timestamp);
}

// Deferred (the recorder's way): the first launch after a new node goes to the writer with its
// sequence number and thread, and the collector's flush stores it (remember) before it resolves the
// backward launches it took: the forward table's line, a miss at nearly every such launch of a
// training loop, leaves the launch path.
AIFLAME_HOT AutogradTracker::Launch AutogradTracker::defer_forward(uint32_t stack_id, const Pending& p) {
  ThreadState& t = *p.thread;
  if (p.seq == t.last_seq) return {stack_id};
  t.last_seq = p.seq;
  if (!t.tid) t.tid = hot_.thread_id();
  Launch l{stack_id, true, {}};
  l.note.forward = true;
  l.note.seq = p.seq;
  l.note.tid = t.tid;
  return l;
}

void AutogradTracker::remember(const LaunchRecord& launch, const BackwardNote& note) {
  std::lock_guard<std::mutex> lock(resolve_mu_);
  store_forward(note.seq, note.tid, launch.stack_id, launch.timestamp);
}

AIFLAME_HOT void AutogradTracker::store_forward(uint64_t seq, uint64_t tid, uint32_t stack_id, uint64_t timestamp) {
  Slot& s = hot_.table[slot_index(seq, tid)];
  // Readers check the key before and after reading the stack (a torn entry reads as absent).
  s.key.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.stack.store(stack_id, std::memory_order_relaxed);
  s.when.store(when_of(timestamp), std::memory_order_relaxed);
  s.key.store(slot_key(seq, tid), std::memory_order_release);
  // The threads that run forward code and how far their numbers went: the layout probe's reference
  // (not needed once the probe has looked at its nodes: two shared lines fewer per launch).
  if (hot_.probed.load(std::memory_order_relaxed) >= kProbe) return;
  for (size_t i = 0; i < 8; i++) {
    uint64_t have = seen_tid_[i].load(std::memory_order_relaxed);
    if (have == 0) {
      if (seen_tid_[i].compare_exchange_strong(have, tid)) seen_min_[i].store(seq, std::memory_order_relaxed);
      else if (have != tid) continue;
    } else if (have != tid) {
      continue;
    }
    if (seen_max_[i].load(std::memory_order_relaxed) < seq) seen_max_[i].store(seq, std::memory_order_relaxed);
    break;
  }
}

uint32_t AutogradTracker::lookup(uint64_t seq, uint64_t tid, uint64_t before) const {
  auto counted = [&](int slots, uint32_t id) {
    if (CaptureStats::on()) {
      CaptureStats& cs = CaptureStats::instance();
      cs.forward_lookups.fetch_add(1, std::memory_order_relaxed);
      cs.forward_slots.fetch_add(static_cast<uint64_t>(slots), std::memory_order_relaxed);
      if (id) cs.forward_found.fetch_add(1, std::memory_order_relaxed);
    }
    return id;
  };
  for (int d = 1; d <= kLookAhead; d++) {
    uint64_t at = seq + static_cast<uint64_t>(d);
    const Slot& s = hot_.table[slot_index(at, tid)];
    uint64_t key = slot_key(at, tid);
    if (s.key.load(std::memory_order_acquire) != key) continue;
    uint32_t id = s.stack.load(std::memory_order_relaxed);
    uint32_t when = s.when.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.key.load(std::memory_order_relaxed) != key) continue;
    // A deferred lookup runs after the launch: a forward launch made since (the next step's) is not
    // the one this node's op made before it.
    if (before && static_cast<int32_t>(when_of(before) - when) < 0) continue;
    return counted(d, id);
  }
  return counted(kLookAhead, 0);
}

uint32_t AutogradTracker::forward_of(uint64_t seq, uint64_t tid, BackwardCounts& counts, uint64_t before) {
  if (seq == kAccumulateGrad) return 0;
  bump(counts.with_node);
  uint32_t found = lookup(seq, tid, before);
  if (hot_.probed.load(std::memory_order_relaxed) < kProbe) {
    const bool later = before != 0;  // from resolve(), under the writer's lock
    if (!found && before_tracking(seq, tid, later)) return 0;
    if (!probe(seq, tid, found != 0, later)) return 0;
  }
  if (found) bump(counts.with_forward);
  return found;
}

// The slot of a forward thread in seen_tid_ (-1: not seen at a forward launch).
int AutogradTracker::seen_slot(uint64_t tid) const {
  for (int i = 0; i < 8; i++)
    if (seen_tid_[i].load(std::memory_order_relaxed) == tid) return i;
  return -1;
}

// A node the probe must not count: made by a thread before any of its forward launches was seen, or
// numbered below that thread's first seen forward launch (tracking began mid-step: `record --pid`).
// A wrong layout would read thread ids never seen, so past 65536 such nodes with none probed the
// tracking is switched off as by a failed probe.
bool AutogradTracker::before_tracking(uint64_t seq, uint64_t tid, bool later) {
  if (tid < 1 || tid > 4096 || seq >= (1ull << 40)) return false;  // implausible: the probe says so
  if (int i = seen_slot(tid); i >= 0) return seq < seen_min_[i].load(std::memory_order_relaxed);
  if (unprobed_.fetch_add(1, std::memory_order_relaxed) + 1 == 65536 && hot_.probed.load() == 0 &&
      hot_.node_on.exchange(false)) {
    off_now_or_later(later,
                     "autograd node layout check failed (65536 nodes of threads never seen at a forward launch); backward "
                     "kernels sit under backward() but not under their forward code");
  }
  return true;
}

// The running torch's version said the offsets are right; the first nodes must agree: sequence
// numbers and thread ids of the size torch hands out, not beyond what the forward threads reached,
// and forward launches found for some of them.
bool AutogradTracker::probe(uint64_t seq, uint64_t tid, bool found, bool later) {
  int k = hot_.probed.fetch_add(1);
  if (k >= kProbe) return true;
  // torch numbers threads 1, 2, 3... as they first ask; a forward thread's nodes stay below the number
  // its launches saw (plus slack for nodes made after its last launch).
  bool plausible = tid >= 1 && tid <= 4096 && seq < (1ull << 40);
  if (int i = seen_slot(tid); plausible && i >= 0) plausible = seq <= seen_max_[i].load() + 4096;
  if (found) probe_hits_.fetch_add(1);
  if (k < 4) debug("autograd: node %d: sequence_nr %llu, thread_id %llu, forward launch %s", k,
                   static_cast<unsigned long long>(seq), static_cast<unsigned long long>(tid), found ? "found" : "not found");
  if (plausible && k == kProbe - 1 && probe_hits_.load() > 0)
    debug("autograd: node layout probe passed (%d of %d nodes found their forward launch)", probe_hits_.load(), kProbe);
  char detail[160];
  if (!plausible) {
    std::snprintf(detail, sizeof detail, "autograd node layout check failed (node %d: sequence_nr %llu, thread_id %llu)",
                  k, static_cast<unsigned long long>(seq), static_cast<unsigned long long>(tid));
  } else if (k == kProbe - 1 && probe_hits_.load() == 0) {
    std::snprintf(detail, sizeof detail, "autograd node layout check failed (no forward launch found for the first %d nodes)",
                  kProbe);
  } else {
    return true;
  }
  if (hot_.node_on.exchange(false))
    off_now_or_later(later, std::string(detail) + "; backward kernels sit under backward() but not under their forward code");
  return false;
}

AutogradTracker::BackwardCounts* AutogradTracker::counts_of(ThreadState& t) {
  std::lock_guard<std::mutex> lock(mu_);
  counts_.push_back(std::make_unique<BackwardCounts>());
  return t.counts = counts_.back().get();
}

AIFLAME_HOT AutogradTracker::Launch AutogradTracker::on_backward(uint32_t stack_id, const Pending& p) {
  ThreadState& t = *p.thread;
  if (t.graph_task != p.graph_task) {
    t.graph_task = p.graph_task;
    t.caller = 0;
    t.self = false;
    t.tries = 0;
    t.asked = false;
  }
  // Deferred, the collector reads the caller's stack (~25 us of system calls on the H200, 0.08-0.12
  // us per backward launch when a launch did it).
  const bool ask = hot_.defer && wake_ && !hot_.light;
  if (python_ && !t.caller && !t.self && t.tries < kCallerTries) {
    if (ask) {
      if (!t.asked) {
        t.asked = true;
        ask_caller(p.graph_task);
      }
    } else {
      t.tries++;
      t.caller = timed_find_caller(p.graph_task, frames_.this_thread_state(), &t.self);
    }
  }
  // The caller's own thread running nodes of the CPU queue: its stack already holds backward()'s caller.
  if (t.self || hot_.light) return {stack_id};
  if (hot_.defer) {
    Launch l{stack_id, true, {}};
    l.note.caller = t.caller;
    if (!t.caller && t.asked) l.note.graph_task = p.graph_task;
    l.note.node = p.node && hot_.node_on.load(std::memory_order_relaxed);
    l.note.seq = p.seq;
    l.note.tid = p.tid;
    return l;
  }
  BackwardCounts& counts = t.counts ? *t.counts : *counts_of(t);
  bump(counts.launches);
  if (t.caller) bump(counts.with_caller);
  uint32_t forward = 0;
  if (p.node && hot_.node_on.load(std::memory_order_relaxed)) forward = forward_of(p.seq, p.tid, counts);
  BackwardCache* cache = t_sets ? t_sets : hot_new(t_sets);
  const auto k = static_cast<uint16_t>(BackwardCache::set_of(stack_id, t.caller, forward));
  auto& set = cache->sets[k];
  // The previous launch's set learns its successor; this one's tells what to prefetch next time.
  cache->sets[t.last_set].next = k;
  t.last_set = k;
  t.next_set = set.next;
  for (const auto& e : set.way)
    if (e.id && e.stack == stack_id && e.caller == t.caller && e.forward == forward) return {e.id};
  uint32_t id = intern_backward(stack_id, t.caller, forward);
  // Replace an empty way, else one chosen by the id (spreads evictions over the ways).
  size_t w = id % BackwardCache::kWays;
  for (size_t i = 0; i < BackwardCache::kWays; i++)
    if (!set.way[i].id) { w = i; break; }
  set.way[w] = {stack_id, t.caller, forward, id};
  return {id};
}

uint32_t AutogradTracker::resolve(const LaunchRecord& launch, const BackwardNote& note,
                                  std::vector<BackwardStackRecord>* fresh) {
  uint32_t caller = note.caller, self_tid = 0;
  if (!caller && note.graph_task >= 0 && found_caller(note.graph_task, &caller, &self_tid) && self_tid == launch.tid)
    return launch.stack_id;  // the caller's own thread: its stack holds backward()'s caller already
  std::lock_guard<std::mutex> lock(resolve_mu_);
  bump(resolved_counts_.launches);
  if (caller) bump(resolved_counts_.with_caller);
  uint32_t forward = 0;
  // A timestamp of 0 (never from CUPTI) would switch the guard off: 1 keeps it on.
  if (note.node && hot_.node_on.load(std::memory_order_relaxed))
    forward = forward_of(note.seq, note.tid, resolved_counts_, launch.timestamp ? launch.timestamp : 1);
  return intern_in(resolved_ids_, launch.stack_id, caller, forward, fresh);
}

uint32_t AutogradTracker::resolve_uncounted(const LaunchRecord& launch, const BackwardNote& note,
                                            std::vector<BackwardStackRecord>* fresh) {
  // On the launching thread, outside the writer's flush: a caller still being asked for is found now.
  uint32_t caller = note.caller, self_tid = 0;
  if (!caller && note.graph_task >= 0) {
    if (!found_caller(note.graph_task, &caller, &self_tid)) {
      serve_callers();
      found_caller(note.graph_task, &caller, &self_tid);
    }
    if (caller && self_tid == launch.tid) return launch.stack_id;
  }
  std::lock_guard<std::mutex> lock(resolve_mu_);
  uint32_t forward = 0;
  if (note.node && note.seq != kAccumulateGrad && hot_.node_on.load(std::memory_order_relaxed))
    forward = lookup(note.seq, note.tid, launch.timestamp ? launch.timestamp : 1);
  return intern_in(resolved_ids_, launch.stack_id, caller, forward, fresh);
}

uint32_t AutogradTracker::intern_in(BackwardIds& ids, uint32_t stack_id, uint32_t caller, uint32_t forward,
                                    std::vector<BackwardStackRecord>* fresh) {
  auto [it, added] = ids.try_emplace(std::make_tuple(stack_id, caller, forward), 0u);
  if (added) {
    it->second = kBackwardStackBit | next_backward_.fetch_add(1, std::memory_order_relaxed);
    fresh->push_back(BackwardStackRecord{it->second, stack_id, caller, forward});
  }
  return it->second;
}

bool AutogradTracker::is_backward_entry(const void* code) {
  auto it = entry_code_.find(code);
  if (it != entry_code_.end()) return it->second;
  std::string file, function;
  bool yes = frames_.code_names(code, &file, &function) && file.find("torch/autograd/") != std::string::npos &&
             (function == "_engine_run_backward" || function == "backward" || function == "grad");
  if (entry_code_.size() < 4096) entry_code_.emplace(code, yes);
  return yes;
}

int AutogradTracker::read_stack(const void* tstate, RawPyFrame* py, PythonFrames::OtherStack* keep) {
  keep->n = 0;
  return CaptureStats::timed(CaptureStats::CallerRead, &CaptureStats::caller_reads,
                             [&] { return frames_.capture_thread(tstate, py, 256, keep); });
}

bool AutogradTracker::same_stack() {
  bool same = CaptureStats::timed(CaptureStats::CallerRead, &CaptureStats::caller_reads,
                                  [&] { return frames_.same_stack(last_caller_); });
  if (same && CaptureStats::on()) CaptureStats::instance().caller_rereads.fetch_add(1, std::memory_order_relaxed);
  return same;
}

uint32_t AutogradTracker::timed_find_caller(int graph_task, const void* mine, bool* self) {
  return CaptureStats::timed(CaptureStats::CallerScan, &CaptureStats::caller_scans,
                             [&] { return find_caller(graph_task, mine, self); });
}

void AutogradTracker::ask_caller(int graph_task) {
  const void* mine = frames_.this_thread_state();
  const auto tid = static_cast<uint32_t>(gettid());
  {
    std::lock_guard<std::mutex> lock(ask_mu_);
    asks_.push_back({graph_task, mine, tid, 0});
  }
  wake_();
}

void AutogradTracker::serve_callers() {
  std::vector<CallerAsk> asks;
  {
    std::lock_guard<std::mutex> lock(ask_mu_);
    if (asks_.empty()) return;
    asks.swap(asks_);
  }
  std::vector<CallerAsk> again;
  for (auto& a : asks) {
    bool self = false;
    uint32_t id = timed_find_caller(a.graph_task, a.thread, &self);
    if (!id && ++a.tries < kCallerTries) {
      again.push_back(a);  // at the next call (the collector's next tick)
      continue;
    }
    if (!id) debug("autograd: no caller found for graph task %d in %d scans", a.graph_task, kCallerTries);
    std::lock_guard<std::mutex> lock(ask_mu_);
    if (found_.size() >= 4 * kMaxCallers) found_.erase(found_.begin());
    found_.push_back({a.graph_task, id, self ? a.tid : 0});
  }
  if (!again.empty()) {
    std::lock_guard<std::mutex> lock(ask_mu_);
    asks_.insert(asks_.end(), again.begin(), again.end());
  }
}

bool AutogradTracker::found_caller(int graph_task, uint32_t* id, uint32_t* self_tid) {
  std::lock_guard<std::mutex> lock(ask_mu_);
  // Newest first; the same graph task asked by several engine threads: any caller found, and the
  // caller's own thread from whichever ask came from it.
  bool any = false;
  for (auto it = found_.rbegin(); it != found_.rend(); ++it)
    if (it->graph_task == graph_task) {
      any = true;
      if (it->id) *id = it->id;
      if (it->self_tid) *self_tid = it->self_tid;
    }
  return any && *id;
}

uint32_t AutogradTracker::find_caller(int graph_task, const void* mine, bool* self) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& c : callers_)
    if (c.graph_task == graph_task) {
      *self = c.thread == mine;
      return c.id;
    }
  auto remember = [&](const void* caller, uint32_t id) {
    if (callers_.size() >= kMaxCallers) callers_.erase(callers_.begin());
    callers_.push_back({graph_task, caller, id});
    *self = caller == mine;
    return id;
  };
  const void* states[64];
  int n = frames_.thread_states(states, 64);
  // The last graph task's caller, still at the same stack (a training loop calls backward() from the
  // same line every step): one read instead of a scan.
  if (last_id_ && last_caller_.ts != mine && std::find(states, states + n, last_caller_.ts) != states + n &&
      same_stack())
    return remember(last_caller_.ts, last_id_);
  // Another thread blocked in torch.autograd's call into the engine; this thread itself only when no
  // other is (a backward() called from a hook on an engine thread is nested in the main thread's).
  // Each thread's whole stack is read at once: a read costs a few safe reads whatever its
  // depth (PythonFrames::capture_thread), as much as its innermost frame alone.
  const void* caller = nullptr;
  RawPyFrame py[256];
  PythonFrames::OtherStack read;
  int np = 0;
  for (int pass = 0; pass < 2 && !caller; pass++)
    for (int i = 0; i < n && !caller; i++)
      if ((states[i] == mine) == (pass == 1) && (np = read_stack(states[i], py, &read)) > 0 &&
          is_backward_entry(py[0].code))
        caller = states[i];
  if (!caller) return 0;
  uint32_t id = intern_caller(py, np);
  last_id_ = 0;
  if (read.n == np && read.ts == caller) {
    last_caller_ = read;
    last_id_ = id;
  }
  remember(caller, id);
  debug("autograd: graph task %d called from thread state %p (%d Python frames)%s", graph_task, caller, np,
        *self ? ", this thread" : "");
  return id;
}

uint32_t AutogradTracker::intern_caller(const RawPyFrame* py, int n) {
  std::vector<uint64_t> key;
  key.reserve(2 * static_cast<size_t>(n));
  for (int i = 0; i < n; i++) {
    key.push_back(reinterpret_cast<uint64_t>(py[i].code));
    key.push_back(static_cast<uint32_t>(py[i].lasti));
  }
  auto [it, fresh] = caller_ids_.try_emplace(std::move(key), static_cast<uint32_t>(caller_ids_.size() + 1));
  if (!fresh) return it->second;
  BackwardCallerRecord rec;
  rec.id = it->second;
  // The caller sits in backward() until the graph task ends, so its code objects stay alive.
  for (int i = 0; i < n; i++) {
    std::string file, function;
    uint32_t line = 0;
    frames_.describe(py[i], &file, &function, &line);
    rec.python.push_back({strings_.intern(file), strings_.intern(function), line});
  }
  writer_.add(rec);
  return rec.id;
}

uint32_t AutogradTracker::intern_backward(uint32_t stack_id, uint32_t caller, uint32_t forward) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<BackwardStackRecord> fresh;
  uint32_t id = intern_in(backward_ids_, stack_id, caller, forward, &fresh);
  for (const auto& r : fresh) writer_.add(r);
  return id;
}

AutogradSummaryRecord AutogradTracker::summary() {
  AutogradSummaryRecord s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.state = state_;
  }
  s.torch_version = api_.version;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const BackwardCounts*> all;
  for (const auto& c : counts_) all.push_back(c.get());
  all.push_back(&resolved_counts_);
  for (const BackwardCounts* c : all) {
    s.backward_launches += c->launches.load(std::memory_order_relaxed);
    s.with_caller += c->with_caller.load(std::memory_order_relaxed);
    s.with_node += c->with_node.load(std::memory_order_relaxed);
    s.with_forward += c->with_forward.load(std::memory_order_relaxed);
  }
  return s;
}

void AutogradTracker::finish() {
  if (deferred()) writer_.flush();  // the deferred launches in the thread buffers resolved and counted
  emit_late();
  if (tls_) debug("autograd: %llu threads read torch's thread-locals in place", static_cast<unsigned long long>(threads_in_place()));
  writer_.add(summary());
}

}  // namespace aiflame
