// The autograd tracking against a fake libtorch: sequence numbers, torch thread ids, graph tasks and
// current nodes behave as in torch 2.x (thread-local counters, a node created before its op launches).
#include "record/autograd/autograd_tracker.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "profile/profile.h"
#include "record/measure/capture_stats.h"
#include "record/recorder.h"
#include "record/unwind/object_table.h"
#include "fake_torch.h"
#include "test_util.h"

namespace aiflame {
namespace {

using test::FakeNode;

namespace fake {
thread_local uint64_t sequence = 0;  // at::sequence_number: per thread
thread_local uint64_t tid = 0;
std::atomic<uint64_t> next_tid{1};
thread_local int graph_task = -1;
thread_local std::shared_ptr<FakeNode> current;

uint64_t peek() { return sequence; }
uint64_t thread_id() { return tid ? tid : (tid = next_tid++); }
thread_local int graph_task_calls = 0;
int graph_task_id() {
  graph_task_calls++;
  return graph_task;
}
std::shared_ptr<void> current_node() { return current; }

// An op that creates its autograd node: returns the node (sequence number, creating thread).
FakeNode node() {
  FakeNode n;
  n.sequence_nr = sequence++;
  n.thread_id = thread_id();
  return n;
}
}  // namespace fake

TorchApi fake_api() { return test::torch_api_of(fake::peek, fake::thread_id, fake::graph_task_id, fake::current_node, "fake"); }

struct Harness {
  std::string path = test::temp_path("autograd.aiflame");
  ProfileWriter writer;
  StringTable strings{writer};
  AutogradTracker tracker{writer, strings};
  std::vector<std::string> notes;
  explicit Harness(const TorchApi& api, bool deferred = false) {
    std::string error;
    EXPECT_TRUE(writer.open(path, true, &error)) << error;
    tracker.set_deferred(deferred);
    tracker.init_with(api, /*python=*/false, [this](const std::string& n) { notes.push_back(n); });
  }
  Profile close() {
    tracker.finish();
    writer.add(EndRecord{});
    EXPECT_TRUE(writer.close());
    auto p = read_profile(path);
    EXPECT_TRUE(p.ok()) << p.error();
    std::remove(path.c_str());
    return p.ok() ? std::move(*p) : Profile{};
  }
};

// Autograd's engine thread: one thread that lives as long as the test program, as engine threads live
// as long as the process (the profile writer keeps a scratch buffer per writing thread, freed never).
class EngineThread {
 public:
  EngineThread() { std::thread([this] { loop(); }).detach(); }
  void run(const std::function<void()>& fn) {
    std::unique_lock<std::mutex> lock(mu_);
    task_ = &fn;
    cv_.notify_all();
    cv_.wait(lock, [this] { return task_ == nullptr; });
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return task_ != nullptr; });
      (*task_)();
      task_ = nullptr;
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void()>* task_ = nullptr;
};

// Runs fn on the engine thread inside graph task 5 with the given node current (nullptr: none).
template <class F>
void on_engine(const FakeNode* node, F fn) {
  static auto* engine = new EngineThread;
  engine->run([&] {
    fake::graph_task = 5;
    if (node) fake::current = std::make_shared<FakeNode>(*node);
    fn();
    fake::current.reset();
  });
}

TEST(AutogradTracker, BackwardLaunchesNameTheForwardLaunchOfTheirNode) {
  Harness h(fake_api());
  ASSERT_TRUE(h.tracker.active());
  ASSERT_TRUE(h.tracker.node_enabled());
  std::vector<FakeNode> nodes;
  std::thread forward([&] {
    nodes.push_back(fake::node());                // mm: node 0, then its kernel
    EXPECT_EQ(h.tracker.on_launch(11), 11u);
    nodes.push_back(fake::node());                // a view: node 1, no kernel
    nodes.push_back(fake::node());                // add: node 2, two kernels
    EXPECT_EQ(h.tracker.on_launch(13), 13u);
    EXPECT_EQ(h.tracker.on_launch(14), 14u);      // same op: the first launch keeps the number
  });
  forward.join();
  FakeNode accumulate;
  accumulate.sequence_nr = UINT64_MAX;
  accumulate.thread_id = nodes[0].thread_id;
  uint32_t b2 = 0, b1 = 0, b0 = 0, b0_again = 0, acc = 0, none = 0;
  on_engine(&nodes[2], [&] { b2 = h.tracker.on_launch(100); });
  on_engine(&nodes[1], [&] { b1 = h.tracker.on_launch(100); });
  on_engine(&nodes[0], [&] { b0 = h.tracker.on_launch(100); b0_again = h.tracker.on_launch(100); });
  on_engine(&accumulate, [&] { acc = h.tracker.on_launch(101); });
  on_engine(nullptr, [&] { none = h.tracker.on_launch(101); });
  for (uint32_t id : {b2, b1, b0, acc, none}) EXPECT_TRUE(id & kBackwardStackBit) << id;
  EXPECT_EQ(b0, b0_again);  // interned once
  Profile p = h.close();
  auto parts = [&](uint32_t id) {
    const auto& b = p.backward_stacks.at(id);
    return std::make_tuple(b.stack_id, b.caller_id, b.forward_stack_id);
  };
  EXPECT_EQ(parts(b2), std::make_tuple(100u, 0u, 13u));
  EXPECT_EQ(parts(b1), std::make_tuple(100u, 0u, 13u));  // the view's backward: the next launch after it
  EXPECT_EQ(parts(b0), std::make_tuple(100u, 0u, 11u));
  EXPECT_EQ(parts(acc), std::make_tuple(101u, 0u, 0u));   // AccumulateGrad: no forward op
  EXPECT_EQ(parts(none), std::make_tuple(101u, 0u, 0u));
  EXPECT_EQ(p.backward_stacks.size(), 3u);  // b2 and b1 share their parts, and acc and none
  ASSERT_TRUE(p.autograd);
  EXPECT_EQ(p.autograd->state, "on");
  EXPECT_EQ(p.autograd->backward_launches, 6u);
  EXPECT_EQ(p.autograd->with_node, 4u);
  EXPECT_EQ(p.autograd->with_forward, 4u);
  EXPECT_TRUE(h.notes.empty());
}

// Deferred: backward launches go to the writer with a note and are resolved when their
// thread's buffer is taken; the profile names the same BackwardStack parts as resolving at the launch
// does, and counts the same. A forward launch made after a backward launch (the next step's first op,
// numbered right after the last node of this step's forward pass) is not its node's forward launch.
std::map<uint32_t, std::tuple<uint32_t, uint32_t, uint32_t>> backward_parts_by_launch(bool deferred,
                                                                                     AutogradSummaryRecord* summary) {
  TorchApi api = fake_api();
  Harness h(api, deferred);
  std::vector<FakeNode> nodes;
  uint64_t clock = 1 << 20;
  // Forward launches as the recorder makes them: deferred ones (the first after a new node) go to the
  // writer with their note, for the flush to remember; correlation ids from 1000.
  // A launch on the calling thread, written as the recorder writes it (with its note when deferred).
  auto record_launch = [&](uint32_t stack, uint32_t corr) {
    AutogradTracker::Launch l = h.tracker.on_launch(stack, h.tracker.before_capture(), clock += 5000);
    LaunchRecord rec;
    rec.correlation_id = corr;
    rec.timestamp = clock;
    rec.stack_id = l.stack_id;
    if (l.deferred)
      h.writer.add_buffered(rec, l.note);
    else
      h.writer.add_buffered(rec);
    return l;
  };
  uint32_t forward_corr = 1000;
  auto forward_launch = [&](uint32_t stack) {
    AutogradTracker::Launch l = record_launch(stack, ++forward_corr);
    EXPECT_EQ(l.stack_id, stack);
    return l.deferred;
  };
  std::thread forward([&] {
    nodes.push_back(fake::node());  // mm: node 0, its kernel at 1
    EXPECT_EQ(forward_launch(11), deferred);
    nodes.push_back(fake::node());  // a view: node 1, no kernel
    nodes.push_back(fake::node());  // add: node 2, its kernels at 3
    EXPECT_EQ(forward_launch(13), deferred);
    EXPECT_FALSE(forward_launch(14));  // no new node since the last launch: nothing to remember
    nodes.push_back(fake::node());  // the loss: node 3, made last, no kernel
  });
  forward.join();
  uint32_t corr = 0;
  auto launch = [&](const FakeNode* node, uint32_t stack) {
    on_engine(node, [&] { EXPECT_EQ(record_launch(stack, ++corr).deferred, deferred); });
  };
  launch(&nodes[3], 100);  // the loss's backward: nothing after node 3 yet
  launch(&nodes[2], 100);
  launch(&nodes[1], 100);
  launch(&nodes[0], 100);
  launch(&nodes[0], 100);
  FakeNode accumulate;
  accumulate.sequence_nr = UINT64_MAX;
  accumulate.thread_id = nodes[0].thread_id;
  launch(&accumulate, 101);
  launch(nullptr, 101);
  // The next step's first op: node 4, its kernel right after it (a launch numbered within node 3's
  // look-ahead), made after every backward launch above.
  std::thread next([&] {
    fake::tid = nodes[0].thread_id;  // the same torch thread as the forward pass
    fake::sequence = nodes[3].sequence_nr + 1;
    fake::node();
    forward_launch(15);
  });
  next.join();
  Profile p = h.close();
  std::map<uint32_t, std::tuple<uint32_t, uint32_t, uint32_t>> out;
  for (size_t i = 0; i < p.launches.size(); i++) {
    const LaunchRow& l = p.launches[i];
    if (l.correlation_id > 1000) {  // forward launches keep their own stacks
      EXPECT_FALSE(l.stack_id & kBackwardStackBit) << l.correlation_id;
      continue;
    }
    auto b = p.backward_stacks.find(l.stack_id);
    out[l.correlation_id] = b == p.backward_stacks.end() ? std::make_tuple(l.stack_id, 0u, 0u)
                                                         : std::make_tuple(b->second.stack_id, b->second.caller_id,
                                                                           b->second.forward_stack_id);
    EXPECT_TRUE(l.stack_id & kBackwardStackBit) << l.correlation_id;
  }
  if (summary && p.autograd) *summary = *p.autograd;
  return out;
}

TEST(AutogradTracker, DeferredBackwardLaunchesResolveAsAtTheLaunch) {
  AutogradSummaryRecord at_launch, deferred;
  auto a = backward_parts_by_launch(false, &at_launch);
  auto b = backward_parts_by_launch(true, &deferred);
  ASSERT_EQ(a.size(), 7u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.at(1), std::make_tuple(100u, 0u, 0u));   // the loss: not the next step's op
  EXPECT_EQ(a.at(2), std::make_tuple(100u, 0u, 13u));
  EXPECT_EQ(a.at(3), std::make_tuple(100u, 0u, 13u));  // the view: the next launch after it
  EXPECT_EQ(a.at(4), std::make_tuple(100u, 0u, 11u));
  EXPECT_EQ(a.at(6), std::make_tuple(101u, 0u, 0u));
  EXPECT_EQ(at_launch.backward_launches, 7u);
  EXPECT_EQ(deferred.backward_launches, at_launch.backward_launches);
  EXPECT_EQ(deferred.with_node, at_launch.with_node);
  EXPECT_EQ(deferred.with_forward, at_launch.with_forward);
  EXPECT_EQ(deferred.with_forward, 4u);
}

// A Recorder with deferred tracking over the fake torch, and the profile it wrote: the launches'
// stack ids by correlation id. forward(): the forward pass makes a node and launches its op (1).
struct DeferredRecording {
  std::string path = test::temp_path("deferred_recorder");
  Recorder rec;
  FakeNode node;
  DeferredRecording() {
    RecordOptions o;
    o.output = path;
    o.quiet = true;
    std::string err;
    EXPECT_TRUE(rec.start(o, ProcessRecord{}, &err)) << err;
    rec.stacks().init(UnwindPolicy::Off, /*python=*/false);
    rec.autograd().set_deferred(true);
    rec.autograd().init_with(fake_api(), /*python=*/false, [](const std::string&) {});
  }
  void forward() {
    std::thread t([&] {
      node = fake::node();
      rec.on_launch(211, 1, 0x1000, 5000, 0);  // the node's op
      rec.on_launch_exit();
    });
    t.join();
  }
  Profile finish(std::map<uint32_t, uint32_t>* stack_of) {
    rec.finish(1);
    const std::string file = path + "." + std::to_string(getpid());
    auto p = read_profile(file);
    std::remove(file.c_str());
    EXPECT_TRUE(p.ok()) << p.error();
    if (!p.ok()) return Profile{};
    for (size_t i = 0; i < p->launches.size(); i++) (*stack_of)[p->launches[i].correlation_id] = p->launches[i].stack_id;
    return std::move(*p);
  }
};

// The recorder's launch path, deferred: a backward launch reaches the profile under
// a BackwardStack that names the forward launch of its node, resolved by the collector's flush.
TEST(AutogradTracker, TheRecorderWritesDeferredBackwardLaunchesResolved) {
  DeferredRecording r;
  r.rec.start_collector([] {});
  r.forward();
  on_engine(&r.node, [&] {
    r.rec.on_launch(211, 2, 0x2000, 9000, 0);  // its backward
    r.rec.on_launch_exit();
  });
  r.rec.stop_collector();
  std::map<uint32_t, uint32_t> stack_of;
  Profile p = r.finish(&stack_of);
  ASSERT_EQ(stack_of.size(), 2u);
  const uint32_t backward = stack_of.at(2);
  ASSERT_TRUE(backward & kBackwardStackBit) << backward;
  const BackwardStackRecord& b = p.backward_stacks.at(backward);
  EXPECT_EQ(b.forward_stack_id, stack_of.at(1));
  ASSERT_TRUE(p.autograd);
  EXPECT_EQ(p.autograd->backward_launches, 1u);
  EXPECT_EQ(p.autograd->with_forward, 1u);
}

// A graph node captured during a deferred backward launch (torch.compile's CUDA graphs of a backward
// pass) is written at once, so it must name the launch's resolved BackwardStack, with the forward
// launch that is still in its thread's buffer, not the engine thread's own stack; the launch itself is
// counted once.
TEST(AutogradTracker, AGraphNodeCapturedInADeferredBackwardLaunchNamesItsForwardCode) {
  DeferredRecording r;
  r.forward();
  uint32_t in_graph = 0, again = 0;
  on_engine(&r.node, [&] {
    r.rec.on_launch(211, 2, 0x2000, 9000, 0);  // its backward, captured into a graph
    in_graph = r.rec.graph_node_stack(0x77);
    again = r.rec.graph_node_stack(0x78);  // a second node of the same launch
    r.rec.on_launch_exit();
  });
  std::map<uint32_t, uint32_t> stack_of;
  Profile p = r.finish(&stack_of);
  ASSERT_EQ(stack_of.size(), 2u);
  ASSERT_TRUE(in_graph & kBackwardStackBit) << in_graph;
  EXPECT_EQ(again, in_graph);
  EXPECT_EQ(stack_of.at(2), in_graph);
  ASSERT_TRUE(p.backward_stacks.count(in_graph));
  EXPECT_EQ(p.backward_stacks.at(in_graph).forward_stack_id, stack_of.at(1));
  ASSERT_TRUE(p.autograd);
  EXPECT_EQ(p.autograd->backward_launches, 1u);
  EXPECT_EQ(p.autograd->with_forward, 1u);
}

// A backward launch reads its node's class (the vptr at offset 0) for the walk memo's key.
TEST(AutogradTracker, ABackwardLaunchReadsItsNodesClass) {
  Harness h(fake_api());
  FakeNode n;
  n.vptr = reinterpret_cast<void*>(0x7f00deadbee0);
  AutogradTracker::Pending p;
  on_engine(&n, [&] { p = h.tracker.before_capture(); });
  EXPECT_TRUE(p.node);
  EXPECT_EQ(p.node_type, 0x7f00deadbee0u);
  std::thread([&] { p = h.tracker.before_capture(); }).join();  // a forward launch: no node
  EXPECT_EQ(p.node_type, 0u);
  h.close();
}

// Backward launches of eight node classes through eight native paths that end at one depth: an engine
// thread has no Python frames, so without the class in the key all eight share one memo key and its
// four memos, and in an order that is not the same every step (here random) about half of the launches
// walk. With the class (the default) every path keeps its memo. Either way each memo that holds gives
// the full walk's stack (AIFLAME_LAB=verify_memos).
template <int K>
__attribute__((noinline)) void launch_from(Recorder& rec, uint32_t correlation) {
  rec.on_launch(211, correlation, 0x1000, 5000 + correlation, 0);
  rec.on_launch_exit();
  asm volatile("" ::"r"(K));
}
using LaunchFrom = void (*)(Recorder&, uint32_t);
constexpr LaunchFrom kLaunchFrom[8] = {launch_from<0>, launch_from<1>, launch_from<2>, launch_from<3>,
                                       launch_from<4>, launch_from<5>, launch_from<6>, launch_from<7>};
__attribute__((noinline)) void launch_via(LaunchFrom from, Recorder& rec, uint32_t correlation) {
  from(rec, correlation);
  asm volatile("");
}

struct MemoRun {
  uint64_t launches = 0, held = 0, verified = 0, differed = 0;
};
MemoRun backward_memos(bool key_node) {
  unwind::ObjectTable::instance().build_all_now();
  const std::string path = test::temp_path("node_key");
  Recorder rec;
  RecordOptions o;
  o.output = path;
  o.quiet = true;
  std::string err;
  EXPECT_TRUE(rec.start(o, ProcessRecord{}, &err)) << err;
  rec.set_memo_key_node(key_node);
  rec.stacks().init(UnwindPolicy::Always, /*python=*/false);
  rec.stacks().set_verify_memos(true);
  rec.autograd().init_with(fake_api(), /*python=*/false, [](const std::string&) {});
  FakeNode nodes[8];
  // The stats on from the first launch (counted from the ninth): a launch with them goes through
  // Recorder::on_launch_measured, another frame than on_launch's, so another depth and memo key.
  CaptureStats::enable();
  std::thread([&] {  // the forward pass: each node made, then its op's launch (the layout probe finds them)
    for (int k = 0; k < 8; k++) {
      nodes[k] = fake::node();
      nodes[k].vptr = reinterpret_cast<void*>(0x7f0000001000 + 0x40 * k);
      rec.on_launch(211, 1000 + static_cast<uint32_t>(k), 0x2000, 4000, 0);
      rec.on_launch_exit();
    }
  }).join();
  CaptureStats& cs = CaptureStats::instance();
  uint64_t state = 12345;
  MemoRun run;
  for (uint32_t i = 0; i < 400; i++) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const int k = i < 8 ? static_cast<int>(i) : static_cast<int>(state >> 61);  // each path once, then at random
    if (i == 8) cs.reset();
    on_engine(&nodes[k], [&] { launch_via(kLaunchFrom[k], rec, i + 1); });
  }
  run.launches = cs.launches.load();
  run.held = cs.memo_held.load();
  CaptureStats::disable();
  cs.reset();
  run.verified = rec.stacks().memo_check().checked;
  run.differed = rec.stacks().memo_check().differed;
  rec.finish(0);
  std::remove((path + "." + std::to_string(getpid())).c_str());
  return run;
}

