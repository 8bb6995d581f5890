#include "util/fork_guard.h"

#include <pthread.h>

#include <atomic>

namespace aiflame {
namespace {

constexpr int kMax = 8;
struct Held {
  std::mutex* m;
  void (*in_child)();
};
// Written before the count is published; registrations are rare (a singleton's construction) and
// a fork concurrent with one sees either count.
Held g_held[kMax];
std::atomic<int> g_count{0};
std::mutex g_register_mu;

std::mutex g_loader_iteration;
int g_locked = 0;  // how many prepare() took: a registration between prepare and release is not one

void prepare() {
  g_locked = g_count.load(std::memory_order_acquire);
  for (int i = 0; i < g_locked; i++) g_held[i].m->lock();
  g_loader_iteration.lock();
}

int release() {
  g_loader_iteration.unlock();
  for (int i = g_locked - 1; i >= 0; i--) g_held[i].m->unlock();
  return g_locked;
}

void in_parent() { (void)release(); }

void in_child() {
  const int n = release();
  for (int i = 0; i < n; i++)
    if (g_held[i].in_child) g_held[i].in_child();
}

// glibc runs the handlers of concurrent forks one fork at a time (its atfork lock), so g_locked is
// the forking thread's own.
void install_once() {
  static const bool installed = [] { return pthread_atfork(prepare, in_parent, in_child) == 0; }();
  (void)installed;
}

}  // namespace

std::mutex& loader_iteration_lock() {
  install_once();
  return g_loader_iteration;
}

bool hold_across_fork(std::mutex* m, void (*in_child)()) {
  install_once();
  std::lock_guard<std::mutex> lock(g_register_mu);
  const int n = g_count.load(std::memory_order_relaxed);
  for (int i = 0; i < n; i++)
    if (g_held[i].m == m) return true;  // once: the prepare handler would wait for itself
  if (n >= kMax) return false;
  g_held[n] = {m, in_child};
  g_count.store(n + 1, std::memory_order_release);
  return true;
}

}  // namespace aiflame
