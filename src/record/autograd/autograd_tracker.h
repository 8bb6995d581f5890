// Puts PyTorch's backward kernels under the Python that caused them (issue 23).
//
// The backward pass runs on autograd's engine threads ("pt_autograd_N"), which run no Python: their
// launches carry only the engine's native frames. At a launch the tracker asks libtorch whether this
// thread is inside a backward call (get_current_graph_task_id() >= 0, a thread-local read; a thread
// whose first launch was outside backward is a forward thread and is not asked again):
//  - outside backward (a forward launch): it remembers (torch thread id, sequence number in effect)
//    -> the launch's stack id in a fixed table. An op creates its autograd node (taking sequence
//    number s) before it launches, so its launches see peek() == s + 1; the first launch per number wins.
//  - inside backward on another thread than the caller's: the launch names a BackwardStack made of
//    its own stack, the Python stack of the thread that called backward() (found once per graph task
//    among the interpreter's threads: the one whose innermost frame is torch.autograd's entry into
//    the engine, read through util/safe_memory.h; the last graph task's caller is first checked at its
//    old stack in one read, PythonFrames::same_stack), and the forward launch stack of the node being
//    evaluated (get_current_node(), its sequence_nr_ and thread_id_ read at the offsets of
//    torch_api.h, looked up at s + 1, s + 2 ... in the table).
// The node layout is trusted only for a known torch version, and then only after a probe of the
// first nodes seen (plausible numbers, and forward launches found for them); otherwise the forward
// part is off with one note and backward kernels sit under the caller and "[backward]" alone.
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "profile/profile_writer.h"
#include "record/autograd/torch_api.h"
#include "record/autograd/torch_tls.h"
#include "record/python_frames.h"
#include "record/string_table.h"

namespace aiflame {

class AutogradTracker : public ProfileWriter::BackwardResolver {
 public:
  using Warn = std::function<void(const std::string&)>;
  AutogradTracker(ProfileWriter& w, StringTable& strings) : writer_(w), strings_(strings) { hot_.serial = next_serial_++; }
  ~AutogradTracker() override;
  // Before init: launches leave the forward table, the backward launches' forward lookup, counts and
  // interning to the writer's flush, which calls remember() and resolve() (the recorder always defers:
  // the launch path then reads torch's state and finds backward()'s caller, nothing more; tests also
  // resolve at the launch, which gives the same stacks). A graph node captured during a backward launch is resolved at once
  // (resolve_uncounted, through Recorder::graph_node_stack).
  void set_deferred(bool on) { hot_.defer = on ? 1 : 0; }
  // Before init, a measurement of the launch path only (AIFLAME_LAB=autograd_light): 1, torch's state is
  // read at every launch and the caller of backward() found, but no forward table, backward-id sets
  // or counts (backward kernels then sit under the caller and "[backward]" without their forward
  // code); 2, not even torch's state (a thread's graph task read once; no node, no sequence number).
  void set_light(uint32_t level) { hot_.light = static_cast<uint8_t>(level); }
  // Before init: false, torch's functions are called at every launch even where its thread-locals can
  // be read in place (tests compare the two; torch_tls.h).
  void set_read_in_place(bool on) { read_in_place_ = on; }
  // Whether torch's thread-locals are read in place ("" if so, else why not), and by how many threads
  // so far (each checked against the functions at its first launch).
  std::string in_place_state() const;
  uint64_t threads_in_place() const { return threads_in_place_.load(std::memory_order_relaxed); }
  bool deferred() const { return hot_.defer != 0; }
  // Before init: no tracking at all (AIFLAME_AUTOGRAD=0); `state` is what the summary says of it.
  void disable(std::string state) {
    disabled_ = true;
    state_ = std::move(state);
  }
  // Looks for a loaded torch (resolve_torch) and the interpreter. warn prints a note once.
  void init(bool python, Warn warn);
  // Uses the given functions instead of a loaded torch (tests).
  void init_with(const TorchApi& api, bool python, Warn warn);
  // Before init: the recorder sees only some launches (windows mode records only the launches
  // inside its windows). Forward launches are then mostly unseen, so backward kernels are placed
  // under backward() but not under their forward code, and the node layout probe (which expects the
  // forward launches of the first nodes) is not run: it failed every keep1 run on the H200 with a
  // false "layout check failed" warning.
  void set_launches_sampled(bool sampled) { launches_sampled_ = sampled; }
  // Called now and then off the launch path (the collector): looks for torch again until found.
  void poll();
  // At every kernel launch, on the launching thread, before its stack is captured: torch's
  // thread-local state, and prefetches of the lines the launch will touch after the capture, which
  // then load while the stack is walked (issue 22/23: with cold caches the tracker took 0.28-0.57 us
  // per launch on the H100). Nothing of torch's runs in between.
  //  - A forward thread (its first launch seen was outside backward: torch runs a graph task's work
  //    only on the thread that called backward(), whose own launches need nothing, and on its engine
  //    threads) is never asked for its graph task again: peek() and the table slot it will write.
  //  - An engine thread: the graph task, the current node's two fields (the node is released before
  //    the capture), the forward table's slot of the node and this thread's backward-id set.
  struct ThreadState;

