// Copies of this process's memory that another thread may unmap meanwhile: a short count, never a
// fault (issue 23: other threads' Python frames, read by the autograd tracker off their own thread).
#pragma once
#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>

namespace aiflame {

// Copies the remote ranges (addresses in this process) into the local ones, in order, as one stream
// (process_vm_readv). Returns the bytes copied: all, or a prefix that ends where memory is not
// readable, or -1 when nothing was.
ssize_t safe_read(const iovec* local, size_t nl, const iovec* remote, size_t nr);

// Copies n bytes at addr, or fails where they are not all readable.
bool safe_copy(const void* addr, void* out, size_t n);

}  // namespace aiflame
