#include "flame/frame_list.h"

#include <algorithm>
#include <stdexcept>

namespace aiflame {

const Frame& FrameList::at(size_t i) const {
  if (i >= size()) throw std::out_of_range("FrameList::at");
  return (*this)[i];
}

std::vector<Frame>& FrameList::own() {
  // The const_cast is sound: a list made this run as a non-const vector (owned_), and no other list
  // shares it (use_count 1).
  if (!owned_ || tail_ || head_.use_count() != 1) {
    head_ = std::make_shared<std::vector<Frame>>(begin(), end());
    tail_.reset();
    owned_ = true;
  }
  return const_cast<std::vector<Frame>&>(*head_);
}

Frame& FrameList::mutable_at(size_t i) {
  if (i >= size()) throw std::out_of_range("FrameList::mutable_at");
  return own()[i];
}

void FrameList::push_back(Frame f) {
  own().push_back(std::move(f));
  head_size_ = head_->size();
}

void FrameList::resize(size_t n) {
  own().resize(n);
  head_size_ = head_->size();
}

bool operator==(const FrameList& a, const FrameList& b) {
  if (a.size() != b.size()) return false;
  if (a.head_ == b.head_ && a.tail_ == b.tail_) return true;
  return std::equal(a.begin(), a.end(), b.begin());
}

bool operator==(const FrameList& a, const std::vector<Frame>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace aiflame
