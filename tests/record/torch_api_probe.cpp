// Loaded into a Python that imported torch (torch_api_test.py): what resolve_torch() finds there.
#include <cstring>
#include <string>

#include "record/autograd/torch_api.h"

namespace {
aiflame::TorchApi g_api;
}

extern "C" int aiflame_torch_resolve(char* buf, int size) {
  g_api = aiflame::resolve_torch();
  std::string out = "library=" + g_api.library + "\nversion=" + g_api.version + "\nproblem=" + g_api.problem +
                    "\npeek=" + (g_api.peek ? "1" : "0") + "\nthread_id=" + (g_api.thread_id ? "1" : "0") +
                    "\ngraph_task_id=" + (g_api.graph_task_id ? "1" : "0") +
                    "\ncurrent_node=" + (g_api.current_node ? "1" : "0") + "\nnode_layout=" + (g_api.node_layout ? "1" : "0") +
                    "\n";
  std::strncpy(buf, out.c_str(), static_cast<size_t>(size) - 1);
  buf[size - 1] = 0;
  return g_api.library.empty() ? 0 : 1;
}

extern "C" unsigned long long aiflame_torch_peek() { return g_api.peek ? g_api.peek() : ~0ull; }
extern "C" unsigned long long aiflame_torch_thread_id() { return g_api.thread_id ? g_api.thread_id() : 0; }
extern "C" int aiflame_torch_graph_task_id() { return g_api.graph_task_id ? g_api.graph_task_id() : -2; }
