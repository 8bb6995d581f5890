#include "profile/record_codec.h"

namespace aiflame {

void encode(ByteWriter& w, const ProcessRecord& r) {
  w.varint(r.pid); w.varint(r.ppid); w.str(r.command); w.str(r.hostname);
  w.svarint(r.start_realtime_ns); w.varint(r.start_timestamp);
  w.varint(r.backend_version); w.varint(r.driver_version);
  w.varint(r.sampling_period_log2); w.varint(r.interval_ms);
  w.str(r.backend); w.str(r.tool_version);
  w.svarint(r.rank); w.svarint(r.local_rank); w.svarint(r.world_size);
  w.varint(r.pc_mode); w.varint(r.windows_per_s); w.varint(r.window_us);
}
bool decode(ByteReader& r, ProcessRecord& o) {
  o.pid = r.varint32(); o.ppid = r.varint32(); o.command = r.str(); o.hostname = r.str();
  o.start_realtime_ns = r.svarint(); o.start_timestamp = r.varint();
  o.backend_version = r.varint32(); o.driver_version = r.varint32();
  o.sampling_period_log2 = r.varint32(); o.interval_ms = r.varint32();
  o.backend = r.str(); o.tool_version = r.str();
  if (!r.eof()) {  // added later: older files end here
    o.rank = static_cast<int32_t>(r.svarint()); o.local_rank = static_cast<int32_t>(r.svarint());
    o.world_size = static_cast<int32_t>(r.svarint());
  }
  if (!r.eof()) {  // added later still
    o.pc_mode = r.varint32(); o.windows_per_s = r.varint32(); o.window_us = r.varint32();
  }
  return r.ok();
}

void encode(ByteWriter& w, const StringRecord& r) { w.varint(r.id); w.str(r.text); }
bool decode(ByteReader& r, StringRecord& o) { o.id = r.varint32(); o.text = r.str(); return r.ok(); }

void encode(ByteWriter& w, const StallReasonsRecord& r) {
  w.varint(r.device); w.varint(r.reasons.size());
  for (const auto& [idx, name] : r.reasons) { w.varint(idx); w.str(name); }
  w.varint(r.sm_count);
  w.varint(r.max_threads_per_sm); w.varint(r.max_blocks_per_sm); w.varint(r.registers_per_sm);
  w.varint(r.shared_per_sm); w.varint(r.shared_reserved_per_block);
}
bool decode(ByteReader& r, StallReasonsRecord& o) {
  o.device = r.varint32();
  uint64_t n = r.count(2);
  o.reasons.clear();
  for (uint64_t i = 0; i < n && r.ok(); i++) {
    uint32_t idx = r.varint32();
    o.reasons.emplace_back(idx, std::string(r.str()));
  }
  if (r.ok() && !r.eof()) o.sm_count = r.varint32();  // added later
  if (r.ok() && !r.eof()) {  // added later still
    o.max_threads_per_sm = r.varint32(); o.max_blocks_per_sm = r.varint32(); o.registers_per_sm = r.varint32();
    o.shared_per_sm = r.varint32(); o.shared_reserved_per_block = r.varint32();
  }
  return r.ok();
}

void encode(ByteWriter& w, const ModuleRecord& r) {
  w.varint(r.id); w.str(r.path); w.varint(r.load_bias); w.varint(r.lo); w.varint(r.hi); w.str(r.build_id);
}
bool decode(ByteReader& r, ModuleRecord& o) {
  o.id = r.varint32(); o.path = r.str(); o.load_bias = r.varint(); o.lo = r.varint(); o.hi = r.varint();
  o.build_id = r.str();
  return r.ok() && o.lo <= o.hi;
}

// Native frames are delta-encoded against the previous frame: neighbouring return addresses
// usually sit in the same library, so deltas are short.
void encode(ByteWriter& w, const StackRecord& r) {
  w.varint(r.id);
  w.varint(r.native.size());
  uint64_t prev = 0;
  for (uint64_t a : r.native) { w.svarint(static_cast<int64_t>(a - prev)); prev = a; }
  w.varint(r.python.size());
  for (const auto& f : r.python) { w.varint(f.file); w.varint(f.function); w.varint(f.line); }
}
bool decode(ByteReader& r, StackRecord& o) {
  o.id = r.varint32();
  uint64_t n = r.count(1);
  o.native.resize(n);
  uint64_t prev = 0;
  for (auto& a : o.native) { a = prev + static_cast<uint64_t>(r.svarint()); prev = a; }
  n = r.count(3);
  o.python.resize(n);
  for (auto& f : o.python) { f.file = r.varint32(); f.function = r.varint32(); f.line = r.varint32(); }
  return r.ok();
}

bool decode(ByteReader& r, LaunchRecord& o) {
  o.correlation_id = r.varint32(); o.tid = r.varint32(); o.timestamp = r.varint(); o.stack_id = r.varint32();
  o.api = r.varint32(); o.native_unwound = r.u8() != 0;
  if (!r.eof()) {  // added later
    uint32_t d = r.varint32();
    o.device = d ? d - 1 : kNoDevice;
  }
  if (r.ok() && !r.eof()) o.prev_duration = r.varint32();  // added later
  return r.ok();
}

void encode(ByteWriter& w, const KernelRecord& r) {
  w.varint(r.correlation_id); w.varint(r.start); w.varint(r.end >= r.start ? r.end - r.start : 0);
  w.varint(r.device); w.varint(r.context); w.varint(r.stream); w.varint(r.name);
  for (int i = 0; i < 3; i++) w.svarint(r.grid[i]);
  for (int i = 0; i < 3; i++) w.svarint(r.block[i]);
  w.varint(r.graph_id);
  w.varint(r.graph_node_id);
  w.varint(r.registers); w.varint(r.static_shared); w.varint(r.dynamic_shared);
}
bool decode(ByteReader& r, KernelRecord& o) {
  o.correlation_id = r.varint32(); o.start = r.varint(); o.end = o.start + r.varint();
  o.device = r.varint32(); o.context = r.varint32(); o.stream = r.varint32(); o.name = r.varint32();
  for (int i = 0; i < 3; i++) o.grid[i] = static_cast<int32_t>(r.svarint());
  for (int i = 0; i < 3; i++) o.block[i] = static_cast<int32_t>(r.svarint());
  o.graph_id = r.varint();
  if (!r.eof()) o.graph_node_id = r.varint();  // added after the first files were written
  if (!r.eof()) {  // added later still
    o.registers = r.varint32(); o.static_shared = r.varint32(); o.dynamic_shared = r.varint32();
  }
  return r.ok() && o.end >= o.start;
}

void encode(ByteWriter& w, const PcBatchRecord& r) {
  w.varint(r.timestamp); w.varint(r.prev_timestamp); w.varint(r.device); w.varint(r.context);
  w.varint(r.total_samples); w.varint(r.dropped_samples); w.u8(r.hardware_buffer_full ? 1 : 0);
  w.varint(r.samples.size());
  for (const auto& s : r.samples) {
    w.varint(s.function); w.varint(s.code_object_id); w.varint(s.pc_offset); w.varint(s.stall_reason);
    w.varint(s.count); w.varint(s.correlation_id);
  }
}
bool decode(ByteReader& r, PcBatchRecord& o) {
  o.timestamp = r.varint(); o.prev_timestamp = r.varint(); o.device = r.varint32(); o.context = r.varint32();
  o.total_samples = r.varint(); o.dropped_samples = r.varint(); o.hardware_buffer_full = r.u8() != 0;
  uint64_t n = r.count(6);
  o.samples.resize(n);
  for (auto& s : o.samples) {
    s.function = r.varint32(); s.code_object_id = r.varint(); s.pc_offset = r.varint(); s.stall_reason = r.varint32();
    s.count = r.varint32(); s.correlation_id = r.varint32();
  }
  return r.ok();
}

void encode(ByteWriter& w, const CodeObjectRecord& r) { w.varint(r.id); w.varint(r.device); w.str(r.image); }
bool decode(ByteReader& r, CodeObjectRecord& o) {
  o.id = r.varint(); o.device = r.varint32(); o.image = r.str();
  return r.ok();
}

void encode(ByteWriter& w, const SymbolRecord& r) {
  w.varint(r.address); w.varint(r.module); w.str(r.function); w.varint(r.offset);
  w.varint(r.levels.size());
  for (const auto& f : r.levels) { w.str(f.function); w.str(f.file); w.varint(f.line); }
}
bool decode(ByteReader& r, SymbolRecord& o) {
  o.address = r.varint(); o.module = r.varint32(); o.function = r.str(); o.offset = r.varint();
  if (!r.eof()) {  // levels: added later; older files end here
    o.levels.resize(r.count(3));
    for (auto& f : o.levels) { f.function = r.str(); f.file = r.str(); f.line = r.varint32(); }
  }
  return r.ok();
}

void encode(ByteWriter& w, const WarningRecord& r) { w.str(r.text); }
bool decode(ByteReader& r, WarningRecord& o) { o.text = r.str(); return r.ok(); }

void encode(ByteWriter& w, const EndRecord& r) {
  for (uint64_t v : {r.timestamp, r.launches, r.launches_unwound, r.stacks, r.pc_records, r.samples,
                     r.dropped_samples, r.kernels, r.cubins, r.dropped_records, r.capture_ns, r.collector_cpu_ns,
                     r.windows, r.window_ns, r.walked_launches, r.walked_ns})
    w.varint(v);
}
bool decode(ByteReader& r, EndRecord& o) {
  for (uint64_t* v : {&o.timestamp, &o.launches, &o.launches_unwound, &o.stacks, &o.pc_records, &o.samples,
                      &o.dropped_samples, &o.kernels, &o.cubins, &o.dropped_records, &o.capture_ns})
    *v = r.varint();
  if (!r.eof()) o.collector_cpu_ns = r.varint();  // added later
  if (!r.eof()) { o.windows = r.varint(); o.window_ns = r.varint(); }  // added later still
  if (!r.eof()) { o.walked_launches = r.varint(); o.walked_ns = r.varint(); }  // and later (issue 22's split)
  return r.ok();
}

void encode(ByteWriter& w, const GpuLineRecord& r) {
  w.varint(r.code_object_id); w.varint(r.function); w.varint(r.pc_offset);
  w.varint(r.frames.size());
  for (const auto& f : r.frames) { w.str(f.function); w.str(f.file); w.varint(f.line); }
}
bool decode(ByteReader& r, GpuLineRecord& o) {
  o.code_object_id = r.varint(); o.function = r.varint32(); o.pc_offset = r.varint();
  uint64_t n = r.count(3);
  o.frames.resize(n);
  for (auto& f : o.frames) { f.function = r.str(); f.file = r.str(); f.line = r.varint32(); }
  return r.ok();
}

void encode(ByteWriter& w, const GpuInstructionRecord& r) {
  w.varint(r.code_object_id); w.varint(r.function); w.varint(r.pc_offset); w.str(r.mnemonic);
}
bool decode(ByteReader& r, GpuInstructionRecord& o) {
  o.code_object_id = r.varint(); o.function = r.varint32(); o.pc_offset = r.varint(); o.mnemonic = r.str();
  return r.ok();
}

}  // namespace aiflame

