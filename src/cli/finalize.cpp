#include "cli/finalize.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "profile/profile_writer.h"
#include "symbolize/symbolizer.h"

namespace aiflame {
namespace {

struct Additions {
  std::vector<SymbolRecord> symbols;
  std::vector<GpuLineRecord> lines;
  std::vector<GpuInstructionRecord> sass;
  bool empty() const { return symbols.empty() && lines.empty() && sass.empty(); }
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void name_native_frames(const Profile& p, Additions& out, FinalizeStats& stats) {
  std::set<uint64_t> addresses;
  for (const auto& [id, st] : p.stacks)
    for (uint64_t a : st.native)
      if (!p.symbols.count(a)) addresses.insert(a);
  if (addresses.empty()) return;
  stats.native_addresses += addresses.size();
  Symbolizer sym(p.modules);
  for (uint64_t a : addresses) {
    NativeSymbol s = sym.lookup(a);
    if (!s.function.empty()) out.symbols.push_back(SymbolRecord{a, s.module_id, s.function, s.offset, s.levels});
  }
}

// The sampled instructions and their sample counts, the batches streamed from the file.
Result<std::map<GpuPc, uint64_t>> sampled_instructions(const std::string& path) {
  std::map<GpuPc, uint64_t> pcs;
  Status st = for_each_batch(path, [&](const PcBatchRecord& b) {
    for (const auto& s : b.samples) pcs[{s.code_object_id, s.function, s.pc_offset}] += s.count;
  });
  if (!st) return Error{st.error()};
  return pcs;
}

void name_gpu_instructions(const Profile& p, const std::map<GpuPc, uint64_t>& pcs, GpuSymbolizerOptions opt,
                           Additions& out, std::vector<std::string>& notes, FinalizeStats& stats, int sass_budget_ms) {
  // The sampled kernels whose mnemonics are not stored yet, per cubin, for one parallel nvdisasm pass.
  std::map<uint64_t, SassCache::Want> wanted;
  for (const auto& [pc, n] : pcs)
    if (!p.gpu_sass.count(pc)) want_kernel(wanted, p, pc.code_object_id, pc.function, n);
  // nvdisasm for CUPTI's cubins only; a Level Zero profile's kernels go to iga64 (GpuSymbolizer).
  const bool cuda = !p.process || p.process->backend.empty() || p.process->backend == "cupti";
  if (opt.use_nvdisasm && cuda && !wanted.empty()) {
    // The budget is for the whole recording: what earlier profiles used is gone.
    int left = sass_budget_ms - static_cast<int>(stats.sass.stats().seconds * 1000);
    stats.sass.derive(opt.nvdisasm, wanted, std::max(left, 0), std::clamp(std::thread::hardware_concurrency(), 1u, 8u),
                      notes);
  }
  opt.sass_cache = &stats.sass;
  auto t0 = Clock::now();
  stats.gpu_instructions += pcs.size();
  GpuSymbolizer gpu(p, opt);
  for (const auto& [pc, n] : pcs) {
    if (!gpu.has_image(pc.code_object_id)) continue;  // --no-cubins: nothing to derive, here or later
    // Stored even when empty: the report then knows the instruction has no line, without the cubin.
    if (!p.gpu_lines.count(pc)) out.lines.push_back(GpuLineRecord{pc.code_object_id, pc.function, pc.pc_offset, gpu.lines(pc)});
    // An empty name is stored when nvdisasm answered without one: the report then does not ask again.
    if (!p.gpu_sass.count(pc))
      if (const std::string& m = gpu.mnemonic(pc); !m.empty() || stats.sass.answered(pc.code_object_id, p.str(pc.function)))
        out.sass.push_back(GpuInstructionRecord{pc.code_object_id, pc.function, pc.pc_offset, m});
  }
  for (const auto& n : gpu.notes())
    if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
  stats.gpu_lines_s += seconds_since(t0);
}

}  // namespace

Result<Profile> finalize_profile(const std::string& path, const GpuSymbolizerOptions& gpu,
                                 std::vector<std::string>* notes, FinalizeStats* stats, int sass_budget_ms) {
  // The batches are streamed, never held: a long run's profile has tens of millions of samples.
  auto p = read_profile(path, BatchReading::Skip);
  if (!p) return Error{p.error()};
  auto pcs = sampled_instructions(path);
  if (!pcs) return Error{pcs.error()};
  FinalizeStats own;
  if (!stats) stats = &own;
  std::vector<std::string> own_notes;
  if (!notes) notes = &own_notes;
  Additions add;
  auto t0 = Clock::now();
  name_native_frames(*p, add, *stats);
  stats->native_s += seconds_since(t0);
  name_gpu_instructions(*p, *pcs, gpu, add, *notes, *stats, sass_budget_ms);
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
