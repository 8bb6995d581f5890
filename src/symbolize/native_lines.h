// Source levels of a native instruction from its module's DWARF: the function that holds it, the
// functions inlined into it there (outermost first), and the line in each (as perf and addr2line -i
// show them). Empty when the module has no debug information for the address.
#pragma once
#include <cstdint>
#include <vector>

#include "profile/records.h"

struct Dwfl_Module;

namespace aiflame {

// `pc` is a runtime address inside `mod` (the call instruction for a return address).
std::vector<SourceFrame> native_source_levels(Dwfl_Module* mod, uint64_t pc);

}  // namespace aiflame
