// libFuzzer: cubin bytes through the readers that take a recorded cubin: CubinLines::read (ELF and
// the DWARF line table with inlined functions, by libdw) and its lookups, and function_symbols (the
// symbol table, for nvdisasm's --function). The bytes come from the profile of a crashed or hostile
// program, so a bad image must be an error or an empty table. Never a crash, hang or sanitizer report.
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "symbolize/nvidia/cubin_lines.h"
#include "symbolize/nvidia/nvdisasm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view image(reinterpret_cast<const char*>(data), size);
  static const std::set<std::string> names = {"_Z12once_inlinedPf", "_Z13twice_inlinedPfi", "_Z7missingv", ""};
  auto symbols = aiflame::function_symbols(image, names);
  (void)symbols;
  auto lines = aiflame::CubinLines::read(image);
  if (!lines) return 0;
  for (const std::string& k : names)
    for (uint64_t offset : {0ull, 0x10ull, 0x80ull, 0x100ull, 0x1000ull, ~0ull}) (void)lines->lookup(k, offset);
  return 0;
}
