#include "record/autograd/autograd_tracker.h"

#include <cstdlib>
#include <cstring>

#include "record/debug_log.h"

namespace aiflame {
namespace {

constexpr uint64_t kAccumulateGrad = UINT64_MAX;  // AccumulateGrad's sequence number: no forward op made it
constexpr int kLookAhead = 16;   // launches after a node's creation searched for its forward stack
constexpr int kCallerTries = 3;  // scans per thread and graph task before its caller is given up
constexpr size_t kMaxCallers = 16;

uint64_t slot_key(uint64_t seq, uint64_t tid) { return ((seq + 1) << 12) | (tid & 0xfff); }

// Per launching thread: the last sequence number remembered, torch's id of the thread, and the
// graph task of its last backward launch with that task's caller.
struct ThreadState {
  uint64_t owner = 0;  // the tracker's serial number
  uint64_t last_seq = ~0ull;
  uint64_t tid = 0;
  int graph_task = -2;
  uint32_t caller = 0;
  bool self = false;
  int tries = 0;
  // The BackwardStack ids this thread made last, direct-mapped by their parts.
  struct Recent {
    uint32_t stack = 0, caller = 0, forward = 0, id = 0;
  } recent[16];
};

ThreadState& thread_state(uint64_t owner) {
  // Trivially destructible: still readable when CUPTI calls back during the process's exit.
  thread_local ThreadState t;
  if (t.owner != owner) {
    t = ThreadState();
    t.owner = owner;
  }
  return t;
}

}  // namespace

void AutogradTracker::init(bool python, Warn warn) {
  python_ = python;
  warn_ = std::move(warn);
  const char* env = std::getenv("AIFLAME_AUTOGRAD");
  if (env && std::strcmp(env, "0") == 0) {
    state_ = "off: AIFLAME_AUTOGRAD=0";
    disabled_ = true;
    return;
  }
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

void AutogradTracker::poll() {
  if (disabled_ || started_.load()) return;
  TorchApi api = resolve_torch();
  if (!api.library.empty()) start(api);
}

void AutogradTracker::start(const TorchApi& api) {
  if (started_.exchange(true)) return;
  api_ = api;
  debug("autograd: %s torch %s; graph_task_id %p current_node %p peek %p thread_id %p; node layout %s",
        api_.library.c_str(), api_.version.c_str(), reinterpret_cast<void*>(api_.graph_task_id),
        reinterpret_cast<void*>(api_.current_node), reinterpret_cast<void*>(api_.peek),
        reinterpret_cast<void*>(api_.thread_id), api_.node_layout ? "known" : "unknown");
  if (!api_.graph_task_id) {
    off("autograd: " + api_.problem + "; backward kernels keep the engine's stacks");
    return;
  }
  bool node = api_.current_node && api_.peek && api_.thread_id && api_.node_layout;
  if (node) {
    table_.reset(new Slot[kSlots]);
    node_on_.store(true);
  } else {
    warn_("autograd: " + api_.problem + "; backward kernels sit under backward() but not under their forward code");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = node ? "on" : "on without forward stacks: " + api_.problem;
  }
  ready_.store(true, std::memory_order_release);
}

void AutogradTracker::off(const std::string& note) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = "off: " + note;
  }
  if (warn_) warn_(note);
}

AutogradTracker::Pending AutogradTracker::before_capture() {
  Pending p;
  if (!ready_.load(std::memory_order_acquire)) return p;
  p.valid = true;
  p.graph_task = api_.graph_task_id();
  if (p.graph_task < 0 && node_on_.load(std::memory_order_relaxed)) {
    p.forward = true;
    p.seq = api_.peek();
    const ThreadState& t = thread_state(serial_);
    if (p.seq != t.last_seq && t.tid) __builtin_prefetch(&table_[slot_index(p.seq, t.tid)], 1);
  }
  return p;
}

uint32_t AutogradTracker::on_launch(uint32_t stack_id, const Pending& p) {
  if (!p.valid) return stack_id;
  if (p.graph_task < 0) {
    // (node_on_ only goes off after start: a forward launch read seq whenever it is on here.)
    if (p.forward && node_on_.load(std::memory_order_relaxed)) remember_forward(stack_id, p.seq);
    return stack_id;
  }
  return on_backward(stack_id, p.graph_task);
}

void AutogradTracker::remember_forward(uint32_t stack_id, uint64_t seq) {
  ThreadState& t = thread_state(serial_);
  // No node created since this thread's last launch: the slot already holds the first launch after it.
  if (seq == t.last_seq) return;
  t.last_seq = seq;
  if (!t.tid) t.tid = api_.thread_id();
  Slot& s = table_[slot_index(seq, t.tid)];
  // Readers check the key before and after reading the stack (a torn entry reads as absent).
  s.key.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.stack.store(stack_id, std::memory_order_relaxed);
  s.key.store(slot_key(seq, t.tid), std::memory_order_release);
  // The threads that run forward code and how far their numbers went: the layout probe's reference
  // (not needed once the probe has looked at its nodes: two shared lines fewer per launch).
  if (probed_.load(std::memory_order_relaxed) >= kProbe) return;
  for (size_t i = 0; i < 8; i++) {
    uint64_t have = seen_tid_[i].load(std::memory_order_relaxed);
    if (have == 0) {
      if (seen_tid_[i].compare_exchange_strong(have, t.tid)) seen_min_[i].store(seq, std::memory_order_relaxed);
      else if (have != t.tid) continue;
    } else if (have != t.tid) {
      continue;
    }
    if (seen_max_[i].load(std::memory_order_relaxed) < seq) seen_max_[i].store(seq, std::memory_order_relaxed);
    break;
  }
}

