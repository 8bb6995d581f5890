#include "attribute/launch_index.h"

#include <algorithm>

namespace aiflame {

LaunchIndex::LaunchIndex(const Profile& p) : p_(p) {
  uint32_t max_id = 0;
  for (const auto& l : p.launches) max_id = std::max(max_id, l.correlation_id);
  if (!p.launches.empty() && max_id <= 4 * p.launches.size() + 1024) {
    dense_.assign(size_t{max_id} + 1, 0);
    for (const auto& l : p.launches) dense_[l.correlation_id] = recorded(l.stack_id);
  } else {
    by_corr_.reserve(p.launches.size());
    for (const auto& l : p.launches) by_corr_[l.correlation_id] = recorded(l.stack_id);
  }
  // Number every composite up front, in kernel order, so that parts() works before stack_of() is
  // asked and two indexes of one profile agree on the ids.
  for (const auto& k : p.kernels) stack_of(k);
}

uint32_t LaunchIndex::node_stack(uint64_t node_id) const {
  // Instantiating a graph clones its nodes; follow clones back to the node that was created.
  for (int hops = 0; node_id && hops < 64; hops++) {
    auto it = p_.graph_nodes.find(node_id);
    if (it == p_.graph_nodes.end()) return 0;
    if (it->second.stack_id) return recorded(it->second.stack_id);
    node_id = it->second.original_node_id;
  }
  return 0;
}

uint32_t LaunchIndex::stack_of(const KernelRow& k) {
  uint32_t launch = stack_of_launch(k.correlation_id);
  if (!k.graph_node_id) return launch;
  uint32_t node = node_stack(k.graph_node_id);
  if (!node || !launch) return launch ? launch : node;
  auto [c, fresh] = composite_ids_.try_emplace({launch, node}, static_cast<uint32_t>(composites_.size()));
  if (fresh) composites_.emplace_back(launch, node);
  return c->second | kCompositeStack;
}

}  // namespace aiflame
