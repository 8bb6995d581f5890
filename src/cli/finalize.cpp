#include "cli/finalize.h"

#include <set>

#include "profile/profile_writer.h"
#include "symbolize/symbolizer.h"

namespace aiflame {

Result<Profile> finalize_profile(const std::string& path) {
  auto p = read_profile(path);
  if (!p) return Error{p.error()};
  std::set<uint64_t> addresses;
  for (const auto& [id, st] : p->stacks)
    for (uint64_t a : st.native)
      if (!p->symbols.count(a)) addresses.insert(a);
  if (addresses.empty()) return std::move(*p);
  Symbolizer sym(p->modules);
  ProfileWriter w;
  std::string err;
  if (!w.open_append(path, p->valid_bytes, &err)) return Error{err};
  for (uint64_t a : addresses) {
    NativeSymbol s = sym.lookup(a);
    if (!s.function.empty()) w.add(SymbolRecord{a, s.module_id, s.function, s.offset});
  }
  if (!w.close()) return Error{path + ": " + w.error()};
  return std::move(*p);
}

}  // namespace aiflame
