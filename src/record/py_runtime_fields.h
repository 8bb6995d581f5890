// Where CPython keeps the two values the Python walk asks it for at every launch, so that a launch
// reads them itself (record/python_frames.h).
//
// Each launch asked the interpreter whether it is initialized (Py_IsInitialized) and for the calling
// thread's state (PyGILState_GetThisThreadState, which calls PyThread_tss_is_created and
// PyThread_tss_get, which calls pthread_getspecific): three or four calls into libpython's code, which
// a training loop's own work between two launches leaves cold (issue 22; torch's functions the
// autograd tracking called were the same case, record/autograd/torch_tls_code.h). Both values live in
// _PyRuntime: the `initialized` flag, and the Py_tss_t whose pthread key holds each thread's state.
// What is found here is checked against the functions' own answers before it is used, and anything
// else is refused (the walk then keeps calling the functions).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace aiflame {

// Py_IsInitialized()'s code: `return <int at an address>;`, the address either in the code (rip-
// relative, a build without semantic interposition or a static interpreter) or `disp` past the
// address a GOT slot holds (a shared libpython: `mov slot(%rip),%rax; mov disp(%rax),%eax; ret`).
struct IntGetter {
  uint64_t addr = 0;  // the int's address, or with via_slot the slot's
  bool via_slot = false;
  int32_t disp = 0;
};
std::optional<IntGetter> decode_int_getter(std::span<const uint8_t> code, uint64_t at);

// CPython's Py_tss_t.
struct PyTss {
  int is_initialized;
  unsigned key;  // pthread_key_t
};

// The addresses PyGILState_GetThisThreadState()'s first bytes refer to, as candidates for its Py_tss_t
// (_PyRuntime's autoTSSkey; 3.10: its gilstate.autoTSSkey). Each occurrence of: `lea disp32(%rax),%r64`
// after `mov slot(%rip),%rax` (a shared libpython reaching _PyRuntime through the GOT: 3.10-3.13 built
// by pyenv), `mov $imm32,%edi` (a non-PIE interpreter passing the key's address: Ubuntu 24.04's
// python3.12), `lea disp32(%rip),%r64`, or a 32-bit load or compare of a rip-relative int (an
// interpreter that reads the key's fields itself; such a load may be either field, so both places are
// candidates). The bytes are scanned, not decoded: a candidate is only used
// once check_tss accepts it.
struct TssRef {
  uint64_t addr = 0;  // the candidate's address, or with via_slot the GOT slot's
  bool via_slot = false;
  int32_t disp = 0;
};
std::vector<TssRef> tss_refs(std::span<const uint8_t> code, uint64_t at);

// Whether `t` (inside [lo, hi), 4-aligned) is a created Py_tss_t whose key holds `value` (non-null) for
// the calling thread.
using GetSpecific = void* (*)(unsigned key);
bool check_tss(const PyTss* t, uint64_t lo, uint64_t hi, const void* value, GetSpecific getspecific);

}  // namespace aiflame
