// A library shaped as libtorch_cpu.so's autograd functions (torch_tls_lib.cpp): a per-thread sequence
// number behind __tls_get_addr, and the graph task and current node behind c10::ThreadLocal-style
// accessors, so that resolve_torch_tls finds them as it finds torch's.
#pragma once
#include <cstdint>
#include <memory>

namespace torch_tls_lib {
uint64_t peek();                     // at::sequence_number::peek
uint64_t take();                     // get_and_increment: an op making its node
uint64_t thread_id();                // at::RecordFunction::currentThreadId
int graph_task_id();                 // torch::autograd::get_current_graph_task_id
std::shared_ptr<void> current_node();  // torch::autograd::get_current_node
void set_graph_task(int id);         // -1: none (outside backward)
void set_current_node(std::shared_ptr<void> node);
}  // namespace torch_tls_lib
