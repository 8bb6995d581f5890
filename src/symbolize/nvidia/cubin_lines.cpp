#include "symbolize/nvidia/cubin_lines.h"

#include <elfutils/libdw.h>
#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace aiflame {
namespace {

// Addresses of the line table carry the ELF section index of their kernel in the bits above 40:
// every kernel of a cubin has its own .text section starting at address 0, and .rela.debug_line ties
// each line sequence to its kernel's symbol. Kernels are far smaller than 2^40 bytes.
constexpr int kSectionShift = 40;

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};
using ElfPtr = std::unique_ptr<Elf, ElfCloser>;

struct DwarfCloser {
  void operator()(Dwarf* d) const { dwarf_end(d); }
};

struct FunctionSymbol {
  uint64_t section;
  uint64_t value;
};

Elf_Scn* find_symtab(Elf* e) {
  for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) return scn;
  }
  return nullptr;
}

// Patches every relocated 64-bit address of .debug_line in `image` (a copy) to section << 40 | value.
// Returns whether the table had relocations (a relocatable-style cubin) at all.
bool relocate_debug_line(Elf* e, Elf_Data* symbols, std::string& image) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(e, &shstrndx) != 0) return false;
  bool relocated = false;
  for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize) continue;
    Elf_Scn* target = elf_getscn(e, sh.sh_info);
    GElf_Shdr th;
    if (!target || !gelf_getshdr(target, &th) || th.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(e, shstrndx, th.sh_name);
    if (!name || std::strcmp(name, ".debug_line") != 0) continue;
    Elf_Data* rel = elf_getdata(scn, nullptr);
    if (!rel || !symbols) continue;
    for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
      GElf_Rela r;
      GElf_Sym sym;
      if (!gelf_getrela(rel, static_cast<int>(i), &r) || !gelf_getsym(symbols, static_cast<int>(GELF_R_SYM(r.r_info)), &sym))
        continue;
      // The only relocated fields of a line program are DW_LNE_set_address operands: 8 bytes in cubins.
      if (r.r_offset > th.sh_size || th.sh_size - r.r_offset < 8 || th.sh_offset > image.size() ||
          image.size() - th.sh_offset < th.sh_size)
        continue;
      uint64_t value = (static_cast<uint64_t>(sym.st_shndx) << kSectionShift) + sym.st_value + r.r_addend;
      std::memcpy(image.data() + th.sh_offset + r.r_offset, &value, 8);
      relocated = true;
    }
  }
  return relocated;
}

}  // namespace

