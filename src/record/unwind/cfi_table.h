// A loaded object's DWARF call frame information (.eh_frame, found through .eh_frame_hdr) turned once
// into a sorted array of compact rows, so that unwinding one frame is a binary search and two loads
// (the design of async-profiler's src/dwarf.cpp; written here with every read bounded, since the
// builder also runs on damaged sections in tests/fuzz/cfi_table_fuzz.cpp). x86-64 only.
//
// A row says, from its code offset up to the next row's: where the canonical frame address (CFA) is
// (rsp or rbp plus an offset, or one of the special rules below) and where the caller's rbp was saved
// (an offset from the CFA, or "unchanged"). The return address is always at CFA - 8 on x86-64; a row
// whose CFI says otherwise is marked kUnsupported and the walk falls back to frame pointers there.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace aiflame::unwind {

// Rule of a row's CFA (the low byte of FrameRow::cfa; the offset is the upper 24 bits, signed).
enum CfaRule : uint8_t {
  kCfaFp = 6,             // CFA = rbp + off (DWARF register 6)
  kCfaSp = 7,             // CFA = rsp + off (DWARF register 7)
  kCfaDerefFp = 0x10,     // CFA = *(rbp + off): gcc's stack realignment (DW_OP_breg6 off; DW_OP_deref)
  kCfaPlt = 0x20,         // a .plt entry: CFA = rsp + 8, + 8 more past the push (off = that byte of the 16)
  kCfaSignal = 0x30,      // glibc's __restore_rt (CIE augmentation 'S'): a ucontext_t lies at rsp
  kCfaEnd = 0x40,         // the return address is undefined: the outermost frame (_start, clone)
  kCfaNoInfo = 0x50,      // code this object's CFI does not cover (a gap between FDEs)
  kCfaUnsupported = 0xff  // a rule not modelled here (other registers, general expressions)
};

constexpr int32_t kFpSame = INT32_MIN;  // FrameRow::fp_off: the caller's rbp is this frame's rbp
// FrameRow::fp_off: the caller's rbp is saved at this frame's rbp, not at an offset from the CFA: gcc's
// stack realignment with a DRAP register (a function with over-aligned locals that passes arguments
// on the stack or calls alloca), DW_CFA_expression r6 (DW_OP_breg6 0), with the CFA *(rbp + off).
constexpr int32_t kFpAtFp = INT32_MIN + 1;

struct FrameRow {
  uint32_t loc;    // code offset from the object's load bias
  int32_t cfa;     // (offset << 8) | CfaRule
  int32_t fp_off;  // where the caller's rbp is saved, relative to the CFA, or kFpSame or kFpAtFp
  CfaRule rule() const { return static_cast<CfaRule>(cfa & 0xff); }
  int32_t cfa_off() const { return cfa >> 8; }
};

// Bytes of the image [addr, addr + size) as mapped: every read of the builder stays inside.
struct MemView {
  const uint8_t* data = nullptr;
  uint64_t addr = 0;
  uint64_t size = 0;
  bool contains(uint64_t a, uint64_t n) const { return a >= addr && n <= size && a - addr <= size - n; }
};

struct CfiStats {
  uint32_t fdes = 0;         // FDEs turned into rows
  uint32_t bad_entries = 0;  // entries skipped (truncated, unknown encoding, bad CIE pointer)
  uint32_t unsupported_rows = 0;
};

// Builds the rows of an object whose .eh_frame_hdr is at `hdr_addr` inside `mem` (the readable
// segment that holds .eh_frame_hdr and .eh_frame). `bias` is the object's load bias: row locations
// are pc - bias. Rows come back sorted by location, one per distinct location. Returns false when
// the header itself is unreadable; a bad entry is skipped (counted in stats), never read past.
bool build_cfi_rows(const MemView& mem, uint64_t hdr_addr, uint64_t bias, std::vector<FrameRow>* rows,
                    CfiStats* stats = nullptr);

// The row that build_cfi_rows' table gives code offset `loc` (pc - bias), found without building the
// table: the FDE that covers it through .eh_frame_hdr's binary-search table, and that FDE's rows alone
// (what libgcc's unwinder does at every frame). For a walk through an object whose rows are still being
// built (issue 22: on the H200, 3-61 launches of a training loop's first steps fell back to glibc's
// backtrace(), ~120 us each). False when the header has no usable table (the caller falls back);
// a pc that no FDE covers gets kCfaNoInfo, as in the table. Reads only inside `mem`.
bool find_cfi_row(const MemView& mem, uint64_t hdr_addr, uint64_t bias, uint32_t loc, FrameRow* row);

// The row covering code offset `loc` (pc - bias) of sorted rows, or nullptr before the first.
inline const FrameRow* find_row(const FrameRow* rows, size_t n, uint32_t loc) {
  size_t lo = 0, hi = n;  // first row with row.loc > loc
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (rows[mid].loc <= loc) lo = mid + 1;
    else hi = mid;
  }
  return lo ? &rows[lo - 1] : nullptr;
}

// A page index over sorted rows, so that a lookup in a large object (libtorch_cuda.so: millions of
// rows) reads a few nearby lines instead of a binary search's ~20 scattered ones, each a cache miss
// when caches are cold (issue 22). index[p] = the number of rows at or below code offset p * 4 KiB,
// for p = 0 .. (last row's offset >> 12) + 1; 4 bytes per 4 KiB of code, built off the launch path.
constexpr unsigned kRowPageBits = 12;
std::vector<uint32_t> build_row_pages(const std::vector<FrameRow>& rows);

// find_row through the page index (the same row, fewer lines read).
inline const FrameRow* find_row_paged(const FrameRow* rows, size_t n, const uint32_t* pages, size_t npages,
                                      uint32_t loc) {
  size_t p = loc >> kRowPageBits;
  if (p + 1 >= npages) return find_row(rows, n, loc);  // past the index: the plain search
  // The first row above loc lies between the first rows above this page's start and its end.
  size_t lo = pages[p], hi = pages[p + 1];
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (rows[mid].loc <= loc) lo = mid + 1;
    else hi = mid;
  }
  return lo ? &rows[lo - 1] : nullptr;
}

}  // namespace aiflame::unwind
