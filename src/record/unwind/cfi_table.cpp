#include "record/unwind/cfi_table.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace aiflame::unwind {
namespace {

// A cursor over [pos, end) of a MemView: a read past the end (or past the view) sets !ok and gives 0,
// so that a damaged entry is dropped by its caller instead of being read beyond.
struct Reader {
  const MemView& mem;
  uint64_t pos, end;
  bool ok = true;

  Reader(const MemView& m, uint64_t p, uint64_t e) : mem(m), pos(p), end(e) {
    if (!mem.contains(p, 0) || e < p || !mem.contains(p, e - p)) ok = false;
  }
  bool has(uint64_t n) const { return ok && n <= end - pos; }
  template <class T>
  T get() {
    if (!has(sizeof(T))) {
      ok = false;
      return T{};
    }
    T v;
    std::memcpy(&v, mem.data + (pos - mem.addr), sizeof(T));
    pos += sizeof(T);
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      uint8_t b = get<uint8_t>();
      if (!ok) return 0;
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
      if (shift > 70) {  // longer than any 64-bit value
        ok = false;
        return 0;
      }
    }
  }
  int64_t sleb() {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      uint8_t b = get<uint8_t>();
      if (!ok) return 0;
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) {
        if ((b & 0x40) && shift + 7 < 64) v |= ~uint64_t{0} << (shift + 7);
        return static_cast<int64_t>(v);
      }
      if (shift > 70) {
        ok = false;
        return 0;
      }
    }
  }
  void skip(uint64_t n) {
    if (!has(n)) ok = false;
    else pos += n;
  }
};

constexpr uint8_t kOmit = 0xff;

// A DW_EH_PE-encoded pointer. Supports the encodings that linkers and compilers emit for .eh_frame
// (absolute, pc-relative and, in .eh_frame_hdr, data-relative); an indirect or text/function-relative
// one sets !ok.
uint64_t read_encoded(Reader& r, uint8_t enc, uint64_t data_base) {
  uint64_t at = r.pos, v = 0;
  switch (enc & 0x0f) {
    case 0x00: v = r.get<uint64_t>(); break;
    case 0x01: v = r.uleb(); break;
    case 0x02: v = r.get<uint16_t>(); break;
    case 0x03: v = r.get<uint32_t>(); break;
    case 0x04: v = r.get<uint64_t>(); break;
    case 0x09: v = static_cast<uint64_t>(r.sleb()); break;
    case 0x0a: v = static_cast<uint64_t>(static_cast<int64_t>(r.get<int16_t>())); break;
    case 0x0b: v = static_cast<uint64_t>(static_cast<int64_t>(r.get<int32_t>())); break;
    case 0x0c: v = r.get<uint64_t>(); break;
    default: r.ok = false; return 0;
  }
  switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += at; break;
    case 0x30: v += data_base; break;
    default: r.ok = false; return 0;
  }
  if (enc & 0x80) r.ok = false;
  return v;
}

// Size in bytes of an encoded value (to skip a personality pointer), or 0 for a variable-length one.
int encoded_size(uint8_t enc) {
  switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: return 8;
    case 0x02: case 0x0a: return 2;
    case 0x03: case 0x0b: return 4;
    default: return 0;
  }
}

struct Cie {
  uint64_t instr_begin = 0, instr_end = 0;
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = 16;
  uint8_t fde_enc = 0;
  bool z = false;
  bool signal = false;
  bool ok = false;
};

// Reads an entry's length; sets *body to the first byte after it and *next to the next entry.
bool entry_bounds(const MemView& mem, uint64_t at, uint64_t* body, uint64_t* next) {
  Reader r(mem, at, mem.addr + mem.size);
  uint64_t len = r.get<uint32_t>();
  if (len == 0xffffffffu) len = r.get<uint64_t>();
  if (!r.ok || len == 0 || !r.has(len)) return false;
  *body = r.pos;
  *next = r.pos + len;
  return true;
}

