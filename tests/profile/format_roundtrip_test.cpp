#include <gtest/gtest.h>

#include <cstring>

#include "profile/profile.h"
#include "profile/record_codec.h"
#include "profile/profile_writer.h"
#include "test_util.h"

namespace aiflame {
namespace {

// Writes one of every record in two chunks and returns the file's path.
std::string write_sample_profile() {
  std::string path = test::temp_path("roundtrip.aiflame");
  ProfileWriter w;
  std::string err;
  EXPECT_TRUE(w.open(path, false, &err)) << err;
  ProcessRecord p;
  p.pid = 4242; p.ppid = 1; p.command = "python3 train.py --lr 3e-4"; p.hostname = "gpu-7";
  p.start_realtime_ns = 1763800000123456789; p.start_timestamp = 1000; p.backend_version = 130001;
  p.driver_version = 13000; p.sampling_period_log2 = 22; p.interval_ms = 10; p.backend = "cupti"; p.tool_version = "0.1.0";
  p.rank = 3; p.local_rank = 1; p.world_size = 8; p.pc_mode = 1; p.windows_per_s = 100; p.window_us = 1000;
  w.add(p);
  w.add(StringRecord{1, "_Z6kernelPf"});
  w.add(StringRecord{2, "train.py"});
  w.add(StallReasonsRecord{0, {{3, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}, {4, "smsp__pcsamp_warps_issue_stalled_selected"}}, 132});
  w.add(ModuleRecord{1, "/usr/lib/libtorch_cuda.so", 0x7f0000000000, 0x7f0000000000, 0x7f0000100000, "abcdef"});
  EXPECT_TRUE(w.flush());
  StackRecord s;
  s.id = 1;
  s.native = {0x7f0000001234, 0x7f0000000100, 0x401000};  // deltas go both ways
  s.python = {{2, 2, 17}, {2, 2, 3}};
  w.add(s);
  w.add(LaunchRecord{77, 4243, 5000, 1, 307, true, 1});
  w.add(LaunchRecord{78, 4243, 5001, 1, 307, false});  // device unknown
  KernelRecord k;
  k.correlation_id = 77; k.start = 6000; k.end = 9000; k.device = 1; k.context = 2; k.stream = 7; k.name = 1;
  k.grid[0] = 128; k.grid[1] = 1; k.grid[2] = 1; k.block[0] = 256; k.block[1] = 1; k.block[2] = 1; k.graph_id = 3; k.graph_node_id = 0x1234567890;
  w.add(k);
  w.add(GraphNodeRecord{0x1234567890, 3, 0, 0x1234567000});
  w.add(GraphNodeRecord{0x1234567000, 2, 1, 0});
  PcBatchRecord b;
  b.timestamp = 20000; b.prev_timestamp = 10000; b.device = 1; b.context = 2; b.total_samples = 30; b.dropped_samples = 2;
  b.hardware_buffer_full = true;
  b.samples = {{1, 0xdeadbeefcafe, 0x1a0, 3, 20, 0}, {1, 0xdeadbeefcafe, 0x1b0, 4, 10, 77}};
  w.add(b);
  w.add(CodeObjectRecord{0xdeadbeefcafe, 1, std::string("\x7f" "ELF\0\1\2", 7)});
  w.add(SymbolRecord{0x7f0000001234, 1, "at::native::launch()", 0x34});
  w.add(SymbolRecord{0x7f0000001300, 1, "at::native::outer()", 0x4,
                     {{"at::native::outer()", "outer.cpp", 12}, {"at::native::inlined()", "inl.h", 7}}});
  w.add(GpuLineRecord{0xdeadbeefcafe, 1, 0x1a0, {{"", "/src/k.cu", 11}, {"_Z5outerf", "/src/k.cu", 6}}});
  w.add(GpuLineRecord{0xdeadbeefcafe, 1, 0x1b0, {}});  // looked up, no line info
  w.add(GpuInstructionRecord{0xdeadbeefcafe, 1, 0x1a0, "LDG.E.128"});
  w.add(WarningRecord{"something to say"});
  EndRecord e;
  e.timestamp = 30000; e.launches = 1; e.samples = 30; e.kernels = 1; e.capture_ns = 900;
  e.collector_cpu_ns = 1234; e.windows = 55; e.window_ns = 56000000; e.walked_launches = 7; e.walked_ns = 8800;
  w.add(e);
  EXPECT_TRUE(w.close()) << w.error();
  return path;
}

TEST(FormatRoundTrip, EveryRecordReadsBackEqual) {
  std::string path = write_sample_profile();
  auto r = read_profile(path);
  ASSERT_TRUE(r.ok()) << r.error();
  const Profile& p = *r;
  EXPECT_FALSE(p.truncated);
  ASSERT_TRUE(p.process);
  EXPECT_EQ(p.process->pid, 4242u);
  EXPECT_EQ(p.process->command, "python3 train.py --lr 3e-4");
  EXPECT_EQ(p.process->start_realtime_ns, 1763800000123456789);
  EXPECT_EQ(p.process->sampling_period_log2, 22u);
  EXPECT_EQ(p.process->rank, 3);
  EXPECT_EQ(p.process->local_rank, 1);
  EXPECT_EQ(p.process->world_size, 8);
  EXPECT_EQ(p.process->pc_mode, 1u);
  EXPECT_EQ(p.process->windows_per_s, 100u);
  EXPECT_EQ(p.process->window_us, 1000u);
  EXPECT_EQ(p.str(1), "_Z6kernelPf");
  EXPECT_EQ(p.stall_reason_name(0, 3), "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  EXPECT_EQ(p.stall_reason_name(5, 4), "smsp__pcsamp_warps_issue_stalled_selected");  // other device, same hardware
  EXPECT_EQ(p.stall_reason_name(0, 99), "stall_99");
  EXPECT_EQ(p.sm_count(0), 132u);
  EXPECT_EQ(p.sm_count(5), 0u);  // SMs are not taken from another device
  ASSERT_EQ(p.modules.size(), 1u);
  EXPECT_EQ(p.modules[0].build_id, "abcdef");
  ASSERT_EQ(p.stacks.count(1), 1u);
  EXPECT_EQ(p.stacks.at(1).native, (std::vector<uint64_t>{0x7f0000001234, 0x7f0000000100, 0x401000}));
  ASSERT_EQ(p.stacks.at(1).python.size(), 2u);
  EXPECT_EQ(p.stacks.at(1).python[0].line, 17u);
  ASSERT_EQ(p.launches.size(), 2u);
  EXPECT_EQ(p.launches[0].correlation_id, 77u);
  EXPECT_TRUE(p.launches[0].native_unwound);
  EXPECT_EQ(p.launches[0].device, 1u);
  EXPECT_EQ(p.launches[1].device, kNoDevice);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].end, 9000u);
  EXPECT_EQ(p.kernels[0].stream, 7u);
  EXPECT_EQ(p.kernels[0].name, 1u);
  EXPECT_EQ(p.kernels[0].graph_node_id, 0x1234567890u);
  EXPECT_EQ(p.kernels[0].blocks, 128u);
  ASSERT_EQ(p.graph_nodes.size(), 2u);
  EXPECT_EQ(p.graph_nodes.at(0x1234567890).original_node_id, 0x1234567000u);
  EXPECT_EQ(p.graph_nodes.at(0x1234567000).stack_id, 1u);
  ASSERT_EQ(p.batches.size(), 1u);
  EXPECT_TRUE(p.batches[0].hardware_buffer_full);
  ASSERT_EQ(p.batches[0].samples.size(), 2u);
  EXPECT_EQ(p.batches[0].samples[1].pc_offset, 0x1b0u);
  EXPECT_EQ(p.batches[0].samples[1].correlation_id, 77u);
  EXPECT_EQ(p.cubins.at(0xdeadbeefcafe).image.size(), 7u);
  EXPECT_EQ(p.symbols.at(0x7f0000001234).function, "at::native::launch()");
  EXPECT_TRUE(p.symbols.at(0x7f0000001234).levels.empty());
  EXPECT_EQ(p.symbols.at(0x7f0000001300).levels,
            (std::vector<SourceFrame>{{"at::native::outer()", "outer.cpp", 12}, {"at::native::inlined()", "inl.h", 7}}));
  ASSERT_EQ(p.gpu_lines.size(), 2u);
  EXPECT_EQ(p.gpu_lines.at({0xdeadbeefcafe, 1, 0x1a0}),
            (std::vector<GpuSourceFrame>{{"", "/src/k.cu", 11}, {"_Z5outerf", "/src/k.cu", 6}}));
  EXPECT_TRUE(p.gpu_lines.at({0xdeadbeefcafe, 1, 0x1b0}).empty());
  EXPECT_EQ(p.gpu_sass.at({0xdeadbeefcafe, 1, 0x1a0}), "LDG.E.128");
  EXPECT_EQ(p.unknown_records, 0u);
  ASSERT_EQ(p.warnings.size(), 1u);
  ASSERT_TRUE(p.end);
  EXPECT_EQ(p.end->capture_ns, 900u);
  EXPECT_EQ(p.end->collector_cpu_ns, 1234u);
  EXPECT_EQ(p.end->windows, 55u);
  EXPECT_EQ(p.end->window_ns, 56000000u);
  EXPECT_EQ(p.end->walked_launches, 7u);
  EXPECT_EQ(p.end->walked_ns, 8800u);
  std::remove(path.c_str());
}

// A run killed mid-write leaves a partial last chunk: everything before it still reads.
// The recorder writes zstd chunks; profiles written with zlib (older files) read the same.
TEST(FormatRoundTrip, ChunksAreZstdByDefaultAndZlibChunksStillRead) {
  auto write = [](const std::string& path, bool zlib) {
    ProfileWriter w;
    std::string err;
    EXPECT_TRUE(w.open(path, false, &err)) << err;
    if (zlib) w.set_compression(Compression::Zlib, 1);
    for (uint32_t i = 1; i <= 500; i++) w.add(StringRecord{i, "at::native::vectorized_elementwise_kernel<4>#" + std::to_string(i)});
    EXPECT_TRUE(w.close()) << w.error();
    return test::read_file(path);
  };
  std::string zstd = write(test::temp_path("zstd.aiflame"), false);
  std::string zlib = write(test::temp_path("zlib.aiflame"), true);
  ASSERT_GT(zstd.size(), 32u);
  EXPECT_EQ(static_cast<int>(zstd[16]), static_cast<int>(Compression::Zstd));
  EXPECT_EQ(static_cast<int>(zlib[16]), static_cast<int>(Compression::Zlib));
  auto a = parse_profile(zstd, "zstd");
  auto b = parse_profile(zlib, "zlib");
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(a->strings.size(), 500u);
  EXPECT_EQ(a->strings, b->strings);
}

TEST(FormatRoundTrip, CutAtAnyByteOfTheLastChunkKeepsTheFirstChunk) {
  std::string path = write_sample_profile();
  std::string bytes = test::read_file(path);
  auto whole = parse_profile(bytes, "x");
  ASSERT_TRUE(whole.ok());
  size_t first_chunk_end = 0;
  {
    // Find the end of the first chunk by parsing prefixes until strings appear.
    for (size_t n = 16; n <= bytes.size(); n++) {
      auto r = parse_profile(bytes.substr(0, n), "x");
      if (r.ok() && !r->strings.empty()) { first_chunk_end = n; break; }
    }
  }
  ASSERT_GT(first_chunk_end, 16u);
  for (size_t n = first_chunk_end; n < bytes.size(); n++) {
    auto r = parse_profile(bytes.substr(0, n), "cut");
    ASSERT_TRUE(r.ok()) << "cut at " << n << ": " << r.error();
    EXPECT_TRUE(r->truncated) << n;
    EXPECT_EQ(r->strings.size(), 2u) << n;
    EXPECT_TRUE(r->launches.empty()) << n;
    EXPECT_EQ(r->valid_bytes, first_chunk_end);
  }
  std::remove(path.c_str());
}

TEST(FormatRoundTrip, AppendAfterTruncationKeepsTheFileReadable) {
  std::string path = write_sample_profile();
  std::string bytes = test::read_file(path);
  test::write_file(path, bytes.substr(0, bytes.size() - 5));  // crash mid-chunk
  auto cut = read_profile(path);
  ASSERT_TRUE(cut.ok());
  ASSERT_TRUE(cut->truncated);
  ProfileWriter w;
  std::string err;
  ASSERT_TRUE(w.open_append(path, cut->valid_bytes, &err)) << err;
  w.add(SymbolRecord{0x1234, 1, "late_symbol", 0});
  ASSERT_TRUE(w.close());
  auto again = read_profile(path);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->symbols.at(0x1234).function, "late_symbol");
  EXPECT_TRUE(again->truncated);  // still no End record: still reported as cut short
  std::remove(path.c_str());
}

}  // namespace
}  // namespace aiflame

