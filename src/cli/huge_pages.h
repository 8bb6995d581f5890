// `aiflame report` and `aiflame diff` run with glibc's malloc on transparent huge pages.
//
// Why: a report of a long run allocates a few hundred MB (kernel and launch records, executions,
// hash tables, the folded text), and on the virtual machines it runs on each 4 KB page fault is
// expensive: with 2 MB pages the 300-s synthetic report went from 4.5 s to 3.5 s
// (bench/RESULTS.md, "Report throughput"). glibc reads its tunables only at start-up, so the process
// sets GLIBC_TUNABLES=glibc.malloc.hugetlb=1 and executes itself again, once. Where the kernel's
// transparent huge pages are off, or glibc is older than 2.35, the tunable does nothing.
#pragma once

namespace aiflame {

// Re-executes the program with the tunable added when argv names a command that reads profiles and
// the tunable is not set yet; returns (doing nothing) otherwise, when AIFLAME_HUGE_PAGES=0, or when
// the re-execution fails.
void reexec_with_huge_pages(int argc, char** argv);

}  // namespace aiflame
