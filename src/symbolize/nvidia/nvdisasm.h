// SASS mnemonics of a cubin's instructions from NVIDIA's nvdisasm: finding the tool, running it on an
// image with a time limit, and reading its listing.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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

// Symbol-table indices of the named functions of a cubin image, ascending: what nvdisasm's --function
// (-fun) takes. Names the table lacks are left out; an image that is not ELF gives none.
std::vector<size_t> function_symbols(std::string_view image, const std::set<std::string>& names);

// Runs `tool -c [-fun I,J,...] FILE` on a temporary copy of `image` and parses its listing; `functions`
// (symbol indices) restricts it to those kernels, empty: the whole image. Errors (not runnable,
// non-zero exit, no output in timeout_ms) are one line naming what happened.
Result<SassListing> disassemble(const std::string& tool, std::string_view image, int timeout_ms = 60000,
                                const std::vector<size_t>& functions = {});

// The note given once when no nvdisasm was found.
const std::string& nvdisasm_not_found_note();

}  // namespace aiflame
