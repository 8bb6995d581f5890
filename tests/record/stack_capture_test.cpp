#include "record/stack_capture.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <gtest/gtest.h>

#include <span>
#include <thread>
#include <vector>

#include "profile/profile.h"
#include "record/measure/capture_stats.h"
#include "test_util.h"
#include "record/unwind/object_table.h"

namespace aiflame {
namespace {

struct Fixture {
  std::string path = test::temp_path("stacks.aiflame");
  ProfileWriter writer;
  StringTable strings{writer};
  StackCapture capture{writer, strings};
  explicit Fixture(UnwindPolicy policy) {
    std::string err;
    EXPECT_TRUE(writer.open(path, false, &err)) << err;
    capture.init(policy, /*python=*/false);
  }
  ~Fixture() { std::remove(path.c_str()); }
};

__attribute__((noinline)) StackCapture::Result path_a(StackCapture& c, uint64_t site) {
  auto r = c.capture(site);
  asm volatile("");
  return r;
}
__attribute__((noinline)) StackCapture::Result path_b(StackCapture& c, uint64_t site) {
  auto r = c.capture(site);
  asm volatile("");
  return r;
}

__attribute__((noinline)) StackCapture::Result path_c(StackCapture& c, uint64_t site) {
  auto r = c.capture(site);
  asm volatile("nop");
  return r;
}
__attribute__((noinline)) StackCapture::Result path_d(StackCapture& c, uint64_t site) {
  auto r = c.capture(site);
  asm volatile("nop; nop");
  return r;
}

using Path = StackCapture::Result (*)(StackCapture&, uint64_t);
// One call site for both paths: path_a and path_b have identical frames and the same site, so only
// the unwound return addresses tell them apart.
__attribute__((noinline)) StackCapture::Result via(Path p, StackCapture& c) {
  auto r = p(c, 9);
  asm volatile("");
  return r;
}

__attribute__((noinline)) StackCapture::Result via_site(StackCapture& c, uint64_t site) {
  auto r = c.capture(site);
  asm volatile("");
  return r;
}

// Every launch is unwound: in the pattern A A A B ... every launch gets its own path's stack.
TEST(StackCapture, EveryLaunchIsUnwoundAndGetsItsOwnPathsStack) {
  for (UnwindPolicy policy : {UnwindPolicy::Always, UnwindPolicy::Sampled}) {
    Fixture f(policy);
    const Path paths[2] = {path_a, path_b};
    std::vector<StackCapture::Result> r;
    const int n = 4000;
    for (int i = 0; i < n; i++) r.push_back(via(paths[i % 4 == 3 ? 1 : 0], f.capture));
    uint32_t a = r[0].stack_id, b = r[3].stack_id;
    EXPECT_NE(a, b);
    for (int i = 0; i < n; i++) {
      EXPECT_EQ(r[i].stack_id, i % 4 == 3 ? b : a) << i;
      EXPECT_TRUE(r[i].unwound) << i;
    }
    EXPECT_EQ(f.capture.stacks(), 2u);
  }
}

template <int K>
__attribute__((noinline)) StackCapture::Result probe_path(StackCapture& c) {
  auto r = c.capture(9);
  asm volatile("" ::"r"(K));
  return r;
}
StackCapture::Result path_v(StackCapture& c, bool second) { return second ? probe_path<1>(c) : probe_path<0>(c); }

// AIFLAME_LAB=capture_probe: once a thread's launches follow each other from their memos, each launch
// loads the stack lines of its likely memo before its capture: the probe counts those launches and
// lines (each memo's check reads at least its return address's line), and each round's time.
TEST(StackCapture, TheLineProbeTimesTheLikelyMemosStackLines) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  f.capture.set_probe_lines(true);
  for (int i = 0; i < 400; i++) path_v(f.capture, i % 4 == 3);
  const StackCapture::LineProbe p = f.capture.line_probe();
  EXPECT_GE(p.launches, 390u);  // all but the first launches of the two paths
  EXPECT_GE(p.lines, p.launches);
  EXPECT_GE(p.pages, p.launches);
  EXPECT_LE(p.pages, p.lines);
  EXPECT_GT(p.cold_ticks, 0u);
  EXPECT_GT(p.hot_ticks, 0u);
  Fixture off(UnwindPolicy::Always);
  for (int i = 0; i < 100; i++) path_v(off.capture, i % 4 == 3);
  EXPECT_EQ(off.capture.line_probe().launches, 0u);
}

// backtrace() called through a wrapper, as ASan's and TSan's interceptors call it: one more frame.
__attribute__((noinline)) int wrapped_backtrace(void** out, int max) {
  int n = backtrace(out, max);
  asm volatile("");
  return n;
}
__attribute__((noinline)) int twice_wrapped_backtrace(void** out, int max) {
  int n = wrapped_backtrace(out, max);
  asm volatile("");
  return n;
}

// A launch whose walk falls back to backtrace() (an object's rows still being built) gets the stack
// the walk gives its path, also when backtrace() is wrapped: under TSan, whose interceptor is such a
// wrapper, fallback stacks had one leaf frame more (aiflame's own), and one path got two stacks.
TEST(StackCapture, AFallbackGivesTheWalksStackThroughAWrappedBacktrace) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  f.capture.set_incremental_unwind(false);  // no memo: every launch walks (or falls back)
  const StackCapture::BacktraceFn fallbacks[] = {nullptr, &wrapped_backtrace, &twice_wrapped_backtrace};
  uint32_t walked[2] = {0, 0};
  for (int round = 0; round <= 3; round++) {  // round 0 walks; rounds 1-3 fall back, as `fallbacks` says
    f.capture.set_fallback_for_test(round > 0, round > 0 ? fallbacks[round - 1] : nullptr);
    const uint32_t a = via(path_a, f.capture).stack_id, b = via(path_b, f.capture).stack_id;  // one call site each
    if (round == 0) {
      walked[0] = a;
      walked[1] = b;
      EXPECT_NE(a, b);
    }
    EXPECT_EQ(a, walked[0]) << "round " << round;
    EXPECT_EQ(b, walked[1]) << "round " << round;
  }
  EXPECT_EQ(f.capture.stacks(), 2u);
}

