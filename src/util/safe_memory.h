// Copies of this process's memory that another thread may unmap meanwhile: a short count, never a
// fault (issue 23: other threads' Python frames, read by the autograd tracker off their own thread).
//
// The copy goes through a pipe of our own: writev() from the memory into it, readv() back. Where
// process_vm_readv() pins each page and takes the process's mmap lock, a pipe write copies with
// copy_from_user, which takes no lock for present pages; on the development VM an 8-KiB read with one
// thread mapping and unmapping cost 1.8-3.4 us through the pipe against 6.6-8.1 us with
// process_vm_readv (bench/probes/safe_read_cost.c), and inside the H100's training process one
// process_vm_readv took 16 us against 3.4 us in a small one (bench/RESULTS.md, eighth session).
//
// The pipe's two descriptors are checked at every read (fstat: the same inode as when made), so a
// program that closed them and got the numbers back for its own files never has our copies written
// into them or its data read; a child after fork() makes a pipe of its own. Where no pipe can be made
// (no descriptors left) or AIFLAME_SAFE_READ=vm, process_vm_readv() does the copy.
#pragma once
#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>

namespace aiflame {

// Copies the remote ranges (addresses in this process) into the local ones, in order, as one stream.
// Returns the bytes copied: all of them, or a prefix that ends where memory is not readable (rounded
// to whole pages of the stream, or to whole iovecs with process_vm_readv), or -1 when nothing was.
// At most kSafeReadMax bytes in all; thread-safe (one read at a time).
constexpr size_t kSafeReadMax = 32 * 1024;
ssize_t safe_read(const iovec* local, size_t nl, const iovec* remote, size_t nr);

// Copies n bytes at addr, or fails where they are not all readable.
bool safe_copy(const void* addr, void* out, size_t n);

// For tests and the capture breakdown: which way the last safe_read went.
enum class SafeReadPath { None, Pipe, ProcessVm };
SafeReadPath last_safe_read_path();
// The pipe's descriptors (-1 when none is open): tests close them under the reader.
void safe_read_fds_for_test(int* read_fd, int* write_fd);

}  // namespace aiflame
