#include "record/levelzero/ze_api.h"

#include <dlfcn.h>

namespace aiflame {

bool load_ze(ZeApi* api, std::string* error) {
  // RTLD_NOLOAD: only the loader the program itself loaded; the tracing functions live in it too.
  void* h = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen("libze_loader.so", RTLD_NOW | RTLD_NOLOAD);
  if (!h) {
    *error = "the program has not loaded the Level Zero loader (libze_loader.so.1)";
    return false;
  }
  std::string missing;
#define AIFLAME_LOAD(name)                                                            \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(h, #name));                \
  if (!api->name) missing += missing.empty() ? #name : ", " #name;
  AIFLAME_ZE_FUNCTIONS(AIFLAME_LOAD)
#undef AIFLAME_LOAD
  if (!missing.empty()) {
    *error = "the Level Zero loader lacks " + missing + " (loader 1.8 or newer has them)";
    return false;
  }
  return true;
}

}  // namespace aiflame
