#include "attribute/batch_pipeline.h"

#include <exception>
#include <thread>

#include "profile/profile.h"
#include "util/cache_bypass.h"
#include "util/handoff.h"

namespace aiflame {
namespace {

struct Batch {
  uint32_t device = 0;
  StreamedArray<AttributedSample> samples;  // written past the cache (util/cache_bypass.h)
};

// Batches in flight: about 1 MB at 1,300 samples a batch (4, 16 and 64 ran equally fast).
constexpr size_t kDepth = 16;

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
  Handoff<Batch> q(kDepth);
  Status status = Ok{};
  std::exception_ptr worker_error;
  std::thread worker([&] {
    try {
      bool stop = false;
      std::vector<AttributedSample> samples;  // this thread's, reused: stays in its cache
      status = for_each_batch(path, [&](const PcBatchRecord& b) {
        if (stop) return;
        samples.clear();
        attributor.add_batch(b, samples);
        Batch out = q.take_free();
        out.device = b.device;
        out.samples.assign(samples.data(), samples.size());
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
      consume(b.device, {b.samples.data(), b.samples.size()});
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