namespace aiflame {
void encode(ByteWriter& w, const GraphNodeRecord& r) {
  w.varint(r.node_id); w.varint(r.graph_id); w.varint(r.stack_id); w.varint(r.original_node_id);
}
bool decode(ByteReader& r, GraphNodeRecord& o) {
  o.node_id = r.varint(); o.graph_id = r.varint(); o.stack_id = r.varint32(); o.original_node_id = r.varint();
  return r.ok();
}
}  // namespace aiflame

namespace aiflame {
void encode(ByteWriter& w, const BackwardCallerRecord& r) {
  w.varint(r.id);
  w.varint(r.python.size());
  for (const auto& f : r.python) { w.varint(f.file); w.varint(f.function); w.varint(f.line); }
}
bool decode(ByteReader& r, BackwardCallerRecord& o) {
  o.id = r.varint32();
  o.python.resize(r.count(3));
  for (auto& f : o.python) { f.file = r.varint32(); f.function = r.varint32(); f.line = r.varint32(); }
  return r.ok();
}

void encode(ByteWriter& w, const BackwardStackRecord& r) {
  w.varint(r.id); w.varint(r.stack_id); w.varint(r.caller_id); w.varint(r.forward_stack_id);
}
bool decode(ByteReader& r, BackwardStackRecord& o) {
  o.id = r.varint32(); o.stack_id = r.varint32(); o.caller_id = r.varint32(); o.forward_stack_id = r.varint32();
  return r.ok() && (o.id & kBackwardStackBit) && !(o.stack_id & kBackwardStackBit) && !(o.forward_stack_id & kBackwardStackBit);
}

void encode(ByteWriter& w, const AutogradSummaryRecord& r) {
  w.str(r.state); w.str(r.torch_version);
  w.varint(r.backward_launches); w.varint(r.with_caller); w.varint(r.with_node); w.varint(r.with_forward);
}
bool decode(ByteReader& r, AutogradSummaryRecord& o) {
  o.state = r.str(); o.torch_version = r.str();
  o.backward_launches = r.varint(); o.with_caller = r.varint(); o.with_node = r.varint(); o.with_forward = r.varint();
  return r.ok();
}
}  // namespace aiflame
