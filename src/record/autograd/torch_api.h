// What the autograd tracking calls in a loaded PyTorch: four exported functions of libtorch_cpu.so,
// found by their mangled names on that library's own handle (torch loads it RTLD_LOCAL, so the
// global scope does not see it), and two fields of torch::autograd::Node read at fixed offsets.
// Nothing is loaded: when no libtorch_cpu.so is mapped, resolve_torch() finds nothing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace aiflame {

// Mangled names (Itanium ABI), as `nm -D libtorch_cpu.so` lists them; bench/backward_check.sh
// --probe prints what a given torch resolves. Return types are not part of a mangled name: they
// come from the headers (ATen/SequenceNumber.h, ATen/record_function.h, torch/csrc/autograd/
// engine.h and function.h), the same in torch 2.0-2.11.
inline constexpr const char* kTorchPeek = "_ZN2at15sequence_number4peekEv";            // uint64_t at::sequence_number::peek()
inline constexpr const char* kTorchThreadId = "_ZN2at14RecordFunction15currentThreadIdEv";  // static uint64_t at::RecordFunction::currentThreadId()
inline constexpr const char* kTorchGraphTaskId = "_ZN5torch8autograd25get_current_graph_task_idEv";  // int, -1 outside backward
inline constexpr const char* kTorchCurrentNode = "_ZN5torch8autograd16get_current_nodeEv";  // std::shared_ptr<Node>

struct TorchApi {
  uint64_t (*peek)() = nullptr;
  uint64_t (*thread_id)() = nullptr;
  int (*graph_task_id)() = nullptr;
  // Returns a std::shared_ptr<Node>: same layout and return convention (hidden pointer) as
  // shared_ptr<void>, whose destructor drops the reference through the type-erased control block.
  std::shared_ptr<void> (*current_node)() = nullptr;
  // torch::autograd::Node (torch/csrc/autograd/function.h): the vptr at 0, the weak_ptr of
  // enable_shared_from_this<Node> at 8 (16 bytes), then `uint64_t sequence_nr_` at 24,
  // `uint64_t topological_nr_` at 32, `bool has_parent_` at 40, `uint64_t thread_id_` at 48.
  size_t node_sequence_nr = 24;
  size_t node_thread_id = 48;
  bool node_layout = false;  // the running torch's version is one whose layout is known
  std::string version;       // torch.__version__ from version.py beside the library ("" unknown)
  std::string library;       // path of the loaded libtorch_cpu.so ("" when torch is not loaded)
  std::string problem;       // what is missing or unknown ("" when everything is there)
};

// Finds the loaded libtorch_cpu.so and resolves the above; never loads anything.
TorchApi resolve_torch();
// "2.11.0+cu130" from a version.py's text (`__version__ = '2.11.0+cu130'`); "" when absent.
std::string torch_version_from(const std::string& version_py);
// Whether the Node offsets above are those of this torch version (major.minor in a known range).
bool node_layout_known(const std::string& version);

}  // namespace aiflame
