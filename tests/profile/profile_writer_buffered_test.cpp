// ProfileWriter::add_buffered: launch records go to a buffer of their thread and reach the file at
// the next flush, also from threads that have exited, in their thread's order, none lost when a
// buffer fills up between two flushes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "profile/profile.h"
#include "profile/profile_writer.h"
#include "profile/record_codec.h"
#include "test_util.h"

namespace aiflame {
namespace {

LaunchRecord launch(uint32_t thread, uint32_t i) {
  LaunchRecord l;
  l.correlation_id = thread * 1000000 + i;
  l.tid = thread;
  l.timestamp = 5000 + i;
  l.stack_id = i % 7 + 1;
  l.api = 307;
  l.native_unwound = i % 2;
  l.device = thread % 2;
  return l;
}

// Every thread's launches in the file, by thread, in file order.
std::map<uint32_t, std::vector<LaunchRecord>> by_thread(const std::string& path) {
  std::map<uint32_t, std::vector<LaunchRecord>> m;
  Status st = for_each_launch(path, [&](const LaunchRecord& l) { m[l.tid].push_back(l); });
  EXPECT_TRUE(st.ok()) << st.error();
  return m;
}

void expect_all(const std::string& path, uint32_t threads, uint32_t per_thread) {
  auto m = by_thread(path);
  ASSERT_EQ(m.size(), threads);
  for (auto& [t, v] : m) {
    ASSERT_EQ(v.size(), per_thread) << "thread " << t;
    for (uint32_t i = 0; i < per_thread; i++) {
      LaunchRecord want = launch(t, i);
      EXPECT_EQ(v[i].correlation_id, want.correlation_id);  // in the thread's order
      EXPECT_EQ(v[i].timestamp, want.timestamp);
      EXPECT_EQ(v[i].api, want.api);
      EXPECT_EQ(v[i].stack_id, want.stack_id);
      EXPECT_EQ(v[i].native_unwound, want.native_unwound);
      EXPECT_EQ(v[i].device, want.device);
    }
  }
}

TEST(ProfileWriterBuffered, RecordsOfExitedThreadsReachTheFileAtClose) {
  std::string path = test::temp_path("buffered_exited.aiflame");
  std::string err;
  {
    ProfileWriter w;
    ASSERT_TRUE(w.open(path, true, &err)) << err;
    std::vector<std::thread> threads;
    for (uint32_t t = 1; t <= 4; t++)
      threads.emplace_back([&w, t] {
        for (uint32_t i = 0; i < 1000; i++) w.add_buffered(launch(t, i));
      });
    for (auto& th : threads) th.join();  // every thread gone before the close
    ASSERT_TRUE(w.close());
  }
  auto p = read_profile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  expect_all(path, 4, 1000);
  std::remove(path.c_str());
}

TEST(ProfileWriterBuffered, AFlushWritesTheBufferedRecords) {
  std::string path = test::temp_path("buffered_flush.aiflame");
  std::string err;
  ProfileWriter w;
  ASSERT_TRUE(w.open(path, true, &err)) << err;
  std::thread([&w] {
    for (uint32_t i = 0; i < 10; i++) w.add_buffered(launch(3, i));
  }).join();
  EXPECT_GT(w.pending_bytes(), 0u);
  ASSERT_TRUE(w.flush());  // what the collector does every interval: the file holds them now
  EXPECT_EQ(w.pending_bytes(), 0u);
  auto p = read_profile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  expect_all(path, 1, 10);
  ASSERT_TRUE(w.close());
  std::remove(path.c_str());
}

// 64 KiB hold about 1,900 launches (34 bytes each): 50,000 without a flush fill a thread's buffer many times.
TEST(ProfileWriterBuffered, FullBuffersAreHandedOverWithoutLoss) {
  std::string path = test::temp_path("buffered_full.aiflame");
  std::string err;
  ProfileWriter w;
  ASSERT_TRUE(w.open(path, true, &err)) << err;
  std::vector<std::thread> threads;
  for (uint32_t t = 1; t <= 2; t++)
    threads.emplace_back([&w, t] {
      for (uint32_t i = 0; i < 50000; i++) {
        w.add_buffered(launch(t, i));
        if (t == 2 && i % 5000 == 0) w.add(WarningRecord{"unbuffered"});  // the locked way, between
      }
    });
  // A collector flushing meanwhile.
  for (int k = 0; k < 20; k++) ASSERT_TRUE(w.flush());
  for (auto& th : threads) th.join();
  ASSERT_TRUE(w.close());
  w.add_buffered(launch(1, 50000));  // after the close: dropped
  EXPECT_EQ(w.pending_bytes(), 0u);
  auto p = read_profile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  expect_all(path, 2, 50000);
  EXPECT_EQ(p->warnings.size(), 10u);
  std::remove(path.c_str());
}

// Deferred launches (the recorder's autograd tracking): each reaches the file as a Launch whose stack id the
// resolver named, after the BackwardStack records it made, through full buffers and wrap-around,
// mixed with plain launches; none of the internal frames is written. The launching threads never
// resolve: a thread whose buffer is full only copies it (resolving ~1,000 launches there would be a
// stall on the launch path), and the next flush resolves.
struct StubResolver : ProfileWriter::BackwardResolver {
  std::map<uint32_t, uint32_t> ids;
  std::set<std::thread::id> callers;
  uint32_t resolve(const LaunchRecord& launch, const BackwardNote& note, std::vector<BackwardStackRecord>* fresh) override {
    callers.insert(std::this_thread::get_id());
    EXPECT_EQ(note.seq, uint64_t{launch.correlation_id} * 3);  // the note travels with its launch
    EXPECT_EQ(note.caller, launch.tid);
    auto [it, added] = ids.try_emplace(launch.stack_id, kBackwardStackBit | (launch.stack_id + 100));
    if (added) fresh->push_back({it->second, launch.stack_id, note.caller, 0});
    return it->second;
  }
  std::map<uint64_t, uint32_t> forward;  // seq -> stack of a remembered forward launch
  void remember(const LaunchRecord& launch, const BackwardNote& note) override { forward[note.seq] = launch.stack_id; }
};

// A deferred forward launch is remembered before any backward launch of the same flush resolves,
// whatever the order of the buffers the flush takes: here the engine thread's buffer is made first,
// so its backward launch is taken before the forward launch it looks for.
struct LookupResolver : ProfileWriter::BackwardResolver {
  std::map<uint64_t, uint32_t> forward;
  uint32_t resolve(const LaunchRecord&, const BackwardNote& note, std::vector<BackwardStackRecord>* fresh) override {
    auto it = forward.find(note.seq);
    const uint32_t f = it == forward.end() ? 0 : it->second;
    fresh->push_back({kBackwardStackBit | (f + 1), 100, 0, f});
    return kBackwardStackBit | (f + 1);
  }
  void remember(const LaunchRecord& launch, const BackwardNote& note) override { forward[note.seq] = launch.stack_id; }
};

// resolve_deferred() (a graph node captured in a deferred backward launch): the buffers are taken and
// their deferred launches resolved now, and nothing is written until the next flush.
TEST(ProfileWriterBuffered, ResolvingDeferredLaunchesWritesNoChunk) {
  std::string path = test::temp_path("buffered_resolve.aiflame");
  std::string err;
  ProfileWriter w;
  LookupResolver resolver;
  w.set_backward_resolver(&resolver);
  ASSERT_TRUE(w.open(path, true, &err)) << err;
  ASSERT_TRUE(w.flush());
  const uint64_t before = w.bytes_written();
  BackwardNote f;
  f.forward = true;
  f.seq = 9;
  LaunchRecord fl = launch(1, 0);
  fl.stack_id = 5;
  w.add_buffered(fl, f);
  EXPECT_TRUE(resolver.forward.empty());
  w.resolve_deferred();
  EXPECT_EQ(resolver.forward.count(9), 1u);  // remembered now
  EXPECT_EQ(w.bytes_written(), before);      // no chunk
  ASSERT_TRUE(w.close());
  auto m = by_thread(path);
  ASSERT_EQ(m[1].size(), 1u);
  EXPECT_EQ(m[1][0].stack_id, 5u);
  std::remove(path.c_str());
}

TEST(ProfileWriterBuffered, ForwardLaunchesOfAFlushAreRememberedBeforeItsBackwardLaunchesResolve) {
  std::string path = test::temp_path("buffered_forward.aiflame");
  std::string err;
  ProfileWriter w;
  LookupResolver resolver;
  w.set_backward_resolver(&resolver);
  ASSERT_TRUE(w.open(path, true, &err)) << err;
  std::atomic<int> step{0};
  std::thread engine([&] {
    w.add_buffered(launch(1, 0));  // this thread's buffer, made first
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
    BackwardNote note;
    note.node = true;
    note.seq = 42;
    note.tid = 1;
    LaunchRecord l = launch(1, 1);
    l.stack_id = 100;
    w.add_buffered(l, note);
  });
  while (step.load() != 1) std::this_thread::yield();
  BackwardNote f;
  f.forward = true;
  f.seq = 42;
  f.tid = 1;
  LaunchRecord fl = launch(2, 0);
  fl.stack_id = 7;
  w.add_buffered(fl, f);  // the forward launch, in a buffer made after the engine's
  step = 2;
  engine.join();
  ASSERT_TRUE(w.close());  // one flush takes both
  auto m = by_thread(path);
  ASSERT_EQ(m[2].size(), 1u);
  EXPECT_EQ(m[2][0].stack_id, 7u);  // the forward launch written as it is
  ASSERT_EQ(m[1].size(), 2u);
  EXPECT_EQ(m[1][1].stack_id, kBackwardStackBit | 8u);  // found its forward launch (stack 7)
  auto p = read_profile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->backward_stacks.at(kBackwardStackBit | 8u).forward_stack_id, 7u);
  std::remove(path.c_str());
}

TEST(ProfileWriterBuffered, DeferredLaunchesAreResolvedWhenTaken) {
  std::string path = test::temp_path("buffered_deferred.aiflame");
  std::string err;
  ProfileWriter w;
  StubResolver resolver;
  w.set_backward_resolver(&resolver);
  ASSERT_TRUE(w.open(path, true, &err)) << err;
  std::vector<std::thread> threads;
  std::vector<std::thread::id> launching(3);
  for (uint32_t t = 1; t <= 2; t++)
    threads.emplace_back([&w, &launching, t] {
      launching[t] = std::this_thread::get_id();
      for (uint32_t i = 0; i < 30000; i++) {
        LaunchRecord l = launch(t, i);
        if (i % 3 == 0) {
          w.add_buffered(l);
          continue;
        }
        BackwardNote note;
        note.caller = t;
        note.node = true;
        note.seq = uint64_t{l.correlation_id} * 3;
        note.tid = 7;
        w.add_buffered(l, note);
      }
    });
  for (int k = 0; k < 10; k++) ASSERT_TRUE(w.flush());
  for (auto& th : threads) th.join();
  ASSERT_TRUE(w.close());
  EXPECT_GE(w.full_handovers(), 1u);  // 30,000 launches of 34-66 bytes fill a 64 KiB buffer
  EXPECT_EQ(resolver.callers.count(launching[1]), 0u);
  EXPECT_EQ(resolver.callers.count(launching[2]), 0u);
  EXPECT_EQ(resolver.callers.count(std::this_thread::get_id()), 1u);
  auto p = read_profile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  auto m = by_thread(path);
  ASSERT_EQ(m.size(), 2u);
  for (auto& [t, v] : m) {
    ASSERT_EQ(v.size(), 30000u);
    for (uint32_t i = 0; i < 30000; i++) {
      LaunchRecord want = launch(t, i);
      ASSERT_EQ(v[i].correlation_id, want.correlation_id);
      EXPECT_EQ(v[i].timestamp, want.timestamp);
      EXPECT_EQ(v[i].device, want.device);
      EXPECT_EQ(v[i].stack_id, i % 3 == 0 ? want.stack_id : kBackwardStackBit | (want.stack_id + 100)) << i;
    }
  }
  EXPECT_EQ(p->backward_stacks.size(), 7u);  // one per stack id, written once
  for (const auto& [id, b] : p->backward_stacks) EXPECT_EQ(id, kBackwardStackBit | (b.stack_id + 100));
  std::remove(path.c_str());
}

// A thread buffer holds a launch's fields as they are (ProfileWriter::RingLaunch, RingNote) and the
// flush encodes them: every field at its extremes reaches the file, and the resolver, unchanged.
struct NoteKeeper : ProfileWriter::BackwardResolver {
  std::vector<BackwardNote> notes;
  std::vector<LaunchRecord> launches;
  uint32_t resolve(const LaunchRecord& launch, const BackwardNote& note, std::vector<BackwardStackRecord>*) override {
    notes.push_back(note);
    launches.push_back(launch);
    return launch.stack_id;
  }
  void remember(const LaunchRecord& launch, const BackwardNote& note) override {
    notes.push_back(note);
    launches.push_back(launch);
  }
};
TEST(ProfileWriterBuffered, EveryFieldAtItsExtremesSurvivesTheBuffer) {
  std::string path = test::temp_path("buffered_extremes.aiflame");
  std::string err;
  ProfileWriter w;
  NoteKeeper keeper;
  w.set_backward_resolver(&keeper);
  ASSERT_TRUE(w.open(path, true, &err)) << err;
  LaunchRecord big;
  big.correlation_id = UINT32_MAX;
  big.tid = UINT32_MAX - 1;
  big.timestamp = UINT64_MAX;
  big.stack_id = UINT32_MAX - 2;
  big.api = UINT32_MAX - 3;
  big.native_unwound = true;
  big.device = UINT32_MAX - 4;
  big.prev_duration = UINT32_MAX - 5;
  LaunchRecord none = big;  // no device, not unwound, zeros
  none.correlation_id = 1;
  none.timestamp = 0;
  none.stack_id = 0;
  none.api = 0;
  none.native_unwound = false;
  none.device = kNoDevice;
  none.prev_duration = 0;
  LaunchRecord deferred = big, forward = big;
  deferred.correlation_id = 2;
  forward.correlation_id = 3;
  BackwardNote note;
  note.caller = UINT32_MAX;
  note.node = true;
  note.seq = UINT64_MAX;
  note.tid = UINT64_MAX - 1;
  note.graph_task = INT32_MAX;
  BackwardNote forward_note;
  forward_note.forward = true;
  forward_note.seq = 12345;
  forward_note.tid = 6;  // graph_task -1
  std::thread([&] {
    w.add_buffered(big);
    w.add_buffered(none);
    w.add_buffered(deferred, note);
    w.add_buffered(forward, forward_note);
  }).join();
  ASSERT_TRUE(w.close());
  auto same = [](const LaunchRecord& a, const LaunchRecord& b) {
    return a.correlation_id == b.correlation_id && a.tid == b.tid && a.timestamp == b.timestamp &&
           a.stack_id == b.stack_id && a.api == b.api && a.native_unwound == b.native_unwound && a.device == b.device &&
           a.prev_duration == b.prev_duration;
  };
  std::vector<LaunchRecord> got;
  Status st = for_each_launch(path, [&](const LaunchRecord& l) { got.push_back(l); });
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_TRUE(same(got[0], big));
  EXPECT_TRUE(same(got[1], none));
  EXPECT_TRUE(same(got[2], deferred));
  EXPECT_TRUE(same(got[3], forward));
  // The resolver: the forward launch remembered first, then the backward one resolved.
  ASSERT_EQ(keeper.notes.size(), 2u);
  EXPECT_TRUE(same(keeper.launches[0], forward));
  EXPECT_TRUE(keeper.notes[0].forward);
  EXPECT_EQ(keeper.notes[0].seq, 12345u);
  EXPECT_EQ(keeper.notes[0].tid, 6u);
  EXPECT_EQ(keeper.notes[0].graph_task, -1);
  EXPECT_TRUE(same(keeper.launches[1], deferred));
  EXPECT_EQ(keeper.notes[1].caller, UINT32_MAX);
  EXPECT_TRUE(keeper.notes[1].node);
  EXPECT_FALSE(keeper.notes[1].forward);
  EXPECT_EQ(keeper.notes[1].seq, UINT64_MAX);
  EXPECT_EQ(keeper.notes[1].tid, UINT64_MAX - 1);
  EXPECT_EQ(keeper.notes[1].graph_task, INT32_MAX);
  std::remove(path.c_str());
}

// Two writers on one thread (tests and the benchmark make several): each gets its own records.
TEST(ProfileWriterBuffered, TwoWritersOnOneThreadKeepTheirOwnRecords) {
  std::string a_path = test::temp_path("buffered_a.aiflame"), b_path = test::temp_path("buffered_b.aiflame");
  std::string err;
  {
    ProfileWriter a, b;
    ASSERT_TRUE(a.open(a_path, true, &err)) << err;
    ASSERT_TRUE(b.open(b_path, true, &err)) << err;
    for (uint32_t i = 0; i < 100; i++) {
      a.add_buffered(launch(1, i));
      b.add_buffered(launch(2, i));
    }
    ASSERT_TRUE(a.close());
    ASSERT_TRUE(b.close());
  }
  auto a = read_profile(a_path), b = read_profile(b_path);
  ASSERT_TRUE(a.ok() && b.ok());
  expect_all(a_path, 1, 100);
  expect_all(b_path, 1, 100);
  EXPECT_EQ(by_thread(a_path).begin()->first, 1u);
  EXPECT_EQ(by_thread(b_path).begin()->first, 2u);
  std::remove(a_path.c_str());
  std::remove(b_path.c_str());
}


// Big records (sample batches) are moved into the pending chunk instead of copied under the lock,
// and the pending bytes are cut into segments: the chunk must still be exactly the records in the
// order they were added, as one straightforward serialisation gives them.
TEST(ProfileWriterBuffered, BigRecordsAndSegmentsKeepTheChunkBytesInOrder) {
  std::string path = test::temp_path("segments.aiflame");
  std::string err;
  ByteWriter expected;
  {
    ProfileWriter w;
    w.set_compression(Compression::None);
    ASSERT_TRUE(w.open(path, true, &err)) << err;
    auto add = [&](const auto& rec) {
      w.add(rec);
      ByteWriter payload;
      encode(payload, rec);
      expected.u8(static_cast<uint8_t>(record_type_of<std::decay_t<decltype(rec)>>()));
      expected.str(payload.data());
    };
    PcBatchRecord big;
    big.samples.resize(3000);  // well over 16 KiB encoded
    for (size_t k = 0; k < big.samples.size(); k++) big.samples[k] = PcSample{7, 0xabc, k * 16, 3, 1, 0};
    add(WarningRecord{"first"});
    big.timestamp = 1;
    add(big);
    for (int i = 0; i < 40000; i++) add(WarningRecord{"w" + std::to_string(i)});  // past a 256 KiB segment
    big.timestamp = 2;
    add(big);
    add(WarningRecord{"last"});
    ASSERT_TRUE(w.flush());
    ASSERT_TRUE(w.close());
  }
  std::ifstream in(path, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(file.size(), kFileHeaderSize + kChunkHeaderSize + expected.size());  // one chunk, stored as is
  EXPECT_TRUE(file.compare(kFileHeaderSize + kChunkHeaderSize, std::string::npos, expected.data()) == 0);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace aiflame

namespace aiflame {
namespace {

// A stack new to the process goes to its thread's buffer too (add_buffered_stack, the launch path's
// StackCapture::intern_shared) and reaches the file as a Stack record: every native and named Python
// frame, the largest (256 of each) as well, also when the buffer fills and is handed over between
// two flushes (its frames copied past the ring's end), interleaved with launches.
StackRecord buffered_stack_of(uint32_t id, int nn, int np) {
  StackRecord s;
  s.id = id;
  for (int i = 0; i < nn; i++) s.native.push_back(0x7f0000001000ull + id * 0x10000ull + static_cast<uint64_t>(i) * 40);
  for (int i = 0; i < np; i++) s.python.push_back({id * 10 + 1, static_cast<uint32_t>(i + 2), static_cast<uint32_t>(100 + i)});
  return s;
}

TEST(ProfileWriterBuffered, BufferedStacksReachTheFileWithEveryFrame) {
  std::string path = test::temp_path("buffered_stacks.aiflame");
  std::string err;
  std::vector<StackRecord> want;
  {
    ProfileWriter w;
    ASSERT_TRUE(w.open(path, true, &err)) << err;
    for (uint32_t id = 1; id <= 120; id++) {
      const int nn = id == 60 ? 256 : static_cast<int>(id % 50), np = id == 60 ? 256 : static_cast<int>(id % 9);
      want.push_back(buffered_stack_of(id, nn, np));
      w.add_buffered_stack(id, want.back().native.data(), nn, want.back().python.data(), np);
      for (uint32_t i = 0; i < 40; i++) w.add_buffered(launch(1, id * 40 + i));  // ~8 buffers' worth in all
      if (id == 90) {
        ASSERT_TRUE(w.flush());
      }
    }
    EXPECT_GT(w.full_handovers(), 0u);  // the condition this test is for
    ASSERT_TRUE(w.close());
  }
  auto p = read_profile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->stacks.size(), want.size());
  for (const StackRecord& s : want) {
    auto it = p->stacks.find(s.id);
    ASSERT_NE(it, p->stacks.end()) << s.id;
    EXPECT_EQ(it->second.native, s.native) << s.id;
    EXPECT_EQ(it->second.python, s.python) << s.id;
  }
  EXPECT_EQ(by_thread(path)[1].size(), 120u * 40u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace aiflame