TEST(AutogradTracker, BackwardLaunchesOfManyNodeClassesAtOneDepthKeepTheirMemos) {
  const MemoRun keyed = backward_memos(true), unkeyed = backward_memos(false);
  EXPECT_EQ(keyed.launches, 392u);
  EXPECT_EQ(keyed.held, 392u);
  EXPECT_EQ(keyed.differed, 0u);
  EXPECT_GE(keyed.verified, 392u);
  // The control: the same launches keyed by depth alone lose their memos to each other.
  EXPECT_EQ(unkeyed.launches, 392u);
  EXPECT_LT(unkeyed.held, 300u);
  EXPECT_EQ(unkeyed.differed, 0u);
}

// The capture breakdown counts each backward launch's lookup of its forward launch and the table
// slots it read: the first is prefetched, each further one may be a line the launch waits for.
TEST(AutogradTracker, TheBreakdownCountsForwardLookupsAndTheirSlots) {
  CaptureStats::enable();
  CaptureStats& cs = CaptureStats::instance();
  cs.reset();
  Harness h(fake_api());
  std::vector<FakeNode> nodes;
  std::thread forward([&] {
    nodes.push_back(fake::node());  // node 0, its launch at 1
    h.tracker.on_launch(11);
    nodes.push_back(fake::node());  // node 1, no launch
    nodes.push_back(fake::node());  // node 2, its launch at 3
    h.tracker.on_launch(13);
  });
  forward.join();
  FakeNode orphan;  // made after the forward pass's last launch: nothing within 16 numbers
  orphan.sequence_nr = nodes[2].sequence_nr + 1;
  orphan.thread_id = nodes[0].thread_id;
  on_engine(&nodes[2], [&] { h.tracker.on_launch(100); });  // 1 slot
  on_engine(&nodes[1], [&] { h.tracker.on_launch(100); });  // 2 slots
  on_engine(&nodes[0], [&] { h.tracker.on_launch(100); });  // 1 slot
  on_engine(&orphan, [&] { h.tracker.on_launch(100); });    // 16 slots, none found
  EXPECT_EQ(cs.forward_lookups.load(), 4u);
  EXPECT_EQ(cs.forward_slots.load(), 1u + 2u + 1u + 16u);
  EXPECT_EQ(cs.forward_found.load(), 3u);
  EXPECT_NE(cs.line().find("forward lookups 4 (5.00 slots read each, 75.0% found)"), std::string::npos) << cs.line();
  CaptureStats::disable();
  cs.reset();
  h.close();
}

