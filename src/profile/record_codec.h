// Encoding of each record's payload (see docs/format.md). Decoders return false on malformed input.
#pragma once
#include "profile/byte_io.h"
#include "profile/records.h"

namespace aiflame {

void encode(ByteWriter& w, const ProcessRecord& r);
void encode(ByteWriter& w, const StringRecord& r);
void encode(ByteWriter& w, const StallReasonsRecord& r);
void encode(ByteWriter& w, const ModuleRecord& r);
void encode(ByteWriter& w, const StackRecord& r);
inline void encode(ByteWriter& w, const LaunchRecord& r) {
  w.varint(r.correlation_id); w.varint(r.tid); w.varint(r.timestamp); w.varint(r.stack_id);
  w.varint(r.api); w.u8(r.native_unwound ? 1 : 0);
  w.varint(r.device == kNoDevice ? 0 : uint64_t{r.device} + 1);
  w.varint(r.prev_duration);
}
void encode(ByteWriter& w, const KernelRecord& r);
void encode(ByteWriter& w, const PcBatchRecord& r);
void encode(ByteWriter& w, const CodeObjectRecord& r);
void encode(ByteWriter& w, const SymbolRecord& r);
void encode(ByteWriter& w, const WarningRecord& r);
void encode(ByteWriter& w, const GraphNodeRecord& r);
void encode(ByteWriter& w, const EndRecord& r);
void encode(ByteWriter& w, const GpuLineRecord& r);
void encode(ByteWriter& w, const GpuInstructionRecord& r);
void encode(ByteWriter& w, const BackwardCallerRecord& r);
void encode(ByteWriter& w, const BackwardStackRecord& r);
void encode(ByteWriter& w, const AutogradSummaryRecord& r);

bool decode(ByteReader& r, ProcessRecord& o);
bool decode(ByteReader& r, StringRecord& o);
bool decode(ByteReader& r, StallReasonsRecord& o);
bool decode(ByteReader& r, ModuleRecord& o);
bool decode(ByteReader& r, StackRecord& o);
bool decode(ByteReader& r, LaunchRecord& o);
bool decode(ByteReader& r, KernelRecord& o);
bool decode(ByteReader& r, PcBatchRecord& o);
bool decode(ByteReader& r, CodeObjectRecord& o);
bool decode(ByteReader& r, SymbolRecord& o);
bool decode(ByteReader& r, WarningRecord& o);
bool decode(ByteReader& r, GraphNodeRecord& o);
bool decode(ByteReader& r, EndRecord& o);
bool decode(ByteReader& r, GpuLineRecord& o);
bool decode(ByteReader& r, GpuInstructionRecord& o);
bool decode(ByteReader& r, BackwardCallerRecord& o);
bool decode(ByteReader& r, BackwardStackRecord& o);
bool decode(ByteReader& r, AutogradSummaryRecord& o);

template <class R> constexpr RecordType record_type_of();
template <> constexpr RecordType record_type_of<ProcessRecord>() { return RecordType::Process; }
template <> constexpr RecordType record_type_of<StringRecord>() { return RecordType::String; }
template <> constexpr RecordType record_type_of<StallReasonsRecord>() { return RecordType::StallReasons; }
template <> constexpr RecordType record_type_of<ModuleRecord>() { return RecordType::Module; }
template <> constexpr RecordType record_type_of<StackRecord>() { return RecordType::Stack; }
template <> constexpr RecordType record_type_of<LaunchRecord>() { return RecordType::Launch; }
template <> constexpr RecordType record_type_of<KernelRecord>() { return RecordType::Kernel; }
template <> constexpr RecordType record_type_of<PcBatchRecord>() { return RecordType::PcBatch; }
template <> constexpr RecordType record_type_of<CodeObjectRecord>() { return RecordType::CodeObject; }
template <> constexpr RecordType record_type_of<SymbolRecord>() { return RecordType::Symbol; }
template <> constexpr RecordType record_type_of<WarningRecord>() { return RecordType::Warning; }
template <> constexpr RecordType record_type_of<GraphNodeRecord>() { return RecordType::GraphNode; }
template <> constexpr RecordType record_type_of<EndRecord>() { return RecordType::End; }
template <> constexpr RecordType record_type_of<GpuLineRecord>() { return RecordType::GpuLine; }
template <> constexpr RecordType record_type_of<GpuInstructionRecord>() { return RecordType::GpuInstruction; }
template <> constexpr RecordType record_type_of<BackwardCallerRecord>() { return RecordType::BackwardCaller; }
template <> constexpr RecordType record_type_of<BackwardStackRecord>() { return RecordType::BackwardStack; }
template <> constexpr RecordType record_type_of<AutogradSummaryRecord>() { return RecordType::AutogradSummary; }

}  // namespace aiflame
