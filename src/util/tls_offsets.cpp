#include "util/tls_offsets.h"

#include <mutex>
#include <thread>

#include "util/static_tls.h"

namespace aiflame::tls {

constinit Offsets g_offsets = {};

namespace {
constinit AddressOf g_enrolled[kSlots] = {};
std::mutex g_mu;
int g_learned = -1;  // -1: not yet; else learn()'s answer
AddressOf g_probe_slot_fn = nullptr;
int g_probe_slot = -1;

// Below the thread pointer, within the reach of any static block (64 KiB, util/static_tls.cpp).
bool below(uintptr_t tp, intptr_t off) { return off < 0 && off >= -(intptr_t{64} << 10) && tp > 0; }

bool learn_locked() {
  if (!thread_locals_static()) return false;
  intptr_t here[kSlots] = {}, there[kSlots] = {};
  const uintptr_t tp = thread_pointer();
  auto address_of = [](int s) { return s == g_probe_slot && g_probe_slot_fn ? g_probe_slot_fn : g_enrolled[s]; };
  for (int s = 0; s < kSlots; s++)
    if (AddressOf f = address_of(s)) here[s] = static_cast<intptr_t>(reinterpret_cast<uintptr_t>(f()) - tp);
  bool ok = true;
  try {
    std::thread t([&] {
      const uintptr_t tq = thread_pointer();
      for (int s = 0; s < kSlots; s++) {
        AddressOf f = address_of(s);
        if (f) there[s] = static_cast<intptr_t>(reinterpret_cast<uintptr_t>(f()) - tq);
        if (f && !below(tq, there[s])) ok = false;
      }
    });
    t.join();
  } catch (...) {  // no thread: the ordinary accesses
    return false;
  }
  for (int s = 0; s < kSlots; s++)
    if (address_of(s) && here[s] != there[s]) ok = false;
  if (!ok) return false;
  for (int s = 0; s < kSlots; s++)
    if (g_enrolled[s]) g_offsets.at[s].store(there[s], std::memory_order_relaxed);
  return true;
}
}  // namespace

bool enroll(Slot s, AddressOf address_of) {
  g_enrolled[s] = address_of;
  return true;
}

bool learn() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_learned < 0) g_learned = learn_locked() ? 1 : 0;
  return g_learned == 1;
}

void forget_for_tests() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& a : g_offsets.at) a.store(0, std::memory_order_relaxed);
  g_learned = -1;
  g_probe_slot = -1;
  g_probe_slot_fn = nullptr;
}

bool learn_for_tests(Slot s, AddressOf probe) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& a : g_offsets.at) a.store(0, std::memory_order_relaxed);
  g_probe_slot = s;
  g_probe_slot_fn = probe;
  g_learned = learn_locked() ? 1 : 0;
  g_probe_slot = -1;
  g_probe_slot_fn = nullptr;
  return g_learned == 1;
}

}  // namespace aiflame::tls
