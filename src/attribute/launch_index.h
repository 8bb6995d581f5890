// The CPU stack each kernel execution was launched from.
//
// A kernel launched directly carries the stack of its launch call (by correlation id). A kernel run
// by a CUDA graph replay carries the replay call's stack, and beneath it the stack that created its
// graph node (the kernel launch captured by stream capture, or the add-node call); such pairs get
// composite ids (kCompositeStack set) that parts() splits again.
#pragma once
#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "profile/profile.h"

namespace aiflame {

inline constexpr uint32_t kCompositeStack = 0x80000000u;

class LaunchIndex {
 public:
  explicit LaunchIndex(const Profile& p);
  // 0 when the launch was not recorded.
  uint32_t stack_of(const KernelRow& k);
  // The stack of a launch call by its correlation id; 0 when not recorded.
  uint32_t stack_of_launch(uint32_t correlation_id) const {
    if (!dense_.empty()) return correlation_id < dense_.size() ? dense_[correlation_id] : 0;
    auto it = by_corr_.find(correlation_id);
    return it == by_corr_.end() ? 0 : it->second;
  }
  static bool composite(uint32_t id) { return id & kCompositeStack; }
  // (replay stack, node-creation stack) of a composite id; (0, 0), "not recorded", for an id this
  // index did not hand out.
  std::pair<uint32_t, uint32_t> parts(uint32_t id) const {
    uint32_t i = id & ~kCompositeStack;
    return i < composites_.size() ? composites_[i] : std::pair<uint32_t, uint32_t>{0, 0};
  }
  // A stack id as a record of the file gives it: the recorder numbers stacks from 1 up and never near
  // 2^31, so an id with kCompositeStack set is a corrupt or crafted one, and stands for "not recorded"
  // (0) rather than for a composite id of this index.
  static uint32_t recorded(uint32_t stack_id) { return composite(stack_id) ? 0 : stack_id; }

 private:
  uint32_t node_stack(uint64_t node_id) const;
  const Profile& p_;
  // CUPTI numbers a process's calls 1, 2, 3...: the launches' correlation ids are dense, and a table
  // indexed by id answers the lookup that every kernel needs several times over in a report. A hash
  // map holds them when they are not (a hand-made or merged profile).
  std::vector<uint32_t> dense_;
  std::unordered_map<uint32_t, uint32_t> by_corr_;
  std::vector<std::pair<uint32_t, uint32_t>> composites_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> composite_ids_;
};

}  // namespace aiflame
