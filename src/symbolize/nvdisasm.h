// SASS mnemonics of a cubin's instructions from NVIDIA's nvdisasm: finding the tool, running it on an
// image with a time limit, and reading its listing.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

#include "util/result.h"

namespace aiflame {

// The nvdisasm to run: `explicit_path` when given (empty result when it is not an executable file),
// else the first found on PATH, in $CUDA_HOME/bin, in /usr/local/cuda/bin. Empty when none.
std::string find_nvdisasm(const std::string& explicit_path = "");

// Mnemonic ("FFMA", "LDG.E.128", "BRA") by kernel (mangled name) and offset from the kernel's start.
using SassListing = std::unordered_map<std::string, std::map<uint64_t, std::string>>;

// Reads the text listing of `nvdisasm -c [-g] [-gi] [-plr]`: section headers, kernel labels and
// "/*0a30*/  @P0 LDG.E R4, desc[UR4][R2.64] ;" lines. Lines it does not recognise are skipped.
SassListing parse_nvdisasm(std::string_view listing);

// Runs `tool -c FILE` on a temporary copy of `image` and parses its listing. Errors (not runnable,
// non-zero exit, no output in timeout_ms) are one line naming what happened.
Result<SassListing> disassemble(const std::string& tool, std::string_view image, int timeout_ms = 60000);

}  // namespace aiflame
