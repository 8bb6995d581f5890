// Merging the pictures of several processes (one profile each) into one.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "flame/flame_data.h"

namespace aiflame {

// Adds the frame origins of `from` that `into` lacks, with the modules they point into.
void merge_origins(FlameData& into, const FlameData& from);

// Appends `from` to `into`: stacks (each process keeps its process and pid frames), its processes'
// rows (stacks and kernels still pointing at theirs), the time series and kernel spans moved onto
// `into`'s timeline (profiles of one host share the profiler clock).
void merge_flame(FlameData& into, FlameData from);

// The stacks already in a picture, by a hash of their frames (for merge_flame_summed). Built only
// when a second picture comes: a report of one profile never hashes its stacks.
struct StackIndex {
  std::unordered_map<uint64_t, std::vector<uint32_t>> by_hash;
  size_t indexed = 0;  // the picture's stacks [0, indexed) are in by_hash
};

// merge_flame for pictures without a time series (folded, SVG): a stack whose frames `into` already
// holds adds its count to that one instead of being appended, so merging many processes that ran the
// same code (the ranks of a data-parallel job) keeps memory at the size of the merged picture rather
// than the sum of the inputs. A stack summed from several processes points at none (kNoProcess). The
// stacks of the first picture are taken as they are (a picture's stacks are distinct frame lists).
void merge_flame_summed(FlameData& into, FlameData from, StackIndex& index);

}  // namespace aiflame