// AIFLAME_LAB=verify_memos: launches that take their memo are walked again in full and compared; on
// this test's two paths every memo's stack is the full walk's (and each launch keeps its own path's).
TEST(StackCapture, VerifiedMemosMatchTheFullWalk) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();  // every walk a fast one (no backtrace() while rows are built)
  f.capture.set_verify_memos(true);
  const Path paths[2] = {path_a, path_b};
  std::vector<StackCapture::Result> r;
  const int n = 2000;
  for (int i = 0; i < n; i++) r.push_back(via(paths[i % 4 == 3 ? 1 : 0], f.capture));
  for (int i = 0; i < n; i++) EXPECT_EQ(r[i].stack_id, r[i % 4 == 3 ? 3 : 0].stack_id) << i;
  StackCapture::MemoCheck c = f.capture.memo_check();
  // Both paths share a memo key (same site and depth) and replace each other's memo: in A A A B the
  // second and third A take A's memo, half of all launches.
  EXPECT_GE(c.checked, uint64_t{n} / 2 - 2);
  EXPECT_EQ(c.differed, 0u);
  EXPECT_EQ(f.capture.stacks(), 2u);
}

// Two native paths under one key (one kernel at one depth, under the same Python frames, through
// two C++ paths: here path_a and path_b at one call site): each keeps its own memo, so alternating
// launches A B A B ... take their memos (one memo per key would make every launch a walk) and each
// still gets its own path's stack.
// Cycles 1,000 launches over `paths` (one call site, one key): each path gets its own stack, and
// all but the first two launches of each take a memo that the full walk confirms.
void expect_paths_keep_their_memos(std::span<const Path> paths) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  f.capture.set_verify_memos(true);
  const int k = static_cast<int>(paths.size());
  std::vector<StackCapture::Result> r;
  const int n = 1000;
  for (int i = 0; i < n; i++) r.push_back(via(paths[i % k], f.capture));
  for (int i = 1; i < k; i++) EXPECT_NE(r[0].stack_id, r[i].stack_id) << i;
  for (int i = 0; i < n; i++) EXPECT_EQ(r[i].stack_id, r[i % k].stack_id) << i;
  StackCapture::MemoCheck c = f.capture.memo_check();
  EXPECT_GE(c.checked, uint64_t(n - 2 * k));
  EXPECT_EQ(c.differed, 0u);
}

TEST(StackCapture, TwoPathsSharingAKeyKeepTheirMemos) {
  const Path paths[2] = {path_a, path_b};
  expect_paths_keep_their_memos(paths);
}

// Four native paths under one key (measured on hf_gpt2 and timm_train: 6.2-6.7% of launches found
// their key's two memos not holding, 97-99.9% of them walking to another stack): a key keeps up to
// four memos, so cycling A B C D takes them after each path's first launch (with two per key every
// launch walked).
TEST(StackCapture, FourPathsSharingAKeyKeepTheirMemos) {
  const Path paths[4] = {path_a, path_b, path_c, path_d};
  expect_paths_keep_their_memos(paths);
}

