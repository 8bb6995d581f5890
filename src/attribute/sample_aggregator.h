// Sums attributed samples per distinct frame list: the step between attribution and the writers.
//
// A profile has millions of attributed samples but few distinct frame lists, and fewer distinct
// frames. The FrameBuilder asks for a list id once per distinct (stack, kernel, cubin, PC, stall,
// device) and adds each sample's weight to it. A list is two parts, each a run of interned frame ids
// stored once however many lists share it: the head (root frames, CPU stack, kernel) and the tail
// (source lines, instruction, stall reason); the writers get them as shared runs (FrameList). Weights
// are summed per list in sample order, as a map keyed by the whole frame list summed them, so counts
// and rounding come out bit for bit the same.
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "attribute/dense_index.h"
#include "flame/flame_data.h"

namespace aiflame {

class StackAggregator {
 public:
  // start_ns: the profile's start; timeline times are relative to it, in steps of resolution_ns
  // (0: no timeline is kept).
  StackAggregator(uint64_t start_ns, uint64_t resolution_ns) : start_ns_(start_ns), resolution_ns_(resolution_ns) {}

  FrameTable& frames() { return frames_; }
  // The id of a run of frames (ids of frames(), root first), stored once.
  uint32_t part(const std::vector<FrameId>& ids);
  // The id of the frame list head + tail (two part ids), added with weight 0 if new. Two different
  // pairs must not spell the same frames: the caller splits every list at the same kind of frame.
  uint32_t list(uint32_t head, uint32_t tail);
  // A sample's weight for a list, in sample order (a caller that sums a list's weights itself while
  // one key alone feeds it adds the sum once), and for the list's time series on `device`.
  void add_weight(uint32_t list, double weight) { weights_[list] += weight; }
  // Of a list's weight, what the attribution's model split between launch stacks.
  void add_estimated(uint32_t list, double weight) {
    if (estimated_.size() <= list) estimated_.resize(list + 1, 0.0);
    estimated_[list] += weight;
  }
  void add_time(uint32_t list, uint32_t device, uint64_t time_ns, double weight) {
    if (resolution_ns_) add_timed(list, device, time_ns, weight);
  }
  // Appends to out.stacks the lists sorted by their frames' (name, kind), counts rounded by the largest
  // remainder so that they sum to the rounded total, and to out.timeline their time series sorted by
  // (stack, device, time).
  void finish(FlameData& out);

 private:
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
  std::span<const FrameId> part_frames(uint32_t part) const {
    return {arena_.data() + offsets_[part], arena_.data() + offsets_[part + 1]};
  }
  DenseIndex part_ids_, list_ids_;
  std::vector<FrameId> arena_;            // every part's frame ids, one after another
  std::vector<uint32_t> offsets_ = {0};   // part id -> where its ids start in arena_ (and where the next's do)
  std::vector<std::pair<uint32_t, uint32_t>> lists_;  // by list id: (head, tail) part ids
  std::vector<double> weights_;           // by list id
  std::vector<double> estimated_;         // by list id, up to the last list that has any
  std::unordered_map<TimedKey, double, TimedHash> timed_;
};

}  // namespace aiflame
