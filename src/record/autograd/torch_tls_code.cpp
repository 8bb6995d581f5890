#include "record/autograd/torch_tls_code.h"

#include "record/code_cursor.h"

namespace aiflame {
namespace {

// How a function keeps its stack aligned around its call: the epilogue must undo the same. Rbp: a
// frame pointer (push %rbp; mov %rsp,%rbp), which GCC pops right after the last call, before the
// loads that compute the result (-fno-omit-frame-pointer, as distributions build).
enum class Frame { None, SubRsp8, Push, Rbp };

Frame prologue(Cursor& c) {
  c.take({0xf3, 0x0f, 0x1e, 0xfa});  // endbr64
  if (c.take({0x48, 0x83, 0xec, 0x08})) return Frame::SubRsp8;  // sub $8, %rsp
  if (c.take({0x50})) return Frame::Push;                       // push %rax
  if (c.take({0x55, 0x48, 0x89, 0xe5})) return Frame::Rbp;      // push %rbp; mov %rsp,%rbp
  return Frame::None;
}

// After the last call, with a frame pointer: its pop, if there (then the epilogue is the ret alone).
Frame pop_early(Cursor& c, Frame f) { return f == Frame::Rbp && c.take({0x5d}) ? Frame::None : f; }

// The epilogue and the ret; rax (the result) untouched.
bool epilogue(Cursor& c, Frame f) {
  bool ok = true;
  if (f == Frame::SubRsp8) ok = c.take({0x48, 0x83, 0xc4, 0x08});  // add $8, %rsp
  if (f == Frame::Push) ok = c.take({0x5a}) || c.take({0x59}) || c.take({0x5e}) || c.take({0x5f});  // pop rdx/rcx/rsi/rdi
  if (f == Frame::Rbp) ok = c.take({0x5d});                                                          // pop %rbp
  return ok && c.take({0xc3});
}


// call *slot(%rip)
bool call_through(Cursor& c, uint64_t& slot) {
  const size_t s = c.i;
  if (c.take({0xff, 0x15}) && c.rip(slot)) return true;
  c.i = s;
  return false;
}

}  // namespace

std::optional<TlsGetAddrLoad> decode_tls_get_addr_load(std::span<const uint8_t> code, uint64_t at) {
  Cursor c{code, at};
  TlsGetAddrLoad out;
  const Frame f = prologue(c);
  c.take({0x66});  // general dynamic: data16
  if (!c.take({0x48, 0x8d, 0x3d}) || !c.rip(out.index)) return std::nullopt;  // lea index(%rip), %rdi
  const size_t s = c.i;
  int32_t rel = 0;
  if ((c.take({0x66, 0x66, 0x48, 0xe8}) || (c.i = s, c.take({0xe8}))) && c.i32(rel)) {  // call __tls_get_addr@plt
    out.callee = at + c.i + static_cast<uint64_t>(static_cast<int64_t>(rel));
  } else {
    c.i = s;
    c.take({0x66, 0x48});  // -fno-plt, general dynamic: data16 rex.W
    if (!call_through(c, out.callee)) return std::nullopt;  // call *__tls_get_addr@GOTPCREL(%rip)
    out.indirect = true;
  }
  const Frame rest = pop_early(c, f);
  if (!load_from_rax(c, true, out.disp) || !epilogue(c, rest)) return std::nullopt;
  return out;
}

std::optional<AccessorLoad> decode_graph_task_id(std::span<const uint8_t> code, uint64_t at) {
  Cursor c{code, at};
  AccessorLoad out;
  const Frame f = prologue(c);
  uint64_t again = 0;
  int32_t jump = 0;
  if (!call_through(c, out.slot) || !c.take({0x48, 0x83, 0x38, 0x00}) ||  // cmpq $0, (%rax)
      !c.take({0x74}) || !c.i8(jump))                                      // je <none>
    return std::nullopt;
  const int64_t none = static_cast<int64_t>(c.i) + jump;
  if (!call_through(c, again) || again != out.slot) return std::nullopt;
  const Frame rest = pop_early(c, f);
  if (!c.take({0x48, 0x8b, 0x00}) ||            // mov (%rax), %rax
      !load_from_rax(c, false, out.disp))       // mov disp(%rax), %eax
    return std::nullopt;
  const size_t tail = c.i;
  if (!epilogue(c, rest)) return std::nullopt;
  // <none>: mov $-1, %eax, then the whole epilogue, inline or by a jump to the same one (not where a
  // frame pointer was popped before the loads: that tail has no pop).
  if (none < 0 || static_cast<size_t>(none) >= code.size()) return std::nullopt;
  Cursor n{code, at, static_cast<size_t>(none)};
  if (!n.take({0xb8, 0xff, 0xff, 0xff, 0xff})) return std::nullopt;
  const size_t s = n.i;
  if (epilogue(n, f)) return out;
  n.i = s;
  int32_t back = 0;
  if (rest == f && ((n.take({0xeb}) && n.i8(back)) || (n.i = s, n.take({0xe9}) && n.i32(back))))
    if (static_cast<int64_t>(n.i) + back == static_cast<int64_t>(tail)) return out;
  return std::nullopt;
}

std::optional<AccessorLoad> decode_current_node(std::span<const uint8_t> code, uint64_t at) {
  Cursor c{code, at};
  AccessorLoad out;
  c.take({0xf3, 0x0f, 0x1e, 0xfa});  // endbr64
  const bool fp = c.take({0x55, 0x48, 0x89, 0xe5});  // push %rbp; mov %rsp,%rbp
  // push %rbx; mov %rdi, %rbx (the returned shared_ptr's place); with a frame pointer, sub $8, %rsp
  if (!c.take({0x53}) || !c.take({0x48, 0x89, 0xfb}) || (fp && !c.take({0x48, 0x83, 0xec, 0x08}))) return std::nullopt;
  if (!call_through(c, out.slot)) return std::nullopt;  // call the accessor
  // The 16 bytes at the accessor's address (element pointer, control block) copied to the result.
  if (!(c.take({0xf3, 0x0f, 0x6f, 0x00}) || c.take({0x66, 0x0f, 0x6f, 0x00}) || c.take({0x0f, 0x10, 0x00})))
    return std::nullopt;
  if (!(c.take({0x0f, 0x11, 0x03}) || c.take({0xf3, 0x0f, 0x7f, 0x03}) || c.take({0x66, 0x0f, 0x7f, 0x03})))
    return std::nullopt;
  return out;
}

std::optional<uint64_t> decode_plt_stub(std::span<const uint8_t> code, uint64_t at) {
  Cursor c{code, at};
  c.take({0xf3, 0x0f, 0x1e, 0xfa});  // endbr64
  c.take({0xf2});                    // bnd
  uint64_t slot = 0;
  if (!c.take({0xff, 0x25}) || !c.rip(slot)) return std::nullopt;
  return slot;
}

}  // namespace aiflame