// Paths under one key that come in the same order every step: a launch checks first, alone, the memo
// that followed the previous launch's last time, so it checks one memo and never searches the key's
// set, where the set's last holder (the path before) first made it two. The stacks stay each path's
// own.
TEST(StackCapture, PathsInAFixedOrderCheckTheMemoThatFollowedFirst) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  const Path paths[4] = {path_a, path_b, path_c, path_d};
  uint32_t ids[4] = {};
  CaptureStats& cs = CaptureStats::instance();
  for (int i = 0; i < 408; i++) {  // one call site: the first 8 make the memos and learn the successors
    if (i == 8) {
      CaptureStats::enable();
      cs.reset();
    }
    const uint32_t id = via(paths[i % 4], f.capture).stack_id;
    if (i < 4) ids[i] = id;
    EXPECT_EQ(id, ids[i % 4]) << i;
  }
  const uint64_t held = cs.memo_held.load(), checks = cs.memo_checks.load(), slow = cs.memo_slow.load();
  CaptureStats::disable();
  EXPECT_EQ(held, 400u);
  EXPECT_EQ(checks, 400u);  // one check each
  EXPECT_EQ(slow, 0u);      // each the predicted memo
}

// An op that launches two kernels in a row from one path, then another path's launch (another key: a
// deeper call): the second launch from a path follows the path itself, which the entry's successor
// does not hold (it is the other path's); the previous launch's own entry is predicted then, so no
// launch searches its key's set (on the H200 24% of hf_gpt2.py's launches from a memo did before).
__attribute__((noinline)) StackCapture::Result direct_a(StackCapture& c) {
  auto r = path_a(c, 9);
  asm volatile("");
  return r;
}
__attribute__((noinline)) StackCapture::Result deep_b(StackCapture& c) {
  auto r = via(path_b, c);
  asm volatile("");
  return r;
}
TEST(StackCapture, APathLaunchingTwiceInARowIsPredicted) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  using Op = StackCapture::Result (*)(StackCapture&);
  const Op ops[3] = {direct_a, direct_a, deep_b};
  CaptureStats& cs = CaptureStats::instance();
  uint32_t ids[3] = {};
  for (int i = 0; i < 309; i++) {  // one call site for all three
    if (i == 9) {
      CaptureStats::enable();
      cs.reset();
    }
    const uint32_t id = ops[i % 3](f.capture).stack_id;
    if (i < 3) ids[i] = id;
    EXPECT_EQ(id, ids[i % 3]) << i;
  }
  const uint64_t held = cs.memo_held.load(), checks = cs.memo_checks.load(), slow = cs.memo_slow.load();
  CaptureStats::disable();
  EXPECT_EQ(ids[0], ids[1]);
  EXPECT_NE(ids[0], ids[2]);
  EXPECT_EQ(held, 300u);
  EXPECT_EQ(checks, 300u);
  EXPECT_EQ(slow, 0u);
}

// A thread pool's threads launch from the same code (XLA's, on the H200: 8% of jax_train.py's launches
// on stacks new to their thread, each walk 32 us, 28.6 of it in lookups): a new thread's walk finds
// the frames another thread looked up in the shared rows instead of searching the objects' rows, and
// its stack is the first thread's.
TEST(StackCapture, ANewThreadFindsTheRowsAnotherThreadLookedUp) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  CaptureStats& cs = CaptureStats::instance();
  CaptureStats::enable();
  uint32_t ids[2] = {};
  uint64_t misses[2] = {}, shared[2] = {};
  // Again if the loaded objects changed between the two (a new generation: rows of the old one unused).
  for (int attempt = 0; attempt < 3; attempt++) {
    const uint32_t generation = unwind::ObjectTable::instance().snapshot()->generation;
    for (int t = 0; t < 2; t++) {
      cs.reset();
      std::thread([&] { ids[t] = via(path_a, f.capture).stack_id; }).join();
      misses[t] = cs.cache_misses.load();
      shared[t] = cs.shared_hits.load();
    }
    if (unwind::ObjectTable::instance().snapshot()->generation == generation) break;
  }
  CaptureStats::disable();
  EXPECT_EQ(ids[0], ids[1]);
  EXPECT_GE(misses[1], 3u) << "a new thread's cache is empty";
  EXPECT_EQ(shared[1], misses[1]) << "the second thread searched rows the first had looked up";
}

