// The words of a command line as the neighbouring CLIs read them (perf, py-spy), before and after
// CLI11 parses them:
//   - `aiflame record python train.py --lr 3`: the first word that is neither an option nor an
//     option's value starts the command, as `perf record` reads it ("--" still works);
//   - an unknown option is named as such, with the nearest known one ("did you mean --output?"),
//     where CLI11 would say "The following arguments were not expected: ..." of every word after it.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace aiflame {

// `words` after the subcommand's name, with "--" put before the first word that starts the command
// (unchanged when there is none, or when "--" comes first). Options are looked up in `sub`: an option
// that takes a value takes the next word unless its value is attached (--output=x, -ox).
std::vector<std::string> with_command_separator(const CLI::App& sub, const std::vector<std::string>& words);

// The first word of `words` (after the subcommand's name, before "--") that looks like an option and
// is none of `sub`'s, in one message: "unknown option '--ouput' (did you mean --output?)"; empty when
// every option word is known.
std::string unknown_option_message(const CLI::App& sub, const std::vector<std::string>& words);

// The edit distance of two words (insertions, deletions, substitutions, and swaps of neighbours).
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace aiflame
