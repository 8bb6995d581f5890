#include "symbolize/symbolizer.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "symbolize/demangle.h"
#include "symbolize/native_lines.h"

namespace aiflame {
namespace {

// Separate debug files are looked up by build-id only: the standard search also follows
// .gnu_debuglink and checksums candidate files, seconds for PyTorch's gigabyte libraries.
const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_build_id_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

std::string hex_of(const unsigned char* p, int n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < n; i++) { s += digits[p[i] >> 4]; s += digits[p[i] & 15]; }
  return s;
}

}  // namespace

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string unknown_frame_name(const NativeSymbol& s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "+0x%llx]", static_cast<unsigned long long>(s.offset));
  return "[" + (s.module.empty() ? std::string("unknown") : s.module) + buf;
}

Symbolizer::Symbolizer(std::vector<ModuleRecord> modules) : modules_(std::move(modules)) {
  std::sort(modules_.begin(), modules_.end(), [](const auto& a, const auto& b) { return a.lo < b.lo; });
}

Symbolizer::~Symbolizer() {
  for (auto& [id, o] : opened_)
    if (o.dwfl) dwfl_end(o.dwfl);
}

const ModuleRecord* Symbolizer::module_of(uint64_t address) const {
  auto it = std::upper_bound(modules_.begin(), modules_.end(), address,
                             [](uint64_t a, const ModuleRecord& m) { return a < m.lo; });
  if (it == modules_.begin()) return nullptr;
  --it;
  return address < it->hi ? &*it : nullptr;
}

Symbolizer::Opened& Symbolizer::open(const ModuleRecord& m) {
  auto [it, fresh] = opened_.try_emplace(m.id);
  Opened& o = it->second;
  if (!fresh) return o;
  o.dwfl = dwfl_begin(&kOfflineCallbacks);
  if (!o.dwfl) return o;
  dwfl_report_begin(o.dwfl);
  Dwfl_Module* mod = dwfl_report_elf(o.dwfl, basename_of(m.path).c_str(), m.path.c_str(), -1, m.load_bias, false);
  dwfl_report_end(o.dwfl, nullptr, nullptr);
  if (!mod) return o;
  if (!m.build_id.empty()) {
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);
    if (n <= 0 || hex_of(bits, n) != m.build_id) return o;  // another build of the file: names would lie
  }
  o.usable = true;
  o.any_address = m.lo;
  index_functions(o);
  return o;
}

void Symbolizer::index_functions(Opened& o) {
  Dwfl_Module* mod = dwfl_addrmodule(o.dwfl, o.any_address);
  if (!mod) return;
  int n = dwfl_module_getsymtab(mod);
  for (int i = 1; i < n; i++) {
    GElf_Sym sym;
    GElf_Addr addr = 0;
    const char* name = dwfl_module_getsym_info(mod, i, &sym, &addr, nullptr, nullptr, nullptr);
    int type = GELF_ST_TYPE(sym.st_info);
    if (!name || !*name || sym.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC)) continue;
    o.functions.push_back({addr, addr + sym.st_size, name});
  }
  std::stable_sort(o.functions.begin(), o.functions.end(),
                   [](const FunctionSymbol& a, const FunctionSymbol& b) { return a.start < b.start; });
}

NativeSymbol Symbolizer::lookup(uint64_t address) {
  NativeSymbol s;
  uint64_t pc = address ? address - 1 : 0;
  const ModuleRecord* m = module_of(pc);
  if (!m) {
    s.offset = address;
    return s;
  }
  s.module = basename_of(m->path);
  s.module_id = m->id;
  s.offset = pc - m->load_bias;
  Opened& o = open(*m);
  if (!o.usable) return s;
  auto it = std::upper_bound(o.functions.begin(), o.functions.end(), pc,
                             [](uint64_t a, const FunctionSymbol& f) { return a < f.start; });
  if (it == o.functions.begin()) return s;
  // The last symbol starting at or before pc; among several at one address, the first that covers pc.
  auto first = std::prev(it);
  while (first != o.functions.begin() && std::prev(first)->start == first->start) --first;
  const FunctionSymbol* hit = nullptr;
  for (auto f = first; f != it; ++f)
    if (pc < f->end || (f->end == f->start && (it == o.functions.end() || pc < it->start))) {
      hit = &*f;
      break;
    }
  if (!hit) return s;
  s.function = demangle(hit->name);
  s.offset = pc - hit->start;
  s.levels = native_source_levels(dwfl_addrmodule(o.dwfl, pc), pc);
  if (!s.levels.empty()) s.levels.front().function = s.function;
  return s;
}

}  // namespace aiflame