Cie parse_cie(const MemView& mem, uint64_t at) {
  Cie c;
  uint64_t body, end;
  if (!entry_bounds(mem, at, &body, &end)) return c;
  Reader r(mem, body, end);
  if (r.get<uint32_t>() != 0) return c;  // not a CIE
  uint8_t version = r.get<uint8_t>();
  if (version != 1 && version != 3) return c;
  char aug[16];
  size_t n = 0;
  for (;;) {
    char ch = static_cast<char>(r.get<uint8_t>());
    if (!r.ok || n == sizeof aug) return c;
    aug[n++] = ch;
    if (!ch) break;
  }
  if (aug[0] == 'e' && aug[1] == 'h') r.skip(8);
  c.code_align = r.uleb();
  c.data_align = r.sleb();
  c.ra_reg = version == 1 ? r.get<uint8_t>() : r.uleb();
  if (aug[0] == 'z') {
    c.z = true;
    uint64_t len = r.uleb();
    uint64_t aug_end = r.pos + len;
    if (!r.has(len)) return c;
    for (const char* p = aug + 1; *p; p++) {
      if (*p == 'L') r.get<uint8_t>();
      else if (*p == 'R') c.fde_enc = r.get<uint8_t>();
      else if (*p == 'S') c.signal = true;
      else if (*p == 'B') {}
      else if (*p == 'P') {
        uint8_t enc = r.get<uint8_t>();
        if (int sz = encoded_size(enc)) r.skip(static_cast<uint64_t>(sz));
        else r.uleb();
      } else break;  // unknown: the 'z' length still says where the instructions start
    }
    if (!r.ok) return c;
    r.pos = aug_end;
  }
  if (!r.ok || c.code_align == 0) return c;
  c.instr_begin = r.pos;
  c.instr_end = end;
  c.ok = true;
  return c;
}

// The rules of the three registers an x86-64 walk needs.
enum class Rule : uint8_t { Unset, Same, Offset, AtFp, Undefined, Unsupported };  // AtFp: saved at rbp (kFpAtFp)
struct RegRule {
  Rule rule = Rule::Unset;
  int64_t off = 0;
};
struct State {
  uint8_t cfa = kCfaUnsupported;
  int64_t cfa_off = 0;
  RegRule fp{Rule::Same};
  RegRule ra;
};

FrameRow to_row(uint64_t loc, const State& s, bool signal) {
  FrameRow row{static_cast<uint32_t>(loc), kCfaUnsupported, kFpSame};
  if (signal) {
    row.cfa = kCfaSignal;
    return row;
  }
  if (s.ra.rule == Rule::Undefined) {
    row.cfa = kCfaEnd;
    return row;
  }
  bool ra_ok = s.ra.rule == Rule::Offset && s.ra.off == -8;
  bool fp_ok = s.fp.rule == Rule::Same || s.fp.rule == Rule::Unset || s.fp.rule == Rule::AtFp ||
               (s.fp.rule == Rule::Offset && s.fp.off > -(1 << 20) && s.fp.off < (1 << 20));
  bool off_ok = s.cfa_off > -(1 << 23) && s.cfa_off < (1 << 23);
  if (!ra_ok || !fp_ok || !off_ok || s.cfa == kCfaUnsupported) return row;
  row.cfa = static_cast<int32_t>(static_cast<uint32_t>(s.cfa_off) << 8) | s.cfa;
  row.fp_off = s.fp.rule == Rule::Offset ? static_cast<int32_t>(s.fp.off) : s.fp.rule == Rule::AtFp ? kFpAtFp : kFpSame;
  return row;
}

