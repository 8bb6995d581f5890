// `aiflame diff BEFORE AFTER [-o OUT]`: a differential flame graph of two profiles (any input
// `aiflame report` reads, loaded the same way: report/load_flame.h), BEFORE scaled to AFTER's total
// samples. Stacks are matched by their frames, so the root frames name the program (not its pid) by
// default: two runs of one program compare (--group-by as in report).
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace aiflame {

struct DiffArgs : PictureArgs {
  DiffArgs() { group_by = "program"; }
  std::string before, after;
  std::string output;        // .svg or .folded; empty: diff folded lines on stdout
  std::string format;        // "svg" or "folded", overriding the extension
  bool plain = false;        // folded output without iaprof's annotations (the default)
  bool annotate = false;     // folded output with them
  std::string title;
  bool quiet = false;
  bool force = false;        // overwrite an existing output file
};

void add_diff_command(CLI::App& app, DiffArgs& args);
int run_diff(const DiffArgs& args);

}  // namespace aiflame
