// Sums attributed samples per distinct frame list: the step between attribution and the writers.
//
// A profile has millions of attributed samples but few distinct frame lists, and fewer distinct
// frames. The FrameBuilder asks for a list id once per distinct (stack, kernel, cubin, PC, stall,
// device) and adds each sample's weight to it; lists are vectors of interned frame ids, so a frame
// name is stored once however many lists hold it. Weights are summed per list in sample order, as a
// map keyed by the whole frame list summed them, so counts and rounding come out bit for bit the same.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "output/flame_stack.h"

namespace aiflame {

class StackAggregator {
 public:
  // start_ns: the profile's start; timeline times are relative to it, in steps of resolution_ns
  // (0: no timeline is kept).
  StackAggregator(uint64_t start_ns, uint64_t resolution_ns) : start_ns_(start_ns), resolution_ns_(resolution_ns) {}

  FrameTable& frames() { return frames_; }
  // The id of a frame list (ids of frames(), root first), added with weight 0 if new.
  uint32_t list(const std::vector<FrameId>& ids);
  void add(uint32_t list, uint32_t device, uint64_t time_ns, double weight) {
    weights_[list] += weight;
    if (resolution_ns_) add_timed(list, device, time_ns, weight);
  }
  // Appends to out.stacks the lists sorted by their frames' (name, kind), counts rounded by the largest
  // remainder so that they sum to the rounded total, and to out.timeline their time series sorted by
  // (stack, device, time).
  void finish(FlameData& out);

 private:
  struct ListHash {
    size_t operator()(const std::vector<FrameId>& v) const;
  };
  struct TimedKey {
    uint32_t list, device;
    uint64_t time_ns;
    bool operator==(const TimedKey&) const = default;
  };
  struct TimedHash {
    size_t operator()(const TimedKey& k) const;
  };
  void add_timed(uint32_t list, uint32_t device, uint64_t time_ns, double weight);

  uint64_t start_ns_, resolution_ns_;
  FrameTable frames_;
  std::unordered_map<std::vector<FrameId>, uint32_t, ListHash> list_ids_;
  std::vector<const std::vector<FrameId>*> lists_;  // by list id: the keys of list_ids_
  std::vector<double> weights_;                     // by list id
  std::unordered_map<TimedKey, double, TimedHash> timed_;
};

}  // namespace aiflame
