#include "util/loaded_objects.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>

// The x86-64 ABI's entry into the loader for a TLS address (exported by ld.so since glibc 2.3). Our
// own accesses go through TLS descriptors (-mtls-dialect=gnu2), which for a module in static TLS never
// look at the DTV: only this call updates it.
struct AiflameTlsIndex {
  unsigned long module, offset;
};
extern "C" void* __tls_get_addr(AiflameTlsIndex*);

namespace aiflame {
namespace {

OwnObject find_own_object() {
  OwnObject self;
  Dl_info di{};
  if (!dladdr(reinterpret_cast<void*>(&find_own_object), &di) || !di.dli_fbase) return self;
  if (di.dli_fname && *di.dli_fname) {
    const char* base = std::strrchr(di.dli_fname, '/');
    std::snprintf(self.name, sizeof self.name, "%s", base ? base + 1 : di.dli_fname);
  }
  struct Find {
    uint64_t base;
    OwnObject* self;
  } f{reinterpret_cast<uint64_t>(di.dli_fbase), &self};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* data) -> int {
        auto* f = static_cast<Find*>(data);
        // dli_fbase is the object's first segment's address; a library's dlpi_addr is the same, a
        // position-dependent executable's is 0 (its bias): either names it.
        bool self = info->dlpi_addr == f->base;
        for (int i = 0; !self && i < info->dlpi_phnum; i++)
          self = info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_addr + info->dlpi_phdr[i].p_vaddr == f->base;
        if (!self) return 0;
        OwnObject& o = *f->self;
        o.bias = info->dlpi_addr;
        o.lo = f->base;
        for (int i = 0; i < info->dlpi_phnum; i++)
          if (info->dlpi_phdr[i].p_type == PT_LOAD)
            o.hi = std::max<uint64_t>(o.hi, info->dlpi_addr + info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz);
        if (size >= offsetof(dl_phdr_info, dlpi_tls_modid) + sizeof info->dlpi_tls_modid) o.tls_module = info->dlpi_tls_modid;
        return 1;
      },
      &f);
  return self;
}

}  // namespace

const OwnObject& own_object() {
  static const OwnObject self = find_own_object();
  return self;
}

bool refresh_thread_tls_generation() {
  const unsigned long m = own_object().tls_module;
  if (!m) return false;
  AiflameTlsIndex ti{m, 0};
  (void)__tls_get_addr(&ti);
  return true;
}

int iterate_loaded_objects(int (*callback)(dl_phdr_info*, size_t, void*), void* data) {
  refresh_thread_tls_generation();
  return dl_iterate_phdr(callback, data);
}

}  // namespace aiflame
