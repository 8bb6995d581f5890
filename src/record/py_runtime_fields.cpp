#include "record/py_runtime_fields.h"

#include <limits.h>

#include "record/code_cursor.h"

#include <cstring>

namespace aiflame {

namespace {
int32_t disp32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
}  // namespace

std::optional<IntGetter> decode_int_getter(std::span<const uint8_t> code, uint64_t at) {
  Cursor c{code, at};
  c.take({0xf3, 0x0f, 0x1e, 0xfa});  // endbr64
  const size_t start = c.i;
  IntGetter g;
  // mov disp32(%rip),%eax; ret
  if (c.take({0x8b, 0x05}) && c.rip(g.addr) && c.take({0xc3})) return g;
  c.i = start;
  // mov slot(%rip),%rax; mov disp(%rax),%eax; ret
  g.via_slot = true;
  if (c.take({0x48, 0x8b, 0x05}) && c.rip(g.addr) && load_from_rax(c, false, g.disp) && c.take({0xc3})) return g;
  return std::nullopt;
}

std::vector<TssRef> tss_refs(std::span<const uint8_t> code, uint64_t at) {
  std::vector<TssRef> refs;
  uint64_t slot = 0;  // the GOT slot %rax was last loaded from (mov slot(%rip),%rax)
  for (size_t i = 0; i + 5 <= code.size(); i++) {
    const uint8_t b0 = code[i], b1 = code[i + 1];
    if (b0 == 0x48 && i + 7 <= code.size()) {
      const uint8_t m = code[i + 2];
      const int64_t d = disp32(&code[i + 3]);
      const uint64_t next = at + i + 7;
      if (b1 == 0x8b && m == 0x05) {  // mov disp32(%rip),%rax
        slot = next + static_cast<uint64_t>(d);
      } else if (b1 == 0x8d && (m & 0xc7) == 0x80 && slot) {  // lea disp32(%rax),%r64
        refs.push_back({slot, true, static_cast<int32_t>(d)});
      } else if (b1 == 0x8d && (m & 0xc7) == 0x05) {  // lea disp32(%rip),%r64
        refs.push_back({next + static_cast<uint64_t>(d), false, 0});
      }
    }
    if (b0 == 0xbf && i + 5 <= code.size()) {  // mov $imm32,%edi: a non-PIE interpreter's address
      refs.push_back({static_cast<uint32_t>(disp32(&code[i + 1])), false, 0});
    }
    if (i + 6 > code.size()) continue;
    const int64_t d = disp32(&code[i + 2]);
    if (b0 == 0x8b && (b1 & 0xc7) == 0x05) {  // mov disp32(%rip),%r32: either field of the Py_tss_t
      const uint64_t field = at + i + 6 + static_cast<uint64_t>(d);
      refs.push_back({field, false, 0});
      refs.push_back({field - 4, false, 0});
    } else if (b0 == 0x83 && b1 == 0x3d && i + 7 <= code.size()) {  // cmpl $imm8,disp32(%rip)
      refs.push_back({at + i + 7 + static_cast<uint64_t>(d), false, 0});
    }
  }
  return refs;
}

bool check_tss(const PyTss* t, uint64_t lo, uint64_t hi, const void* value, GetSpecific getspecific) {
  const auto a = reinterpret_cast<uint64_t>(t);
  if (!value || (a & 3) || a < lo || a > hi || hi - a < sizeof(PyTss)) return false;
  PyTss v;
  std::memcpy(&v, t, sizeof v);
  return v.is_initialized == 1 && v.key < PTHREAD_KEYS_MAX && getspecific(v.key) == value;
}

}  // namespace aiflame
