// Memory for a launching thread's tables that the launch path reads at every launch (the unwinder's
// cache and record of its previous walk, the walk memos, its last Python walk), in one 2 MiB region
// backed by a huge page where the kernel gives one (MADV_HUGEPAGE; Ubuntu and Debian default to
// "madvise"), else by the 4-KiB pages touched as the tables fill. A thread's region comes from a small
// stock backed ahead by the recorder's collector (hot_pages_stock) where one is left: backing it on the
// launching thread zeroed the huge page inside its first launch. A thread that finds the stock empty
// (more threads starting at once than it holds) gets a region of 4-KiB pages instead: a huge page
// faulted in on a launching thread cost a launch 2.4-6.8 ms on the H100 (hot_pages.cpp).
//
// Why: in a training loop the launch path's lines are cold at every launch, and so are their page
// translations: these tables span ~230 4-KiB pages per thread (a memo alone is ~3 KiB), so each
// launch paid TLB misses on top of cache misses (under KVM a TLB miss walks two page tables). With
// a huge page they share one TLB entry. Released when the thread ends.
#pragma once
#include <cstddef>
#include <new>

namespace aiflame {

// `bytes` zeroed, 64-byte aligned, from this thread's hot region; from the heap, zeroed, when the
// region is full or cannot be mapped. `owner` is the thread_local pointer that will hold it: when the
// thread ends, the region (and any heap block) is released and every owner set to null, so that a
// later use on that thread (a CUPTI callback during the process's exit) allocates again. (Past 16
// owners a thread's allocations are kept to the process's end; the launch path has 4.)
void* hot_alloc(size_t bytes, void** owner);

// Default-initialised (members without initialisers keep hot_alloc's zeros, untouched: a table's
// pages are backed only as it fills), and stored in `owner`. So a table's entries have no initialisers
// of their own (zero is their empty state): constructing each entry wrote to every page of the memo
// table at a thread's first launch (stack_capture.cpp, MemoTable).
template <class T>
T* hot_new(T*& owner) {
  void* p = hot_alloc(sizeof(T), reinterpret_cast<void**>(&owner));
  owner = new (p) T;
  return owner;
}

// Maps and backs up to four regions ahead, for threads' first hot_alloc (a thread's first launch then
// takes no page fault there). Called by the recorder's collector, off the launch path; cheap when the
// stock is full.
void hot_pages_stock();

// `bytes` of zeroed memory, 2 MiB aligned and advised to huge pages (MADV_HUGEPAGE), or nullptr.
void* map_huge_aligned(size_t bytes);

// Has the kernel back every 4-KiB page of [p, p + bytes) now (p page aligned): a read-modify-write that
// changes nothing on the first 4 bytes of each page, so that it is safe while other threads use the
// memory (they find their values unchanged).
void back_pages(void* p, size_t bytes);

// For the capture breakdown (AIFLAME_LAB=capture_stats; reads /proc/self/smaps, never on the launch
// path): of the regions of threads alive now (at most 64 counted) and, once hot_pages_audit(true),
// of those released since (checked as their thread ends), how many have a huge page.
struct HotRegions {
  int regions = 0, huge = 0;
};
HotRegions hot_regions();
void hot_pages_audit(bool on);

}  // namespace aiflame