// Recognises the two CFA expressions worth modelling: a .plt entry's and gcc's stack realignment.
void cfa_expression(Reader& r, uint64_t len, State* s) {
  uint64_t end = r.pos + len;
  uint8_t b[16];
  size_t n = 0;
  while (r.ok && r.pos < end && n < sizeof b) b[n++] = r.get<uint8_t>();
  r.pos = end;
  s->cfa = kCfaUnsupported;
  s->cfa_off = 0;
  // DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
  static const uint8_t plt[] = {0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x00, 0x2a, 0x33, 0x24, 0x22};
  if (n == sizeof plt && b[6] >= 0x30 && b[6] <= 0x4f) {
    bool same = true;
    for (size_t i = 0; i < n; i++) same &= i == 6 || b[i] == plt[i];
    if (same) {
      s->cfa = kCfaPlt;
      s->cfa_off = b[6] - 0x30;
      return;
    }
  }
  // DW_OP_breg6 SLEB; DW_OP_deref (one-byte SLEB offsets: -64..63)
  if (n == 3 && b[0] == 0x76 && !(b[1] & 0x80) && b[2] == 0x06) {
    s->cfa = kCfaDerefFp;
    s->cfa_off = (b[1] & 0x40) ? static_cast<int64_t>(b[1]) - 128 : b[1];
  }
}

// A factored offset (operand times the CIE's data alignment); one that overflows is not modelled.
RegRule offset_rule(int64_t v, int64_t factor) {
  int64_t off;
  if (__builtin_mul_overflow(v, factor, &off)) return {Rule::Unsupported};
  return {Rule::Offset, off};
}
int64_t cfa_offset(int64_t v, int64_t factor, State* s) {
  int64_t off;
  if (!__builtin_mul_overflow(v, factor, &off)) return off;
  s->cfa = kCfaUnsupported;
  return 0;
}
int64_t as_signed(uint64_t v) { return v > INT64_MAX ? INT64_MIN : static_cast<int64_t>(v); }

void set_reg(State* s, uint64_t reg, uint64_t ra_reg, RegRule rule) {
  if (reg == 6) s->fp = rule;
  else if (reg == ra_reg) s->ra = rule;
}

struct Builder {
  const MemView& mem;
  uint64_t bias;
  std::vector<FrameRow>* rows;
  CfiStats stats;
  std::unordered_map<uint64_t, Cie> cies;