// Nodes of another forward thread have their own sequence numbers: the thread id keeps them apart.
TEST(AutogradTracker, ForwardThreadsAreToldApart) {
  Harness h(fake_api());
  FakeNode a, b;
  std::thread([&] { a = fake::node(); h.tracker.on_launch(21); }).join();
  std::thread([&] { b = fake::node(); h.tracker.on_launch(22); }).join();
  ASSERT_EQ(a.sequence_nr, b.sequence_nr);
  ASSERT_NE(a.thread_id, b.thread_id);
  uint32_t ia = 0, ib = 0;
  on_engine(&a, [&] { ia = h.tracker.on_launch(100); });
  on_engine(&b, [&] { ib = h.tracker.on_launch(100); });
  Profile p = h.close();
  EXPECT_EQ(p.backward_stacks.at(ia).forward_stack_id, 21u);
  EXPECT_EQ(p.backward_stacks.at(ib).forward_stack_id, 22u);
}

// A layout two words off (the fields read where the weak_ptr's pointers are) is switched off with
// one note; backward kernels then keep [backward] without a forward stack.
TEST(AutogradTracker, ImplausibleNodesSwitchTheForwardPartOff) {
  TorchApi api = fake_api();
  api.node_sequence_nr = 8;
  api.node_thread_id = 16;
  Harness h(api);
  FakeNode n;
  std::thread([&] {
    fake::sequence = 1000;
    n = fake::node();
    h.tracker.on_launch(11);
  }).join();
  uint32_t first = 0, second = 0;
  on_engine(&n, [&] { first = h.tracker.on_launch(100); second = h.tracker.on_launch(100); });
  EXPECT_FALSE(h.tracker.node_enabled());
  ASSERT_EQ(h.notes.size(), 1u);
  EXPECT_NE(h.notes[0].find("layout check failed"), std::string::npos) << h.notes[0];
  Profile p = h.close();
  EXPECT_EQ(p.backward_stacks.at(first).forward_stack_id, 0u);
  EXPECT_EQ(p.backward_stacks.at(second).forward_stack_id, 0u);
  EXPECT_EQ(p.autograd->state.rfind("off: autograd node layout check failed", 0), 0u) << p.autograd->state;
}