// The stats split a walked launch's unwind (issue 22: on the H200 the few launches that walked cost
// 20-30 us each): the walk itself, and inside it the lookups of return addresses the thread's cache
// lacks; a walk after an object was unloaded finds the thread's cache emptied, and after a load not.
TEST(StackCapture, StatsSplitAWalkIntoItsLookups) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  CaptureStats& cs = CaptureStats::instance();
  CaptureStats::enable();
  cs.reset();
  std::thread([&] { via(path_a, f.capture); }).join();  // a new thread: every frame looked up
  const uint64_t walks = cs.walks.load(), misses = cs.cache_misses.load(), resets = cs.walks_after_reset.load();
  const uint64_t walk_ticks = cs.ticks[CaptureStats::UnwindWalk].load(), lookup_ticks = cs.ticks[CaptureStats::UnwindLookup].load();
  via(path_b, f.capture);  // this thread's cache filled
  // From one call site, three phases: the memo made; a library loaded (the memo holds and the cache
  // stays: Snapshot::generation moves only when an object is gone); the library unloaded (the cache
  // emptied, the memo fails: one walk).
  ASSERT_EQ(dlopen("libanl.so.1", RTLD_NOW | RTLD_NOLOAD), nullptr) << "libanl is loaded already";
  void* lib = nullptr;
  uint64_t phase_walks[3] = {}, phase_resets[3] = {};
  uint32_t generation[3] = {};
  int phases = 3, twice = 2;
  asm volatile("" : "+r"(phases), "+r"(twice));  // loops the compiler cannot unroll: one call site
  for (int p = 0; p < phases; p++) {
    if (p == 1) {
      lib = dlopen("libanl.so.1", RTLD_NOW);
      ASSERT_NE(lib, nullptr) << dlerror();
    }
    if (p == 2) dlclose(lib);
    generation[p] = unwind::ObjectTable::instance().refresh_now()->generation;
    cs.reset();
    for (int i = 0; i < twice; i++) via(path_b, f.capture);
    phase_walks[p] = cs.walks.load();
    phase_resets[p] = cs.walks_after_reset.load();
  }
  CaptureStats::disable();
  EXPECT_EQ(walks, 1u);
  EXPECT_GE(misses, 3u);
  EXPECT_EQ(resets, 0u) << "a new thread's cache was not emptied by a change";
  EXPECT_GT(lookup_ticks, 0u);
  EXPECT_GE(walk_ticks, lookup_ticks);
  EXPECT_EQ(phase_walks[0], 1u) << "the second launch takes its memo";
  EXPECT_EQ(phase_resets[0], 0u);
  EXPECT_EQ(generation[1], generation[0]) << "a load moved the generation";
  EXPECT_EQ(phase_walks[1], 0u) << "the memo did not hold across a load";
  EXPECT_EQ(phase_resets[1], 0u);
  EXPECT_EQ(generation[2], generation[1] + 1) << "an unload did not move the generation";
  EXPECT_EQ(phase_walks[2], 1u);
  EXPECT_EQ(phase_resets[2], 1u) << "the thread's cache was kept across an unload";
}

// One native path launching many kernels (cuDNN's engines, measured on resnet_train): a memo's key
// leaves the kernel out by default, so the path's first walk serves the kernels after it (with the
// kernel in the key each kernel's first launch walks: 8 of these 16).
TEST(StackCapture, OnePathLaunchingManyKernelsWalksOnce) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  f.capture.set_verify_memos(true);
  std::vector<StackCapture::Result> r;
  for (int i = 0; i < 16; i++) r.push_back(via_site(f.capture, 100 + i % 8));
  for (const auto& x : r) EXPECT_EQ(x.stack_id, r[0].stack_id);
  StackCapture::MemoCheck c = f.capture.memo_check();
  EXPECT_EQ(c.checked, 15u);
  EXPECT_EQ(c.differed, 0u);
}