  // Runs CFA instructions [begin, end). With emit (an FDE's), appends a row at each location change
  // within [loc, pc_end); without (a CIE's), only builds the initial state.
  bool run(const Cie& cie, uint64_t begin, uint64_t end, State* s, const State& init, uint64_t loc,
           uint64_t pc_end, bool emit) {
    Reader r(mem, begin, end);
    State stack[8];
    size_t depth = 0;
    auto advance = [&](uint64_t to) {
      if (to <= loc) return;
      to = std::min(to, pc_end);
      if (emit && to > loc) rows->push_back(to_row(loc - bias, *s, cie.signal));
      loc = to;
    };
    while (r.ok && r.pos < end) {
      uint8_t op = r.get<uint8_t>();
      uint8_t low = op & 0x3f;
      switch (op >> 6) {
        case 1: advance(loc + low * cie.code_align); continue;
        case 2: set_reg(s, low, cie.ra_reg, offset_rule(as_signed(r.uleb()), cie.data_align)); continue;
        case 3: set_reg(s, low, cie.ra_reg, low == 6 ? init.fp : init.ra); continue;
        default: break;
      }
      switch (op) {
        case 0x00: break;                                        // nop
        case 0x01: advance(read_encoded(r, cie.fde_enc, 0)); break;  // set_loc
        case 0x02: advance(loc + r.get<uint8_t>() * cie.code_align); break;
        case 0x03: advance(loc + r.get<uint16_t>() * cie.code_align); break;
        case 0x04: advance(loc + r.get<uint32_t>() * cie.code_align); break;
        case 0x05: {  // offset_extended
          uint64_t reg = r.uleb();
          set_reg(s, reg, cie.ra_reg, offset_rule(as_signed(r.uleb()), cie.data_align));
          break;
        }
        case 0x06: {  // restore_extended
          uint64_t reg = r.uleb();
          set_reg(s, reg, cie.ra_reg, reg == 6 ? init.fp : init.ra);
          break;
        }
        case 0x07: set_reg(s, r.uleb(), cie.ra_reg, {Rule::Undefined}); break;
        case 0x08: set_reg(s, r.uleb(), cie.ra_reg, {Rule::Same}); break;
        case 0x09: {  // register: the value sits in another register
          uint64_t reg = r.uleb();
          r.uleb();
          set_reg(s, reg, cie.ra_reg, {Rule::Unsupported});
          break;
        }
        case 0x0a:  // remember_state
          if (depth == 8) return false;
          stack[depth++] = *s;
          break;
        case 0x0b:  // restore_state (the CFA too, as gcc and libgcc do)
          if (depth == 0) return false;
          *s = stack[--depth];
          break;
        case 0x0c: {  // def_cfa
          uint64_t reg = r.uleb();
          s->cfa = reg == 6 ? kCfaFp : reg == 7 ? kCfaSp : kCfaUnsupported;
          s->cfa_off = as_signed(r.uleb());
          break;
        }
        case 0x0d: {  // def_cfa_register
          uint64_t reg = r.uleb();
          s->cfa = reg == 6 ? kCfaFp : reg == 7 ? kCfaSp : kCfaUnsupported;
          break;
        }
        case 0x0e: s->cfa_off = as_signed(r.uleb()); break;
        case 0x0f: cfa_expression(r, r.uleb(), s); break;
        case 0x10: {  // expression: the register saved at the address it computes
          uint64_t reg = r.uleb();
          uint64_t len = r.uleb();
          // rbp saved at rbp (DW_OP_breg6 0): gcc's stack realignment through a DRAP register, whose
          // CFA is *(rbp + off) (cfa_expression). Issue 22: such a frame on a launch's stack ended
          // every walk there, one frame on (its caller's sp taken from the frame pointer chain).
          bool at_fp = false;
          if (reg == 6 && len == 2 && r.has(2)) {
            const uint8_t op = r.get<uint8_t>(), off = r.get<uint8_t>();
            at_fp = op == 0x76 && off == 0x00;
          } else {
            r.skip(len);
          }
          set_reg(s, reg, cie.ra_reg, {at_fp ? Rule::AtFp : Rule::Unsupported});
          break;
        }
        case 0x11: {  // offset_extended_sf
          uint64_t reg = r.uleb();
          set_reg(s, reg, cie.ra_reg, offset_rule(r.sleb(), cie.data_align));
          break;
        }
        case 0x12: {  // def_cfa_sf
          uint64_t reg = r.uleb();
          s->cfa = reg == 6 ? kCfaFp : reg == 7 ? kCfaSp : kCfaUnsupported;
          s->cfa_off = cfa_offset(r.sleb(), cie.data_align, s);
          break;
        }
        case 0x13: s->cfa_off = cfa_offset(r.sleb(), cie.data_align, s); break;
        case 0x14: case 0x15: {  // val_offset(_sf): a value rule, not a saved slot
          uint64_t reg = r.uleb();
          if (op == 0x14) r.uleb();
          else r.sleb();
          set_reg(s, reg, cie.ra_reg, {Rule::Unsupported});
          break;
        }
        case 0x16: {  // val_expression
          uint64_t reg = r.uleb();
          r.skip(r.uleb());
          set_reg(s, reg, cie.ra_reg, {Rule::Unsupported});
          break;
        }
        case 0x2e: r.uleb(); break;  // GNU_args_size
        case 0x2f: {                 // GNU_negative_offset_extended
          uint64_t reg = r.uleb();
          int64_t v = as_signed(r.uleb());
          set_reg(s, reg, cie.ra_reg, v == INT64_MIN ? RegRule{Rule::Unsupported} : offset_rule(-v, cie.data_align));
          break;
        }
        default: return false;  // an unknown opcode: its operands cannot be skipped
      }
    }
    if (!r.ok) return false;
    if (emit && loc < pc_end) rows->push_back(to_row(loc - bias, *s, cie.signal));
    return true;
  }