// Plausible numbers that never match a forward launch: off after the probe's 64 nodes.
TEST(AutogradTracker, NodesWithoutForwardLaunchesFailTheProbe) {
  Harness h(fake_api());
  std::vector<FakeNode> nodes;
  std::thread([&] {
    h.tracker.on_launch(11);  // a launch before any node: no node's forward stack
    for (int i = 0; i < 64; i++) nodes.push_back(fake::node());
  }).join();
  on_engine(nullptr, [&] {
    fake::graph_task = 5;
    for (int i = 63; i >= 0; i--) {
      fake::current = std::make_shared<FakeNode>(nodes[static_cast<size_t>(i)]);
      h.tracker.on_launch(100);
    }
  });
  EXPECT_FALSE(h.tracker.node_enabled());
  ASSERT_EQ(h.notes.size(), 1u);
  EXPECT_NE(h.notes[0].find("no forward launch found for the first 64 nodes"), std::string::npos) << h.notes[0];
  h.close();
}

// `record --pid` attaching mid-step: the nodes made before the first forward launch the tracker saw
// have no launch to find; the probe skips them instead of failing, and later nodes find theirs.
TEST(AutogradTracker, NodesMadeBeforeTrackingBeganAreNotProbed) {
  Harness h(fake_api());
  std::vector<FakeNode> early;
  FakeNode late;
  std::thread([&] {
    for (int i = 0; i < 100; i++) early.push_back(fake::node());  // before the attach: no launch seen
    for (int i = 0; i < 20; i++) fake::node();                       // beyond the look-ahead of any launch
    late = fake::node();
    h.tracker.on_launch(11);
  }).join();
  uint32_t last = 0;
  on_engine(nullptr, [&] {
    fake::graph_task = 5;
    for (int i = 99; i >= 0; i--) {
      fake::current = std::make_shared<FakeNode>(early[static_cast<size_t>(i)]);
      h.tracker.on_launch(100);
    }
    fake::current = std::make_shared<FakeNode>(late);
    last = h.tracker.on_launch(100);
  });
  for (const FakeNode& n : early) ASSERT_LT(n.sequence_nr + 16, late.sequence_nr);
  EXPECT_TRUE(h.tracker.node_enabled());
  EXPECT_TRUE(h.notes.empty()) << h.notes[0];
  Profile p = h.close();
  EXPECT_EQ(p.backward_stacks.at(last).forward_stack_id, 11u);
}

