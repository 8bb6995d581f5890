// Recorder's launch counts: per-thread tallies summed into the End record (issue 22), and the capture
// time measured with the TSC clock.
#include "record/recorder.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "profile/profile.h"
#include "record/measure/capture_stats.h"
#include "record/unwind/object_table.h"
#include "test_util.h"

namespace aiflame {
namespace {

struct Recording {
  std::string path = test::temp_path("recorder");
  Recorder rec;
  explicit Recording(uint32_t autograd_ab = 0, uint32_t capture_probe = 0, UnwindPolicy policy = UnwindPolicy::Off) {
    RecordOptions o;
    o.output = path;
    o.quiet = true;
    o.measure.autograd_ab = autograd_ab;
    o.measure.capture_probe = capture_probe;
    std::string err;
    EXPECT_TRUE(rec.start(o, ProcessRecord{}, &err)) << err;
    rec.stacks().init(policy, /*python=*/false);
  }
  EndRecord finish() {
    rec.finish(1);
    const std::string file = path + "." + std::to_string(getpid());
    auto p = read_profile(file);
    std::remove(file.c_str());
    EXPECT_TRUE(p.ok()) << p.error();
    return p.ok() && p->end ? *p->end : EndRecord{};
  }
};

// A launch call's duration (entry to exit, the backend's clock) rides on the thread's next launch
// record; an exit without a recorded entry, or without a time, leaves none (the trace's launch slices).
TEST(Recorder, TheLaunchCallsDurationRidesOnTheNextLaunch) {
  Recording r;
  uint64_t clock = 500, reads = 0;
  auto now = [](const void* c) { return *static_cast<const uint64_t*>(c); };
  struct Counted { uint64_t* clock; uint64_t* reads; };
  Counted counted{&clock, &reads};
  auto counted_now = [](const void* c) {
    const auto* k = static_cast<const Counted*>(c);
    ++*k->reads;
    return *k->clock;
  };
  r.rec.on_launch_exit(counted_now, &counted);  // a launch the recorder did not record: no clock read
  EXPECT_EQ(reads, 0u);
  r.rec.on_launch(307, 1, 0x1000, 1000);
  clock = 1750;
  r.rec.on_launch_exit(now, &clock);
  r.rec.on_launch(307, 2, 0x1000, 5000);
  r.rec.on_launch_exit();  // no clock
  r.rec.on_launch(307, 3, 0x1000, 9000);
  r.rec.finish(1);
  const std::string file = r.path + "." + std::to_string(getpid());
  std::vector<uint32_t> durations;
  Status st = for_each_launch(file, [&](const LaunchRecord& l) { durations.push_back(l.prev_duration); });
  std::remove(file.c_str());
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_EQ(durations, (std::vector<uint32_t>{0, 750, 0}));
}

TEST(Recorder, LaunchesOfEveryThreadAreCountedOnce) {
  Recording r;
  constexpr int kThreads = 8, kEach = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; i++) r.rec.on_launch(211, static_cast<uint32_t>(t * kEach + i + 1), 0x1000 + (i & 3), 1);
    });
  for (int i = 0; i < 100; i++) r.rec.on_launch(211, 1000000 + i, 0x2000, 1);  // and this thread
  for (auto& t : threads) t.join();
  EndRecord end = r.finish();
  EXPECT_EQ(end.launches, uint64_t{kThreads} * kEach + 100);
  EXPECT_EQ(end.launches_unwound, 0u);  // UnwindPolicy::Off
  EXPECT_GT(end.capture_ns, 0u);
}

// Past 256 launching threads the rest share one tally, counted with atomic adds: none is lost while
// they launch at once.
TEST(Recorder, ThreadsPastTheirOwnTalliesShareOneWithoutLosingLaunches) {
  Recording r;
  constexpr int kThreads = 300, kEach = 400;
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < kEach; i++) r.rec.on_launch(211, static_cast<uint32_t>(t * kEach + i + 1), 0x1000, 1);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(r.finish().launches, uint64_t{kThreads} * kEach);
}

