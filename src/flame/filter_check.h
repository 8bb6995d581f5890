// The filters checked against the picture before they are applied (report/load_flame.h): each item of
// --kernels, --stalls, --devices or --pids that matches no sample is named, with what the input does
// hold, so that a typo is not an empty output without a word (`report` and `diff` warn, and exit 3 when
// the filters left nothing).
#pragma once
#include <string>
#include <vector>

#include "flame/flame_filter.h"
#include "flame/flame_data.h"

namespace aiflame {

// One phrase per item that matches no sample of `data`, e.g. "--stalls bogus (here: selected, wait)".
std::vector<std::string> unmatched_filter_items(const FlameFilter& f, const FlameData& data);

}  // namespace aiflame
