// The frames of one stack, root first, as up to two shared runs of frames.
//
// A report's picture holds tens of thousands of stacks of 40-60 frames, and nearly all of a stack is
// shared with others: its CPU part (process, launch stack, kernel) with every other instruction of
// that kernel launched there, its GPU part (source lines, instruction, stall reason) with every other
// launch site of the kernel. Stored as one vector each, the stacks of a 60-s profile took 73 MB (16
// bytes a frame); as two shared runs, 32 bytes a stack.
// Reading is by index or iterator, as a vector; changing a list (readers build theirs, tests edit
// them) first copies it into one run of its own.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <vector>

#include "flame/frame.h"

namespace aiflame {

class FrameList {
 public:
  using Run = std::shared_ptr<const std::vector<Frame>>;

  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = Frame;
    using difference_type = std::ptrdiff_t;
    using pointer = const Frame*;
    using reference = const Frame&;
    const_iterator() = default;
    const_iterator(const FrameList* l, size_t i) : l_(l), i_(i) {}
    reference operator*() const { return (*l_)[i_]; }
    pointer operator->() const { return &(*l_)[i_]; }
    reference operator[](difference_type n) const { return (*l_)[i_ + static_cast<size_t>(n)]; }
    const_iterator& operator++() { ++i_; return *this; }
    const_iterator operator++(int) { auto t = *this; ++i_; return t; }
    const_iterator& operator--() { --i_; return *this; }
    const_iterator operator--(int) { auto t = *this; --i_; return t; }
    const_iterator& operator+=(difference_type n) { i_ += static_cast<size_t>(n); return *this; }
    const_iterator& operator-=(difference_type n) { i_ -= static_cast<size_t>(n); return *this; }
    friend const_iterator operator+(const_iterator a, difference_type n) { return a += n; }
    friend const_iterator operator+(difference_type n, const_iterator a) { return a += n; }
    friend const_iterator operator-(const_iterator a, difference_type n) { return a -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.i_ == b.i_; }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) { return a.i_ <=> b.i_; }

   private:
    const FrameList* l_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = const_iterator;
  using value_type = Frame;
  using size_type = size_t;

  FrameList() = default;
  FrameList(std::vector<Frame> frames)  // NOLINT: implicit, readers and tests build vectors
      : head_(frames.empty() ? nullptr : std::make_shared<std::vector<Frame>>(std::move(frames))),
        head_size_(head_ ? head_->size() : 0), owned_(head_ != nullptr) {}
  FrameList(std::initializer_list<Frame> frames) : FrameList(std::vector<Frame>(frames)) {}
  // head then tail, both shared with other lists.
  FrameList(Run head, Run tail)
      : head_(std::move(head)), tail_(std::move(tail)), head_size_(head_ ? head_->size() : 0) {}

  size_t size() const { return head_size_ + (tail_ ? tail_->size() : 0); }
  bool empty() const { return size() == 0; }
  const Frame& operator[](size_t i) const { return i < head_size_ ? (*head_)[i] : (*tail_)[i - head_size_]; }
  const Frame& at(size_t i) const;  // throws std::out_of_range
  const Frame& front() const { return (*this)[0]; }
  const Frame& back() const { return (*this)[size() - 1]; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }
  std::vector<Frame> to_vector() const { return {begin(), end()}; }

  // Changes copy the list into a run of its own first.
  Frame& mutable_at(size_t i);
  void push_back(Frame f);
  void resize(size_t n);

  // How many leading frames a and b share without comparing them: the head, when it is one run.
  friend size_t shared_head(const FrameList& a, const FrameList& b) {
    return a.head_ && a.head_ == b.head_ ? a.head_size_ : 0;
  }
  // The shared runs themselves (null where absent), for writers that work once per run, not per line.
  const std::vector<Frame>* head_run() const { return head_.get(); }
  const std::vector<Frame>* tail_run() const { return tail_.get(); }
  friend bool operator==(const FrameList& a, const FrameList& b);
  friend bool operator==(const FrameList& a, const std::vector<Frame>& b);

 private:
  std::vector<Frame>& own();
  Run head_, tail_;
  size_t head_size_ = 0;
  bool owned_ = false;  // head_ was made (not const) by a list, for a list: own() may change it
};

}  // namespace aiflame
