#include "util/loaded_objects.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace aiflame {
namespace {

// The calling thread's DTV generation: glibc's x86-64 thread control block holds the DTV pointer at
// %fs:8, and the DTV's entry 0 is the generation it is current with (dtv[0].counter).
size_t dtv_generation() {
  const size_t* dtv;
  asm volatile("mov %%fs:8, %0" : "=r"(dtv));
  return dtv[0];
}

// An iterate_loaded_objects callback: the thread's DTV generation at the first object, into *data.
int record_generation(dl_phdr_info*, size_t, void* data) {
  *static_cast<size_t*>(data) = dtv_generation();
  return 1;
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
    iterate_loaded_objects(record_generation, &iterated);
    EXPECT_GT(iterated, born) << "iterate_loaded_objects iterated with the DTV the thread was born with";
  });
  u.join();
  if (lib) dlclose(lib);
}

// What the unwinder asks of an address where glibc has no _dl_find_object (before 2.35): the bias of
// the object whose code it is in, as the loader has it; nothing for data or unmapped addresses.
int g_object_data = 1;
TEST(LoadedObjects, ExecutableObjectBiasIsTheLoadersForCodeOnly) {
  void* lib = dlopen(AIFLAME_TEST_TLS_MODULE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  void* fn = dlsym(lib, "tls_module_address");
  ASSERT_NE(fn, nullptr);
  link_map* map = nullptr;
  ASSERT_EQ(dlinfo(lib, RTLD_DI_LINKMAP, &map), 0);
  uint64_t bias = 1;
  ASSERT_TRUE(executable_object_bias(reinterpret_cast<uint64_t>(fn), &bias));
  EXPECT_EQ(bias, map->l_addr);
  ASSERT_TRUE(executable_object_bias(reinterpret_cast<uint64_t>(&record_generation), &bias));
  EXPECT_EQ(bias, own_object().bias);  // this test binary's own code
  EXPECT_FALSE(executable_object_bias(reinterpret_cast<uint64_t>(&g_object_data), &bias));  // data
  EXPECT_FALSE(executable_object_bias(16, &bias));
  dlclose(lib);
}

// The refresh comes once dl_iterate_phdr holds the loader's write lock, not before the call: a load
// that completes while the thread waits for that lock leaves it current all the same. One thread holds
// the lock (inside its own dl_iterate_phdr) until this one waits for it, then loads a library with
// thread-locals; the first callback then sees the generation that load moved to.
TEST(LoadedObjects, TheRefreshComesOnceTheLoadersLockIsHeld) {
  const std::string copy = test::temp_path("libtls_copy.so");  // a file of its own: loaded anew
  std::filesystem::copy_file(AIFLAME_TEST_TLS_MODULE, copy);
  (void)own_object();
  struct Shared {
    std::string copy;
    std::atomic<bool> holding{false};
    std::atomic<pid_t> waiter{0};
    bool waited = false;
    void* lib = nullptr;
  } sh;
  sh.copy = copy;
  std::thread holder([&sh] {
    dl_iterate_phdr(
        [](dl_phdr_info*, size_t, void* p) -> int {
          auto& sh = *static_cast<Shared*>(p);
          sh.holding = true;
          while (!sh.waiter) std::this_thread::yield();
          // Until the waiter sleeps in the kernel (futex, 202): on the loader's lock.
          const std::string file = "/proc/self/task/" + std::to_string(sh.waiter.load()) + "/syscall";
          for (int i = 0; i < 5000 && !sh.waited; i++) {
            sh.waited = test::read_file(file).rfind("202 ", 0) == 0;
            if (!sh.waited) usleep(1000);
          }
          sh.lib = dlopen(sh.copy.c_str(), RTLD_NOW | RTLD_LOCAL);  // the write lock is recursive
          return 1;
        },
        &sh);
  });
  size_t seen = 0;
  std::thread waiter([&] {
    while (!sh.holding) std::this_thread::yield();
    sh.waiter = static_cast<pid_t>(gettid());
    iterate_loaded_objects(record_generation, &seen);
  });
  holder.join();
  waiter.join();
  ASSERT_TRUE(sh.waited) << "the waiting thread never slept on the loader's lock";
  ASSERT_NE(sh.lib, nullptr) << dlerror();
  refresh_thread_tls_generation();
  EXPECT_EQ(seen, dtv_generation()) << "the first callback saw the generation from before the load";
  dlclose(sh.lib);
}

#ifdef AIFLAME_TEST_TLS_RELOCATION_HOOK
// The GPU machine's crash, reproduced (util/loaded_objects.h). Copies of a library with thread-locals
// are loaded one after another; each stops halfway through its load (its IFUNC resolver, run while the
// loader relocates it: tests/util/tls_relocation_hook.c), and there a thread iterates the loaded
// objects. The thread was born (or brought up to date) before the previous load, so its DTV is one
// generation old, and large enough to cover the new object's module id. When that id is the first past
// the loader's TLS slot list (65 ids, then 62 more per part), glibc's _dl_tls_get_addr_soft walks
// off the list's end: the report's "signal 11 at address (nil), pc in ld.so".
enum class Iterate {
  Plain,                   // dl_iterate_phdr
  RefreshedBeforeTheCall,  // a first fix: the DTV refreshed, then dl_iterate_phdr
  Aiflame,                 // iterate_loaded_objects
};

int count_object(dl_phdr_info*, size_t, void* n) {
  ++*static_cast<int*>(n);
  return 0;
}

// A thread that waits for a load to stop halfway, then iterates the loaded objects.
class Iterator {
 public:
  explicit Iterator(Iterate how) {
    if (pipe(go_) != 0 || pipe(done_) != 0) _exit(20);
    thread_ = std::thread([this, how] {
      // The refresh happens now; a load completes before the iteration (as it could while the
      // thread was preempted between the two).
      if (how == Iterate::RefreshedBeforeTheCall) refresh_thread_tls_generation();
      char c;
      while (read(go_[0], &c, 1) == 1 && c == 'g') {
        int n = 0;
        if (how == Iterate::Aiflame)
          iterate_loaded_objects(count_object, &n);
        else
          dl_iterate_phdr(count_object, &n);
        if (write(done_[1], &c, 1) != 1) _exit(21);
      }
    });
  }
  void iterate() {
    char c = 'g';
    if (write(go_[1], &c, 1) != 1 || read(done_[0], &c, 1) != 1) _exit(22);
  }
  ~Iterator() {
    char q = 'q';
    if (write(go_[1], &q, 1) != 1) _exit(23);
    thread_.join();
    for (int fd : {go_[0], go_[1], done_[0], done_[1]}) close(fd);
  }

 private:
  int go_[2], done_[2];
  std::thread thread_;
};

// In a child: loads `copies` in turn, iterating during each; exits 0 when all are loaded. Returns the
// child's wait status.
int load_while_iterating(Iterate how, const std::vector<std::string>& copies) {
  (void)own_object();  // found before any load stops halfway: its dladdr waits for a load to finish
  const pid_t pid = fork();
  if (pid != 0) {
    int status = -1;
    waitpid(pid, &status, 0);
    return status;
  }
  signal(SIGSEGV, SIG_DFL);  // killed by it, not reported and exited by a sanitizer's handler
  int hook[2], resume[2];
  if (pipe(hook) != 0 || pipe(resume) != 0 || dup2(hook[1], 250) != 250 || dup2(resume[0], 251) != 251) _exit(24);
  std::vector<std::unique_ptr<Iterator>> iterators;  // [0]: born before the previous load, [1]: before this one
  size_t iterations = 0;
  std::thread relay([&] {  // from each stopped load to the iterator born before the previous one
    char c;
    while (read(hook[0], &c, 1) == 1 && c == 'r') {
      if (iterators.size() == 2) {
        iterators.front()->iterate();
        iterations++;
      }
      if (write(resume[1], &c, 1) != 1) _exit(25);
    }
  });
  for (const std::string& copy : copies) {
    iterators.push_back(std::make_unique<Iterator>(how));
    if (iterators.size() > 2) iterators.erase(iterators.begin());
    if (!dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL)) _exit(26);
  }
  char q = 'q';
  if (write(hook[1], &q, 1) != 1) _exit(27);
  relay.join();
  iterators.clear();
  _exit(iterations + 1 == copies.size() ? 0 : 28);  // 28: a load did not stop halfway
}

