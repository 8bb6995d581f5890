// The native modules (ELF objects) loaded in this process, read from the dynamic loader.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "profile/records.h"

struct dl_phdr_info;

namespace aiflame {

// The GNU build-id of a loaded object ("" if none), read from its PT_NOTE segments in memory: only
// those that a readable PT_LOAD's file contents cover, so that a note the loader did not map is never
// read.
std::string build_id_of(const dl_phdr_info* info);

// Every loaded object with its address range, load bias and GNU build-id (read from memory).
std::vector<ModuleRecord> read_loaded_modules();

// Address range [lo, hi) of the loaded object whose path contains `name_part`; false if none.
bool find_module_range(const std::string& name_part, uint64_t* lo, uint64_t* hi, std::string* path = nullptr);

}  // namespace aiflame
