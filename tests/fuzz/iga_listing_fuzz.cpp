// libFuzzer: text through parse_iga_listing, the reader of iga64's listing ("/* [0010]  */ (W&f0.0)
// add (16|M0) ..." lines). Lines it does not know are skipped; never a crash.
#include <cstdint>
#include <string_view>

#include "symbolize/intel/iga.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto listing = aiflame::parse_iga_listing(std::string_view(reinterpret_cast<const char*>(data), size));
  size_t n = 0;
  for (const auto& [offset, name] : listing) n += name.size() + (offset & 1);
  return n == ~size_t{0};
}