TEST(Recorder, ASecondRecorderOnTheSameThreadsCountsOnlyItsOwnLaunches) {
  uint64_t first = 0;
  {
    Recording a;
    for (int i = 0; i < 300; i++) a.rec.on_launch(211, i + 1, 0x1000, 1);
    first = a.finish().launches;
  }
  Recording b;
  for (int i = 0; i < 70; i++) b.rec.on_launch(211, i + 1, 0x1000, 1);
  EXPECT_EQ(first, 300u);
  EXPECT_EQ(b.finish().launches, 70u);
}

TEST(Recorder, CaptureTimeIsInNanoseconds) {
  // on_launch's time is summed in clock ticks and converted at the end: the total cannot exceed the
  // wall time of the launches, and no build runs a launch (a record encoded and appended) in 10 ns.
  Recording r;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20000; i++) r.rec.on_launch(211, i + 1, 0x1000 + (i & 7), 1);
  const auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  EndRecord end = r.finish();
  EXPECT_GT(end.capture_ns, 20000u * 10);  // at least 10 ns a launch
  EXPECT_LE(end.capture_ns, static_cast<uint64_t>(wall));
}

// The End record tells the launches that walked their stack from those that took their memo (the
// summary's split, issue 22), on the product's launch path and on the measured one (a probe on).
TEST(Recorder, TheEndRecordCountsTheLaunchesThatWalkedApart) {
  for (uint32_t probe : {0u, 3u}) {
    Recording r(0, probe, UnwindPolicy::Always);
    for (int i = 0; i < 2000; i++) r.rec.on_launch(211, i + 1, 0x1000, 1);  // one call path
    EndRecord end = r.finish();
    EXPECT_EQ(end.launches, 2000u) << probe;
    // Its first launch walks; the rest take its memo (a few more walk while the rows are built).
    EXPECT_GE(end.walked_launches, 1u) << probe;
    EXPECT_LE(end.walked_launches, 50u) << probe;
    EXPECT_GT(end.walked_ns, 0u) << probe;
    EXPECT_LE(end.walked_ns, end.capture_ns) << probe;
  }
  Recording off;  // UnwindPolicy::Off: nothing walked
  for (int i = 0; i < 100; i++) off.rec.on_launch(211, i + 1, 0x1000, 1);
  EndRecord end = off.finish();
  EXPECT_EQ(end.walked_launches, 0u);
  EXPECT_EQ(end.walked_ns, 0u);
}

