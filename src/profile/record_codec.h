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
// A launch record's payload (at most kMaxLaunchPayload bytes), for a ByteWriter or, on the launch
// path, a FixedBytes (ProfileWriter::add_buffered).
constexpr size_t kMaxLaunchPayload = 5 + 5 + 10 + 5 + 5 + 1 + 5;
template <class W>
void encode_launch(W& w, const LaunchRecord& r) {
  w.varint(r.correlation_id); w.varint(r.tid); w.varint(r.timestamp); w.varint(r.stack_id);
  w.varint(r.api); w.u8(r.native_unwound ? 1 : 0);
  w.varint(r.device == kNoDevice ? 0 : uint64_t{r.device} + 1);
}
inline void encode(ByteWriter& w, const LaunchRecord& r) { encode_launch(w, r); }
// A DeferredLaunch's payload: the note, then the launch (whose decoder reads to the payload's end).
constexpr size_t kMaxNotePayload = 5 + 1 + 10 + 10 + 5;
template <class W>
void encode_note(W& w, const BackwardNote& n) {
  w.varint(n.caller); w.u8(n.forward ? 2 : n.node ? 1 : 0); w.varint(n.seq); w.varint(n.tid);
  w.varint(static_cast<uint32_t>(n.graph_task) + 1u);  // -1 (none): 0
}
bool decode(ByteReader& r, BackwardNote& o);
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