// Issue 23 item 5 (each torch call is a cold miss per launch on the H100): a thread whose first
// launch was outside backward is a forward thread and is not asked for its graph task again. Its own
// launches inside its backward call (CPU nodes on the calling thread) needed nothing anyway: its
// stack already holds backward()'s caller. An engine thread asks at every launch.
TEST(AutogradTracker, ForwardThreadsAreNotAskedForTheirGraphTask) {
  Harness h(fake_api());
  int forward_calls = 0;
  std::thread([&] {
    fake::graph_task_calls = 0;
    for (uint32_t i = 0; i < 100; i++) {
      fake::node();
      EXPECT_EQ(h.tracker.on_launch(11 + i), 11 + i);
    }
    fake::graph_task = 3;  // its own backward call
    EXPECT_EQ(h.tracker.on_launch(200), 200u);
    forward_calls = fake::graph_task_calls;
  }).join();
  EXPECT_EQ(forward_calls, 1);
  int engine_calls = 0;
  on_engine(nullptr, [&] {
    fake::graph_task_calls = 0;
    for (int i = 0; i < 10; i++) EXPECT_TRUE(h.tracker.on_launch(100) & kBackwardStackBit);
    engine_calls = fake::graph_task_calls;
  });
  EXPECT_EQ(engine_calls, 10);
  Profile p = h.close();
  EXPECT_EQ(p.autograd->backward_launches, 10u);
}

