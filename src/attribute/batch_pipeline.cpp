#include "attribute/batch_pipeline.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "profile/profile.h"

namespace aiflame {
namespace {

struct Batch {
  uint32_t device = 0;
  std::vector<AttributedSample> samples;
};

// A bounded queue of attributed batches and a free list that recycles their vectors (a batch holds a
// few hundred samples; allocating each anew costs more than the hand-over).
class Handoff {
 public:
  static constexpr size_t kDepth = 16;  // batches in flight: about 1 MB at 1,300 samples a batch

  Batch take_free() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return {};
    Batch b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void give_back(Batch&& b) {
    b.samples.clear();
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(b));
  }
  // False when the consumer has stopped (it threw): the producer should stop too.
  bool push(Batch&& b) {
    std::unique_lock<std::mutex> lock(mu_);
    room_.wait(lock, [&] { return full_.size() < kDepth || abandoned_; });
    if (abandoned_) return false;
    full_.push_back(std::move(b));
    ready_.notify_one();
    return true;
  }
  // False at the end of the stream.
  bool pop(Batch& out) {
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return !full_.empty() || done_; });
    if (full_.empty()) return false;
    out = std::move(full_.front());
    full_.pop_front();
    room_.notify_one();
    return true;
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    ready_.notify_one();
  }
  void abandon() {
    std::lock_guard<std::mutex> lock(mu_);
    abandoned_ = true;
    room_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<Batch> full_;
  std::vector<Batch> free_;
  bool done_ = false, abandoned_ = false;
};

}  // namespace

Status attribute_batches(const std::string& path, Attributor& attributor, const AttributedBatchFn& consume,
                         unsigned threads) {
  if (threads < 2) {
    std::vector<AttributedSample> samples;  // one batch's, reused
    return for_each_batch(path, [&](const PcBatchRecord& b) {
      samples.clear();
      attributor.add_batch(b, samples);
      consume(b.device, samples);
    });
  }
  Handoff q;
  Status status = Ok{};
  std::exception_ptr worker_error;
  std::thread worker([&] {
    try {
      bool stop = false;
      status = for_each_batch(path, [&](const PcBatchRecord& b) {
        if (stop) return;
        Batch out = q.take_free();
        out.device = b.device;
        attributor.add_batch(b, out.samples);
        stop = !q.push(std::move(out));
      });
    } catch (...) {
      worker_error = std::current_exception();
    }
    q.finish();
  });
  std::exception_ptr consumer_error;
  try {
    Batch b;
    while (q.pop(b)) {
      consume(b.device, b.samples);
      q.give_back(std::move(b));
    }
  } catch (...) {
    consumer_error = std::current_exception();
    q.abandon();
  }
  worker.join();
  if (consumer_error) std::rethrow_exception(consumer_error);
  if (worker_error) std::rethrow_exception(worker_error);
  return status;
}

}  // namespace aiflame