// Launches from one call site for 800 ms with pauses: the A/B's 40-70 ms slices, many of each kind.
uint32_t launch_for_many_slices(Recording& r) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(800);
  uint32_t n = 0;
  while (std::chrono::steady_clock::now() < until) {
    r.rec.on_launch(211, ++n, 0x1000, 1);
    if (n % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return n;
}

// AIFLAME_LAB=autograd_ab: launches fall in slices with and without the tracking, about half each over a
// run of many slices, and every launch in one of the two.
TEST(Recorder, TheAutogradABSplitsLaunchesBetweenSlicesWithAndWithoutTracking) {
  Recording r(/*autograd_ab=*/1);
  const uint32_t n = launch_for_many_slices(r);
  const Recorder::AutogradAB ab = r.rec.autograd_ab();
  EndRecord end = r.finish();
  EXPECT_EQ(ab.with_launches + ab.without_launches, uint64_t{n});
  EXPECT_EQ(end.launches, uint64_t{n});
  EXPECT_GT(ab.with_launches, n / 5u) << "slices without tracking: " << ab.without_launches;
  EXPECT_GT(ab.without_launches, n / 5u) << "slices with tracking: " << ab.with_launches;
  EXPECT_GT(ab.with_ns, 0u);
  EXPECT_GT(ab.without_ns, 0u);
  // The walked launches are a part of each side.
  EXPECT_LE(ab.with_walked, ab.with_launches);
  EXPECT_LE(ab.without_walked, ab.without_launches);
  EXPECT_LE(ab.with_walked_ns, ab.with_ns);
  EXPECT_LE(ab.without_walked_ns, ab.without_ns);
}

// The A/B's stratified figure: walked launches (10 us) crowd into the slices with tracking, which add
// 0.2 us to every launch. The raw difference reads the walks; the stratified one the 0.2 us.
TEST(Recorder, TheAutogradABComparesWalkedLaunchesApartFromMemoLaunches) {
  Recorder::AutogradAB ab;
  ab.with_walked = 300;
  ab.with_walked_ns = 300 * 10200;
  ab.with_launches = 300 + 9700;
  ab.with_ns = ab.with_walked_ns + 9700 * 1200;
  ab.without_walked = 20;
  ab.without_walked_ns = 20 * 10000;
  ab.without_launches = 20 + 9980;
  ab.without_ns = ab.without_walked_ns + 9980 * 1000;
  EXPECT_GT(ab.raw_us(), 0.4);
  EXPECT_NEAR(ab.stratified_us(), 0.2, 1e-9);
  // The weights are each kind's share of all launches: memo launches 0.2 us more, walked 1 us more.
  ab.with_walked_ns = 300 * 11000;
  ab.with_ns = ab.with_walked_ns + 9700 * 1200;
  EXPECT_NEAR(ab.stratified_us(), (320.0 * 1.0 + 19680.0 * 0.2) / 20000.0, 1e-9);
  // No walked launch without tracking: nothing to compare them with, so the raw figure.
  ab.without_walked = 0;
  ab.without_walked_ns = 0;
  EXPECT_DOUBLE_EQ(ab.stratified_us(), ab.raw_us());
  EXPECT_DOUBLE_EQ(Recorder::AutogradAB{}.stratified_us(), 0.0);
}

// AIFLAME_LAB=capture_probe=2: every launch that took its memo runs its parts again; a walked launch does
// not (its second capture would take the memo its walk just made). The parts fit inside on_launch.
TEST(Recorder, ThePhaseProbeRunsTheLaunchPathAgainAfterEachMemoLaunch) {
  unwind::ObjectTable::instance().build_all_now();  // no launch falls back to backtrace() while rows are built
  Recording r(/*autograd_ab=*/0, /*capture_probe=*/2, UnwindPolicy::Always);
  for (int i = 0; i < 2000; i++) r.rec.on_launch(211, i + 1, 0x1000, 1);
  const Recorder::PhaseProbe p = r.rec.phase_probe();
  EndRecord end = r.finish();
  EXPECT_EQ(end.launches, 2000u);
  EXPECT_GE(p.launches, 1990u);  // all but the path's first launches
  EXPECT_LT(p.launches, 2000u);
  EXPECT_GT(p.capture_us, 0.0);
  EXPECT_GT(p.capture_again_us, 0.0);
  EXPECT_LT(p.capture_us, p.on_launch_us);
  EXPECT_GE(p.autograd_us, 0.0);
  // Its histograms: the probed launches' two captures, and on_launch of every launch by kind.
  EXPECT_EQ(r.rec.launch_histogram(LaunchHistogram::CaptureFirst).n, p.launches);
  EXPECT_EQ(r.rec.launch_histogram(LaunchHistogram::CaptureAgain).n, p.launches);
  EXPECT_EQ(r.rec.launch_histogram(LaunchHistogram::Memo).n, p.launches);
  EXPECT_EQ(r.rec.launch_histogram(LaunchHistogram::Walked).n, 2000u - p.launches);
  Recording plain(/*autograd_ab=*/0, /*capture_probe=*/0, UnwindPolicy::Always);
  for (int i = 0; i < 100; i++) plain.rec.on_launch(211, i + 1, 0x1000, 1);
  EXPECT_EQ(plain.rec.phase_probe().launches, 0u);
  EXPECT_EQ(plain.rec.launch_histogram(LaunchHistogram::Memo).n, 0u);
  plain.finish();
}

// AIFLAME_LAB=capture_probe=4: a round of thread-local and global accesses timed before every launch, on
// every thread, and nothing else of the probes.
TEST(Recorder, TheTlsProbeTimesARoundBeforeEveryLaunch) {
  Recording r(/*autograd_ab=*/0, /*capture_probe=*/4, UnwindPolicy::Always);
  for (int i = 0; i < 300; i++) r.rec.on_launch(211, i + 1, 0x1000, 1);
  std::thread([&] {
    for (int i = 0; i < 100; i++) r.rec.on_launch(211, 5000 + i, 0x1000, 1);
  }).join();
  const TlsProbe::Figures f = r.rec.tls_probe();
  EXPECT_EQ(f.rounds, 400u);
  for (int i = 0; i < 2; i++) {
    EXPECT_GT(f.tls_ns[i], 0.0);
    EXPECT_GT(f.global_ns[i], 0.0);
    EXPECT_LT(f.tls_ns[i], 1e4);  // per access: a sum divided by rounds and accesses, not a total
  }
  EXPECT_EQ(r.rec.launch_histogram(LaunchHistogram::Memo).n, 0u);
  EXPECT_EQ(r.rec.phase_probe().launches, 0u);
  Recording plain(/*autograd_ab=*/0, /*capture_probe=*/0, UnwindPolicy::Always);
  for (int i = 0; i < 10; i++) plain.rec.on_launch(211, i + 1, 0x1000, 1);
  EXPECT_EQ(plain.rec.tls_probe().rounds, 0u);
  r.finish();
  plain.finish();
}

// AIFLAME_LAB=capture_probe=3: each launch's time in the launch path counted by kind, nothing run again.
TEST(Recorder, TheHistogramProbeCountsEveryLaunchByKind) {
  unwind::ObjectTable::instance().build_all_now();
  Recording r(/*autograd_ab=*/0, /*capture_probe=*/3, UnwindPolicy::Always);
  for (int i = 0; i < 2000; i++) r.rec.on_launch(211, i + 1, 0x1000, 1);
  std::thread([&] {
    for (int i = 0; i < 500; i++) r.rec.on_launch(211, 5000 + i, 0x1000, 1);
  }).join();
  const auto memo = r.rec.launch_histogram(LaunchHistogram::Memo);
  const auto walked = r.rec.launch_histogram(LaunchHistogram::Walked);
  EXPECT_EQ(r.rec.phase_probe().launches, 0u);
  EXPECT_EQ(r.rec.launch_histogram(LaunchHistogram::CaptureFirst).n, 0u);
  // The memo launches again by the gap before them (each thread's first launch walked: every memo
  // launch has a previous one); these follow each other at once.
  const auto gap_short = r.rec.launch_histogram(LaunchHistogram::MemoGapShort);
  EXPECT_EQ(gap_short.n + r.rec.launch_histogram(LaunchHistogram::MemoGapMid).n +
                r.rec.launch_histogram(LaunchHistogram::MemoGapLong).n,
            memo.n);
  EXPECT_GT(gap_short.n, memo.n / 2);
  // And by whether the capture took the memo it predicted (the histogram run's launches take the
  // measured path, which predicts as the product's).
  const auto predicted = r.rec.launch_histogram(LaunchHistogram::MemoPredicted);
  EXPECT_EQ(predicted.n + r.rec.launch_histogram(LaunchHistogram::MemoSearched).n, memo.n);
  EXPECT_GT(predicted.n, memo.n / 2);
  // Each thread's first launch walked and interned its stack: among the slowest, said so.
  const std::vector<LaunchOutlier> slow = r.rec.slowest_launches();
  EXPECT_EQ(slow.size(), LaunchOutliers::kKeep);
  int firsts = 0;
  for (const auto& o : slow)
    if (o.nth == 1) {
      firsts++;
      EXPECT_TRUE(o.walked);
      EXPECT_TRUE(o.new_stack);
    }
  EXPECT_EQ(firsts, 2);
  for (size_t i = 1; i < slow.size(); i++) EXPECT_GE(slow[i - 1].ticks, slow[i].ticks);
  r.finish();
  EXPECT_EQ(memo.n + walked.n, 2500u);
  EXPECT_GE(walked.n, 2u);  // each thread's first launch
  EXPECT_LE(walked.n, 10u);
  EXPECT_GT(memo.p50_us, 0.0);
  EXPECT_LE(memo.p10_us, memo.p50_us);
  EXPECT_LE(memo.p50_us, memo.p99_us);
  EXPECT_GT(walked.mean_us, memo.p50_us);  // a walk costs more than a check
}

// AIFLAME_LAB=autograd_ab=2: the slices without switch off the capture's predicted memo, not the tracking.
// One call path launching again and again takes its memo as the predicted one in the slices with it,
// and searches its key's set in the slices without.
TEST(Recorder, TheAutogradABTwoSwitchesThePredictedMemo) {
  unwind::ObjectTable::instance().build_all_now();
  Recording r(/*autograd_ab=*/2, /*capture_probe=*/0, UnwindPolicy::Always);
  CaptureStats::enable();
  CaptureStats& cs = CaptureStats::instance();
  cs.reset();
  const uint32_t n = launch_for_many_slices(r);
  const Recorder::AutogradAB ab = r.rec.autograd_ab();
  const uint64_t held = cs.memo_held.load(), slow = cs.memo_slow.load();
  CaptureStats::disable();
  r.finish();
  EXPECT_EQ(ab.with_launches + ab.without_launches, uint64_t{n});
  EXPECT_GT(ab.without_launches, n / 5u);
  EXPECT_GE(held + 8, uint64_t{n});  // all but the path's first launches take the memo
  EXPECT_GE(slow + 8, ab.without_launches) << "the slices without search the set";
  EXPECT_LE(slow, ab.without_launches + 1) << "the slices with take the predicted memo";
}

// AIFLAME_LAB=autograd_ab=5: the slices with take the product's launch path (Recorder::launch_lean and the
// capture's own check of its predicted memo), the slices without the measured path (the predicted memo
// checked inside the walk's loop). One call path launching again and again takes its memo on both
// (each path's first launch walks: its frames differ), and every launch is counted once.
TEST(Recorder, TheAutogradABFiveAlternatesTheLeanAndTheMeasuredPaths) {
  unwind::ObjectTable::instance().build_all_now();
  Recording r(/*autograd_ab=*/5, /*capture_probe=*/0, UnwindPolicy::Always);
  const uint32_t n = launch_for_many_slices(r);
  const Recorder::AutogradAB ab = r.rec.autograd_ab();
  EndRecord end = r.finish();
  EXPECT_EQ(end.launches, uint64_t{n});
  EXPECT_EQ(ab.with_launches + ab.without_launches, uint64_t{n});
  EXPECT_GT(ab.with_launches, n / 5u) << "slices without: " << ab.without_launches;
  EXPECT_GT(ab.without_launches, n / 5u) << "slices with: " << ab.with_launches;
  EXPECT_GE(ab.with_walked, 1u);
  EXPECT_GE(ab.without_walked, 1u);
  EXPECT_LE(ab.with_walked + ab.without_walked, 4u) << "both paths take their memos";
}

TEST(Recorder, WithoutTheAutogradABEveryLaunchHasTheTracking) {
  Recording r;
  for (int i = 0; i < 2000; i++) r.rec.on_launch(211, i + 1, 0x1000, 1);
  EXPECT_EQ(r.rec.autograd_ab().without_launches, 0u);
  EXPECT_EQ(r.finish().launches, 2000u);
}

}  // namespace
}  // namespace aiflame
