// Reading x86-64 machine code a few known instructions at a time: the decoders that find where a
// library keeps a value its functions return (record/autograd/torch_tls_code.h,
// record/py_runtime_fields.h).
#pragma once
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>

namespace aiflame {

// A read position in a function's code; every match either consumes its bytes or leaves `i` as it was.
struct Cursor {
  std::span<const uint8_t> code;
  uint64_t at;  // the address of code[0]
  size_t i = 0;

  bool take(std::initializer_list<uint8_t> bytes) {
    if (i + bytes.size() > code.size()) return false;
    size_t k = i;
    for (uint8_t b : bytes)
      if (code[k++] != b) return false;
    i = k;
    return true;
  }
  bool i8(int32_t& v) {
    if (i + 1 > code.size()) return false;
    v = static_cast<int8_t>(code[i++]);
    return true;
  }
  bool i32(int32_t& v) {
    if (i + 4 > code.size()) return false;
    std::memcpy(&v, &code[i], 4);
    i += 4;
    return true;
  }
  // A RIP-relative operand that ends its instruction: the address it names.
  bool rip(uint64_t& target) {
    int32_t d = 0;
    if (!i32(d)) return false;
    target = at + i + static_cast<uint64_t>(static_cast<int64_t>(d));
    return true;
  }
};

// mov disp(%rax), %rax (wide) or %eax: disp 0, 8 or 32 bits.
inline bool load_from_rax(Cursor& c, bool wide, int32_t& disp) {
  const size_t s = c.i;
  if (wide && !c.take({0x48})) return false;
  if (c.take({0x8b, 0x00})) {
    disp = 0;
    return true;
  }
  if (c.take({0x8b, 0x40}) && c.i8(disp)) return true;
  if (c.take({0x8b, 0x80}) && c.i32(disp)) return true;
  c.i = s;
  return false;
}

}  // namespace aiflame