  // Per engine thread: the BackwardStack ids it made, 3-way set associative with a set per cache line,
  // so that the hundreds of (stack, caller, forward) triples of a training step cost one line each
  // instead of the shared table's mutex and map (a 16-entry direct-mapped cache missed nearly always).
  // The sets live in the thread's hot pages (util/hot_pages.h: the huge page the capture's memos are
  // in, so no TLB miss of their own) and die with the thread; each set's last bytes name the set the
  // launch after it took last time, prefetched at the next launch's start (a training step's backward
  // launches come in the same order every step; the set is known only after the capture, too late to
  // prefetch otherwise). The counts are the tracker's (the summary reads them after the thread ended)
  // and written by that thread alone.
  struct alignas(64) BackwardCounts {
    std::atomic<uint64_t> launches{0}, with_caller{0}, with_node{0}, with_forward{0};
  };
  // In the thread's hot pages, which start zeroed (hot_new): no initialiser here, since constructing
  // every entry would touch all 128 KiB at the thread's first backward launch (util/hot_pages.h).
  struct BackwardCache {
    struct Entry {
      uint32_t stack, caller, forward, id;  // id 0: empty
    };
    static constexpr size_t kSets = 2048, kWays = 3;  // 128 KiB per engine thread
    struct alignas(64) Set {
      Entry way[kWays];
      uint16_t next;  // the set of the launch after this set's last one
    } sets[kSets];
    static size_t set_of(uint32_t stack, uint32_t caller, uint32_t forward) {
      uint64_t h = (uint64_t{stack} * 0x9e3779b97f4a7c15ull) ^ (uint64_t{caller} << 40) ^ (uint64_t{forward} * 0xc2b2ae3d27d4eb4full);
      return (h >> 32) & (kSets - 1);
    }
  };
  static_assert(sizeof(BackwardCache::Set) == 64 && BackwardCache::kSets <= 65536);

  struct Pending {
    bool valid = false;    // the tracker was ready
    bool forward = false;  // a forward launch with the node table on: seq was read
    bool node = false;     // a backward launch with a current node: seq and tid are its fields
    int graph_task = -1;
    uint64_t seq = 0;      // peek() of a forward launch, the node's sequence_nr_ of a backward one
    uint64_t tid = 0;      // the node's thread_id_
    // A backward launch's node's vptr: its class (MulBackward0, AddmmBackward0 ...), the same every step.
    // The walk memo's key takes it (Recorder::on_launch): an engine thread's launches have no Python
    // frames, so their key was their depth alone, shared by every node class launching at that depth.
    uint64_t node_type = 0;
    ThreadState* thread = nullptr;  // this thread's state (one thread-local lookup per launch)
  };
  // in_place = false: torch's functions called even where its thread-locals are read in place
  // (AIFLAME_LAB=autograd_ab=3's slices).
  Pending before_capture(bool in_place = true);
  // After its stack was captured: the stack id the Launch record names (stack_id itself, or a
  // BackwardStack id).
  uint32_t on_launch(uint32_t stack_id, const Pending& p) { return on_launch(stack_id, p, 0).stack_id; }
  uint32_t on_launch(uint32_t stack_id) { return on_launch(stack_id, before_capture()); }
  // The same with the launch's timestamp (a forward launch's is kept for resolve()); deferred: the
  // launch goes to ProfileWriter::add_buffered(rec, note), its stack id still the engine's.
  struct Launch {
    uint32_t stack_id = 0;
    bool deferred = false;
    BackwardNote note;
  };
  Launch on_launch(uint32_t stack_id, const Pending& p, uint64_t timestamp);
  // ProfileWriter::BackwardResolver: a deferred backward launch's BackwardStack id, as on_launch
  // would have named it at the launch (forward launches after it are not counted).
  uint32_t resolve(const LaunchRecord& launch, const BackwardNote& note, std::vector<BackwardStackRecord>* fresh) override;
  // The same id for a graph node captured during that launch, before the launch itself is resolved
  // (nothing counted: resolve() counts the launch when its flush comes).
  uint32_t resolve_uncounted(const LaunchRecord& launch, const BackwardNote& note, std::vector<BackwardStackRecord>* fresh);
  // ProfileWriter::BackwardResolver: a deferred forward launch, stored in the forward table.
  void remember(const LaunchRecord& launch, const BackwardNote& note) override;
  // Deferred mode: backward()'s caller is found off the launch path. An engine thread's first backward
  // launch of a graph task asks for it and calls `wake` (the recorder's caller scanner, which then calls
  // serve_callers while backward() still runs); the launches' notes carry the graph task, and
  // resolve() takes the caller found. Without a waker (no collector: tests) the launch finds it.
  void set_waker(std::function<void()> wake) { wake_ = std::move(wake); }
  // On the recorder's threads (never inside the writer's flush): finds the callers asked for; an ask
  // that found none is tried again at the next call, three times in all.
  void serve_callers();
  // Writes the AutogradSummary record.
  void finish();

