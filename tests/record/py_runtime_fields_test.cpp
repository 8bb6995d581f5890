#include "record/py_runtime_fields.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <vector>

namespace aiflame {
namespace {

// Py_IsInitialized() of pyenv's CPython builds (objdump -d libpython3.X.so.1.0), at its address there.
const std::vector<uint8_t> kIsInit310 = {0x48, 0x8b, 0x05, 0xf9, 0x19, 0x18, 0x00, 0x8b, 0x40, 0x0c, 0xc3};
const std::vector<uint8_t> kIsInit312 = {0x48, 0x8b, 0x05, 0x69, 0x14, 0x27, 0x00, 0x8b, 0x40, 0x10, 0xc3};
const std::vector<uint8_t> kIsInit313 = {0x48, 0x8b, 0x05, 0x89, 0xd2, 0x25, 0x00, 0x8b, 0x80, 0x58, 0x02, 0x00, 0x00, 0xc3};

TEST(PyRuntimeFields, PyIsInitializedOfSharedLibpythonsReadsThroughItsGotSlot) {
  auto g = decode_int_getter(kIsInit310, 0x1f2330);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->via_slot);
  EXPECT_EQ(g->addr, 0x373d30u);
  EXPECT_EQ(g->disp, 0xc);
  g = decode_int_getter(kIsInit312, 0x2d2890);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->addr, 0x543d00u);
  EXPECT_EQ(g->disp, 0x10);
  g = decode_int_getter(kIsInit313, 0x28da20);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->via_slot);
  EXPECT_EQ(g->addr, 0x4eacb0u);
  EXPECT_EQ(g->disp, 0x258);
}

TEST(PyRuntimeFields, PyIsInitializedOfAStaticInterpreterReadsItsFlagDirectly) {
  // endbr64; mov 0x1000(%rip),%eax; ret
  const std::vector<uint8_t> code = {0xf3, 0x0f, 0x1e, 0xfa, 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00, 0xc3};
  const auto g = decode_int_getter(code, 0x400000);
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->via_slot);
  EXPECT_EQ(g->addr, 0x400000u + 10 + 0x1000);
  // (%rax) itself: mov slot(%rip),%rax; mov (%rax),%eax; ret
  const std::vector<uint8_t> at_zero = {0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00, 0x8b, 0x00, 0xc3};
  const auto z = decode_int_getter(at_zero, 0x1000);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->disp, 0);
  EXPECT_EQ(z->addr, 0x1000u + 7 + 0x10);
}

TEST(PyRuntimeFields, AnythingElseIsRefused) {
  // Every proper prefix of the accepted sequences.
  for (const auto* code : {&kIsInit310, &kIsInit312, &kIsInit313})
    for (size_t n = 0; n < code->size(); n++)
      EXPECT_FALSE(decode_int_getter(std::span(code->data(), n), 0)) << n << " bytes";
  auto edit = [](std::vector<uint8_t> c, size_t at, uint8_t b) {
    c[at] = b;
    return c;
  };
  EXPECT_FALSE(decode_int_getter(edit(kIsInit312, 8, 0x50), 0));   // mov 0x10(%rax),%edx
  EXPECT_FALSE(decode_int_getter(edit(kIsInit312, 10, 0x90), 0));  // no ret after the load
  EXPECT_FALSE(decode_int_getter(edit(kIsInit312, 0, 0x4c), 0));   // mov slot(%rip),%r8
  EXPECT_FALSE(decode_int_getter(edit(kIsInit312, 2, 0x0d), 0));   // mov slot(%rip),%rcx
}

// PyGILState_GetThisThreadState() of the same builds.
const std::vector<uint8_t> kTstate310 = {0x48, 0x8b, 0x05, 0x69, 0xd1, 0x17, 0x00, 0x48, 0x83, 0xb8, 0x40, 0x02, 0x00,
                                         0x00, 0x00, 0x74, 0x0f, 0x48, 0x8d, 0xb8, 0x48, 0x02, 0x00, 0x00, 0xe9, 0x13,
                                         0xd5, 0xe6, 0xff, 0x0f, 0x1f, 0x00, 0x31, 0xc0, 0xc3};
