// A bounded first-in first-out hand-over between one producer thread and one consumer thread, with a
// free list that recycles the items' buffers (vectors and strings keep their capacity, so the
// steady state allocates nothing).
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

namespace aiflame {

template <class T>
class Handoff {
 public:
  explicit Handoff(size_t depth) : depth_(depth) {}

  // A recycled item (or a new one): the producer fills it, then push()es it.
  T take_free() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return T{};
    T x = std::move(free_.back());
    free_.pop_back();
    return x;
  }
  // The consumer hands an item back once done with it.
  void give_back(T&& x) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(x));
  }
  // Waits for room; false when the consumer has abandoned the stream (the producer should stop).
  bool push(T&& x) {
    std::unique_lock<std::mutex> lock(mu_);
    room_.wait(lock, [&] { return full_.size() < depth_ || abandoned_; });
    if (abandoned_) return false;
    full_.push_back(std::move(x));
    ready_.notify_one();
    return true;
  }
  // Waits for an item; false at the end of the stream (after finish()).
  bool pop(T& out) {
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return !full_.empty() || done_; });
    if (full_.empty()) return false;
    out = std::move(full_.front());
    full_.pop_front();
    room_.notify_one();
    return true;
  }
  // The producer's last call.
  void finish() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    ready_.notify_one();
  }
  // The consumer stops early (it failed): a waiting producer wakes and stops.
  void abandon() {
    std::lock_guard<std::mutex> lock(mu_);
    abandoned_ = true;
    room_.notify_one();
  }

 private:
  const size_t depth_;
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<T> full_;
  std::vector<T> free_;
  bool done_ = false, abandoned_ = false;
};

}  // namespace aiflame
