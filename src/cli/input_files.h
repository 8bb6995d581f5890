// The report's inputs as files: a directory stands for the aiflame profiles directly inside it
// (what `aiflame record` wrote for each process of a job), in name order.
#pragma once
#include <string>
#include <vector>

#include "util/result.h"

namespace aiflame {

Result<std::vector<std::string>> expand_inputs(const std::vector<std::string>& inputs);

}  // namespace aiflame