// A training step's hundreds of backward triples (stack, caller, forward): each interned once, found
// again in the engine thread's set-associative cache on the next step, each with its forward launch.
TEST(AutogradTracker, ManyNodesKeepTheirIdsAcrossSteps) {
  Harness h(fake_api());
  constexpr uint32_t kNodes = 600;
  std::vector<FakeNode> nodes;
  std::thread([&] {
    for (uint32_t i = 0; i < kNodes; i++) {
      nodes.push_back(fake::node());
      h.tracker.on_launch(1000 + i);
    }
  }).join();
  std::vector<uint32_t> first(kNodes), second(kNodes);
  for (auto* ids : {&first, &second})
    on_engine(nullptr, [&] {
      fake::graph_task = 5;
      for (uint32_t i = kNodes; i-- > 0;) {
        fake::current = std::make_shared<FakeNode>(nodes[i]);
        (*ids)[i] = h.tracker.on_launch(100 + i % 4);
      }
    });
  EXPECT_EQ(first, second);
  Profile p = h.close();
  EXPECT_EQ(p.backward_stacks.size(), kNodes);
  for (uint32_t i = 0; i < kNodes; i++) {
    const auto& b = p.backward_stacks.at(first[i]);
    EXPECT_EQ(b.stack_id, 100 + i % 4);
    EXPECT_EQ(b.forward_stack_id, 1000 + i) << i;
  }
  EXPECT_EQ(p.autograd->backward_launches, 2u * kNodes);
  EXPECT_EQ(p.autograd->with_forward, 2u * kNodes);
}