class LoadsStoppedHalfway : public ::testing::Test {
 protected:
  // 160 copies: module ids past the list's first two parts wherever the test binary's own start.
  void SetUp() override {
    const std::string dir = test::temp_path("tls_hooks");
    std::filesystem::create_directories(dir);
    for (int i = 0; i < 160; i++) {
      copies_.push_back(dir + "/libhook" + std::to_string(i) + ".so");  // one file each: loaded anew
      std::filesystem::copy_file(AIFLAME_TEST_TLS_RELOCATION_HOOK, copies_.back());
    }
  }
  std::vector<std::string> copies_;
};

TEST_F(LoadsStoppedHalfway, FaultGlibcsOwnIterationFromAThreadBornBeforeThePreviousLoad) {
  const int status = load_while_iterating(Iterate::Plain, copies_);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << test::child_ending(status);
}

TEST_F(LoadsStoppedHalfway, FaultAnIterationWhoseRefreshCameBeforeTheCall) {
  const int status = load_while_iterating(Iterate::RefreshedBeforeTheCall, copies_);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << test::child_ending(status);
}

TEST_F(LoadsStoppedHalfway, DoNotFaultIterateLoadedObjects) {
  const int status = load_while_iterating(Iterate::Aiflame, copies_);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << test::child_ending(status);
}

