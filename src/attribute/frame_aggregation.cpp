// FrameBuilder's aggregation: attributed samples, one at a time, into interned frame lists with summed
// weights (sample_aggregator.h), then the FlameData. Frames are built once per distinct (stack,
// kernel, cubin, PC offset, stall reason, device), never per sample.
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "attribute/dense_index.h"
#include "attribute/frame_builder.h"
#include "attribute/frame_naming.h"
#include "attribute/pair_table.h"
#include "attribute/process_row.h"
#include "attribute/sample_aggregator.h"
#include "attribute/slot_table.h"
#include "symbolize/demangle.h"

namespace aiflame {
namespace {

// What a sample's GPU frames depend on; with its stack, everything its frames depend on.
struct GpuKey {
  uint64_t code_object_id, pc_offset;
  uint32_t function, stall_reason, device;
  bool operator==(const GpuKey&) const = default;
};

GpuKey gpu_key(const AttributedSample& a) { return {a.code_object_id, a.pc_offset, a.function, a.stall_reason, a.device}; }

uint64_t hash_of(const GpuKey& k) {
  uint64_t h = dense_hash_mix(k.code_object_id, k.pc_offset);
  return dense_hash_mix(h, (uint64_t{k.function} << 32 | k.stall_reason) ^ (uint64_t{k.device} << 20));
}

constexpr uint32_t kNoList = std::numeric_limits<uint32_t>::max();

// GPU parts numbered 0, 1, 2... as first seen, each key kept in its hash slot beside its id: one cache
// line per lookup (a DenseIndex of ids with the keys in a vector of their own reads two, and a long
// profile has 10^4-10^5 GPU parts, looked up once per PC record).
class GpuPartIndex {
 public:
  std::pair<uint32_t, bool> find_or_add(const GpuKey& k) {
    const uint32_t next = static_cast<uint32_t>(slots_.size());
    auto [s, fresh] = slots_.find_or_add(
        hash_of(k), [&k](const Slot& s) { return s.key() == k; },
        [&] { return Slot{k.code_object_id, k.pc_offset, k.function, k.stall_reason, k.device, next}; });
    return {s.id, fresh};
  }

