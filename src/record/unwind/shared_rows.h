// A process-wide cache under the unwinder's per-thread ones: return address -> the row of its frame,
// for one snapshot generation. A thread's own cache starts empty, so a thread of a pool that launches
// for the first time looked up every frame of its stack, each a search through cold rows: JAX's launches
// come from XLA's threads, 8% of them on stacks new to their thread, and its walks cost 32 us each on
// the H200, 28.6 of it in 4.4 such lookups. Here the frames that
// another thread already walked are one line each.
//
// Lock-free: 32,768 lines of two slots in one 2 MiB region (a huge page where the kernel gives one),
// mapped at the first add. A seqlock per slot: a slot is written by one thread at a time, and a reader
// never takes a row with another key's or generation's. A slot of another generation is free to take.
#pragma once
#include <cstdint>

namespace aiflame::unwind {

// The row (CFA rule, rbp rule) of `key` (a pc, with the unwinder's exact bit) in `generation`, if a walk
// stored it.
bool shared_row_find(uint64_t key, uint32_t generation, int32_t* cfa, int32_t* fp_off);

// Stores the row the walk looked up. Skipped when another thread is writing the slot, or when the
// region cannot be mapped.
void shared_row_add(uint64_t key, uint32_t generation, int32_t cfa, int32_t fp_off);

// Maps the region and has the kernel back every page of it now, if that was not done yet: called off
// the launch path (the recorder's collector), so that no launch's first row stored takes the fault
// that zeroes the region's huge page (0.3-7 ms for a new thread's first launch on the
// development machine, with the memo table's region, stocked, not among them).
void shared_rows_back();
// The region (null before it is mapped, or when it could not be): tests.
const void* shared_rows_region();

// The line (of two slots) that `key` maps to: keys of one line take each other's slots (tests).
uint32_t shared_row_line(uint64_t key);

}  // namespace aiflame::unwind