  uint64_t last_cie_at = 0;
  const Cie* last_cie = nullptr;
  const Cie* cie_at(uint64_t at) {
    if (last_cie && at == last_cie_at) return last_cie;  // most FDEs of an object share one CIE
    auto it = cies.find(at);
    if (it == cies.end()) it = cies.emplace(at, parse_cie(mem, at)).first;
    last_cie_at = at;
    last_cie = it->second.ok ? &it->second : nullptr;
    return last_cie;
  }

  // One FDE at `at`; false if it is a CIE, damaged, or outside [bias, bias + 4 GiB).
  bool fde(uint64_t at, bool* is_cie) {
    *is_cie = false;
    uint64_t body, end;
    if (!entry_bounds(mem, at, &body, &end)) return false;
    Reader r(mem, body, end);
    uint32_t cie_ptr = r.get<uint32_t>();
    if (!r.ok) return false;
    if (cie_ptr == 0) {
      *is_cie = true;
      return false;
    }
    if (cie_ptr > body - mem.addr) return false;
    const Cie* cie = cie_at(body - cie_ptr);
    if (!cie) return false;
    uint64_t pc_begin = read_encoded(r, cie->fde_enc, 0);
    uint64_t pc_range = read_encoded(r, cie->fde_enc & 0x0f, 0);
    if (cie->z) r.skip(r.uleb());
    if (!r.ok || pc_range == 0) return false;
    if (pc_begin < bias || pc_begin - bias > UINT32_MAX || pc_range > UINT32_MAX - (pc_begin - bias)) return false;
    uint64_t pc_end = pc_begin + pc_range;
    State init;
    if (!run(*cie, cie->instr_begin, cie->instr_end, &init, init, pc_begin, pc_end, false)) return false;
    State s = init;
    size_t before = rows->size();
    if (!run(*cie, r.pos, end, &s, init, pc_begin, pc_end, true)) {
      rows->resize(before);
      return false;
    }
    // Past the FDE's end: no information (a later FDE at the same address replaces this row).
    rows->push_back(FrameRow{static_cast<uint32_t>(pc_end - bias), kCfaNoInfo, kFpSame});
    stats.fdes++;
    return true;
  }
};

// .eh_frame_hdr (version 1): the .eh_frame address it names, and its binary-search table when usable:
// `count` entries of two datarel sdata4 words (initial location, FDE), sorted by location, all inside
// the view. False if the header itself is unreadable.
struct EhFrameHdr {
  uint64_t hdr_addr = 0, eh_frame = 0;
  uint64_t table = 0, count = 0;  // count 0: no usable table
  // Entry i's initial location (word 0) or FDE address (word 1).
  uint64_t entry(const MemView& mem, uint64_t i, int word) const {
    int32_t v;
    std::memcpy(&v, mem.data + (table + 8 * i + 4 * static_cast<uint64_t>(word) - mem.addr), sizeof v);
    return hdr_addr + static_cast<uint64_t>(static_cast<int64_t>(v));
  }
};

bool read_eh_frame_hdr(const MemView& mem, uint64_t hdr_addr, EhFrameHdr* out) {
  Reader h(mem, hdr_addr, mem.addr + mem.size);
  uint8_t version = h.get<uint8_t>();
  uint8_t ptr_enc = h.get<uint8_t>(), count_enc = h.get<uint8_t>(), table_enc = h.get<uint8_t>();
  if (!h.ok || version != 1 || ptr_enc == kOmit) return false;
  out->hdr_addr = hdr_addr;
  out->eh_frame = read_encoded(h, ptr_enc, hdr_addr);
  if (!h.ok) return false;
  uint64_t count = count_enc == kOmit ? 0 : read_encoded(h, count_enc, hdr_addr);
  if (h.ok && count && table_enc == 0x3b && h.has(8) && count <= (h.end - h.pos) / 8) {
    out->table = h.pos;
    out->count = count;
  }
  return true;
}

}  // namespace

