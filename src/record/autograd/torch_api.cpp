#include "record/autograd/torch_api.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string_view>

#include "util/loaded_objects.h"

namespace aiflame {
namespace {

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string dirname_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

struct Found {
  std::string torch_cpu;  // .../libtorch_cpu.so
  std::string torch_c;    // .../torch/_C.cpython-312-x86_64-linux-gnu.so
};

int visit(dl_phdr_info* info, size_t, void* data) {
  auto* f = static_cast<Found*>(data);
  if (!info->dlpi_name || !*info->dlpi_name) return 0;
  std::string path = info->dlpi_name;
  std::string base = basename_of(path);
  if (f->torch_cpu.empty() && base.rfind("libtorch_cpu.so", 0) == 0) f->torch_cpu = path;
  if (f->torch_c.empty() && base.rfind("_C.", 0) == 0 && dirname_of(path).size() >= 6 &&
      basename_of(dirname_of(path)) == "torch")
    f->torch_c = path;
  return 0;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <class F>
bool resolve(void* handle, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  return fn != nullptr;
}

}  // namespace

std::string torch_version_from(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("__version__", 0) != 0) continue;
    auto q = line.find_first_of("'\"");
    if (q == std::string::npos) continue;
    auto end = line.find(line[q], q + 1);
    if (end == std::string::npos) continue;
    return line.substr(q + 1, end - q - 1);
  }
  return "";
}

bool node_layout_known(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return false;
  // The members read (sequence_nr_, thread_id_ after topological_nr_ and has_parent_) sit at 24 and
  // 48, and every Node constructor sets thread_id_, in the torch 1.13.1 headers (Debian's
  // libtorch-dev) and in the 2.x function.h (the newest stored source); torch 1.x has no
  // get_current_node() and so no forward part anyway. Versions after the last one checked (2.11, on
  // the GPU machine with bench/backward_check.sh --probe) are not trusted.
  return major == 2 && minor >= 0 && minor <= 11;
}

TorchApi resolve_torch() {
  TorchApi t;
  Found f;
  iterate_loaded_objects(visit, &f);
  if (f.torch_cpu.empty()) {
    t.problem = "torch is not loaded";
    return t;
  }
  t.library = f.torch_cpu;
  // A wheel keeps torch/lib/libtorch_cpu.so beside torch/version.py's parent; a distribution's
  // package keeps the library elsewhere, but torch/_C*.so sits beside version.py.
  for (const std::string& candidate : {dirname_of(f.torch_cpu) + "/../version.py",
                                       f.torch_c.empty() ? std::string() : dirname_of(f.torch_c) + "/version.py"}) {
    if (candidate.empty()) continue;
    t.version = torch_version_from(read_text(candidate));
    if (!t.version.empty()) break;
  }
  void* h = dlopen(f.torch_cpu.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!h) {
    t.problem = "cannot open the loaded " + f.torch_cpu;
    return t;
  }
  std::string missing;
  if (!resolve(h, kTorchGraphTaskId, t.graph_task_id)) missing += " get_current_graph_task_id";
  if (!resolve(h, kTorchCurrentNode, t.current_node)) missing += " get_current_node";
  if (!resolve(h, kTorchPeek, t.peek)) missing += " sequence_number::peek";
  if (!resolve(h, kTorchThreadId, t.thread_id)) missing += " RecordFunction::currentThreadId";
  // The handle stays open: the library is in use for the life of the process anyway.
  t.node_layout = node_layout_known(t.version);
  if (!missing.empty()) t.problem = "libtorch_cpu.so lacks" + missing;
  else if (!t.node_layout)
    t.problem = "the autograd node layout of torch " + (t.version.empty() ? std::string("(version unknown)") : t.version) +
                " is not known to this aiflame";
  return t;
}

}  // namespace aiflame
