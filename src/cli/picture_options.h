// The options `report` and `diff` share: what the picture holds (frames, grouping, stall leaves,
// filters) and how aiflame profiles are loaded into it (report/load_flame.h).
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "flame/flame_filter.h"
#include "report/load_flame.h"
#include "util/result.h"

namespace aiflame {

// Registers PictureArgs' flags on a subcommand.
void add_picture_options(CLI::App* sub, PictureArgs& a);

// LoadOptions from the flags: `times` keeps the time series. Errors (an --nvdisasm that is no
// executable) are one line.
Result<LoadOptions> load_options(const PictureArgs& a, bool times);
// The filter of --kernels, --exclude-kernels, --stalls, --devices, --pids.
Result<FlameFilter> picture_filter(const PictureArgs& a);

}  // namespace aiflame
