#include "attribute/frame_builder.h"

#include <gtest/gtest.h>

#include "attribute/frame_naming.h"
#include "symbolize/demangle.h"
#include "symbolize/nvidia/cupti_names.h"

namespace aiflame {
namespace {

// A Python process: python3.12 (interpreter) calls into libtorch_cuda.so, which calls cudaLaunchKernel.
Profile python_profile() {
  Profile p;
  ProcessRecord pr;
  pr.command = "/usr/bin/python3.12 train.py";
  pr.interval_ms = 10;
  p.process = pr;
  p.modules = {{1, "/nonexistent/python3.12", 0, 0x400000, 0x800000, ""},
               {2, "/nonexistent/libtorch_cuda.so", 0x7f0000000000, 0x7f0000000000, 0x7f0001000000, ""},
               {3, "/nonexistent/libcudart.so.13", 0x7f1000000000, 0x7f1000000000, 0x7f1000100000, ""}};
  p.strings = {{1, "train.py"}, {2, "main"}, {3, "step"}, {4, "_Z4gemmPf"}, {5, "/x/torch/nn/__init__.py"}, {6, "forward"}};
  p.stall_reasons.push_back({0, {{3, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}}});
  StackRecord s;
  s.id = 1;
  // leaf first: cudart, torch, torch, interpreter, interpreter
  s.native = {0x7f1000000100, 0x7f0000000200, 0x7f0000000300, 0x400100, 0x400200};
  s.python = {{5, 6, 9}, {1, 3, 20}, {1, 2, 30}};  // leaf first: forward <- step <- main
  p.stacks[1] = s;
  p.symbols[0x7f1000000100] = {0x7f1000000100, 3, "cudaLaunchKernel", 0};
  p.symbols[0x7f0000000200] = {0x7f0000000200, 2, "at::native::gemm()", 0};
  p.symbols[0x7f0000000300] = {0x7f0000000300, 2, "torch::autograd::THPVariable_mm()", 0};
  p.symbols[0x400100] = {0x400100, 1, "_PyEval_EvalFrameDefault", 0};
  p.symbols[0x400200] = {0x400200, 1, "main", 0};
  return p;
}

template <class Frames>
std::vector<std::string> names(const Frames& f) {
  std::vector<std::string> n;
  for (const auto& x : f) n.push_back(x.name);
  return n;
}

TEST(FrameBuilder, PythonFramesReplaceTheInterpreterPart) {
  Profile p = python_profile();
  Symbolizer sym(p.modules);
  FrameBuilder fb(p, sym, {});
  auto frames = fb.cpu_frames(1);
  EXPECT_EQ(names(frames), (std::vector<std::string>{"main (train.py:30)", "step (train.py:20)", "forward (nn/__init__.py:9)",
                                                      "torch::autograd::THPVariable_mm", "at::native::gemm",
                                                      "cudaLaunchKernel"}));
  EXPECT_EQ(frames[0].kind, FrameKind::Python);
  EXPECT_EQ(frames[3].kind, FrameKind::Native);
  EXPECT_EQ(frames[5].kind, FrameKind::Runtime);
}

// Functions inlined at a native address (levels stored when recording ended) are frames of their
// own, between the function and its callee; --lines adds each one's file:line.
TEST(FrameBuilder, InlinedNativeFunctionsAreFramesAndLinesAreOptional) {
  Profile p = python_profile();
  p.symbols[0x7f0000000200].levels = {{"at::native::gemm()", "gemm.cpp", 40},
                                      {"at::native::(anonymous namespace)::tile(int)", "tile.h", 12}};
  Symbolizer sym(p.modules);
  FrameBuilder plain(p, sym, {});
  EXPECT_EQ(names(plain.cpu_frames(1)),
            (std::vector<std::string>{"main (train.py:30)", "step (train.py:20)", "forward (nn/__init__.py:9)",
                                      "torch::autograd::THPVariable_mm", "at::native::gemm",
                                      "at::native::(anonymous namespace)::tile", "cudaLaunchKernel"}));
  FrameOptions opt;
  opt.lines = true;
  FrameBuilder lines(p, sym, opt);
  auto n = names(lines.cpu_frames(1));
  ASSERT_EQ(n.size(), 7u);
  EXPECT_EQ(n[4], "at::native::gemm (gemm.cpp:40)");
  EXPECT_EQ(n[5], "at::native::(anonymous namespace)::tile (tile.h:12)");
  EXPECT_EQ(n[6], "cudaLaunchKernel");  // no levels stored: the name alone
  EXPECT_EQ(lines.cpu_frames(1)[5].kind, FrameKind::Native);
}

TEST(FrameBuilder, FullNamesKeepParameterLists) {
  Profile p = python_profile();
  Symbolizer sym(p.modules);
  FrameOptions opt;
  opt.full_names = true;
  FrameBuilder fb(p, sym, opt);
  EXPECT_EQ(names(fb.cpu_frames(1))[4], "at::native::gemm()");
}

TEST(FrameBuilder, NoPythonKeepsTheNativeStackWhole) {
  Profile p = python_profile();
  Symbolizer sym(p.modules);
  FrameBuilder fb(p, sym, {false, true, 0});
  auto n = names(fb.cpu_frames(1));
  ASSERT_EQ(n.size(), 5u);
  EXPECT_EQ(n.front(), "main");
  EXPECT_EQ(n.back(), "cudaLaunchKernel");
}

TEST(FrameBuilder, UnknownAddressesNameTheirModule) {
  Profile p = python_profile();
  p.symbols.erase(0x7f0000000200);
  Symbolizer sym(p.modules);
  FrameBuilder fb(p, sym, {});
  auto n = names(fb.cpu_frames(1));
  EXPECT_EQ(n[4], "[libtorch_cuda.so+0x1ff]");  // return address - 1, module-relative
}

TEST(FrameBuilder, MaxDepthKeepsTheRoot) {
  Profile p = python_profile();
  Symbolizer sym(p.modules);
  FrameBuilder fb(p, sym, {true, true, 2});
  EXPECT_EQ(names(fb.cpu_frames(1)), (std::vector<std::string>{"main (train.py:30)", "step (train.py:20)"}));
}

TEST(FrameBuilder, BuildKeepsTheTotalExactAndLaysOutGpuFrames) {
  Profile p = python_profile();
  Symbolizer sym(p.modules);
  FrameBuilder fb(p, sym, {});
  AttributionResult r;
  // 10 samples split three ways: fractional weights must round to exactly 10.
  r.samples = {{1, 4, 0, 0x1a0, 3, 0, 10.0 / 3}, {1, 4, 0, 0x1b0, 3, 0, 10.0 / 3}, {0, 4, 0, 0x1c0, 3, 0, 10.0 / 3}};
  FlameData d = fb.build(r);
  EXPECT_EQ(d.total(), 10u);
  ASSERT_EQ(d.stacks.size(), 3u);
  bool saw_unattributed = false;
  for (const auto& s : d.stacks) {
    auto n = names(s.frames);
    EXPECT_EQ(n.front(), "python3.12");
    EXPECT_EQ(n[1], "0");  // the pid
    EXPECT_EQ(n[n.size() - 3], "gemm");
    EXPECT_EQ(n.back(), "long_scoreboard");
    EXPECT_EQ(s.frames[s.frames.size() - 4].kind, FrameKind::Separator);
    if (n[2] == "[unattributed]") saw_unattributed = true;
  }
  EXPECT_TRUE(saw_unattributed);
}

// Issue 23 item 3: a Python hook run by autograd's engine thread (Tensor.register_hook,
// register_full_backward_hook, post-accumulate-grad hooks). Its launch stack has Python frames (the
// hook) over interpreter frames over the engine's own native frames (thread_main ->
// evaluate_function -> the hook caller). In true call order the backward kernel reads: backward()'s
// caller, [backward], the node's forward stack, the engine's native frames, the hook's Python, then
// the native frames the hook called into. For a thread that runs Python from its start the root-side
// native frames are the interpreter's own startup and are replaced by Python; an engine thread's are not.
TEST(FrameBuilder, HookOnEngineThreadKeepsTheEngineFramesBeforeThePython) {
  Profile p = python_profile();
  p.modules.push_back({4, "/nonexistent/libtorch_cpu.so", 0x7f2000000000, 0x7f2000000000, 0x7f2001000000, ""});
  p.strings[7] = "hook_scale_grad";
  p.strings[8] = "/x/torch/autograd/graph.py";
  p.strings[9] = "_engine_run_backward";
  StackRecord hook;
  hook.id = 2;
  // leaf first: cudart, torch (the hook's op), the interpreter running the hook, then the engine's
  // frames down to the thread's start.
  hook.native = {0x7f1000000100, 0x7f0000000200, 0x400100, 0x400300, 0x7f2000000100, 0x7f2000000200, 0x7f2000000300};
  hook.python = {{1, 7, 12}};  // hook_scale_grad (train.py:12)
  p.stacks[2] = hook;
  p.symbols[0x400300] = {0x400300, 1, "PyObject_Call", 0};
  p.symbols[0x7f2000000100] = {0x7f2000000100, 4, "torch::autograd::call_tensor_pre_hooks()", 0};
  p.symbols[0x7f2000000200] = {0x7f2000000200, 4, "torch::autograd::Engine::evaluate_function()", 0};
  p.symbols[0x7f2000000300] = {0x7f2000000300, 4, "torch::autograd::Engine::thread_main()", 0};
  p.backward_callers[1] = {1, {{8, 9, 800}, {1, 3, 21}, {1, 2, 30}}};  // _engine_run_backward <- step:21 <- main
  p.backward_stacks[kBackwardStackBit | 1] = {kBackwardStackBit | 1, 2, 1, 1};  // forward: stack 1 (step:20)
  Symbolizer sym(p.modules);
  FrameBuilder fb(p, sym, {});
  EXPECT_EQ(names(fb.cpu_frames(kBackwardStackBit | 1)),
            (std::vector<std::string>{"main (train.py:30)", "step (train.py:21)", "_engine_run_backward (graph.py:800)",
                                      "[backward]", "main (train.py:30)", "step (train.py:20)", "forward (nn/__init__.py:9)",
                                      "torch::autograd::Engine::thread_main", "torch::autograd::Engine::evaluate_function",
                                      "torch::autograd::call_tensor_pre_hooks", "hook_scale_grad (train.py:12)",
                                      "at::native::gemm", "cudaLaunchKernel"}));
  // The same launch outside a backward composition (tracking off): Python replaces the interpreter part.
  EXPECT_EQ(names(fb.cpu_frames(2)),
            (std::vector<std::string>{"hook_scale_grad (train.py:12)", "at::native::gemm", "cudaLaunchKernel"}));
}

TEST(FrameNames, KernelAndStallShortForms) {
  EXPECT_EQ(kernel_frame_name("_Z12matmul_basicPKfS0_Pfi"), "matmul_basic");
  EXPECT_EQ(kernel_frame_name("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_"),
            "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >");
  EXPECT_EQ(kernel_frame_name("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(short_stall_name("smsp__pcsamp_warps_issue_stalled_long_scoreboard"), "long_scoreboard");
  EXPECT_EQ(short_stall_name("smsp__pcsamp_sample_count"), "sample_count");
  EXPECT_EQ(pc_frame_name(0x1a0), "0x1a0");
}

// Stall reasons are named by the backend that recorded them: CUPTI's are shortened (profiles that
// name no backend are CUPTI's), another backend's are kept as they are.
TEST(FrameNames, StallNamesFollowTheProfilesBackend) {
  Profile p;
  EXPECT_EQ(stall_frame_name(p, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"), "long_scoreboard");
  p.process = ProcessRecord{};
  p.process->backend = "cupti";
  EXPECT_EQ(stall_frame_name(p, "smsp__pcsamp_warps_issue_stalled_barrier"), "barrier");
  p.process->backend = "level_zero";
  EXPECT_EQ(stall_frame_name(p, "smsp__pcsamp_warps_issue_stalled_barrier"), "smsp__pcsamp_warps_issue_stalled_barrier");
  EXPECT_EQ(stall_frame_name(p, "SEND"), "SEND");
  EXPECT_EQ(classify_module("libcublasLt.so.13"), FrameKind::Runtime);
  EXPECT_EQ(classify_module("libc.so.6"), FrameKind::Runtime);
  EXPECT_EQ(classify_module("libtorch_cuda.so"), FrameKind::Native);
}

}  // namespace
}  // namespace aiflame
