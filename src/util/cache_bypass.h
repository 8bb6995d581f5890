// A copy whose destination does not pass through this core's cache.
//
// Why: a report hands each attributed batch from the thread that attributes it to the thread that
// aggregates it, in buffers that go round between them. Written with ordinary stores, every cache line
// of a recycled buffer is first fetched back from the other core, which had read it last: that made
// the stores of attributed samples 70% of the attributing thread's time (perf, 300-s synthetic
// profile). Streaming stores write whole lines without fetching
// them; the reader then reads them from memory, in order, which the prefetcher hides.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace aiflame {

// dst must be 16-byte aligned. Stores made after the call are seen after the copied bytes.
inline void copy_bypassing_cache(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  size_t i = 0;
  for (; i + 16 <= bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  if (i < bytes) std::memcpy(d + i, s + i, bytes - i);
  _mm_sfence();  // streaming stores are weakly ordered: fence them before the hand-over's stores
#else
  std::memcpy(dst, src, bytes);
#endif
}

// A growable array of trivially copyable T, 64-byte aligned, filled by copy_bypassing_cache.
template <class T>
class StreamedArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  void assign(const T* src, size_t n) {
    if (n > capacity_) {
      size_t cap = std::max(n, capacity_ * 2);
      size_t bytes = (cap * sizeof(T) + 63) / 64 * 64;
      void* p = std::aligned_alloc(64, bytes);
      if (!p) throw std::bad_alloc();
      data_.reset(static_cast<T*>(p));
      capacity_ = cap;
    }
    if (n) copy_bypassing_cache(data_.get(), src, n * sizeof(T));
    size_ = n;
  }
  const T* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace aiflame