// Launches of call paths new to their key (here: a new autograd node class, the key's salt; in a
// program also new Python frames) whose native walk repeats one made before at their depth take that
// walk's frames from its memo instead of walking: A with salts 1 2 3, then B (another native path at
// the same depth) with salts 4 5 1. A2 and A3 take A1's walk and B5 takes B4's; B4 checks A's two memos
// at its depth, which do not hold, and walks; B1's key has A1's memo, which does not hold, and then
// B5's at its depth does. Every launch's stack is the one a full walk gives.
template <int K>
__attribute__((noinline)) StackCapture::Result salted(StackCapture& c, uint64_t salt) {
  auto r = c.capture(9, true, salt);
  asm volatile("" ::"r"(K));
  return r;
}
using SaltedPath = StackCapture::Result (*)(StackCapture&, uint64_t);
__attribute__((noinline)) StackCapture::Result via_salted(SaltedPath p, StackCapture& c, uint64_t salt) {
  auto r = p(c, salt);  // one call instruction for both paths: the same depth
  asm volatile("");
  return r;
}
// A launch of the sequences below: its path and salt, and another StackCapture's launch first (if set).
struct SaltedLaunch {
  SaltedPath path;
  uint64_t salt;
  StackCapture* before = nullptr;
};
// Every launch of `n` through one call instruction, `rounds` times, with the donors' and memo checks'
// counts after each round. The trip counts are read at run time (volatile), so that no compiler unrolls
// or peels a loop into several call sites, each another stack (GCC's TSan build peeled a round).
struct Counts {
  StackCapture::Donors donors;
  StackCapture::MemoCheck checks;
  uint64_t fast_holds;  // StackCapture::thread_fast_holds()
};
__attribute__((noinline)) void launch_each(const SaltedLaunch* l, int n, StackCapture& c,
                                           std::vector<StackCapture::Result>& out) {
  volatile int count = n;
  for (int i = 0; i < count; i++) {
    if (l[i].before) l[i].before->capture(9);
    out.push_back(via_salted(l[i].path, c, l[i].salt));
  }
}
__attribute__((noinline)) std::vector<Counts> launch_rounds(const SaltedLaunch* l, int n, int rounds, StackCapture& c,
                                                            std::vector<StackCapture::Result>& out) {
  std::vector<Counts> after;
  volatile int count = rounds;
  for (int k = 0; k < count; k++) {
    launch_each(l, n, c, out);
    after.push_back({c.donors(), c.memo_check(), c.thread_fast_holds()});
  }
  return after;
}

TEST(StackCapture, ANewKeyTakesTheWalkOfAnotherKeyAtItsDepthThatHolds) {
  for (bool donors : {true, false}) {
    Fixture f(UnwindPolicy::Always);
    unwind::ObjectTable::instance().build_all_now();
    f.capture.set_verify_memos(true);
    f.capture.set_memo_donors(donors);
    const SaltedPath a = salted<0>, b = salted<1>;
    const SaltedLaunch order[6] = {{a, 1}, {a, 2}, {a, 3}, {b, 4}, {b, 5}, {b, 1}};
    std::vector<StackCapture::Result> r;
    const std::vector<Counts> after = launch_rounds(order, 6, 2, f.capture, r);
    ASSERT_EQ(r.size(), 12u);
    EXPECT_EQ(r[1].stack_id, r[0].stack_id);
    EXPECT_EQ(r[2].stack_id, r[0].stack_id);
    EXPECT_NE(r[3].stack_id, r[0].stack_id);
    EXPECT_EQ(r[4].stack_id, r[3].stack_id);
    EXPECT_EQ(r[5].stack_id, r[3].stack_id);
    EXPECT_EQ(f.capture.stacks(), 2u);
    const StackCapture::Donors d = after[0].donors;
    const StackCapture::MemoCheck c = after[0].checks;
    EXPECT_EQ(d.took, donors ? 4u : 0u) << donors;
    EXPECT_EQ(d.checked, donors ? 7u : 0u) << donors;
    // The donated launches were walked again in full and got the same stack.
    EXPECT_EQ(c.checked, donors ? 4u : 0u);
    EXPECT_EQ(c.differed, 0u);
    // Each launch left a memo of its own key: the same launches again take those, no other key's.
    for (int i = 6; i < 12; i++) EXPECT_EQ(r[i].stack_id, r[i - 6].stack_id) << i;
    EXPECT_EQ(after[1].donors.took, d.took);
    EXPECT_EQ(after[1].checks.checked, c.checked + 6);
    EXPECT_EQ(after[1].checks.differed, 0u);
  }
}

