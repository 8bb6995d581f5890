#include "util/loaded_objects.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "util/fork_guard.h"

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
  std::lock_guard<std::mutex> gate(loader_iteration_lock());  // util/fork_guard.h
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

namespace {

void refresh_tls_generation(unsigned long module) {
  AiflameTlsIndex ti{module, 0};
  (void)__tls_get_addr(&ti);
}

}  // namespace

bool refresh_thread_tls_generation() {
  const unsigned long m = own_object().tls_module;
  if (!m) return false;
  refresh_tls_generation(m);
  return true;
}

namespace {

struct FirstRefreshes {
  int (*callback)(dl_phdr_info*, size_t, void*);
  void* data;
  unsigned long module;
  bool first = true;
};

int refresh_at_first_object(dl_phdr_info* info, size_t size, void* p) {
  auto* f = static_cast<FirstRefreshes*>(p);
  if (f->first) {
    // Here dl_iterate_phdr holds the loader's write lock: no object can join the list until the
    // iteration ends, and the only load that can still move the TLS generation is one whose objects
    // are in the list already, which adds their slots before it moves it. A refresh before the call
    // left a window: a load completing before the lock was taken, the next one's object then in the
    // list without its slot (tests/util/loaded_objects_test.cpp, RefreshedBeforeTheCall). The object
    // iterated before this callback is the executable, loaded at start, whose slot is in the list's
    // first part.
    f->first = false;
    if (f->module) refresh_tls_generation(f->module);
  }
  return f->callback(info, size, f->data);
}

}  // namespace

int iterate_loaded_objects(int (*callback)(dl_phdr_info*, size_t, void*), void* data) {
  // Found before the loader's lock is taken: the first own_object() calls dladdr, which takes the
  // loader's other lock (a dlopen holds that one while it waits for this one).
  return iterate_loaded_objects_for(own_object().tls_module, callback, data);
}

int iterate_loaded_objects_for(unsigned long tls_module, int (*callback)(dl_phdr_info*, size_t, void*), void* data) {
  // Once before any loader lock is held, so that the refresh inside never waits for one (see the
  // header: the TLS lock, which a dlopen holds while it waits for the list lock).
  if (tls_module) refresh_tls_generation(tls_module);
  FirstRefreshes f{callback, data, tls_module};
  // No fork while the loader's lock is held here (util/fork_guard.h). Callbacks must not iterate again.
  std::lock_guard<std::mutex> gate(loader_iteration_lock());
  return dl_iterate_phdr(refresh_at_first_object, &f);
}

bool executable_object_bias(uint64_t pc, uint64_t* bias) {
  struct Find {
    uint64_t pc, bias = 0;
    bool found = false;
  } f{pc};
  iterate_loaded_objects(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto& f = *static_cast<Find*>(data);
        for (int i = 0; i < info->dlpi_phnum; i++) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uint64_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && f.pc >= lo && f.pc - lo < ph.p_memsz) {
            f.bias = info->dlpi_addr;
            f.found = true;
            return 1;
          }
        }
        return 0;
      },
      &f);
  *bias = f.bias;
  return f.found;
}

}  // namespace aiflame
