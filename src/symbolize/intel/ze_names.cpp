#include "symbolize/intel/ze_names.h"

namespace aiflame {

std::span<const char* const> intel_runtime_library_prefixes() {
  static const char* const prefixes[] = {"libze_loader", "libze_tracing_layer", "libze_validation_layer", "libze_intel_gpu",
                                         "libsycl",      "libur_loader",        "libur_adapter",          "libigc",
                                         "libigdrcl",    "libaiflame_ze_preload"};
  return prefixes;
}

}  // namespace aiflame