// One path launching at several points of a step, each time followed by another (a layer's kernel
// once per layer; on an engine thread one kernel under many nodes of a class): A1 B2 A1 C3, where
// the salt is the key's (as a node class is). The entry that followed A1's last launch is the wrong
// guess at both of A1's points; the pair of entries before the launch tells them apart, so with the
// history every launch takes its memo by the fingerprint (the product's fast path), and without it
// B2 and C3 miss it each round. (A collision of two of the four histories in MemoTable::after's
// 16,384 slots would cost two of them a round: about 0.04% of runs.)
TEST(StackCapture, APathAtSeveralPointsOfAStepIsPredictedByTheLaunchesBefore) {
  for (int history : {0, 1, 2, 3, 4}) {
    Fixture f(UnwindPolicy::Always);
    unwind::ObjectTable::instance().build_all_now();
    f.capture.set_memo_history(history);
    f.capture.set_memo_context(false);  // the history alone (the context index finds these too: below)
    const SaltedPath a = salted<0>;
    const SaltedLaunch order[4] = {{a, 1}, {a, 2}, {a, 1}, {a, 3}};
    std::vector<StackCapture::Result> r;
    const std::vector<Counts> after = launch_rounds(order, 4, 12, f.capture, r);  // 2 rounds to learn, 10 measured
    // One launch back (history 1) is the last launch's successor again.
    EXPECT_EQ(after[11].fast_holds - after[1].fast_holds, history >= 2 ? 40u : 20u) << history;
    for (const auto& x : r) EXPECT_EQ(x.stack_id, r[0].stack_id);
  }
}

// Paths whose order changes from step to step (here a rotation of four keys each round, so no history
// of launches recurs within the run): the predictions fail, and the memo last found for the launch's
// Python fingerprint at its depth (MemoTable::by_context) still takes it on the fast path.
__attribute__((noinline)) std::vector<Counts> launch_each_round(const SaltedLaunch* l, int n, int rounds, StackCapture& c,
                                                                std::vector<StackCapture::Result>& out) {
  std::vector<Counts> after;
  volatile int count = rounds;
  for (int k = 0; k < count; k++) {
    launch_each(l + k * n, n, c, out);  // one call instruction for every round's launches
    after.push_back({c.donors(), c.memo_check(), c.thread_fast_holds()});
  }
  return after;
}
TEST(StackCapture, ALaunchWhosePredictionsFailTakesTheMemoOfItsContext) {
  const SaltedPath a = salted<0>;
  std::vector<SaltedLaunch> order;
  for (int r = 0; r < 12; r++)
    for (int i = 0; i < 4; i++) order.push_back({a, static_cast<uint64_t>(1 + (i * (r % 3 + 1) + r) % 4)});
  for (bool context : {true, false}) {
    Fixture f(UnwindPolicy::Always);
    unwind::ObjectTable::instance().build_all_now();
    f.capture.set_memo_context(context);
    f.capture.set_verify_memos(true);
    std::vector<StackCapture::Result> r;
    const std::vector<Counts> after = launch_each_round(order.data(), 4, 12, f.capture, r);
    const uint64_t fast = after[11].fast_holds - after[1].fast_holds;
    if (context)
      EXPECT_EQ(fast, 40u);
    else
      EXPECT_LT(fast, 35u) << "the guard: without the context index some predictions fail (" << fast << ")";
    for (const auto& x : r) EXPECT_EQ(x.stack_id, r[0].stack_id);
    EXPECT_EQ(after[11].checks.differed, 0u);
  }
}

// Another StackCapture's launch on the thread empties the thread's table of stack contents, into which
// the memos of this one's walks point: after it, none of them gives its frames to another key. Here A1
// is walked, B's launch empties the table, B4 walks and its content takes A1's old place, and A2 (A1's
// path under another key) must walk: with A1 still a donor it would take B4's frames.
TEST(StackCapture, AnotherCapturesLaunchOnTheThreadRetiresTheDonors) {
  Fixture f(UnwindPolicy::Always), other(UnwindPolicy::Off);
  unwind::ObjectTable::instance().build_all_now();
  f.capture.set_verify_memos(true);
  const SaltedPath a = salted<0>, b = salted<1>;
  const SaltedLaunch order[3] = {{a, 1}, {b, 4, &other.capture}, {a, 2}};
  std::vector<StackCapture::Result> r;
  launch_rounds(order, 3, 1, f.capture, r);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_NE(r[1].stack_id, r[0].stack_id);
  EXPECT_EQ(r[2].stack_id, r[0].stack_id);
  EXPECT_EQ(f.capture.donors().took, 0u);
  EXPECT_EQ(f.capture.memo_check().differed, 0u);
}

