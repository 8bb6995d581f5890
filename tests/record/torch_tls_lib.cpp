// Built with -O2, the default TLS dialect and no sanitizer (tests/CMakeLists.txt), so that its code
// has the instruction sequences of torch 2.11's wheel (record/autograd/torch_tls_code.h).
#include "torch_tls_lib.h"

#include <atomic>

namespace torch_tls_lib {
namespace {
// c10::ThreadLocal (c10/util/ThreadLocal.h): an object holding the accessor of a function-local
// thread_local, called through at each use.
template <class T>
class ThreadLocal {
 public:
  using Accessor = T* (*)();
  explicit ThreadLocal(Accessor a) : accessor_(a) {}
  T& get() { return *accessor_(); }
  T* operator->() { return accessor_(); }

 private:
  Accessor accessor_;
};

// torch::autograd::GraphTask: its id_ at 0x440, as in torch 2.11.
struct GraphTask {
  char before[0x440];
  int id_;
};

thread_local uint64_t sequence_nr_ = 0;
thread_local uint64_t thread_id_ = 0;
std::atomic<uint64_t> next_thread_id{1};

ThreadLocal<std::shared_ptr<GraphTask>> tls_current_graph_task([]() {
  static thread_local std::shared_ptr<GraphTask> v;
  return &v;
});
ThreadLocal<std::shared_ptr<void>> tls_current_evaluating_node([]() {
  static thread_local std::shared_ptr<void> v;
  return &v;
});
}  // namespace

uint64_t peek() { return sequence_nr_; }
uint64_t take() { return sequence_nr_++; }
uint64_t thread_id() { return thread_id_ ? thread_id_ : (thread_id_ = next_thread_id++); }
int graph_task_id() {
  if (!tls_current_graph_task.get()) return -1;
  return tls_current_graph_task.get()->id_;
}
std::shared_ptr<void> current_node() { return tls_current_evaluating_node.get(); }
void set_graph_task(int id) {
  if (id < 0) {
    tls_current_graph_task.get().reset();
    return;
  }
  auto t = std::make_shared<GraphTask>();
  t->id_ = id;
  tls_current_graph_task.get() = t;
}
void set_current_node(std::shared_ptr<void> node) { tls_current_evaluating_node.get() = std::move(node); }
}  // namespace torch_tls_lib
