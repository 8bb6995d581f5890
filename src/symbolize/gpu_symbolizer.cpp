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

const std::string* GpuSymbolizer::intel_mnemonic(const GpuPc& pc) {
  if (!opt_.use_nvdisasm || !has_image(pc.code_object_id)) return nullptr;
  auto [it, fresh] = iga_names_.try_emplace({pc.code_object_id, pc.function});
  if (fresh) {
    if (!iga64_) iga64_ = find_iga64();
    const std::string& image = p_.cubins.at(pc.code_object_id).image;
    uint32_t core = 0;
    const std::string platform = zebin_iga_platform(image, &core);
    const std::string code = zebin_kernel_code(image, p_.str(pc.function));
    if (iga64_->empty()) {
      note(iga64_not_found_note());
    } else if (platform.empty()) {
      note("iga64 has no platform for this GPU (GFXCORE_FAMILY " + std::to_string(core) +
           "): Intel GPU instructions show their offsets only");
    } else if (!code.empty()) {
      auto names = iga_disassemble(*iga64_, platform, code, opt_.timeout_ms);
      if (names) it->second = std::move(*names);
      else note(names.error());
    }
  }
  auto m = it->second.find(pc.pc_offset);
  return m == it->second.end() ? nullptr : &m->second;
}

const std::string& GpuSymbolizer::mnemonic(const GpuPc& pc) {
  static const std::string none;
  auto stored = p_.gpu_sass.find(pc);
  if (stored != p_.gpu_sass.end()) return stored->second;
  if (intel_) {
    const std::string* m = intel_mnemonic(pc);
    return m ? *m : none;
  }
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