// A launch says whether it was walked in full or took a memo (AIFLAME_LAB=autograd_ab compares the two
// kinds apart): in A B A B ... only each path's first launches walk.
TEST(StackCapture, OnlyLaunchesWithoutAMemoThatHoldsAreWalked) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  const Path paths[2] = {path_a, path_b};
  int walked = 0;
  std::vector<StackCapture::Result> r;
  for (int i = 0; i < 1000; i++) r.push_back(via(paths[i % 2], f.capture));
  for (const auto& x : r) walked += x.walked;
  EXPECT_TRUE(r[0].walked);
  EXPECT_TRUE(r[1].walked);
  EXPECT_GE(walked, 2);
  EXPECT_LE(walked, 4);
  for (const auto& x : r) EXPECT_TRUE(x.unwound);
}

// A key's memos that no longer hold (a warm-up's call paths, at the same depth and Python frames as
// the loop's) must not keep the loop's paths from keeping theirs. Four paths through one function fill
// the key's four memos; then three paths through another function of the same frame size take turns.
// Replacing the last memo checked puts them in the same ways, every launch (the cold benchmark's
// timed paths: 0% from their memos); with set_memo_evict_lru the stale memos go first. (With two
// paths the predicted memo, checked alone first and then last in line, no longer lets them collide.)
__attribute__((noinline)) StackCapture::Result warm_site(Path p, StackCapture& c) {
  auto r = p(c, 9);
  asm volatile("");
  return r;
}
__attribute__((noinline)) StackCapture::Result loop_site(Path p, StackCapture& c) {
  auto r = p(c, 9);
  asm volatile("");
  return r;
}
using Site = StackCapture::Result (*)(Path, StackCapture&);
__attribute__((noinline)) StackCapture::Result at_site(Site s, Path p, StackCapture& c) {
  auto r = s(p, c);  // one call instruction for both sites: the same depth, so the same key
  asm volatile("");
  return r;
}
int loop_walks(bool lru, int history = StackCapture::kDefaultMemoHistory) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  f.capture.set_memo_evict_lru(lru);
  f.capture.set_memo_history(history);
  const Path warm[4] = {path_a, path_b, path_c, path_d};
  for (int i = 0; i < 40; i++) at_site(warm_site, warm[i % 4], f.capture);
  const Path loop[3] = {path_a, path_b, path_c};
  int walked = 0;
  for (int i = 0; i < 99; i++) walked += at_site(loop_site, loop[i % 3], f.capture).walked;
  return walked;
}
TEST(StackCapture, StaleMemosOfAKeyAreReplacedFirstWithLru) {
  EXPECT_LE(loop_walks(true), 4) << "the loop's three paths should walk about once each";
  EXPECT_LE(loop_walks(true, 0), 4) << "the same without the launches' history";
  // The guard, without the history: its prediction changes which memo a launch checks last, and so
  // which way the walk replaces (67 of 99 walked with it).
  EXPECT_GE(loop_walks(false, 0), 90) << "replacing the last memo checked: the two paths share one way (if this "
                                      "fails, the condition this test guards no longer arises)";
}

// The capture stats name why the memos checked at a launch that walked failed (issue 22: a loop's
// launches that walked to their memo's own stack). path_b under path_a's key (the same site and
// depth, frames that differ in one return address): path_a's memo fails on a word the walk reads.
TEST(StackCapture, StatsNameWhyAMemoFailed) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  CaptureStats::enable();
  const Path paths[5] = {path_a, path_a, path_a, path_b, path_a};
  std::string causes[5];
  bool walked[5];
  for (int i = 0; i < 5; i++) {  // one call site
    CaptureStats::instance().reset();
    walked[i] = via(paths[i], f.capture).walked;
    causes[i] = CaptureStats::instance().miss_causes();
  }
  CaptureStats::disable();
  EXPECT_EQ(causes[0], "none") << "no memo to check at the first launch";
  EXPECT_FALSE(walked[2]);
  EXPECT_EQ(causes[2], "none");
  EXPECT_TRUE(walked[3]);
  EXPECT_EQ(causes[3], "words 1");
  EXPECT_FALSE(walked[4]) << "path_a's memo was kept";
}

// A training loop's thread launches from a few hundred call paths (hf_gpt2.py's main thread ~190 on
// the H100): each keeps its memo between its launches. Three rounds over 256 paths (kernels at one
// call site): after the first round nearly every launch takes its memo (a set of 4 ways that five
// paths or more hash to loses some: ~2% of 256 paths in 256 sets).
TEST(StackCapture, AThreadKeepsTheMemosOfHundredsOfCallPaths) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  f.capture.set_verify_memos(true);  // counts the launches that took their memo
  f.capture.set_memo_key_site(true);  // the kernels as keys of their own: 256 keys for the table to keep
  constexpr uint64_t kPaths = 256;
  for (int round = 0; round < 3; round++)
    for (uint64_t site = 0; site < kPaths; site++) via_site(f.capture, 0x5000 + site);
  StackCapture::MemoCheck c = f.capture.memo_check();
  EXPECT_GE(c.checked, 2 * kPaths * 95 / 100);
  EXPECT_EQ(c.differed, 0u);
}

