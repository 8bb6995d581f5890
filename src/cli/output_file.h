// Writes an output file whole or not at all: into a temporary file beside it, renamed at the end,
// so a failure never leaves a partial file and an existing symlink is replaced, not followed.
#pragma once
#include <functional>
#include <ostream>
#include <string>

#include "util/result.h"

namespace aiflame {

Status write_output_file(const std::string& path, const std::function<void(std::ostream&)>& fill);

}  // namespace aiflame