  bool active() const { return hot_.ready.load(std::memory_order_acquire); }
  bool node_enabled() const { return hot_.node_on.load(std::memory_order_relaxed); }
  AutogradSummaryRecord summary();

 private:
  struct Slot {
    std::atomic<uint64_t> key{0};
    std::atomic<uint32_t> stack{0};
    std::atomic<uint32_t> when{0};  // the forward launch's timestamp / 1024 (wraps in 73 minutes)
  };
  static uint32_t when_of(uint64_t timestamp) { return static_cast<uint32_t>(timestamp >> 10); }
  BackwardCounts* counts_of(ThreadState& t);
  static constexpr size_t kSlots = 1u << 16;  // forward launches remembered (1 MiB); a forward pass creating more nodes loses its oldest
  static constexpr int kProbe = 64;           // nodes the layout probe looks at
  static size_t slot_index(uint64_t seq, uint64_t tid) { return (seq + tid * 0x9e3779b97f4a7c15ull) & (kSlots - 1); }
  void start(const TorchApi& api);
  // A thread's first launch: whether it reads torch's thread-locals in place (ThreadState::tls).
  void resolve_thread(ThreadState& t);
  void remember_forward(uint32_t stack_id, const Pending& p, uint64_t timestamp);
  Launch defer_forward(uint32_t stack_id, const Pending& p);
  void store_forward(uint64_t seq, uint64_t tid, uint32_t stack_id, uint64_t timestamp);
  // BackwardStack ids by (stack, caller, forward): at the launch (backward_ids_, under mu_) and in the
  // writer's flush (resolved_ids_, under resolve_mu_), numbered from one counter.
  using BackwardIds = std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t>;
  // The id of (stack, caller, forward) in ids, made (and its record put in fresh) the first time.
  uint32_t intern_in(BackwardIds& ids, uint32_t stack_id, uint32_t caller, uint32_t forward,
                     std::vector<BackwardStackRecord>* fresh);
  Launch on_backward(uint32_t stack_id, const Pending& p);
  // before: resolve()'s launch timestamp (forward launches at or after it do not count), else 0.
  uint32_t forward_of(uint64_t seq, uint64_t tid, BackwardCounts& counts, uint64_t before = 0);
  uint32_t lookup(uint64_t seq, uint64_t tid, uint64_t before) const;
  bool probe(uint64_t seq, uint64_t tid, bool found, bool later);
  bool before_tracking(uint64_t seq, uint64_t tid, bool later);
  // off(), or from resolve(), which runs under the writer's lock, later: the note waits for poll() or
  // finish().
  void off_now_or_later(bool later, const std::string& note);
  void emit_late();
  int seen_slot(uint64_t tid) const;
  // The BackwardCaller id of a graph task (0: none found); *self: `mine` (a PyThreadState, the
  // launching thread's) is the caller's.
  uint32_t find_caller(int graph_task, const void* mine, bool* self);
  uint32_t timed_find_caller(int graph_task, const void* mine, bool* self);
  void ask_caller(int graph_task);
  // A caller found for a deferred graph task (ask_mu_): 0 if none yet; *self_tid: the caller's own
  // OS thread, if it launched too.
  bool found_caller(int graph_task, uint32_t* id, uint32_t* self_tid);
  int read_stack(const void* tstate, RawPyFrame* py, PythonFrames::OtherStack* keep);  // up to 256 frames of another thread
  bool same_stack();  // last_caller_ still has its stack
  bool is_backward_entry(const void* code);
  uint32_t intern_caller(const RawPyFrame* py, int n);
  uint32_t intern_backward(uint32_t stack_id, uint32_t caller, uint32_t forward);
  void off(const std::string& note);