TEST(AutogradTracker, UnknownVersionKeepsBackwardWithoutForwardStacks) {
  TorchApi api = fake_api();
  api.node_layout = false;
  api.problem = "the autograd node layout of torch 2.12.0 is not known to this aiflame";
  Harness h(api);
  EXPECT_TRUE(h.tracker.active());
  EXPECT_FALSE(h.tracker.node_enabled());
  ASSERT_EQ(h.notes.size(), 1u);
  EXPECT_NE(h.notes[0].find("2.12.0"), std::string::npos);
  FakeNode n;
  std::thread([&] { n = fake::node(); EXPECT_EQ(h.tracker.on_launch(11), 11u); }).join();
  uint32_t id = 0;
  on_engine(&n, [&] { id = h.tracker.on_launch(100); });
  Profile p = h.close();
  EXPECT_EQ(p.backward_stacks.at(id).forward_stack_id, 0u);
  EXPECT_EQ(p.autograd->state.rfind("on without forward stacks", 0), 0u);
}

// Windows mode records only the launches inside its windows: the forward part is off from the start
// with a note that says why (not a failed layout check), and backward launches still sit under
// backward() with their node's [backward] frame.
TEST(AutogradTracker, WindowsModeKeepsBackwardWithoutForwardStacksAndSaysWhy) {
  ProfileWriter writer;
  StringTable strings{writer};
  AutogradTracker tracker{writer, strings};
  std::string path = test::temp_path("autograd_windows.aiflame");
  std::string error;
  ASSERT_TRUE(writer.open(path, true, &error)) << error;
  std::vector<std::string> notes;
  tracker.set_launches_sampled(true);
  tracker.init_with(fake_api(), /*python=*/false, [&](const std::string& n) { notes.push_back(n); });
  EXPECT_TRUE(tracker.active());
  EXPECT_FALSE(tracker.node_enabled());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("windows mode"), std::string::npos) << notes[0];
  EXPECT_EQ(notes[0].find("layout check failed"), std::string::npos) << notes[0];
  FakeNode n;
  std::thread([&] { n = fake::node(); EXPECT_EQ(tracker.on_launch(11), 11u); }).join();
  uint32_t id = 0;
  on_engine(&n, [&] { id = tracker.on_launch(100); });
  EXPECT_NE(id, 100u);  // a BackwardStack: the engine's launch is placed under its backward() caller
  tracker.finish();
  writer.add(EndRecord{});
  ASSERT_TRUE(writer.close());
  auto p = read_profile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->backward_stacks.at(id).forward_stack_id, 0u);
  EXPECT_EQ(p->autograd->state.rfind("on without forward stacks: windows mode", 0), 0u) << p->autograd->state;
}

