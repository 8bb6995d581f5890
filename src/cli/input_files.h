// The report's inputs as files: a directory stands for the aiflame profiles directly inside it
// (what `aiflame record` wrote for each process of a job), in name order.
#pragma once
#include <string>
#include <vector>

#include "util/result.h"

namespace aiflame {

// members: the files that came from a directory (report draws the rest when one of them fails);
// skipped: a line for each other file of a directory (empty, or not an aiflame profile), never left
// out in silence.
Result<std::vector<std::string>> expand_inputs(const std::vector<std::string>& inputs,
                                               std::vector<std::string>* members = nullptr,
                                               std::vector<std::string>* skipped = nullptr);

}  // namespace aiflame
