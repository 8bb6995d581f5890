// Instruction names of Intel GPU kernels from Intel's iga64 (Debian: libigc-tools), the nvdisasm of
// Intel GPUs: finding the tool, the GPU binary's kernel code and platform, running it and reading its
// listing.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "util/result.h"

namespace aiflame {

// The iga64 to run: the first on PATH (Debian's is /usr/bin/iga64). Empty when none.
std::string find_iga64();

// The note given once when no iga64 was found.
const std::string& iga64_not_found_note();

// Mnemonic ("add", "send.ugm", "sync.nop") by byte offset, from the listing of
// `iga64 -d -p=P -Xprint-pc -n FILE`: lines "/* [0010]  */  (W&f0.0) add (16|M0) r11.0<1>:f ...".
// Lines it does not recognise are skipped.
std::map<uint64_t, std::string> parse_iga_listing(std::string_view listing);

// The code of kernel `name` in a zebin (an ELF with one .text.<name> section per kernel). Empty when
// the image is not ELF or has no such section.
std::string zebin_kernel_code(std::string_view image, const std::string& name);

// iga64's platform name ("12p5") for the zebin's GPU core (the GFXCORE_FAMILY of its IntelGT
// note); empty with *core set to the value when iga64 has no name for it (0: no note).
std::string zebin_iga_platform(std::string_view image, uint32_t* core);

// Runs iga64 on `code` for `platform`, within timeout_ms; errors are one line.
Result<std::map<uint64_t, std::string>> iga_disassemble(const std::string& tool, const std::string& platform,
                                                        std::string_view code, int timeout_ms);

}  // namespace aiflame
