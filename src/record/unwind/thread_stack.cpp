#include "record/unwind/thread_stack.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

extern "C" void* __libc_stack_end;  // ld.so's (GLIBC_2.1): the stack pointer the program started with

namespace aiflame::unwind {

StackBounds main_thread_stack() {
  StackBounds b;
  if (gettid() != getpid() || !__libc_stack_end) return b;
  rlimit rl{};
  if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t{1} << 30)) return b;
  // glibc's top (nptl/pthread_getattr_np.c): the end of the page that holds __libc_stack_end.
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t hi = (reinterpret_cast<uint64_t>(__libc_stack_end) & ~(page - 1)) + page;
  const uint64_t lo = hi - static_cast<uint64_t>(rl.rlim_cur);
  // A thread that forked the process is the child's only thread (gettid() == getpid()) but runs on
  // its own stack: then this is not its stack.
  const uint64_t sp = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  if (sp < lo || sp >= hi) return b;
  b.lo = lo;
  b.hi = hi;
  return b;
}

StackBounds find_thread_stack() {
  StackBounds b = main_thread_stack();
  if (b.hi) return b;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      b.lo = reinterpret_cast<uint64_t>(addr);
      b.hi = b.lo + size;
    }
    pthread_attr_destroy(&attr);
  }
  return b;
}

}  // namespace aiflame::unwind
