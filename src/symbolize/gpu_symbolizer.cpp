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

const SassListing* GpuSymbolizer::listing(uint64_t crc) {
  auto [it, fresh] = sass_by_cubin_.try_emplace(crc);
  if (fresh && opt_.use_nvdisasm && has_image(crc)) {
    if (opt_.nvdisasm.empty()) {
      note("nvdisasm not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): GPU instructions show their offsets "
           "only; install the CUDA toolkit or pass --nvdisasm PATH");
    } else {
      auto l = disassemble(opt_.nvdisasm, p_.cubins.at(crc).image, opt_.timeout_ms);
      if (l) it->second = std::move(*l);
      else note(l.error() + ": GPU instructions of that cubin show their offsets only");
    }
  }
  return it->second ? &*it->second : nullptr;
}

const std::vector<GpuSourceFrame>& GpuSymbolizer::lines(const GpuPc& pc) {
  auto stored = p_.gpu_lines.find(pc);
  if (stored != p_.gpu_lines.end()) return stored->second;
  auto [it, fresh] = derived_lines_.try_emplace(pc);
  if (fresh)
    if (const CubinLines* l = cubin_lines(pc.cubin_crc)) it->second = l->lookup(p_.str(pc.function), pc.pc_offset);
  return it->second;
}

const std::string& GpuSymbolizer::mnemonic(const GpuPc& pc) {
  static const std::string none;
  auto stored = p_.gpu_sass.find(pc);
  if (stored != p_.gpu_sass.end()) return stored->second;
  const SassListing* l = listing(pc.cubin_crc);
  if (!l) return none;
  auto fn = l->find(p_.str(pc.function));
  if (fn == l->end()) return none;
  auto ins = fn->second.find(pc.pc_offset);
  return ins == fn->second.end() ? none : ins->second;
}

}  // namespace aiflame