const std::vector<uint8_t> kTstate312 = {0x48, 0x8b, 0x05, 0xc9, 0xc0, 0x26, 0x00, 0x53, 0x48, 0x8d, 0x98, 0x08, 0x06,
                                         0x00, 0x00, 0x48, 0x89, 0xdf, 0xe8, 0xd9, 0x21, 0xe3, 0xff, 0x85, 0xc0, 0x74,
                                         0x0d, 0x48, 0x89, 0xdf, 0x5b, 0xe9, 0xec, 0x36, 0xe3, 0xff, 0x0f, 0x1f, 0x40,
                                         0x00, 0x31, 0xc0};
const std::vector<uint8_t> kTstate313 = {0x48, 0x8b, 0x05, 0xe9, 0x6b, 0x25, 0x00, 0x53, 0x48, 0x8d, 0x98, 0x70, 0x08,
                                         0x00, 0x00, 0x48, 0x89, 0xdf, 0xe8, 0xd9, 0x59, 0xdf, 0xff, 0x85, 0xc0, 0x74,
                                         0x0d, 0x48, 0x89, 0xdf, 0x5b, 0xe9, 0x5c, 0x6d, 0xdf, 0xff, 0x0f, 0x1f, 0x40,
                                         0x00, 0x31, 0xc0};

bool has_ref(const std::vector<TssRef>& refs, uint64_t addr, bool via_slot, int32_t disp) {
  return std::any_of(refs.begin(), refs.end(),
                     [&](const TssRef& r) { return r.addr == addr && r.via_slot == via_slot && r.disp == disp; });
}

TEST(PyRuntimeFields, TheThreadStateKeyIsWhereTheSharedLibpythonsPointTheirLea) {
  // 3.10: _PyRuntime.gilstate.autoTSSkey at 0x248 (0x240, compared first, is autoInterpreterState).
  EXPECT_TRUE(has_ref(tss_refs(kTstate310, 0x1f6bc0), 0x373d30, true, 0x248));
  EXPECT_TRUE(has_ref(tss_refs(kTstate312, 0x2d7c30), 0x543d00, true, 0x608));
  EXPECT_TRUE(has_ref(tss_refs(kTstate313, 0x2940c0), 0x4eacb0, true, 0x870));
  // No slot-relative candidate at another displacement.
  for (const TssRef& r : tss_refs(kTstate312, 0x2d7c30)) EXPECT_TRUE(!r.via_slot || r.disp == 0x608) << r.disp;
}

TEST(PyRuntimeFields, UbuntusNonPieInterpreterPassesTheKeysAddressAsAnImmediate) {
  // Ubuntu 24.04's /usr/bin/python3.12 (3.12.3), on the GPU machine (bench/probes/py_runtime_code.py at d9aa39d):
  // endbr64; push %rbp; mov $0xb369c8,%edi; mov %rsp,%rbp; call PyThread_tss_is_created; test; je;
  // mov $0xb369c8,%edi; pop %rbp; jmp PyThread_tss_get
  const std::vector<uint8_t> code = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0xbf, 0xc8, 0x69, 0xb3, 0x00, 0x48, 0x89, 0xe5,
                                     0xe8, 0x2e, 0x82, 0x00, 0x00, 0x85, 0xc0, 0x0f, 0x84, 0xab, 0xa5, 0xea, 0xff,
                                     0xbf, 0xc8, 0x69, 0xb3, 0x00, 0x5d, 0xe9, 0x2b, 0x82, 0x00, 0x00};
  const auto refs = tss_refs(code, 0x608290);
  EXPECT_EQ(std::count_if(refs.begin(), refs.end(), [](const TssRef& r) { return r.addr == 0xb369c8 && !r.via_slot; }), 2);
  // Its Py_IsInitialized: endbr64; mov 0x685bfa(%rip),%eax; ret
  const std::vector<uint8_t> init = {0xf3, 0x0f, 0x1e, 0xfa, 0x8b, 0x05, 0xfa, 0x5b, 0x68, 0x00, 0xc3};
  const auto g = decode_int_getter(init, 0x4b07cc);
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->via_slot);
  EXPECT_EQ(g->addr, 0xb363d0u);
}

