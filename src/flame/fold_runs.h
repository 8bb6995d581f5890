// Folding runs of unsymbolized frames: a library without symbols (cuBLAS, cuDNN, the driver) shows
// up as `[libcublasLt.so.13+0x715819d]`, often fifteen of them in a row, which makes a stack tall and
// says no more than its name once. The pictures (svg, html, speedscope) fold each run of
// kMinFoldedRun or more such frames of one library into one frame `[libcublasLt.so.13: 15 frames]`
// (`--no-fold-runs` keeps them); folded, pprof, trace and FlameScope keep every frame unless
// `--fold-runs` asks. Which formats fold by default is a column of the format registry
// (output/formats.cpp); report/load_flame.h folds after the filters.
#pragma once
#include <cstddef>
#include <string_view>
#include <vector>

#include "flame/flame_data.h"

namespace aiflame {

inline constexpr size_t kMinFoldedRun = 3;

// "libcublasLt.so.13" of "[libcublasLt.so.13+0x715819d]"; empty for any other name.
std::string_view unsymbolized_library(std::string_view name);

// The frames with each run of kMinFoldedRun or more unsymbolized CPU frames of one library made one.
std::vector<Frame> fold_library_runs(const std::vector<Frame>& frames);

// Folds the stacks and the kernels' launch stacks of `data` in place. Stacks keep their indices (the
// timeline points at them); stacks that become equal stay separate entries, which every writer sums.
void fold_library_runs(FlameData& data);

}  // namespace aiflame
