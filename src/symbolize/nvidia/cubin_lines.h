// Source lines of GPU instructions from a cubin's DWARF line table (kernels built with -lineinfo or -G,
// Triton kernels), with the chain of inlined device functions, decoded by elfutils libdw.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "profile/records.h"
#include "util/result.h"

namespace aiflame {

class CubinLines {
 public:
  // Reads the line table of a cubin image (the bytes are copied). An image without .debug_line gives
  // an empty table, not an error; an image that is not ELF is an error.
  static Result<CubinLines> read(std::string_view image);

  // Position of the instruction at `offset` bytes into kernel `function` (mangled name): the kernel's
  // own line first, then one entry per inlined device function, innermost last. Empty when unknown.
  std::vector<GpuSourceFrame> lookup(const std::string& function, uint64_t offset) const;
  bool has_lines() const { return !rows_.empty(); }

 private:
  struct Row {
    uint64_t address;     // see cubin_lines.cpp for how kernels are kept apart
    uint32_t file;        // index into files_
    uint32_t line;
    uint32_t function;    // index into files_ of the inlined function's name; 0: not inlined
    int64_t context = -1; // index into rows_ of the call site of an inlined row
    bool end_sequence;
    uint64_t sequence_end = 0;  // address of its sequence's end
  };
  std::vector<Row> rows_;            // sorted by address, each sequence in table order
  std::vector<std::pair<uint64_t, uint32_t>> by_address_;  // (address, row) of rows that start code
  std::vector<std::string> strings_; // file names and function names; [0] is ""
  std::unordered_map<std::string, uint64_t> function_address_;  // kernel name -> address of its start
};

}  // namespace aiflame
