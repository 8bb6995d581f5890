// Native address -> function name, with elfutils libdw over the recorded module map. The module's
// file must still match its recorded build-id; otherwise frames read "[libfoo.so+0x1a2b]".
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "profile/records.h"

struct Dwfl;

namespace aiflame {

struct NativeSymbol {
  std::string function;  // demangled; empty when unknown
  std::string module;    // basename of the object file
  uint32_t module_id = 0;
  uint64_t offset = 0;   // from the function start, or module-relative when the function is unknown
  // From DWARF, when the module has it: the function and what was inlined into it at this address,
  // outermost first, with lines (see native_lines.h); levels[0].function is `function`.
  std::vector<SourceFrame> levels;
};

class Symbolizer {
 public:
  explicit Symbolizer(std::vector<ModuleRecord> modules);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // `address` is a return address: the call instruction is looked up (address - 1).
  NativeSymbol lookup(uint64_t address);
  const ModuleRecord* module_of(uint64_t address) const;

 private:
  struct FunctionSymbol {
    uint64_t start, end;  // runtime addresses
    const char* name;     // points into the ELF string table Dwfl keeps mapped
  };
  struct Opened {
    Dwfl* dwfl = nullptr;
    bool usable = false;
    uint64_t any_address = 0;  // inside the module, to find it in its Dwfl
    // libdw looks addresses up by scanning the whole symbol table; PyTorch's libraries hold about a
    // million symbols, so one sorted index per module replaces the scan.
    std::vector<FunctionSymbol> functions;
  };
  void index_functions(Opened& o);
  Opened& open(const ModuleRecord& m);
  std::vector<ModuleRecord> modules_;  // sorted by lo
  std::map<uint32_t, Opened> opened_;
};

std::string basename_of(const std::string& path);
// "[libfoo.so+0x1a2b]" style name for an address that cannot be symbolized.
std::string unknown_frame_name(const NativeSymbol& s);

}  // namespace aiflame