  ProfileWriter& writer_;
  StringTable& strings_;
  Warn warn_;
  // Read at every launch: on one line, apart from what the launch path writes.
  struct alignas(64) Hot {
    std::atomic<bool> ready{false};
    std::atomic<bool> node_on{false};
    uint8_t light = 0;  // AIFLAME_LAB=autograd_light=1 or 2 (a measurement; on this line, read at every launch)
    uint8_t defer = 0;  // set_deferred
    uint16_t node_sequence_nr = 0, node_thread_id = 0;  // the node layout's offsets
    std::atomic<int> probed{0};  // nodes the layout probe looked at (written only until kProbe)
    uint64_t serial = 0;         // tells the per-thread state of two trackers apart (tests)
    Slot* table = nullptr;
    int (*graph_task_id)() = nullptr;
    uint64_t (*peek)() = nullptr;
    std::shared_ptr<void> (*current_node)() = nullptr;
    uint64_t (*thread_id)() = nullptr;
  } hot_;
  static_assert(sizeof(Hot) == 64);
  static inline std::atomic<uint64_t> next_serial_{1};
  bool python_ = false;
  PythonFrames frames_;
  TorchApi api_;
  bool read_in_place_ = true;
  std::optional<TorchTls> tls_;  // set in start() where torch's thread-locals can be read in place
  std::string tls_why_ = "not started";
  std::atomic<uint64_t> threads_in_place_{0};
  bool disabled_ = false;
  std::atomic<bool> started_{false};
  std::unique_ptr<Slot[]> table_;
  std::atomic<uint64_t> seen_tid_[8] = {};  // torch thread ids seen at forward launches, max sequence number + 1 beside
  std::atomic<uint64_t> seen_max_[8] = {};
  // The first sequence number each of those threads had at a forward launch: nodes numbered below it
  // were created before the tracking began (`record --pid` attaching mid-step) and have no forward
  // launch to find, so the probe does not count them.
  std::atomic<uint64_t> seen_min_[8] = {};
  std::atomic<int> probe_hits_{0};
  std::atomic<uint64_t> unprobed_{0};  // nodes skipped so: too many of them, and the layout is wrong after all
  std::string state_ = "off: not started";
  bool launches_sampled_ = false;  // set_launches_sampled

  std::mutex mu_;  // below: interning and the per-graph-task caller cache (once per backward call)
  struct Caller {
    int graph_task;
    const void* thread;  // its PyThreadState
    uint32_t id;
  };
  std::vector<Caller> callers_;  // recent graph tasks
  PythonFrames::OtherStack last_caller_;  // the stack of the last caller found by a scan, and its id (0: none)
  uint32_t last_id_ = 0;
  std::unordered_map<const void*, bool> entry_code_;
  std::map<std::vector<uint64_t>, uint32_t> caller_ids_;
  BackwardIds backward_ids_;
  std::vector<std::unique_ptr<BackwardCounts>> counts_;  // one per engine thread seen
  std::atomic<uint32_t> next_backward_{1};  // BackwardStack ids, both ways

  // resolve()'s state: its own lock, never held around a writer's add (resolve() runs inside the
  // writer's flush, and mu_ is held around adds: taking mu_ there could deadlock).
  std::mutex resolve_mu_;
  BackwardIds resolved_ids_;
  BackwardCounts resolved_counts_;
  std::mutex late_mu_;  // below: off_now_or_later()'s note
  std::string late_note_;
  std::function<void()> wake_;
  std::mutex ask_mu_;  // below; a leaf lock (taken inside resolve(), never around anything else)
  struct CallerAsk {
    int graph_task;
    const void* thread;  // the asking thread's PyThreadState
    uint32_t tid;        // and its OS thread
    int tries;
  };
  std::vector<CallerAsk> asks_;
  struct CallerFound {
    int graph_task;
    uint32_t id;
    uint32_t self_tid;  // the asking thread, when it was the caller itself (its stack holds backward())
  };
  std::vector<CallerFound> found_;  // recent graph tasks
};

}  // namespace aiflame