 private:
  static constexpr uint32_t kFree = ~0u;
  struct Slot {  // 32 bytes: GpuKey's fields without its padding, and the id
    uint64_t code_object_id = 0, pc_offset = 0;
    uint32_t function = 0, stall_reason = 0, device = 0, id = kFree;
    GpuKey key() const { return {code_object_id, pc_offset, function, stall_reason, device}; }
    bool free() const { return id == kFree; }
    uint64_t hash() const { return hash_of(key()); }
  };
  SlotTable<Slot> slots_;
};

// Where the profile's times start: the process start, or its first kernel.
uint64_t profile_start(const Profile& p) {
  uint64_t start = p.process ? p.process->start_timestamp : 0;
  for (const auto& k : p.kernels)
    if (!start || k.start < start) start = k.start;
  return start;
}

}  // namespace

struct FrameBuilder::Aggregation {
  Aggregation(uint64_t start_ns, uint64_t resolution_ns) : stacks(start_ns, resolution_ns) {}
  StackAggregator stacks;
  // Samples are looked up in two steps: their GPU part (instruction, stall reason, device), numbered
  // densely, whose id is remembered for the run of samples that one PC record was split into; then
  // the pair (stack, GPU part) in a table whose slots are the entries (pair_table.h). Per distinct
  // pair: its list without [0] and with [1] the stall leaf (made when first needed: a list that never
  // gets weight must not become a zero stack).
  //
  // Nearly every list is fed by one pair only. While it is, the pair sums the list's weight in its own
  // entry, in the cache line its lookup has just read, instead of in the aggregator's weight of the
  // list (another cache miss per sample: a quarter of the report's time on a long profile). When a
  // second pair reaches the list (the same instruction of one kernel in two cubins, say), the first
  // pair's sum moves to the aggregator and both add there from then on: every list's weight is still
  // summed in sample order, so counts come out bit for bit as before.
  GpuPartIndex gpu_ids;
  std::vector<bool> gpu_has_lines;   // by GPU part id: whether the PC has source lines
  PairTable pairs;                   // key: stack << 32 | GPU part id
  static constexpr uint32_t kOwned = 1u << 31;  // in PairTable::Entry::list
  // By list id: the pair that alone feeds it and through which of its lists, or none, or shared.
  struct Owner {
    uint64_t key = 0;
    uint8_t state = kNoOwner;
  };
  enum : uint8_t { kNoOwner, kOwnedPlain, kOwnedStall, kShared };
  std::vector<Owner> owner;
  GpuKey last_gpu{};
  uint32_t last_gpu_id = kNoList;
  // Interned frames, cached: CPU frames by stack, root frames by device, kernel by function,
  // instruction frames by PC.
  std::unordered_map<uint32_t, std::vector<FrameId>> cpu, roots;
  // Head parts by (device << 32 | stack, kernel); tail parts by GPU part id, without and with the
  // stall reason (kNoList until made).
  struct HeadHash {
    size_t operator()(const std::pair<uint64_t, uint32_t>& k) const { return dense_hash_mix(k.first, k.second); }
  };
  std::unordered_map<std::pair<uint64_t, uint32_t>, uint32_t, HeadHash> heads;
  std::vector<uint32_t> plain_tails, stall_tails;
  std::unordered_map<uint32_t, FrameId> kernels;
  std::map<GpuPc, std::vector<FrameId>> instructions;
  std::vector<FrameId> ids;  // scratch
  // Summed in sample order, as the whole-profile path summed them.
  double gpu_weight = 0, no_line_weight = 0;
};

// Here, where Aggregation is complete.
FrameBuilder::FrameBuilder(const Profile& p, Symbolizer& sym, FrameOptions opt)
    : p_(p), sym_(sym), opt_(opt), launches_(p) {}
FrameBuilder::~FrameBuilder() = default;

uint32_t FrameBuilder::list_of(const AttributedSample& a, uint32_t gpu_id, bool with_stall) {
  Aggregation& g = *agg_;
  FrameTable& t = g.stacks.frames();
  // The head: root frames, CPU stack, "-", kernel. It ends at the list's only GpuKernel frame, so no
  // two (head, tail) pairs spell the same frames.
  auto [head, fresh_head] = g.heads.try_emplace({uint64_t{a.device} << 32 | a.stack_id, a.function}, 0);
  if (fresh_head) {
    auto& ids = g.ids;
    ids.clear();
    auto [roots, fresh_roots] = g.roots.try_emplace(a.device);
    if (fresh_roots)
      for (const Frame& f : root_frames(a.device)) roots->second.push_back(t.intern(f));
    ids.insert(ids.end(), roots->second.begin(), roots->second.end());
    if (a.stack_id == 0) {
      ids.push_back(t.intern("[unattributed]", FrameKind::Unattributed));
    } else {
      auto [cpu, fresh] = g.cpu.try_emplace(a.stack_id);
      if (fresh)
        for (const Frame& f : cpu_frames(a.stack_id)) cpu->second.push_back(t.intern(f));
      ids.insert(ids.end(), cpu->second.begin(), cpu->second.end());
    }
    ids.push_back(t.intern("-", FrameKind::Separator));
    auto [kernel, fresh_kernel] = g.kernels.try_emplace(a.function);
    if (fresh_kernel) kernel->second = t.intern(kernel_frame_name(p_.str(a.function)), FrameKind::GpuKernel);
    ids.push_back(kernel->second);
    head->second = g.stacks.part(ids);
  }
  // The tail: source lines, inlined functions, instruction, and the stall reason; one per GPU part.
  uint32_t& tail = (with_stall ? g.stall_tails : g.plain_tails)[gpu_id];
  if (tail == kNoList) {
    auto& ids = g.ids;
    ids.clear();
    auto [ins, fresh_ins] = g.instructions.try_emplace(GpuPc{a.code_object_id, a.function, a.pc_offset});
    if (fresh_ins)
      for (const Frame& f : instruction_frames(a)) ins->second.push_back(t.intern(f));
    ids.insert(ids.end(), ins->second.begin(), ins->second.end());
    if (with_stall)
      ids.push_back(t.intern(stall_frame_name(p_, p_.stall_reason_name(a.device, a.stall_reason)), FrameKind::Stall));
    tail = g.stacks.part(ids);
  }
  return g.stacks.list(head->second, tail);
}

void FrameBuilder::add(const AttributedSample& a) {
  // The time series, at 1 ms resolution: finer than any drain interval, coarse enough to stay small.
  if (!agg_) agg_ = std::make_unique<Aggregation>(profile_start(p_), opt_.times ? 1000000 : 0);
  Aggregation& g = *agg_;
  const GpuKey gk = gpu_key(a);
  if (g.last_gpu_id == kNoList || !(gk == g.last_gpu)) {
    auto [id, fresh] = g.gpu_ids.find_or_add(gk);
    if (fresh) {
      instruction_frames(a);  // looks the PC's lines up
      g.gpu_has_lines.push_back(has_lines_[{a.code_object_id, a.function, a.pc_offset}]);
      g.plain_tails.push_back(kNoList);
      g.stall_tails.push_back(kNoList);
    }
    g.last_gpu = gk;
    g.last_gpu_id = id;
  }
  PairTable::Entry& pair = g.pairs.find_or_add(uint64_t{a.stack_id} << 32 | g.last_gpu_id);
  g.gpu_weight += a.weight;
  if (!g.gpu_has_lines[g.last_gpu_id]) g.no_line_weight += a.weight;
  // One sample may feed two stacks: with and without its stall reason leaf (see StallLeaves).
  double not_issued = std::min(a.not_issued, a.weight);
  double leaf = opt_.stalls == StallLeaves::All        ? a.weight
                : opt_.stalls == StallLeaves::Issued    ? a.weight - not_issued
                : opt_.stalls == StallLeaves::NotIssued ? not_issued
                                                        : 0.0;
  if (a.weight - leaf > 0) add_to(pair, 0, a, a.weight - leaf);
  if (leaf > 0 || opt_.stalls == StallLeaves::All) add_to(pair, 1, a, leaf);
}

void FrameBuilder::add_to(PairTable::Entry& pair, int which, const AttributedSample& a, double weight) {
  Aggregation& g = *agg_;
  uint32_t list = pair.list[which];
  if (list == PairTable::kNoList) {
    list = list_of(a, g.last_gpu_id, which == 1);
    if (list >= Aggregation::kOwned) throw std::length_error("more distinct stacks than a report can hold");
    if (g.owner.size() <= list) g.owner.resize(list + 1);
    Aggregation::Owner& o = g.owner[list];
    if (o.state == Aggregation::kNoOwner) {
      o = {pair.key, which ? Aggregation::kOwnedStall : Aggregation::kOwnedPlain};
      list |= Aggregation::kOwned;
    } else if (o.state != Aggregation::kShared) {  // a second pair: the first one's sum moves to the aggregator
      const int w = o.state == Aggregation::kOwnedStall;
      PairTable::Entry* first = g.pairs.find(o.key);  // present: pairs are never removed
      g.stacks.add_weight(list, first->weight[w]);
      first->weight[w] = 0;
      first->list[w] &= ~Aggregation::kOwned;
      o.state = Aggregation::kShared;
    }
    pair.list[which] = list;
  }
  if (list & Aggregation::kOwned) pair.weight[which] += weight;
  else g.stacks.add_weight(list, weight);
  g.stacks.add_time(list & ~Aggregation::kOwned, a.device, a.time_ns, weight);
  if (a.estimated) g.stacks.add_estimated(list & ~Aggregation::kOwned, weight);
}

FlameData FrameBuilder::build(const AttributionResult& res) {
  for (const auto& a : res.samples) add(a);
  return finish(res.stats);
}

FlameData FrameBuilder::finish(const AttributionStats& stats) {
  if (!agg_) agg_ = std::make_unique<Aggregation>(profile_start(p_), opt_.times ? 1000000 : 0);
  FlameData out;
  // Owned lists' weights to the aggregator: each such list got no other weight (0 + sum is exact).
  agg_->pairs.for_each([&](const PairTable::Entry& e) {
    for (int w = 0; w < 2; w++)
      if (e.list[w] != PairTable::kNoList && (e.list[w] & Aggregation::kOwned))
        agg_->stacks.add_weight(e.list[w] & ~Aggregation::kOwned, e.weight[w]);
  });
  agg_->stacks.finish(out);
  for (auto& ws : out.stacks) ws.process = 0;  // the profile's one process: out.processes[0]
  gpu_stats_.samples += static_cast<uint64_t>(std::llround(agg_->gpu_weight));
  gpu_stats_.samples_without_lines += static_cast<uint64_t>(std::llround(agg_->no_line_weight));
  agg_.reset();

  // Times and kernels, relative to the start of the profile.
  out.processes = {process_row(p_, stats, "")};
  out.process = process_name();
  out.pid = p_.process ? p_.process->pid : 0;
  uint64_t start = profile_start(p_), end = p_.process ? p_.process->start_timestamp : 0;
  for (const auto& k : p_.kernels) end = std::max(end, k.end);
  end = std::max(end, p_.last_batch_timestamp);  // set also when the batches were streamed, not kept
  for (const auto& b : p_.batches) end = std::max(end, b.timestamp);
  out.start_ns = start;
  out.duration_ns = end > start ? end - start : 0;
  out.user_frames = user_frames_;
  out.origins = origins_;
  out.modules = modules_;
  if (!opt_.times) return out;
  std::unordered_map<uint32_t, std::string> kernel_names;
  std::map<uint32_t, std::vector<Frame>> roots;  // by device
  std::map<std::pair<uint32_t, uint32_t>, int32_t> cpu_index;  // (stack, device)
  for (const auto& k : p_.kernels) {
    KernelSpan span;
    auto kn = kernel_names.find(k.name);
    if (kn == kernel_names.end()) kn = kernel_names.emplace(k.name, kernel_frame_name(p_.str(k.name))).first;
    span.name = kn->second;
    span.device = k.device;
    span.stream = k.stream;
    span.start_ns = k.start > start ? k.start - start : 0;
    span.end_ns = k.end > start ? k.end - start : 0;
    span.correlation_id = k.correlation_id;
    span.process = 0;
    if (uint32_t st = launches_.stack_of(k)) {
      auto [ci, fresh] = cpu_index.try_emplace({st, k.device}, static_cast<int32_t>(out.cpu_stacks.size()));
      if (fresh) {
        auto r = roots.find(k.device);
        if (r == roots.end()) r = roots.emplace(k.device, root_frames(k.device)).first;
        std::vector<Frame> frames = r->second;
        for (const auto& f : cpu_frames(st)) frames.push_back(f);
        out.cpu_stacks.push_back(std::move(frames));
      }
      span.cpu_stack = ci->second;
    }
    out.kernels.push_back(std::move(span));
  }
  // Zero-count stacks stay (the timeline refers to them by index); writers skip them.
  return out;
}

}  // namespace aiflame
