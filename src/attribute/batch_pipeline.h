// The PC batches of a profile file, attributed on a second thread: reading, decompressing and
// attributing a batch (about half of a report's time) overlaps with the caller's aggregation of the
// batch before it. The caller sees every batch's samples in file order, as with a loop over
// for_each_batch, so the outputs do not change.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "attribute/attribution.h"
#include "util/result.h"

namespace aiflame {

// Called on the calling thread, once per batch, in file order.
using AttributedBatchFn = std::function<void(uint32_t device, std::span<const AttributedSample> samples)>;

// Streams the batches of `path` through `attributor` and hands each batch's samples to `consume`.
// With threads < 2 everything runs on the calling thread. An exception thrown on the worker (out of
// memory) is rethrown here.
Status attribute_batches(const std::string& path, Attributor& attributor, const AttributedBatchFn& consume,
                         unsigned threads);

}  // namespace aiflame