bool build_cfi_rows(const MemView& mem, uint64_t hdr_addr, uint64_t bias, std::vector<FrameRow>* rows,
                    CfiStats* stats_out) {
  rows->clear();
  EhFrameHdr hdr;
  if (!read_eh_frame_hdr(mem, hdr_addr, &hdr)) return false;
  Builder b{mem, bias, rows, {}, {}};
  bool is_cie = false;
  if (hdr.count) {
    // The binary-search table: every FDE of the object, sorted (what the loader's unwinder uses).
    for (uint64_t i = 0; i < hdr.count; i++)
      if (!b.fde(hdr.entry(mem, i, 1), &is_cie)) b.stats.bad_entries++;
  } else {
    // No usable table: walk .eh_frame entry by entry up to its zero terminator (or the segment's end).
    uint64_t at = hdr.eh_frame, body, next;
    while (entry_bounds(mem, at, &body, &next)) {
      if (!b.fde(at, &is_cie) && !is_cie) b.stats.bad_entries++;
      at = next;
    }
  }
  // Sorted by location; at one location a row of an FDE wins over the end marker of the previous one.
  // (Through the header's table FDEs come sorted already: no sort, which was a third of the build.)
  auto by_loc = [](const FrameRow& a, const FrameRow& c) { return a.loc < c.loc; };
  if (!std::is_sorted(rows->begin(), rows->end(), by_loc)) std::stable_sort(rows->begin(), rows->end(), by_loc);
  size_t out = 0;
  for (size_t i = 0; i < rows->size(); i++) {
    const FrameRow& row = (*rows)[i];
    if (out && (*rows)[out - 1].loc == row.loc) {
      if (row.rule() != kCfaNoInfo) (*rows)[out - 1] = row;
      continue;
    }
    if (out && (*rows)[out - 1].cfa == row.cfa && (*rows)[out - 1].fp_off == row.fp_off) continue;  // same rule
    (*rows)[out++] = row;
  }
  rows->resize(out);
  rows->shrink_to_fit();
  for (const FrameRow& row : *rows) b.stats.unsupported_rows += row.rule() == kCfaUnsupported;
  if (stats_out) *stats_out = b.stats;
  return true;
}

bool find_cfi_row(const MemView& mem, uint64_t hdr_addr, uint64_t bias, uint32_t loc, FrameRow* row) {
  // Without the binary-search table (which build_cfi_rows also takes when there is one) the caller
  // falls back.
  EhFrameHdr hdr;
  if (!read_eh_frame_hdr(mem, hdr_addr, &hdr) || !hdr.count) return false;
  const uint64_t pc = bias + loc;
  uint64_t lo = 0, hi = hdr.count;  // the first entry whose location is above pc
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (hdr.entry(mem, mid, 0) <= pc) lo = mid + 1;
    else hi = mid;
  }
  *row = FrameRow{loc, kCfaNoInfo, kFpSame};
  if (!lo) return true;  // before the first FDE
  std::vector<FrameRow> rows;
  rows.reserve(32);
  Builder b{mem, bias, &rows, {}, {}};
  bool is_cie = false;
  // A damaged FDE gives no rows, as the table leaves it out: the location has no information.
  if (!b.fde(hdr.entry(mem, lo - 1, 1), &is_cie)) return true;
  if (const FrameRow* r = find_row(rows.data(), rows.size(), loc)) *row = *r;
  return true;
}

std::vector<uint32_t> build_row_pages(const std::vector<FrameRow>& rows) {
  std::vector<uint32_t> pages;
  if (rows.empty()) return pages;
  size_t npages = (static_cast<size_t>(rows.back().loc) >> kRowPageBits) + 2;
  pages.resize(npages);
  size_t r = 0;
  for (size_t p = 0; p < npages; p++) {
    uint64_t start = static_cast<uint64_t>(p) << kRowPageBits;
    while (r < rows.size() && rows[r].loc <= start) r++;
    pages[p] = static_cast<uint32_t>(r);
  }
  return pages;
}

}  // namespace aiflame::unwind
