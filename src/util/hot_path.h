// The launch path's functions, kept together in the injection library's text (issue 22).
//
// A training loop runs its framework's code between two launches (the dispatcher, autograd, the
// interpreter), which evicts ours from the first-level caches and the TLB. On the development machine
// one launch ran ~1,440 distinct instructions of ours on 146 lines spread over 24 pages of code
// (callgrind on BM_OnLaunchCold): each page a TLB miss and each line a miss
// when they come back cold, and scattered lines defeat the next-line prefetcher. GCC's hot attribute
// puts a function in .text.hot, which the linker's default script places as one block: the launch
// path's code then sits on a few contiguous pages: 6 of the benchmark library's, where it was 16.
// Cold: the callbacks' rare branches (a new context, a stream capture), out of that block.
// Measured on the H200: the summary's figure did not move
// beyond its spread (0.67-0.71 against 0.70-0.73 us, medians of three alternating pairs); kept since
// it costs nothing and the launch path's code stays in one place as it grows.
#pragma once

#define AIFLAME_HOT __attribute__((hot))
#define AIFLAME_COLD __attribute__((cold, noinline))

