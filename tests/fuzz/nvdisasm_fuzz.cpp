// libFuzzer: text through parse_nvdisasm, the reader of nvdisasm's listing (section headers, kernel
// labels, "/*0a30*/ @P0 LDG.E R4, ... ;" lines). Lines it does not know are skipped; never a crash.
#include <cstdint>
#include <string_view>

#include "symbolize/nvidia/nvdisasm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto listing = aiflame::parse_nvdisasm(std::string_view(reinterpret_cast<const char*>(data), size));
  size_t n = 0;
  for (const auto& [kernel, by_offset] : listing) n += kernel.size() + by_offset.size();
  return n == ~size_t{0};
}
