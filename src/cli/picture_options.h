// The options `report` and `diff` share: what the picture holds (frames, grouping, stall leaves,
// filters, folded library runs) and how aiflame profiles are loaded into it (report/load_flame.h).
#pragma once
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "report/load_flame.h"
#include "util/result.h"

namespace aiflame {

// Registers PictureArgs' flags on a subcommand.
void add_picture_options(CLI::App* sub, PictureArgs& a);

// LoadOptions from the flags, for a picture written in `format` (a name of the output registry, whose
// writer says whether it reads the time series and the launching threads, and whether runs of
// unsymbolized frames fold by default). Errors (a filter that does not parse, an --nvdisasm that is
// no executable) are one line: bad usage.
Result<LoadOptions> load_options(const PictureArgs& a, std::string_view format);

}  // namespace aiflame
