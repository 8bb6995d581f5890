// Torch's autograd thread-locals read in place (record/autograd/torch_tls.h): the decoders against
// torch 2.11's own code, and the reads against a library of torch's shapes (torch_tls_lib.cpp) on
// several threads, alone and inside the autograd tracking.
#include "record/autograd/torch_tls.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <map>
#include <thread>
#include <tuple>
#include <vector>

#include "profile/profile.h"
#include "record/autograd/autograd_tracker.h"
#include "record/autograd/torch_tls_code.h"
#include "fake_torch.h"
#include "test_util.h"
#include "torch_tls_lib.h"

namespace aiflame {
namespace {

// The first bytes of libtorch_cpu.so's functions in torch 2.11.0+cu130's wheel, copied from the GPU
// machine's process (bench/probes/torch_tls_code.py at d9aa39d), at their file offsets; what objdump printed for
// each is in the comments, and the expected values below are objdump's, not the decoder's.
constexpr uint64_t kPeekAt = 0x1a07980;
constexpr uint8_t kPeek[] = {
    0x48, 0x83, 0xec, 0x08,                    // sub $0x8,%rsp
    0x48, 0x8d, 0x3d, 0x5d, 0x28, 0x52, 0x13,  // lea 0x1352285d(%rip),%rdi  # 14f2a1e8
    0xe8, 0x40, 0x60, 0x69, 0xff,              // call 109d9d0 <__tls_get_addr@plt>
    0x48, 0x8b, 0x80, 0x30, 0x01, 0x00, 0x00,  // mov 0x130(%rax),%rax
    0x48, 0x83, 0xc4, 0x08,                    // add $0x8,%rsp
    0xc3,                                      // ret
    0x0f, 0x1f, 0x40, 0x00};
constexpr uint64_t kThreadIdAt = 0x1c32050;
constexpr uint8_t kThreadId[] = {  // at::RecordFunction::currentThreadId: a load, then a branch on it
    0x48, 0x83, 0xec, 0x08, 0x48, 0x8d, 0x3d, 0x8d, 0x81, 0x2f, 0x13, 0xe8, 0x70, 0xb9, 0x46, 0xff,
    0x48, 0x8b, 0x90, 0x10, 0x22, 0x00, 0x00,  // mov 0x2210(%rax),%rdx
    0x48, 0x85, 0xd2, 0x74, 0x0c, 0x48, 0x89, 0xd0, 0x48, 0x83, 0xc4, 0x08, 0xc3};
constexpr uint64_t kGraphTaskAt = 0x5e41b00;
constexpr uint8_t kGraphTask[] = {
    0x48, 0x83, 0xec, 0x08,              // sub $0x8,%rsp
    0xff, 0x15, 0x3e, 0xf5, 0x22, 0x0f,  // call *0xf22f53e(%rip)  # 15071048 <tls_current_graph_task>
    0x48, 0x83, 0x38, 0x00,              // cmpq $0x0,(%rax)
    0x74, 0x14,                          // je 5e41b24
    0xff, 0x15, 0x32, 0xf5, 0x22, 0x0f,  // call *0xf22f532(%rip)  # 15071048
    0x48, 0x8b, 0x00,                    // mov (%rax),%rax
    0x8b, 0x80, 0x40, 0x04, 0x00, 0x00,  // mov 0x440(%rax),%eax
    0x48, 0x83, 0xc4, 0x08,              // add $0x8,%rsp
    0xc3,                                // ret
    0xb8, 0xff, 0xff, 0xff, 0xff,        // 5e41b24: mov $0xffffffff,%eax
    0xeb, 0xf4,                          // jmp 5e41b1f (the add)
    0x0f, 0x1f, 0x44, 0x00, 0x00};
constexpr uint64_t kNodeAt = 0x5e54510;
constexpr uint8_t kNode[] = {
    0x53,                                // push %rbx
    0x48, 0x89, 0xfb,                    // mov %rdi,%rbx
    0xff, 0x15, 0x0e, 0xcc, 0x21, 0x0f,  // call *0xf21cc0e(%rip)  # 15071128 <tls_current_evaluating_node>
    0xf3, 0x0f, 0x6f, 0x00,              // movdqu (%rax),%xmm0
    0x0f, 0x11, 0x03,                    // movups %xmm0,(%rbx)
    0x48, 0x8b, 0x43, 0x08, 0x48, 0x85, 0xc0, 0x74, 0x0e};

// The same functions as GCC 12 -O2 -fno-omit-frame-pointer compiles them (tests/record/torch_tls_lib.cpp,
// general-dynamic TLS), as distributions build: the frame pointer popped before the loads.
constexpr uint8_t kPeekFp[] = {
    0x55, 0x48, 0x89, 0xe5,                          // push %rbp; mov %rsp,%rbp
    0x66, 0x48, 0x8d, 0x3d, 0x7c, 0x2c, 0x00, 0x00,  // data16 lea 0x2c7c(%rip),%rdi  # 3f78
    0x66, 0x66, 0x48, 0xe8, 0x7c, 0xfd, 0xff, 0xff,  // data16 data16 rex.W call 1080 <__tls_get_addr@plt>
    0x5d,                                            // pop %rbp
    0x48, 0x8b, 0x00,                                // mov (%rax),%rax
    0xc3};
constexpr uint8_t kGraphTaskFp[] = {
    0x55, 0x48, 0x89, 0xe5,              // push %rbp; mov %rsp,%rbp
    0xff, 0x15, 0xde, 0x2c, 0x00, 0x00,  // call *0x2cde(%rip)  # 4068
    0x48, 0x83, 0x38, 0x00,              // cmpq $0x0,(%rax)
    0x74, 0x11,                          // je 13a1
    0xff, 0x15, 0xd2, 0x2c, 0x00, 0x00,  // call *0x2cd2(%rip)  # 4068
    0x5d,                                // pop %rbp
    0x48, 0x8b, 0x00,                    // mov (%rax),%rax
    0x8b, 0x80, 0x40, 0x04, 0x00, 0x00,  // mov 0x440(%rax),%eax
    0xc3,                                // ret
    0xb8, 0xff, 0xff, 0xff, 0xff,        // 13a1: mov $0xffffffff,%eax
    0x5d, 0xc3};                         // pop %rbp; ret
constexpr uint8_t kNodeFp[] = {
    0x55, 0x48, 0x89, 0xe5,              // push %rbp; mov %rsp,%rbp
    0x53, 0x48, 0x89, 0xfb,              // push %rbx; mov %rdi,%rbx
    0x48, 0x83, 0xec, 0x08,              // sub $0x8,%rsp
    0xff, 0x15, 0x9e, 0x2c, 0x00, 0x00,  // call *0x2c9e(%rip)  # 4060
    0xf3, 0x0f, 0x6f, 0x00,              // movdqu (%rax),%xmm0
    0x0f, 0x11, 0x03};                   // movups %xmm0,(%rbx)

template <size_t N>
std::vector<uint8_t> bytes(const uint8_t (&b)[N]) {
  return {b, b + N};
}

TEST(TorchTlsCode, Torch211FunctionsDecodeToWhatObjdumpShows) {
  auto peek = decode_tls_get_addr_load(kPeek, kPeekAt);
  ASSERT_TRUE(peek);
  EXPECT_EQ(peek->index, 0x14f2a1e8u);
  EXPECT_EQ(peek->callee, 0x109d9d0u);
  EXPECT_FALSE(peek->indirect);
  EXPECT_EQ(peek->disp, 0x130);
  auto task = decode_graph_task_id(kGraphTask, kGraphTaskAt);
  ASSERT_TRUE(task);
  EXPECT_EQ(task->slot, 0x15071048u);
  EXPECT_EQ(task->disp, 0x440);
  auto node = decode_current_node(kNode, kNodeAt);
  ASSERT_TRUE(node);
  EXPECT_EQ(node->slot, 0x15071128u);
  EXPECT_EQ(node->disp, 0);
  // currentThreadId loads into rdx and branches on it: not a plain load of a thread-local.
  EXPECT_FALSE(decode_tls_get_addr_load(kThreadId, kThreadIdAt));
}

TEST(TorchTlsCode, FramePointerBuildsDecodeToWhatObjdumpShows) {
  auto peek = decode_tls_get_addr_load(kPeekFp, 0x12f0);
  ASSERT_TRUE(peek);
  EXPECT_EQ(peek->index, 0x3f78u);
  EXPECT_EQ(peek->callee, 0x1080u);
  EXPECT_EQ(peek->disp, 0);
  auto task = decode_graph_task_id(kGraphTaskFp, 0x1380);
  ASSERT_TRUE(task);
  EXPECT_EQ(task->slot, 0x4068u);
  EXPECT_EQ(task->disp, 0x440);
  auto node = decode_current_node(kNodeFp, 0x13b0);
  ASSERT_TRUE(node);
  EXPECT_EQ(node->slot, 0x4060u);
  // The frame pointer must be popped: a ret with rbp still pushed, or a pop too many, is refused.
  std::vector<uint8_t> code = bytes(kPeekFp);
  code[20] = 0x90;  // nop for the pop
  EXPECT_FALSE(decode_tls_get_addr_load(code, 0x12f0));
  code = bytes(kGraphTaskFp);
  code[38] = 0x90;  // the <none> path's pop
  EXPECT_FALSE(decode_graph_task_id(code, 0x1380));
  code = bytes(kNodeFp);
  code.erase(code.begin() + 8, code.begin() + 12);  // no sub $8 after a frame pointer
  EXPECT_FALSE(decode_current_node(code, 0x13b0));
}

// Each decoder needs every byte of its sequence: any shorter prefix is refused.
TEST(TorchTlsCode, EveryTruncatedSequenceIsRefused) {
  for (size_t n = 0; n < 28; n++) EXPECT_FALSE(decode_tls_get_addr_load({kPeek, n}, kPeekAt)) << n;
  EXPECT_TRUE(decode_tls_get_addr_load({kPeek, 28}, kPeekAt));
  for (size_t n = 0; n < 43; n++) EXPECT_FALSE(decode_graph_task_id({kGraphTask, n}, kGraphTaskAt)) << n;
  EXPECT_TRUE(decode_graph_task_id({kGraphTask, 43}, kGraphTaskAt));
  for (size_t n = 0; n < 17; n++) EXPECT_FALSE(decode_current_node({kNode, n}, kNodeAt)) << n;
  EXPECT_TRUE(decode_current_node({kNode, 17}, kNodeAt));
}

// An instruction that computes something else, in place of each one the value depends on.
TEST(TorchTlsCode, AnotherInstructionAnywhereIsRefused) {
  struct Edit {
    const char* what;
    int fn;  // 0 peek, 1 graph task, 2 node
    size_t at;
    std::vector<uint8_t> with;
  };
  const std::vector<Edit> edits = {
      {"lea into rsi", 0, 4, {0x48, 0x8d, 0x35}},
      {"call rel32 as jmp", 0, 11, {0xe9}},
      {"load into rdx", 0, 16, {0x48, 0x8b, 0x90}},
      {"a 32-bit load", 0, 16, {0x90, 0x8b, 0x80}},
      {"sub rsp, 16 left unmatched", 0, 23, {0x48, 0x83, 0xc4, 0x10}},
      {"no ret", 0, 27, {0xcc}},
      {"compare with 1", 1, 10, {0x48, 0x83, 0x38, 0x01}},
      {"jne for je", 1, 14, {0x75}},
      {"the second accessor another slot", 1, 18, {0x33}},
      {"the task's pointer not loaded", 1, 22, {0x48, 0x89, 0xc0}},
      {"a 64-bit id", 1, 25, {0x48}},
      {"-2 outside backward", 1, 37, {0xfe}},
      {"the jump back past the add", 1, 42, {0xf8}},
      {"a load from rcx", 2, 10, {0xf3, 0x0f, 0x6f, 0x01}},
      {"the copy from 8 bytes on", 2, 10, {0xf3, 0x0f, 0x6f, 0x40}},
      {"the copy stored to rax", 2, 14, {0x0f, 0x11, 0x00}},
      {"rbx not the result", 2, 1, {0x48, 0x89, 0xf3}},
  };
  for (const Edit& e : edits) {
    std::vector<uint8_t> code = e.fn == 0 ? bytes(kPeek) : e.fn == 1 ? bytes(kGraphTask) : bytes(kNode);
    std::copy(e.with.begin(), e.with.end(), code.begin() + static_cast<std::ptrdiff_t>(e.at));
    bool decoded = e.fn == 0   ? decode_tls_get_addr_load(code, kPeekAt).has_value()
                   : e.fn == 1 ? decode_graph_task_id(code, kGraphTaskAt).has_value()
                               : decode_current_node(code, kNodeAt).has_value();
    EXPECT_FALSE(decoded) << e.what;
  }
}

TEST(TorchTlsCode, PltStubsWithAndWithoutEndbrAndBnd) {
  const uint8_t plain[] = {0xff, 0x25, 0x10, 0x00, 0x00, 0x00, 0x68, 0x01};
  const uint8_t ibt[] = {0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0xf0, 0xff, 0xff, 0xff};
  EXPECT_EQ(decode_plt_stub(plain, 0x1000), std::optional<uint64_t>(0x1000 + 6 + 0x10));
  EXPECT_EQ(decode_plt_stub(ibt, 0x2000), std::optional<uint64_t>(0x2000 + 11 - 0x10));
  const uint8_t call[] = {0xff, 0x15, 0x10, 0x00, 0x00, 0x00};
  EXPECT_FALSE(decode_plt_stub(call, 0x1000));
}

TorchApi lib_api() {
  return test::torch_api_of(torch_tls_lib::peek, torch_tls_lib::thread_id, torch_tls_lib::graph_task_id,
                            torch_tls_lib::current_node, "torch_tls_lib");
}

// The reads equal the functions on threads other than the resolving one, as their values change.
TEST(TorchTls, ReadsInPlaceEqualTorchsFunctionsOnEveryThread) {
  std::string why;
  const auto tls = resolve_torch_tls(lib_api(), &why);
  ASSERT_TRUE(tls) << why;
  std::vector<std::thread> threads;
  std::atomic<int> checked{0};
  for (int k = 0; k < 4; k++)
    threads.emplace_back([&, k] {
      for (int i = 0; i < 3 + k; i++) torch_tls_lib::take();
      const char* base = torch_tls_base_here(*tls, lib_api());
      ASSERT_TRUE(base);
      for (int step = 0; step < 50; step++) {
        torch_tls_lib::take();
        torch_tls_lib::set_graph_task(step % 3 == 0 ? -1 : 100 * k + step);
        auto node = std::make_shared<int>(step);
        torch_tls_lib::set_current_node(step % 4 == 0 ? nullptr : node);
        ASSERT_EQ(torch_tls_seq(base, tls->seq), torch_tls_lib::peek());
        ASSERT_EQ(torch_tls_graph_task(base, tls->task, tls->task_id), torch_tls_lib::graph_task_id());
        ASSERT_EQ(torch_tls_node(base, tls->node), torch_tls_lib::current_node().get());
        checked++;
      }
      torch_tls_lib::set_current_node(nullptr);
      torch_tls_lib::set_graph_task(-1);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(checked.load(), 200);
}

// Functions whose thread-locals this build reaches otherwise (the test binary's own, local-exec
// accesses): refused with a reason, and the tracking calls them.
uint64_t local_seq() {
  static thread_local uint64_t s = 0;
  return s++;
}
int local_task() { return -1; }
std::shared_ptr<void> local_node() { return nullptr; }
TEST(TorchTls, FunctionsOfOtherShapesAreRefused) {
  TorchApi api = lib_api();
  api.peek = local_seq;
  std::string why;
  EXPECT_FALSE(resolve_torch_tls(api, &why));
  EXPECT_NE(why.find("peek"), std::string::npos) << why;
  api = lib_api();
  api.graph_task_id = local_task;
  EXPECT_FALSE(resolve_torch_tls(api, &why));
  EXPECT_NE(why.find("graph_task_id"), std::string::npos) << why;
  api = lib_api();
  api.current_node = local_node;
  EXPECT_FALSE(resolve_torch_tls(api, &why));
  EXPECT_NE(why.find("current_node"), std::string::npos) << why;
}

// A forward pass on one thread and its backward on another, tracked with torch's thread-locals read in
// place or its functions called: the BackwardStack parts of each backward launch, by launch.
std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> backward_parts(bool in_place, uint64_t* threads_in_place) {
  const std::string path = test::temp_path(in_place ? "torch_tls_in_place" : "torch_tls_called");
  ProfileWriter writer;
  StringTable strings{writer};
  AutogradTracker tracker{writer, strings};
  std::string error;
  EXPECT_TRUE(writer.open(path, true, &error)) << error;
  tracker.set_deferred(false);
  tracker.set_read_in_place(in_place);
  tracker.init_with(lib_api(), /*python=*/false, [](const std::string&) {});
  EXPECT_EQ(tracker.in_place_state().empty(), in_place) << tracker.in_place_state();
  std::vector<test::FakeNode> nodes;
  std::vector<uint32_t> ids;
  // The forward thread stays alive while the engine thread runs: a thread started after another
  // ended may reuse its stack, and with it the address of its thread-locals.
  std::mutex mu;
  std::condition_variable cv;
  bool forward_done = false, engine_done = false;
  std::thread forward([&] {
    auto op = [&](int launches, uint32_t stack) {  // an op: its node, then its kernels
      test::FakeNode n;
      n.sequence_nr = torch_tls_lib::take();
      n.thread_id = torch_tls_lib::thread_id();
      nodes.push_back(n);
      for (int i = 0; i < launches; i++) EXPECT_EQ(tracker.on_launch(stack + static_cast<uint32_t>(i)), stack + static_cast<uint32_t>(i));
    };
    op(1, 11);
    op(0, 0);  // a view: no kernel
    op(2, 13);
    std::unique_lock<std::mutex> lock(mu);
    forward_done = true;
    cv.notify_all();
    cv.wait(lock, [&] { return engine_done; });
  });
  std::thread engine([&] {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return forward_done; });
    }
    torch_tls_lib::set_graph_task(7);
    for (int k = static_cast<int>(nodes.size()) - 1; k >= 0; k--) {
      torch_tls_lib::set_current_node(std::make_shared<test::FakeNode>(nodes[static_cast<size_t>(k)]));
      ids.push_back(tracker.on_launch(100 + static_cast<uint32_t>(k)));
    }
    torch_tls_lib::set_current_node(nullptr);
    ids.push_back(tracker.on_launch(200));
    torch_tls_lib::set_graph_task(-1);
    std::lock_guard<std::mutex> lock(mu);
    engine_done = true;
    cv.notify_all();
  });
  engine.join();
  forward.join();
  *threads_in_place = tracker.threads_in_place();
  tracker.finish();
  writer.add(EndRecord{});
  EXPECT_TRUE(writer.close());
  auto p = read_profile(path);
  std::remove(path.c_str());
  EXPECT_TRUE(p.ok()) << p.error();
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> out;
  if (!p.ok()) return out;
  for (uint32_t id : ids) {
    EXPECT_TRUE(id & kBackwardStackBit) << id;
    const auto it = p->backward_stacks.find(id);
    out.push_back(it == p->backward_stacks.end() ? std::make_tuple(id, 0u, 0u)
                                                 : std::make_tuple(it->second.stack_id, it->second.caller_id,
                                                                   it->second.forward_stack_id));
  }
  return out;
}

TEST(TorchTls, TheTrackingReadsInPlaceWhatItGetsByCallingTorch) {
  uint64_t threads_called = 0, threads_read = 0;
  const auto called = backward_parts(false, &threads_called);
  const auto read = backward_parts(true, &threads_read);
  EXPECT_EQ(threads_called, 0u);
  EXPECT_EQ(threads_read, 2u);  // the forward thread and the engine thread
  const std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> expected = {
      {102, 0, 13},  // add's backward: its op's first launch
      {101, 0, 13},  // the view's: the next launch after it
      {100, 0, 11},
      {200, 0, 0},  // no node
  };
  EXPECT_EQ(called, expected);
  EXPECT_EQ(read, expected);
}

}  // namespace
}  // namespace aiflame
