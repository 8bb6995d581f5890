// libFuzzer harness for the readers of CPython's code (src/record/py_runtime_fields.cpp), which scan
// the first bytes of Py_IsInitialized and PyGILState_GetThisThreadState. Input: one little-endian u64
// (the code's address) and the code bytes. They must stay inside the bytes (AddressSanitizer sees a
// read past an exact-size copy), decode_int_getter must accept every longer prefix of one it accepts,
// and tss_refs of a prefix must be a prefix of tss_refs of the whole (a scan only adds candidates as it
// goes).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "record/py_runtime_fields.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8 || size > 8 + 96) return 0;
  uint64_t at;
  std::memcpy(&at, data, sizeof at);
  const std::vector<uint8_t> code(data + 8, data + size);
  const std::vector<aiflame::TssRef> all = aiflame::tss_refs(code, at);
  bool accepted = false;
  for (size_t n = 0; n <= code.size(); n++) {
    const std::vector<uint8_t> part(code.begin(), code.begin() + static_cast<std::ptrdiff_t>(n));
    const bool ok = aiflame::decode_int_getter(part, at).has_value();
    if (accepted && !ok) std::abort();  // accepted shorter, refused longer
    accepted |= ok;
    const std::vector<aiflame::TssRef> some = aiflame::tss_refs(part, at);
    if (some.size() > all.size()) std::abort();
    for (size_t i = 0; i < some.size(); i++)
      if (some[i].addr != all[i].addr || some[i].via_slot != all[i].via_slot || some[i].disp != all[i].disp) std::abort();
  }
  return 0;
}
