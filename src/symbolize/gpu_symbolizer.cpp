#include "symbolize/gpu_symbolizer.h"

#include <algorithm>

namespace aiflame {

bool GpuSymbolizer::has_image(uint64_t crc) const {
  auto it = p_.cubins.find(crc);
  return it != p_.cubins.end() && !it->second.image.empty();
}

void GpuSymbolizer::note(std::string text) {
  if (std::find(notes_.begin(), notes_.end(), text) == notes_.end()) notes_.push_back(std::move(text));
}

const CubinLines* GpuSymbolizer::cubin_lines(uint64_t crc) {
  auto [it, fresh] = lines_by_cubin_.try_emplace(crc);
  if (fresh && has_image(crc)) {
    auto l = CubinLines::read(p_.cubins.at(crc).image);
    if (l) it->second = std::move(*l);
  }
  return it->second ? &*it->second : nullptr;
}

const std::vector<GpuSourceFrame>& GpuSymbolizer::lines(const GpuPc& pc) {
  auto stored = p_.gpu_lines.find(pc);
  if (stored != p_.gpu_lines.end()) return stored->second;
  auto [it, fresh] = derived_lines_.try_emplace(pc);
  if (fresh)
    if (const CubinLines* l = cubin_lines(pc.code_object_id)) it->second = l->lookup(p_.str(pc.function), pc.pc_offset);
  return it->second;
}

const std::string& GpuSymbolizer::mnemonic(const GpuPc& pc) {
  static const std::string none;
  auto stored = p_.gpu_sass.find(pc);
  if (stored != p_.gpu_sass.end()) return stored->second;
  const std::string& kernel = p_.str(pc.function);
  const SassCache* cache = opt_.sass_cache && opt_.sass_cache->tried(pc.code_object_id, kernel) ? opt_.sass_cache : &lazy_sass_;
  if (cache == &lazy_sass_ && opt_.use_nvdisasm && has_image(pc.code_object_id) && !lazy_sass_.tried(pc.code_object_id, kernel)) {
    std::vector<std::string> notes;
    lazy_sass_.derive(opt_.nvdisasm, {{pc.code_object_id, {p_.cubins.at(pc.code_object_id).image, {kernel}, 1}}}, opt_.timeout_ms,
                      1, notes);
    for (auto& n : notes) note(std::move(n));
    // A tool that ran out of time would do so for every kernel: one wait is enough.
    if (lazy_sass_.stats().timeouts) opt_.use_nvdisasm = false;
  }
  const std::string* m = cache->mnemonic(pc.code_object_id, kernel, pc.pc_offset);
  return m ? *m : none;
}

}  // namespace aiflame
