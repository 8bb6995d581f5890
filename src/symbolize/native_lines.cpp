#include "symbolize/native_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstdlib>
#include <string>

#include "symbolize/demangle.h"

namespace aiflame {
namespace {

// The name of a subprogram or inlined subroutine: its linkage name demangled (qualified, as the
// symbol table gives it), else its plain name; both may sit on the abstract origin.
std::string scope_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name})
    if (dwarf_attr_integrate(die, at, &attr))
      if (const char* s = dwarf_formstring(&attr)) return demangle(s);
  if (dwarf_attr_integrate(die, DW_AT_name, &attr))
    if (const char* s = dwarf_formstring(&attr)) return s;
  return "";
}

// DW_AT_call_file / DW_AT_call_line of an inlined subroutine: where its caller called it.
SourceFrame call_site(Dwarf_Die* inlined, Dwarf_Files* files) {
  SourceFrame f;
  Dwarf_Attribute attr;
  Dwarf_Word v = 0;
  if (dwarf_attr(inlined, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &v) == 0 && files)
    if (const char* name = dwarf_filesrc(files, v, nullptr, nullptr)) f.file = name;
  if (dwarf_attr(inlined, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &v) == 0) f.line = static_cast<uint32_t>(v);
  return f;
}

std::string base_name(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<SourceFrame> native_source_levels(Dwfl_Module* mod, uint64_t pc) {
  std::vector<SourceFrame> levels;
  if (!mod) return levels;
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(mod, pc, &bias);
  if (!cu) return levels;
  Dwarf_Die* found = nullptr;
  int n = dwarf_getscopes(cu, pc - bias, &found);
  if (n <= 0) return levels;
  // dwarf_getscopes follows an inlined function to its abstract definition's scopes, not to where it
  // was inlined; the concrete nesting comes from the innermost function scope's own chain.
  Dwarf_Die inner;
  bool have_inner = false;
  for (int i = 0; i < n && !have_inner; i++) {
    int tag = dwarf_tag(&found[i]);
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
      inner = found[i];
      have_inner = true;
    }
  }
  free(found);
  if (!have_inner) return levels;
  Dwarf_Die* scopes = nullptr;
  n = dwarf_getscopes_die(&inner, &scopes);
  if (n <= 0) return levels;
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0) files = nullptr;
  // scopes run innermost first; keep the function scopes, outermost first.
  std::vector<Dwarf_Die*> fn;
  for (int i = n; i-- > 0;) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) fn.push_back(&scopes[i]);
  }
  // A subprogram nested in another (a lambda's body): the innermost subprogram is the function.
  size_t first = 0;
  for (size_t i = 0; i < fn.size(); i++)
    if (dwarf_tag(fn[i]) == DW_TAG_subprogram) first = i;
  for (size_t i = first; i < fn.size(); i++) {
    SourceFrame f;
    f.function = scope_name(fn[i]);
    if (i + 1 < fn.size()) {  // the line in this function: where it called the next level
      SourceFrame site = call_site(fn[i + 1], files);
      f.file = base_name(site.file);
      f.line = site.line;
    }
    levels.push_back(std::move(f));
  }
  // The innermost level's line is the instruction's own.
  if (!levels.empty())
    if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc)) {
      int lineno = 0;
      if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
        levels.back().file = base_name(file);
        levels.back().line = static_cast<uint32_t>(lineno);
      }
    }
  free(scopes);
  return levels;
}

}  // namespace aiflame
