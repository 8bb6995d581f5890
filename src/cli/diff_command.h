// `aiflame diff BEFORE AFTER [-o OUT]`: a differential flame graph of two profiles (any input
// `aiflame report` reads), BEFORE scaled to AFTER's total samples.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

namespace aiflame {

struct DiffArgs {
  std::string before, after;
  std::string output;        // .svg or .folded; empty: diff folded lines on stdout
  std::string format;        // "svg" or "folded", overriding the extension
  bool plain = false;        // folded output without iaprof's annotations
  std::string title;
  bool quiet = false;
  bool force = false;        // overwrite an existing output file
};

void add_diff_command(CLI::App& app, DiffArgs& args);
int run_diff(const DiffArgs& args);

}  // namespace aiflame
