#include "cli/finalize.h"

#include <set>

#include "profile/profile_writer.h"
#include "symbolize/symbolizer.h"

namespace aiflame {
namespace {

struct Additions {
  std::vector<SymbolRecord> symbols;
  std::vector<GpuLineRecord> lines;
  std::vector<GpuSassRecord> sass;
  bool empty() const { return symbols.empty() && lines.empty() && sass.empty(); }
};

void name_native_frames(const Profile& p, Additions& out) {
  std::set<uint64_t> addresses;
  for (const auto& [id, st] : p.stacks)
    for (uint64_t a : st.native)
      if (!p.symbols.count(a)) addresses.insert(a);
  if (addresses.empty()) return;
  Symbolizer sym(p.modules);
  for (uint64_t a : addresses) {
    NativeSymbol s = sym.lookup(a);
    if (!s.function.empty()) out.symbols.push_back(SymbolRecord{a, s.module_id, s.function, s.offset, s.levels});
  }
}

void name_gpu_instructions(const Profile& p, const GpuSymbolizerOptions& opt, Additions& out,
                           std::vector<std::string>* notes) {
  std::set<GpuPc> pcs;
  for (const auto& b : p.batches)
    for (const auto& s : b.samples) pcs.insert({s.cubin_crc, s.function, s.pc_offset});
  GpuSymbolizer gpu(p, opt);
  for (const GpuPc& pc : pcs) {
    if (!gpu.has_image(pc.cubin_crc)) continue;  // --no-cubins: nothing to derive, here or later
    // Stored even when empty: the report then knows the instruction has no line, without the cubin.
    if (!p.gpu_lines.count(pc)) out.lines.push_back(GpuLineRecord{pc.cubin_crc, pc.function, pc.pc_offset, gpu.lines(pc)});
    if (!p.gpu_sass.count(pc))
      if (const std::string& m = gpu.mnemonic(pc); !m.empty())
        out.sass.push_back(GpuSassRecord{pc.cubin_crc, pc.function, pc.pc_offset, m});
  }
  if (notes) notes->insert(notes->end(), gpu.notes().begin(), gpu.notes().end());
}

}  // namespace

Result<Profile> finalize_profile(const std::string& path, const GpuSymbolizerOptions& gpu,
                                 std::vector<std::string>* notes) {
  auto p = read_profile(path);
  if (!p) return Error{p.error()};
  Additions add;
  name_native_frames(*p, add);
  name_gpu_instructions(*p, gpu, add, notes);
  if (add.empty()) return std::move(*p);
  ProfileWriter w;
  std::string err;
  if (!w.open_append(path, p->valid_bytes, &err)) return Error{err};
  for (const auto& r : add.symbols) w.add(r);
  for (const auto& r : add.lines) w.add(r);
  for (const auto& r : add.sass) w.add(r);
  if (!w.close()) return Error{path + ": " + w.error()};
  return std::move(*p);
}

}  // namespace aiflame