TEST(PyRuntimeFields, AStaticInterpretersInlinedKeyReadsAreCandidates) {
  // endbr64; mov is_initialized(%rip),%eax; test; je; mov key(%rip),%edi; jmp pthread_getspecific
  const std::vector<uint8_t> code = {0xf3, 0x0f, 0x1e, 0xfa, 0x8b, 0x05, 0x00, 0x20, 0x00, 0x00, 0x85, 0xc0, 0x74,
                                     0x08, 0x8b, 0x3d, 0xfa, 0x1f, 0x00, 0x00, 0xe9, 0x00, 0x00, 0x00, 0x00};
  const uint64_t at = 0x500000, tss = at + 10 + 0x2000;
  const auto refs = tss_refs(code, at);
  // The load of _is_initialized (at tss) and the load of _key (at tss + 4) both name tss.
  EXPECT_EQ(std::count_if(refs.begin(), refs.end(), [&](const TssRef& r) { return r.addr == tss && !r.via_slot; }), 2);
  EXPECT_TRUE(has_ref(refs, tss + 4, false, 0));
  // lea tss(%rip),%rdi
  const std::vector<uint8_t> lea = {0x48, 0x8d, 0x3d, 0x00, 0x01, 0x00, 0x00, 0xe9, 0, 0, 0, 0};
  EXPECT_TRUE(has_ref(tss_refs(lea, 0x1000), 0x1000 + 7 + 0x100, false, 0));
  // Nothing to refer to without a slot load first: a lea off %rax alone is no candidate.
  const std::vector<uint8_t> no_slot = {0x48, 0x8d, 0x98, 0x08, 0x06, 0x00, 0x00, 0xc3};
  EXPECT_TRUE(tss_refs(no_slot, 0).empty());
}

TEST(PyRuntimeFields, APyTssIsTakenOnlyWhenItsKeyHoldsTheValue) {
  pthread_key_t key;
  ASSERT_EQ(pthread_key_create(&key, nullptr), 0);
  int value = 0, other = 0;
  ASSERT_EQ(pthread_setspecific(key, &value), 0);
  auto get = [](unsigned k) { return pthread_getspecific(k); };
  alignas(8) PyTss runtime[4] = {{0, 0}, {1, key}, {2, key}, {1, 5000}};
  const auto lo = reinterpret_cast<uint64_t>(runtime), hi = lo + sizeof runtime;
  EXPECT_TRUE(check_tss(&runtime[1], lo, hi, &value, get));
  EXPECT_FALSE(check_tss(&runtime[1], lo, hi, &other, get));    // another thread state
  EXPECT_FALSE(check_tss(&runtime[1], lo, hi, nullptr, get));   // this thread has none
  EXPECT_FALSE(check_tss(&runtime[0], lo, hi, &value, get));    // not created
  EXPECT_FALSE(check_tss(&runtime[2], lo, hi, &value, get));    // not a flag
  EXPECT_FALSE(check_tss(&runtime[3], lo, hi, &value, get));    // not a key
  EXPECT_FALSE(check_tss(&runtime[1], lo + 16, hi, &value, get));  // outside the runtime
  EXPECT_FALSE(check_tss(&runtime[3], lo, hi - 4, &value, get));   // past its end
  const auto* misaligned = reinterpret_cast<const PyTss*>(reinterpret_cast<const char*>(&runtime[1]) + 2);
  EXPECT_FALSE(check_tss(misaligned, lo, hi, &value, get));
  pthread_key_delete(key);
}

}  // namespace
}  // namespace aiflame