// A thread born before a library with thread-locals was loaded gets its DTV's address for that
// library's block at its first __tls_get_addr for it, under the loader's TLS lock, which a dlopen
// holds from its start to its relocations (here the hook library's resolver) and a dlclose while it
// takes the list lock. iterate_loaded_objects_for sets it up before dl_iterate_phdr takes the list
// lock: while the load holds the TLS lock, the thread waits without the list lock, and another
// thread's dl_iterate_phdr runs. With the set-up only inside the iteration,
// the thread waited holding the list lock, and the other iteration waited behind it: exit 3.
TEST(LoadedObjects, ATlsSetUpWaitingForALoadHoldsNoListLock) {
  const std::string dir = test::temp_path("tls_setup");
  std::filesystem::create_directories(dir);
  const std::string module_copy = dir + "/libtlsmodule.so", hook_copy = dir + "/libhook.so";  // loaded anew
  std::filesystem::copy_file(AIFLAME_TEST_TLS_MODULE, module_copy);
  std::filesystem::copy_file(AIFLAME_TEST_TLS_RELOCATION_HOOK, hook_copy);
  (void)own_object();
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    int hook[2], resume[2];
    if (pipe(hook) != 0 || pipe(resume) != 0 || dup2(hook[1], 250) != 250 || dup2(resume[0], 251) != 251) _exit(10);
    std::atomic<unsigned long> module{0};
    std::atomic<bool> go{false}, iterated{false}, other_go{false}, other_iterated{false};
    // Both born before the module's load (a new thread's DTV has every loaded module's address).
    std::thread setting_up([&] {
      while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      int n = 0;
      iterate_loaded_objects_for(module, count_object, &n);
      iterated = true;
    });
    std::thread other([&] {
      while (!other_go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      int n = 0;
      dl_iterate_phdr(count_object, &n);
      other_iterated = true;
    });
    void* lib = dlopen(module_copy.c_str(), RTLD_NOW | RTLD_LOCAL);
    unsigned long id = 0;
    if (!lib || dlinfo(lib, RTLD_DI_TLS_MODID, &id) != 0 || !id) _exit(11);
    module = id;
    std::thread loading([&] {
      if (!dlopen(hook_copy.c_str(), RTLD_NOW | RTLD_LOCAL)) _exit(12);
    });
    char c;
    if (read(hook[0], &c, 1) != 1) _exit(13);  // the load stopped in its resolver, the TLS lock held
    go = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (iterated) _exit(14);  // the set-up did not wait for the load: nothing tested
    other_go = true;
    for (int i = 0; i < 200 && !other_iterated; i++) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const bool ran = other_iterated;
    if (write(resume[1], &c, 1) != 1) _exit(15);
    loading.join();
    setting_up.join();
    other.join();
    _exit(ran ? 0 : 3);
  }
  int status = -1;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << test::child_ending(status) << " (3: the other iteration waited for the thread's list lock; 14: the set-up did not wait)";
  std::filesystem::remove_all(dir);
}
#endif

}  // namespace
}  // namespace aiflame
