// A growable array of plain records (kernel and launch rows) that never holds them twice.
//
// Why not std::vector: a long run has millions of such records, read one at a time with no count
// up front. A vector that doubles copies them into a new buffer each time, and at its last doubling
// holds the old buffer and the new one together (the 300-s synthetic report's peak); collecting them
// in blocks and moving them into one vector of the exact size does the same once. Here arrays past
// 1 MB live in their own mapping, which grows with mremap: the kernel moves the pages, nothing is
// copied, and only the pages written are ever resident. Smaller arrays use malloc, so that the
// sanitizers still see them.
#pragma once
#include <sys/mman.h>

#include <cassert>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <type_traits>
#include <utility>

namespace aiflame {

template <class T>
class RecordArray {
  static_assert(std::is_trivially_copyable_v<T>, "records are moved as bytes");

 public:
  RecordArray() = default;
  RecordArray(std::initializer_list<T> list) {
    reserve(list.size());
    for (const T& x : list) push_back(x);
  }
  RecordArray(const RecordArray& o) {
    reserve(o.size_);
    if (o.size_) std::memcpy(static_cast<void*>(data_), o.data_, o.size_ * sizeof(T));
    size_ = o.size_;
  }
  RecordArray(RecordArray&& o) noexcept { swap(o); }
  RecordArray& operator=(RecordArray o) noexcept {  // copy, move and initializer lists
    swap(o);
    return *this;
  }
  ~RecordArray() { release(); }

  void swap(RecordArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(bytes_, o.bytes_);
  }

  void push_back(const T& x) {
    if ((size_ + 1) * sizeof(T) > bytes_) grow((size_ + 1) * sizeof(T));
    new (data_ + size_) T(x);
    size_++;
  }
  void reserve(size_t n) {
    if (n * sizeof(T) > bytes_) grow(n * sizeof(T));
  }
  void clear() {
    release();
    data_ = nullptr;
    size_ = bytes_ = 0;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) {
    assert(i < size_);
    return data_[i];
  }
  const T& operator[](size_t i) const {
    assert(i < size_);
    return data_[i];
  }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  static constexpr size_t kMapFrom = size_t{1} << 20;
  static constexpr size_t kHugePage = size_t{2} << 20;

  static bool mapped(size_t bytes) { return bytes >= kMapFrom; }

  void grow(size_t need) {
    size_t bytes = bytes_ ? bytes_ : 4096;
    while (bytes < need) bytes *= 2;
    void* p = nullptr;
    if (!mapped(bytes)) {
      p = std::realloc(data_, bytes);
      if (!p) throw std::bad_alloc();
    } else if (mapped(bytes_)) {
      p = mremap(data_, bytes_, bytes, MREMAP_MAYMOVE);
      if (p == MAP_FAILED) throw std::bad_alloc();
    } else {  // from malloc to a mapping: the one copy, of less than 1 MB
      p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      if (size_) std::memcpy(p, static_cast<const void*>(data_), size_ * sizeof(T));
      std::free(data_);
    }
    // Huge pages where the kernel offers them on request: far fewer page faults for the millions of
    // records of a long run (ignored where transparent huge pages are off).
    if (mapped(bytes) && bytes >= kHugePage) madvise(p, bytes, MADV_HUGEPAGE);
    data_ = static_cast<T*>(p);
    bytes_ = bytes;
  }

  void release() {
    if (!data_) return;
    if (mapped(bytes_)) munmap(data_, bytes_);
    else std::free(data_);
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t bytes_ = 0;  // capacity in bytes
};

}  // namespace aiflame
