// The values of the AIFLAME_* variables that are not record options (record_options.h has those):
// parsed strictly, so that a typo never turns a switch on ("AIFLAME_DEBUG=garbage" did, and
// "AIFLAME_EXPERIMENTAL=0" unlocked what it locks); the CLI refuses a bad value in one line before
// any work (cli/env_check.h), and the code that reads a variable treats a bad value as unset.
#pragma once
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace aiflame {

// A 0-or-1 switch: unset or empty is 0; anything but "0" or "1" is nullopt.
inline std::optional<bool> switch_value(const char* v) {
  if (!v || !*v || std::strcmp(v, "0") == 0) return false;
  if (std::strcmp(v, "1") == 0) return true;
  return std::nullopt;
}

// Whether the 0-or-1 switch `name` is on: "1" only.
inline bool switch_on(const char* name) { return switch_value(std::getenv(name)).value_or(false); }

// A count of 1 or more in decimal digits (at most 4096): nullopt for anything else, also unset.
inline std::optional<unsigned> count_value(const char* v) {
  if (!v || !*v || std::strlen(v) > 4) return std::nullopt;
  unsigned n = 0;
  for (const char* c = v; *c; c++) {
    if (*c < '0' || *c > '9') return std::nullopt;
    n = n * 10 + static_cast<unsigned>(*c - '0');
  }
  if (n < 1 || n > 4096) return std::nullopt;
  return n;
}

}  // namespace aiflame