namespace aiflame {
namespace {
// The profile keeps what a report reads of kernel and launch records (KernelRow, LaunchRow); the
// records themselves keep every field on disk.
TEST(FormatRoundTrip, KernelAndLaunchRecordsKeepEveryField) {
  KernelRecord k;
  k.correlation_id = 77; k.start = 6000; k.end = 9000; k.device = 1; k.context = 2; k.stream = 7; k.name = 1;
  k.grid[0] = 128; k.grid[1] = 2; k.grid[2] = 3; k.block[0] = 256; k.block[1] = 4; k.block[2] = 5;
  k.graph_id = 3; k.graph_node_id = 0x1234567890;
  LaunchRecord l{77, 4243, 5000, 1, 307, true, 1};
  ByteWriter w;
  encode(w, k);
  encode(w, l);
  std::string bytes = w.take();
  ByteReader r(bytes);
  KernelRecord k2;
  LaunchRecord l2;
  ASSERT_TRUE(decode(r, k2));
  ASSERT_TRUE(decode(r, l2));
  EXPECT_EQ(std::memcmp(k2.grid, k.grid, sizeof k.grid), 0);
  EXPECT_EQ(std::memcmp(k2.block, k.block, sizeof k.block), 0);
  EXPECT_EQ(k2.context, 2u);
  EXPECT_EQ(k2.graph_id, 3u);
  EXPECT_EQ(k2.graph_node_id, k.graph_node_id);
  EXPECT_EQ(l2.tid, 4243u);
  EXPECT_EQ(l2.timestamp, 5000u);
  EXPECT_EQ(l2.api, 307u);
  KernelRow row = k2;
  EXPECT_EQ(row.start, 6000u);
  EXPECT_EQ(row.end, 9000u);
  EXPECT_EQ(row.correlation_id, 77u);
  EXPECT_EQ(row.device, 1u);
  EXPECT_EQ(row.stream, 7u);
  EXPECT_EQ(row.graph_node_id, k.graph_node_id);
  LaunchRow lr = l2;
  EXPECT_EQ(lr.correlation_id, 77u);
  EXPECT_EQ(lr.stack_id, 1u);
  EXPECT_EQ(lr.device, 1u);
  EXPECT_TRUE(lr.native_unwound);
}

// A record decoded as written now (*now) and with its last `cut` bytes cut, as files written before
// its trailing fields existed hold it (*old).
template <class R>
void decode_now_and_old(const R& r, R* now, R* old, size_t cut = 1) {
  ByteWriter w;
  encode(w, r);
  std::string bytes = w.take();
  std::string old_bytes = bytes.substr(0, bytes.size() - cut);
  ByteReader rn(bytes), ro(old_bytes);
  ASSERT_TRUE(decode(rn, *now));
  ASSERT_TRUE(decode(ro, *old));
}

// Kernel records written before graph_node_id existed end after graph_id: they still decode.
TEST(FormatRoundTrip, KernelRecordWithoutGraphNodeDecodes) {
  KernelRecord k;
  k.correlation_id = 5; k.start = 10; k.end = 30; k.name = 2; k.graph_id = 9; k.graph_node_id = 77;
  KernelRecord a, b;
  decode_now_and_old(k, &a, &b, 4);  // graph_node_id 77 and the three zero SM fields: one byte each
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(a.graph_node_id, 77u);
  EXPECT_EQ(b.graph_node_id, 0u);
  EXPECT_EQ(b.graph_id, 9u);
  EXPECT_EQ(b.end, 30u);
}

// StallReasons records written before sm_count existed end after their last name: they still decode.
TEST(FormatRoundTrip, StallReasonsWithoutSmCountDecode) {
  StallReasonsRecord r{2, {{3, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}}, 114};
  StallReasonsRecord a, b;
  decode_now_and_old(r, &a, &b, 6);  // 114 and the five zero SM limits: one varint byte each
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(a.sm_count, 114u);
  EXPECT_EQ(b.sm_count, 0u);
  ASSERT_EQ(b.reasons.size(), 1u);
  EXPECT_EQ(b.reasons[0].second, "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
}

// What a block holds of an SM (registers, shared memory) and the device's SM limits, added for the
// block-scheduler model, read back; records written before them decode with zeros, which the
// attribution takes for "not known" (docs/attribution.md).
TEST(FormatRoundTrip, SmFieldsReadBackAndOlderRecordsGoWithout) {
  KernelRecord k;
  k.correlation_id = 5; k.start = 10; k.end = 30; k.name = 2; k.graph_node_id = 77;
  k.block[0] = 32; k.block[1] = 4; k.block[2] = 1;
  k.registers = 40; k.static_shared = 100; k.dynamic_shared = 50;  // one varint byte each
  KernelRecord a, b;
  decode_now_and_old(k, &a, &b, 3);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(a.registers, 40u);
  EXPECT_EQ(a.static_shared, 100u);
  EXPECT_EQ(a.dynamic_shared, 50u);
  EXPECT_EQ(b.graph_node_id, 77u);
  EXPECT_EQ(b.registers, 0u);
  EXPECT_EQ(b.dynamic_shared, 0u);
  KernelRow row = a;
  EXPECT_EQ(row.threads, 128u);
  EXPECT_EQ(row.registers, 40u);
  EXPECT_EQ(row.shared, 150u);

  StallReasonsRecord r{2, {{3, "x"}}, 114, 100, 32, 120, 110, 1};  // one varint byte each
  StallReasonsRecord ra, rb;
  decode_now_and_old(r, &ra, &rb, 5);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(ra.max_threads_per_sm, 100u);
  EXPECT_EQ(ra.max_blocks_per_sm, 32u);
  EXPECT_EQ(ra.registers_per_sm, 120u);
  EXPECT_EQ(ra.shared_per_sm, 110u);
  EXPECT_EQ(ra.shared_reserved_per_block, 1u);
  EXPECT_EQ(rb.sm_count, 114u);
  EXPECT_EQ(rb.max_threads_per_sm, 0u);
  EXPECT_EQ(rb.shared_per_sm, 0u);
  Profile p;
  p.stall_reasons = {ra};
  EXPECT_NE(p.sm_limits(2), nullptr);
  EXPECT_EQ(p.sm_limits(3), nullptr);
  p.stall_reasons = {rb};
  EXPECT_EQ(p.sm_limits(2), nullptr);  // the SM count alone: the older rule
}

// A grid's blocks as a kernel row keeps them: unknown (a dimension of 0 or less) and capped at 2^32-1.
TEST(FormatRoundTrip, KernelRowBlocksAreTheGridsProduct) {
  KernelRecord k;
  k.grid[0] = 4; k.grid[1] = 3; k.grid[2] = 2;
  EXPECT_EQ(KernelRow(k).blocks, 24u);
  k.grid[1] = 0;
  EXPECT_EQ(KernelRow(k).blocks, 0u);
  k.grid[0] = k.grid[1] = k.grid[2] = INT32_MAX;
  EXPECT_EQ(KernelRow(k).blocks, UINT32_MAX);
  k.grid[2] = -5;
  EXPECT_EQ(KernelRow(k).blocks, 0u);
}
}  // namespace
}  // namespace aiflame

namespace aiflame {
namespace {
// CUPTI delivers records during the process's exit, after the profile was closed: they are dropped,
// not buffered or written to a closed descriptor.
TEST(ProfileWriter, RecordsAddedAfterCloseAreDropped) {
  std::string path = test::temp_path("closed.aiflame");
  ProfileWriter w;
  std::string err;
  ASSERT_TRUE(w.open(path, true, &err)) << err;
  w.add(WarningRecord{"before"});
  ASSERT_TRUE(w.close());
  w.add(WarningRecord{"after"});
  EXPECT_EQ(w.pending_bytes(), 0u);
  EXPECT_TRUE(w.flush());
  auto p = read_profile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->warnings, std::vector<std::string>{"before"});
  std::remove(path.c_str());
}
// End records of earlier versions stop after capture_ns, after collector_cpu_ns, or after the windows'
// two fields: each decodes, the fields it lacks 0 (the summary then prints no walked/memo split).
TEST(Format, EndRecordsOfEarlierVersionsDecodeWithTheLaterFieldsZero) {
  for (int fields : {11, 12, 14}) {
    ByteWriter w;
    for (int i = 0; i < fields; i++) w.varint(static_cast<uint64_t>(100 + i));
    ByteReader r(w.data());
    EndRecord e;
    ASSERT_TRUE(decode(r, e)) << fields;
    EXPECT_EQ(e.capture_ns, 110u) << fields;
    EXPECT_EQ(e.collector_cpu_ns, fields > 11 ? 111u : 0u) << fields;
    EXPECT_EQ(e.window_ns, fields > 12 ? 113u : 0u) << fields;
    EXPECT_EQ(e.walked_launches, 0u) << fields;
    EXPECT_EQ(e.walked_ns, 0u) << fields;
  }
  ByteWriter w;  // the current layout: all 16
  for (int i = 0; i < 16; i++) w.varint(static_cast<uint64_t>(100 + i));
  ByteReader r(w.data());
  EndRecord e;
  ASSERT_TRUE(decode(r, e));
  EXPECT_EQ(e.walked_launches, 114u);
  EXPECT_EQ(e.walked_ns, 115u);
}

}  // namespace
}  // namespace aiflame