Result<CubinLines> CubinLines::read(std::string_view bytes) {
  static std::once_flag init;
  std::call_once(init, [] { elf_version(EV_CURRENT); });
  std::string image(bytes);
  CubinLines out;
  out.strings_.push_back("");
  bool relocated = false;
  {
    ElfPtr e(elf_memory(image.data(), image.size()));
    if (!e || elf_kind(e.get()) != ELF_K_ELF) return Error{"not an ELF image"};
    Elf_Scn* symtab = find_symtab(e.get());
    Elf_Data* symbols = symtab ? elf_getdata(symtab, nullptr) : nullptr;
    GElf_Shdr sh;
    if (symbols && gelf_getshdr(symtab, &sh) && sh.sh_entsize) {
      std::vector<std::pair<std::string, FunctionSymbol>> functions;
      for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(symbols, static_cast<int>(i), &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC) continue;
        const char* name = elf_strptr(e.get(), sh.sh_link, sym.st_name);
        if (name && *name && sym.st_shndx != SHN_UNDEF) functions.push_back({name, {sym.st_shndx, sym.st_value}});
      }
      relocated = relocate_debug_line(e.get(), symbols, image);
      for (const auto& [name, f] : functions)
        out.function_address_[name] = relocated ? (f.section << kSectionShift) + f.value : f.value;
    }
  }
  ElfPtr e(elf_memory(image.data(), image.size()));
  if (!e) return Error{"not an ELF image"};
  std::unique_ptr<Dwarf, DwarfCloser> dw(dwarf_begin_elf(e.get(), DWARF_C_READ, nullptr));
  if (!dw) return out;  // no DWARF at all: a cubin built without line info

  std::unordered_map<std::string, uint32_t> interned{{"", 0}};
  auto intern = [&](const char* s) -> uint32_t {
    if (!s) return 0;
    auto [it, fresh] = interned.try_emplace(s, static_cast<uint32_t>(out.strings_.size()));
    if (fresh) out.strings_.push_back(s);
    return it->second;
  };
  Dwarf_Off off = 0, next = 0;
  Dwarf_CU* cu = nullptr;
  Dwarf_Lines* lines = nullptr;
  size_t n = 0;
  while (dwarf_next_lines(dw.get(), off, &next, &cu, nullptr, nullptr, &lines, &n) == 0) {
    off = next;
    // libdw's dwarf_linecontext (elfutils 0.188) reads NVIDIA's inlined-call context as an index into
    // the whole table, but ptxas counts rows from the start of the row's own sequence (checked on cubins
    // with inlined device functions, tests/symbolize/cubin_lines_test.cpp). So the raw index is
    // recovered from libdw's answer and applied to the row's sequence.
    std::unordered_map<const Dwarf_Line*, size_t> index_of;
    for (size_t i = 0; i < n; i++) index_of[dwarf_onesrcline(lines, i)] = i;
    size_t base = out.rows_.size(), seq_start = 0;
    for (size_t i = 0; i < n; i++) {
      Dwarf_Line* l = dwarf_onesrcline(lines, i);
      Dwarf_Addr addr = 0;
      int line = 0;
      bool end = false;
      if (!l || dwarf_lineaddr(l, &addr) != 0 || dwarf_lineno(l, &line) != 0 || dwarf_lineendsequence(l, &end) != 0)
        continue;
      Row r{addr, intern(dwarf_linesrc(l, nullptr, nullptr)), static_cast<uint32_t>(std::max(line, 0)),
            intern(dwarf_linefunctionname(dw.get(), l)), -1, end};
      if (Dwarf_Line* ctx = dwarf_linecontext(lines, l)) {
        auto k = index_of.find(ctx);
        if (k != index_of.end() && seq_start + k->second < i) r.context = static_cast<int64_t>(base + seq_start + k->second);
      }
      out.rows_.push_back(r);
      if (end) seq_start = i + 1;
    }
  }
  // Without relocations every kernel's sequence may start at 0: lines could not be told apart, and a
  // wrong line is worse than none.
  if (!relocated) {
    std::vector<std::pair<uint64_t, uint64_t>> seqs;
    uint64_t start = 0;
    bool open = false;
    for (const Row& r : out.rows_) {
      if (!open) { start = r.address; open = true; }
      if (r.end_sequence) { seqs.push_back({start, r.address}); open = false; }
    }
    std::sort(seqs.begin(), seqs.end());
    for (size_t i = 1; i < seqs.size(); i++)
      if (seqs[i].first < seqs[i - 1].second) { out.rows_.clear(); break; }
  }
  for (size_t i = out.rows_.size(); i-- > 0;) {
    Row& r = out.rows_[i];
    r.sequence_end = r.end_sequence ? r.address : i + 1 < out.rows_.size() ? out.rows_[i + 1].sequence_end : r.address;
    if (!r.end_sequence) out.by_address_.push_back({r.address, static_cast<uint32_t>(i)});
  }
  std::sort(out.by_address_.begin(), out.by_address_.end());
  return out;
}

std::vector<GpuSourceFrame> CubinLines::lookup(const std::string& function, uint64_t offset) const {
  std::vector<GpuSourceFrame> frames;
  auto f = function_address_.find(function);
  if (f == function_address_.end()) return frames;
  uint64_t pc = f->second + offset;
  // The row that holds for pc: the last row at or before it in its sequence. Rows of one sequence are
  // in table order, so among rows at the same address the last is the innermost inlined level.
  auto it = std::upper_bound(by_address_.begin(), by_address_.end(), std::make_pair(pc, UINT32_MAX));
  if (it == by_address_.begin()) return frames;
  size_t hit_index = std::prev(it)->second;
  const Row* hit = &rows_[hit_index];
  if (pc >= hit->sequence_end) return frames;
  for (int depth = 0; hit && depth < 64; depth++) {
    frames.push_back({hit->function ? strings_[hit->function] : "", strings_[hit->file], hit->line});
    if (!hit->function || hit->context < 0 || static_cast<size_t>(hit->context) >= hit_index) break;
    hit_index = static_cast<size_t>(hit->context);
    hit = &rows_[hit_index];
  }
  std::reverse(frames.begin(), frames.end());
  return frames;
}

}  // namespace aiflame