// No graph task function (a torch without it): today's picture, one note, launches unchanged.
TEST(AutogradTracker, MissingSymbolsLeaveLaunchesAlone) {
  TorchApi api = fake_api();
  api.graph_task_id = nullptr;
  api.problem = "libtorch_cpu.so lacks get_current_graph_task_id";
  Harness h(api);
  EXPECT_FALSE(h.tracker.active());
  EXPECT_EQ(h.notes.size(), 1u);
  on_engine(nullptr, [&] { EXPECT_EQ(h.tracker.on_launch(100), 100u); });
  Profile p = h.close();
  EXPECT_TRUE(p.backward_stacks.empty());
  EXPECT_EQ(p.autograd->state.rfind("off: autograd: libtorch_cpu.so lacks", 0), 0u) << p.autograd->state;
}

TEST(TorchApi, VersionFileAndKnownLayouts) {
  EXPECT_EQ(torch_version_from("# generated\n__version__ = '2.11.0+cu130'\ngit_version = 'abc'\n"), "2.11.0+cu130");
  EXPECT_EQ(torch_version_from("__version__: str = \"2.5.1\"\n"), "2.5.1");
  EXPECT_EQ(torch_version_from("version = '1'\n"), "");
  EXPECT_TRUE(node_layout_known("2.11.0+cu130"));
  EXPECT_TRUE(node_layout_known("2.0.1"));
  EXPECT_FALSE(node_layout_known("2.12.0"));
  EXPECT_FALSE(node_layout_known("1.13.0a0"));
  EXPECT_FALSE(node_layout_known(""));
}

// This test binary loads no torch: nothing is resolved and nothing is guessed.
TEST(TorchApi, NoTorchLoaded) {
  TorchApi api = resolve_torch();
  EXPECT_TRUE(api.library.empty());
  EXPECT_EQ(api.problem, "torch is not loaded");
  EXPECT_EQ(api.graph_task_id, nullptr);
}

}  // namespace
}  // namespace aiflame
