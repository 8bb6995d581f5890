// dl_iterate_phdr for aiflame's own threads, safe against a glibc race with a concurrent dlopen.
//
// For every loaded object with TLS, glibc's dl_iterate_phdr calls _dl_tls_get_addr_soft, which, when
// the calling thread's DTV (its table of TLS blocks) is older than the loader's TLS generation, walks
// the loader's TLS slot list to the object's module id without a bound. An object that a dlopen on
// another thread has already put in the list of loaded objects, but whose slot the dlopen has not
// yet added (it does so after relocating), runs that walk off the list's end: a null pointer read in
// ld.so (glibc 2.39, elf/dl-tls.c). aiflame's unwind-table builder, a thread that never touches
// dynamic TLS and so keeps the DTV it was born with, did exactly that: "signal 11 (code 1) at address
// (nil), pc in ld.so, in aiflame's unwind-table builder" under ObjectTable::refresh_now, in ~1 of 20
// hf_gpt2.py recordings, during its imports.
//
// iterate_loaded_objects brings the calling thread's DTV up to the current generation (a
// __tls_get_addr call for aiflame's own module, which is what does that) once dl_iterate_phdr holds the
// loader's write lock, at the first object: from then on no object joins the list, and every object
// already in it whose load completes meanwhile has its slot added before the generation moves, so
// the walk never runs off the list. The reproduction, on the development machine's glibc 2.36 as on
// the GPU machine's 2.39: tests/util/loaded_objects_test.cpp.
//
// It also refreshes once before dl_iterate_phdr, with no loader lock held. A thread born before
// aiflame's object was loaded (the program's threads: the driver loads libaiflame_cupti.so at cuInit)
// has no address for aiflame's TLS block in its DTV yet, and glibc sets one up at the thread's first
// __tls_get_addr for it under its TLS lock (tls_get_addr_tail). A dlopen holds that lock from its start
// to its relocations, taking the list lock meanwhile; a dlclose holds it while it takes the list lock.
// Set up first inside dl_iterate_phdr (the other order), the thread waited for the TLS
// lock holding the list lock: the reverse order, a deadlock with a dlclose, and every other
// dl_iterate_phdr of the program waiting behind it (on glibc 2.36 here:
// LoadedObjects.ATlsSetUpWaitingForALoadHoldsNoListLock).
#pragma once
#include <link.h>

#include <cstdint>

namespace aiflame {

// aiflame's own loaded object: this library, or the executable its code is linked into (tests).
struct OwnObject {
  uint64_t bias = 0;              // its load bias: an address minus it is what addr2line takes
  uint64_t lo = 0, hi = 0;        // its lowest and highest loaded addresses
  unsigned long tls_module = 0;   // its TLS module id (0: none)
  char name[128] = "aiflame";     // its file name, without directories
};
// Found once (dladdr, then a dl_iterate_phdr that stops at that object, loaded long before any object
// still being added at the list's end); not from a signal handler the first time.
const OwnObject& own_object();

// dl_iterate_phdr, also under loader_iteration_lock(): a fork waits for it to end (util/fork_guard.h).
// A callback must not call it again.
int iterate_loaded_objects(int (*callback)(dl_phdr_info*, size_t, void*), void* data);
// The same, with the TLS of the object whose module id is `tls_module` brought up to date (0: none)
// in place of aiflame's own (tests: a test binary's own TLS is the executable's, set up at its start).
int iterate_loaded_objects_for(unsigned long tls_module, int (*callback)(dl_phdr_info*, size_t, void*), void* data);

// The load bias of the loaded object with an executable segment at `pc` (iterate_loaded_objects);
// false where no object has one there.
bool executable_object_bias(uint64_t pc, uint64_t* bias);

// The calling thread's DTV brought up to the loader's current TLS generation (what
// iterate_loaded_objects does first). Returns false where it cannot (aiflame's object has no TLS).
bool refresh_thread_tls_generation();

}  // namespace aiflame
