#include "util/loaded_objects.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <thread>

namespace aiflame {
namespace {

// The calling thread's DTV generation: glibc's x86-64 thread control block holds the DTV pointer at
// %fs:8, and the DTV's entry 0 is the generation it is current with (dtv[0].counter).
size_t dtv_generation() {
  const size_t* dtv;
  asm volatile("mov %%fs:8, %0" : "=r"(dtv));
  return dtv[0];
}

// A thread that has not touched dynamic TLS since a library with thread-locals was loaded keeps an
// old DTV (dl_iterate_phdr then takes glibc's unbounded slot walk for newer objects, which a
// concurrent dlopen runs off the end: util/loaded_objects.h). refresh_thread_tls_generation brings
// it up to date, and iterate_loaded_objects does so before iterating.
TEST(LoadedObjects, AThreadsStaleTlsGenerationIsBroughtUpToDate) {
  size_t before = 0, after = 0, iterated = 0;
  bool refreshed = false;
  void* lib = nullptr;
  std::thread t([&] {
    refresh_thread_tls_generation();
    const size_t born = dtv_generation();
    // Another thread loads the library; this one touches no TLS meanwhile.
    std::thread([&] { lib = dlopen(AIFLAME_TEST_TLS_MODULE, RTLD_NOW | RTLD_LOCAL); }).join();
    before = dtv_generation();
    refreshed = refresh_thread_tls_generation();
    after = dtv_generation();
    EXPECT_EQ(before, born);
  });
  t.join();
  ASSERT_NE(lib, nullptr) << dlerror();
  EXPECT_TRUE(refreshed);
  EXPECT_GT(after, before) << "the thread's DTV generation did not move";

  std::thread u([&] {
    refresh_thread_tls_generation();
    const size_t born = dtv_generation();
    // Unloaded and loaded again by another thread (each moves the generation); then the callback of
    // iterate_loaded_objects sees this thread current.
    std::thread([&] {
      dlclose(lib);
      lib = dlopen(AIFLAME_TEST_TLS_MODULE, RTLD_NOW | RTLD_LOCAL);
    }).join();
    EXPECT_EQ(dtv_generation(), born);
    iterate_loaded_objects(
        [](dl_phdr_info*, size_t, void* data) -> int {
          *static_cast<size_t*>(data) = dtv_generation();
          return 1;
        },
        &iterated);
    EXPECT_GT(iterated, born) << "iterate_loaded_objects iterated with the DTV the thread was born with";
  });
  u.join();
  if (lib) dlclose(lib);
}

}  // namespace
}  // namespace aiflame
