// Memory for a launching thread's tables that the launch path reads at every launch (the unwinder's
// cache and record of its previous walk, the walk memos, its last Python walk), in one 6 MiB region
// backed by huge pages where the kernel gives them (MADV_HUGEPAGE; Ubuntu and Debian default to
// "madvise"). Only the pages touched are backed: up to 6 MiB per thread that launches (the memos fill
// theirs as call paths come).
//
// Why: in a training loop the launch path's lines are cold at every launch, and so are their page
// translations: these tables span ~230 4-KiB pages per thread (a memo alone is ~3 KiB), so each
// launch paid TLB misses on top of cache misses (under KVM a TLB miss walks two page tables). With
// huge pages they share three TLB entries.
#pragma once
#include <cstddef>
#include <new>

namespace aiflame {

// `bytes` zeroed, 64-byte aligned, from this thread's hot region (never freed: threads that launch
// live as long as the program, and a CUPTI callback may still run on one during the process's exit);
// from the heap, zeroed, when the region is full or cannot be mapped.
void* hot_alloc(size_t bytes);

// Default-initialised (members without initialisers keep hot_alloc's zeros, untouched: a table's
// pages are backed only as it fills).
template <class T>
T* hot_new() {
  return new (hot_alloc(sizeof(T))) T;
}

}  // namespace aiflame
