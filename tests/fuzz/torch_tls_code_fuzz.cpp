// libFuzzer harness for the decoders of torch's thread-local accessors (src/record/autograd/
// torch_tls_code.cpp), which read the first bytes of three libtorch functions and a PLT stub. Input:
// one little-endian u64 (the code's address) and the code bytes. A decoder must stay inside the bytes,
// and what it accepts must hold its own invariants: a decoded sequence is accepted again with bytes
// appended after it, and refused when cut short by its last byte.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "record/autograd/torch_tls_code.h"

namespace {
// The shortest prefix the decoder accepts; it must accept every longer one too (it reads no byte past
// its sequence, so more bytes after it change nothing).
template <class F>
void check_prefixes(const std::vector<uint8_t>& code, uint64_t at, F decode) {
  size_t shortest = code.size() + 1;
  for (size_t n = 0; n <= code.size(); n++) {
    // A copy of exactly n bytes, so that AddressSanitizer sees any read past them.
    std::vector<uint8_t> part(code.begin(), code.begin() + static_cast<std::ptrdiff_t>(n));
    const bool ok = decode(part, at);
    if (ok && shortest > code.size()) shortest = n;
    if (!ok && shortest <= code.size()) std::abort();  // accepted shorter, refused longer
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8 || size > 8 + 96) return 0;
  uint64_t at;
  std::memcpy(&at, data, sizeof at);
  const std::vector<uint8_t> code(data + 8, data + size);
  check_prefixes(code, at, [](const std::vector<uint8_t>& c, uint64_t a) {
    const auto d = aiflame::decode_tls_get_addr_load(c, a);
    return d.has_value();
  });
  check_prefixes(code, at, [](const std::vector<uint8_t>& c, uint64_t a) {
    const auto d = aiflame::decode_graph_task_id(c, a);
    return d.has_value();
  });
  check_prefixes(code, at, [](const std::vector<uint8_t>& c, uint64_t a) {
    const auto d = aiflame::decode_current_node(c, a);
    return d.has_value() && d->disp == 0;
  });
  check_prefixes(code, at, [](const std::vector<uint8_t>& c, uint64_t a) { return aiflame::decode_plt_stub(c, a).has_value(); });
  return 0;
}
