// Reads the text that Intel's iaprof writes (`iaprof record > profile.txt`), both its current
// record set (string/interval/kernel/eustall/metric, iaprof since the 2026-03 "fast mode" rewrite)
// and the older interval format (string, state records, e, interval_start/interval_end; v0.5.0 to
// the tiber tag). Field by field mapping: docs/formats.md.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "flame/flame_data.h"
#include "util/result.h"

namespace aiflame {

// Intel's EU stall reasons, in the order of iaprof's eustall columns.
inline constexpr std::string_view kIaprofStallReasons[] = {"active", "control", "pipestall", "send", "dist_acc",
                                                          "sbid",   "sync",    "inst_fetch", "other", "tdr"};

// True when the text starts like iaprof output (its first record is a known iaprof record).
bool looks_like_iaprof(std::string_view text);

// iaprof output a line at a time, for inputs streamed from a file or a pipe. It keeps the picture
// and iaprof's string table, never the text.
class IaprofParser {
 public:
  IaprofParser();
  ~IaprofParser();
  // False on a malformed known record; error() then names it by `number`.
  bool add_line(std::string_view line, size_t number);
  const std::string& error() const;
  Result<FlameData> finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Parses a whole iaprof output. Unknown record types are skipped (newer iaprof versions); a known
// record with missing or malformed fields, or a string id used before its definition, is an error
// naming the line.
Result<FlameData> parse_iaprof(std::string_view text);

}  // namespace aiflame
