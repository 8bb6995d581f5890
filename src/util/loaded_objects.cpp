#include "util/loaded_objects.h"

#include <dlfcn.h>

#include <atomic>

// The x86-64 ABI's entry into the loader for a TLS address (exported by ld.so since glibc 2.3). Our
// own accesses go through TLS descriptors (-mtls-dialect=gnu2), which for a module in static TLS never
// look at the DTV: only this call updates it.
struct AiflameTlsIndex {
  unsigned long module, offset;
};
extern "C" void* __tls_get_addr(AiflameTlsIndex*);

namespace aiflame {
namespace {

// aiflame's own module id: found once, by its object's load address, in a dl_iterate_phdr that stops
// at that object (loaded long before any object still being added at the list's end).
unsigned long own_module() {
  static std::atomic<long> cached{-1};
  long m = cached.load(std::memory_order_acquire);
  if (m >= 0) return static_cast<unsigned long>(m);
  Dl_info di{};
  unsigned long found = 0;
  if (dladdr(reinterpret_cast<void*>(&own_module), &di) && di.dli_fbase) {
    struct Find {
      uintptr_t base;
      unsigned long modid;
    } f{reinterpret_cast<uintptr_t>(di.dli_fbase), 0};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t size, void* data) -> int {
          auto* f = static_cast<Find*>(data);
          // The main program's dli_fbase is its first segment's address; its dlpi_addr is its bias (0
          // when it is not position-independent): either names it.
          bool self = info->dlpi_addr == f->base;
          for (int i = 0; !self && i < info->dlpi_phnum; i++)
            self = info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_addr + info->dlpi_phdr[i].p_vaddr == f->base;
          if (!self) return 0;
          if (size >= offsetof(dl_phdr_info, dlpi_tls_modid) + sizeof info->dlpi_tls_modid) f->modid = info->dlpi_tls_modid;
          return 1;
        },
        &f);
    found = f.modid;
  }
  cached.store(static_cast<long>(found), std::memory_order_release);
  return found;
}

}  // namespace

bool refresh_thread_tls_generation() {
  const unsigned long m = own_module();
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