uint32_t AutogradTracker::lookup(uint64_t seq, uint64_t tid) const {
  for (int d = 1; d <= kLookAhead; d++) {
    uint64_t at = seq + static_cast<uint64_t>(d);
    const Slot& s = table_[slot_index(at, tid)];
    uint64_t key = slot_key(at, tid);
    if (s.key.load(std::memory_order_acquire) != key) continue;
    uint32_t id = s.stack.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.key.load(std::memory_order_relaxed) == key) return id;
  }
  return 0;
}

uint32_t AutogradTracker::forward_of(const void* node) {
  uint64_t seq = 0, tid = 0;
  std::memcpy(&seq, static_cast<const char*>(node) + api_.node_sequence_nr, sizeof seq);
  std::memcpy(&tid, static_cast<const char*>(node) + api_.node_thread_id, sizeof tid);
  if (seq == kAccumulateGrad) return 0;
  with_node_.fetch_add(1, std::memory_order_relaxed);
  uint32_t found = lookup(seq, tid);
  if (probed_.load(std::memory_order_relaxed) < kProbe) {
    if (!found && before_tracking(seq, tid)) return 0;
    if (!probe(seq, tid, found != 0)) return 0;
  }
  if (found) with_forward_.fetch_add(1, std::memory_order_relaxed);
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
bool AutogradTracker::before_tracking(uint64_t seq, uint64_t tid) {
  if (tid < 1 || tid > 4096 || seq >= (1ull << 40)) return false;  // implausible: the probe says so
  if (int i = seen_slot(tid); i >= 0) return seq < seen_min_[i].load(std::memory_order_relaxed);
  if (unprobed_.fetch_add(1, std::memory_order_relaxed) + 1 == 65536 && probed_.load() == 0 && node_on_.exchange(false))
    off("autograd node layout check failed (65536 nodes of threads never seen at a forward launch); backward kernels "
        "sit under backward() but not under their forward code");
  return true;
}

// The running torch's version said the offsets are right; the first nodes must agree: sequence
// numbers and thread ids of the size torch hands out, not beyond what the forward threads reached,
// and forward launches found for some of them.
bool AutogradTracker::probe(uint64_t seq, uint64_t tid, bool found) {
  int k = probed_.fetch_add(1);
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
  if (node_on_.exchange(false)) off(std::string(detail) + "; backward kernels sit under backward() but not under their forward code");
  return false;
}

uint32_t AutogradTracker::on_backward(uint32_t stack_id, int graph_task) {
  ThreadState& t = thread_state(serial_);
  if (t.graph_task != graph_task) {
    t.graph_task = graph_task;
    t.caller = 0;
    t.self = false;
    t.tries = 0;
  }
  if (python_ && !t.caller && !t.self && t.tries < kCallerTries) {
    t.tries++;
    t.caller = find_caller(graph_task, &t.self);
  }
  // The caller's own thread running nodes of the CPU queue: its stack already holds backward()'s caller.
  if (t.self) return stack_id;
  backward_launches_.fetch_add(1, std::memory_order_relaxed);
  if (t.caller) with_caller_.fetch_add(1, std::memory_order_relaxed);
  uint32_t forward = 0;
  if (node_on_.load(std::memory_order_relaxed)) {
    std::shared_ptr<void> node = api_.current_node();
    if (node) forward = forward_of(node.get());
  }
  auto& r = t.recent[(stack_id * 31 + t.caller * 7 + forward) & 15];
  if (r.id && r.stack == stack_id && r.caller == t.caller && r.forward == forward) return r.id;
  uint32_t id = intern_backward(stack_id, t.caller, forward);
  r = {stack_id, t.caller, forward, id};
  return id;
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

uint32_t AutogradTracker::find_caller(int graph_task, bool* self) {
  std::lock_guard<std::mutex> lock(mu_);
  const void* mine = frames_.this_thread_state();
  for (const auto& c : callers_)
    if (c.graph_task == graph_task) {
      *self = c.thread == mine;
      return c.id;
    }
  // Another thread blocked in torch.autograd's call into the engine; this thread itself only when no
  // other is (a backward() called from a hook on an engine thread is nested in the main thread's).
  const void* states[64];
  int n = frames_.thread_states(states, 64);
  const void* caller = nullptr;
  RawPyFrame top;
  for (int pass = 0; pass < 2 && !caller; pass++)
    for (int i = 0; i < n && !caller; i++)
      if ((states[i] == mine) == (pass == 1) && frames_.capture_thread(states[i], &top, 1) == 1 &&
          is_backward_entry(top.code))
        caller = states[i];
  if (!caller) return 0;
  RawPyFrame py[256];
  int np = frames_.capture_thread(caller, py, 256);
  if (np == 0 || !is_backward_entry(py[0].code)) return 0;  // it moved on meanwhile
  uint32_t id = intern_caller(py, np);
  if (callers_.size() >= kMaxCallers) callers_.erase(callers_.begin());
  callers_.push_back({graph_task, caller, id});
  *self = caller == mine;
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
  auto [it, fresh] = backward_ids_.try_emplace(std::make_tuple(stack_id, caller, forward),
                                               kBackwardStackBit | static_cast<uint32_t>(backward_ids_.size() + 1));
  if (fresh) writer_.add(BackwardStackRecord{it->second, stack_id, caller, forward});
  return it->second;
}

AutogradSummaryRecord AutogradTracker::summary() {
  AutogradSummaryRecord s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.state = state_;
  }
  s.torch_version = api_.version;
  s.backward_launches = backward_launches_.load();
  s.with_caller = with_caller_.load();
  s.with_node = with_node_.load();
  s.with_forward = with_forward_.load();
  return s;
}

void AutogradTracker::finish() { writer_.add(summary()); }

}  // namespace aiflame
