#include "record/cupti/cupti_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "record/module_map.h"

namespace aiflame {

std::string CuptiApi::result_string(CUptiResult r) const {
  const char* s = nullptr;
  if (cuptiGetResultString && cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

namespace {

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::vector<std::string> candidates(const std::string& explicit_path) {
  std::vector<std::string> c;
  // A libcupti the program already loaded (PyTorch's kineto links it): a second copy would be a second CUPTI.
  std::string loaded;
  uint64_t lo, hi;
  if (find_module_range("libcupti.so", &lo, &hi, &loaded)) c.push_back(loaded);
  // An explicit choice is the only one tried (after a copy already loaded): falling back silently
  // to another libcupti would hide a typo in the path.
  if (!explicit_path.empty()) {
    c.push_back(explicit_path);
    return c;
  }
  std::string rt;
  if (find_module_range("libcudart.so", &lo, &hi, &rt)) {
    std::string d = dir_of(rt);  // .../nvidia/cuda_runtime/lib or .../cu13/lib
    c.push_back(d + "/libcupti.so.13");
    c.push_back(d + "/libcupti.so.12");
    std::string nv = dir_of(dir_of(d));  // .../nvidia
    for (const char* sub : {"/cuda_cupti/lib/libcupti.so.13", "/cuda_cupti/lib/libcupti.so.12"}) c.push_back(nv + sub);
    c.push_back(dir_of(d) + "/../cuda_cupti/lib/libcupti.so.13");
  }
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* h = std::getenv(env)) {
      for (const char* sub : {"/lib64/libcupti.so", "/lib/libcupti.so", "/extras/CUPTI/lib64/libcupti.so"})
        c.push_back(std::string(h) + sub);
    }
  }
  for (const char* p : {"/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda/lib/libcupti.so",
                        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", "libcupti.so.13", "libcupti.so.12",
                        "libcupti.so"})
    c.push_back(p);
  return c;
}

}  // namespace

bool load_cupti(CuptiApi* api, const std::string& explicit_path, std::string* error) {
  void* h = nullptr;
  std::string tried;
  for (const auto& path : candidates(explicit_path)) {
    h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h) {
      api->library_path = path;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + path;
  }
  if (!h) {
    *error = "libcupti not found (tried " + tried + "); set AIFLAME_CUPTI=/path/to/libcupti.so";
    return false;
  }
  bool ok = true;
  std::string missing;
#define AIFLAME_RESOLVE(name)                                          \
  api->name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name));    \
  if (!api->name) { ok = false; missing += std::string(" ") + #name; }
  AIFLAME_CUPTI_FUNCTIONS(AIFLAME_RESOLVE)
#undef AIFLAME_RESOLVE
  if (!ok) {
    *error = api->library_path + " lacks" + missing + " (CUPTI too old; aiflame needs CUDA 12.6 or newer)";
    return false;
  }
  api->cuptiGetGraphNodeId = reinterpret_cast<decltype(&::cuptiGetGraphNodeId)>(dlsym(h, "cuptiGetGraphNodeId"));
  api->cuptiGetGraphId = reinterpret_cast<decltype(&::cuptiGetGraphId)>(dlsym(h, "cuptiGetGraphId"));
  api->cuptiActivityDisable = reinterpret_cast<decltype(&::cuptiActivityDisable)>(dlsym(h, "cuptiActivityDisable"));
  api->cuptiActivitySetAttribute =
      reinterpret_cast<decltype(&::cuptiActivitySetAttribute)>(dlsym(h, "cuptiActivitySetAttribute"));
  api->cuptiFinalize = reinterpret_cast<decltype(&::cuptiFinalize)>(dlsym(h, "cuptiFinalize"));
  if (api->cuptiGetVersion(&api->version) != CUPTI_SUCCESS) {
    *error = "cuptiGetVersion failed in " + api->library_path;
    return false;
  }
  return true;
}

}  // namespace aiflame
