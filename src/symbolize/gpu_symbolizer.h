// GPU instruction names for the report and for finalize: the source position (file:line and inlined
// device functions) and SASS mnemonic of a sampled (cubin, kernel, offset). Stored records come first,
// then what the cubin image kept in the profile gives (its line table; nvdisasm when allowed).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "symbolize/nvidia/cubin_lines.h"
#include "symbolize/nvidia/nvdisasm.h"
#include "symbolize/nvidia/sass_cache.h"
#include "symbolize/intel/iga.h"

namespace aiflame {

struct GpuSymbolizerOptions {
  // Run the vendor's disassembler for mnemonics not stored in the profile: nvdisasm for CUPTI's
  // profiles, iga64 (found on PATH) for Level Zero's.
  bool use_nvdisasm = false;
  std::string nvdisasm;       // its path (find_nvdisasm); empty with use_nvdisasm: one "not found" note
  int timeout_ms = 60000;
  // Mnemonics derived ahead for the sampled kernels (finalize); a kernel it tried is not disassembled again.
  const SassCache* sass_cache = nullptr;
};

class GpuSymbolizer {
 public:
  GpuSymbolizer(const Profile& p, GpuSymbolizerOptions opt = {})
      : p_(p), opt_(std::move(opt)), intel_(p.process && p.process->backend == "levelzero") {}

  // Kernel line first, innermost inlined function last; empty when unknown.
  const std::vector<GpuSourceFrame>& lines(const GpuPc& pc);
  // "" when unknown.
  const std::string& mnemonic(const GpuPc& pc);
  // Whether the profile holds the cubin's bytes (else nothing can be derived).
  bool has_image(uint64_t code_object_id) const;
  // One line per problem met (nvdisasm missing, failing or slow), each said once.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  const CubinLines* cubin_lines(uint64_t crc);
  void note(std::string text);
  const std::string* intel_mnemonic(const GpuPc& pc);
  const Profile& p_;
  GpuSymbolizerOptions opt_;
  std::map<uint64_t, std::optional<CubinLines>> lines_by_cubin_;
  SassCache lazy_sass_;  // kernels the report meets without stored names: one nvdisasm run each
  std::map<GpuPc, std::vector<GpuSourceFrame>> derived_lines_;
  std::vector<std::string> notes_;
  // Level Zero profiles: iga64's names per (code object, kernel), derived at the first sample of each.
  bool intel_ = false;
  std::optional<std::string> iga64_;
  std::map<std::pair<uint64_t, uint32_t>, std::map<uint64_t, std::string>> iga_names_;
};

}  // namespace aiflame