// Past the table's sets' even share: 1,024 keys (half its 2,048 memos) launched in the same order four
// times, as a training step's paths are. With one set per key some sets got more keys than their four
// ways in most layouts, and those keys lost their memos at every round (about a fifth of them at
// 1,024); with two candidate sets per key every key keeps its memo.
TEST(StackCapture, AThreadKeepsTheMemosOfAThousandCallPathsInTheSameOrderEachStep) {
  Fixture f(UnwindPolicy::Always);
  unwind::ObjectTable::instance().build_all_now();
  f.capture.set_verify_memos(true);  // counts the launches that took their memo
  f.capture.set_memo_key_site(true);
  constexpr uint64_t kPaths = 1024;
  for (int round = 0; round < 4; round++)
    for (uint64_t site = 0; site < kPaths; site++) via_site(f.capture, 0x9000 + 7 * site);
  StackCapture::MemoCheck c = f.capture.memo_check();
  EXPECT_GE(c.checked, 3 * kPaths * 99 / 100);
  EXPECT_EQ(c.differed, 0u);
}

// Threads intern through their own tables and the shared one: one id per content across threads
// (the threads' stacks below the two paths are the same: std::thread's entry frames).
TEST(StackCapture, IdsAreUniquePerContentAcrossThreads) {
  Fixture f(UnwindPolicy::Always);
  const Path paths[2] = {path_a, path_b};
  constexpr int kThreads = 4;
  std::vector<uint32_t> ids[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; i++) ids[t].push_back(via(paths[(i + t) % 2], f.capture).stack_id);
    });
  for (auto& t : threads) t.join();
  uint32_t a = ids[0][0], b = ids[0][1];
  EXPECT_NE(a, b);
  for (int t = 0; t < kThreads; t++)
    for (int i = 0; i < 2000; i++) ASSERT_EQ(ids[t][i], (i + t) % 2 ? b : a) << t << " " << i;
  EXPECT_EQ(f.capture.stacks(), 2u);
  ASSERT_TRUE(f.writer.close());
  auto p = read_profile(f.path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->stacks.size(), 2u);  // each written once
}

TEST(StackCapture, StacksAreWrittenOnceAndHoldThisTestsFrames) {
  Fixture f(UnwindPolicy::Always);
  for (int i = 0; i < 5; i++) path_a(f.capture, 1);
  ASSERT_TRUE(f.writer.close());
  auto p = read_profile(f.path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->stacks.size(), 1u);
  EXPECT_GT(p->stacks.begin()->second.native.size(), 3u);
}

TEST(StackCapture, OffPolicyRecordsNoNativeFrames) {
  Fixture f(UnwindPolicy::Off);
  auto r = path_a(f.capture, 1);
  EXPECT_FALSE(r.unwound);
  ASSERT_TRUE(f.writer.close());
  auto p = read_profile(f.path);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->stacks.at(r.stack_id).native.empty());
}

// Another library's thread-local whose destructor launches: constructed before the thread's first
// capture, so destroyed after the capture's own thread-locals. Its launches must still get their
// stack's id, from the shared table, and never touch the thread's freed table (a heap use after free
// that ThreadSanitizer found, and that the ASan build of this test reports without the fix).
struct CapturesAtThreadExit {
  StackCapture* capture = nullptr;
  uint32_t* id = nullptr;
  ~CapturesAtThreadExit() {
    if (capture) *id = path_a(*capture, 1).stack_id;
  }
};
thread_local CapturesAtThreadExit t_late;

TEST(StackCapture, ALaunchAfterTheThreadsTablesAreGoneGetsItsStack) {
  Fixture f(UnwindPolicy::Off);
  uint32_t during = 0, at_exit = 0;
  std::thread([&] {
    t_late.capture = &f.capture;  // constructed here, before the capture's thread-locals
    t_late.id = &at_exit;
    during = path_a(f.capture, 1).stack_id;
  }).join();
  EXPECT_NE(during, 0u);
  EXPECT_EQ(at_exit, during);
  EXPECT_EQ(f.capture.stacks(), 1u);
}

}  // namespace
}  // namespace aiflame
