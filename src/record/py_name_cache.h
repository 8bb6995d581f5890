// The names of Python frames already named, for stacks new to the process (issue #22). A stack new to
// the process names each of its Python frames: the code object's file and qualified name read as
// strings and interned, its line found by CPython's PyCode_Addr2Line. On the H200 that took
// 0.18-0.25 us per launch averaged over a 20-step resnet_train.py run and 0.10-0.12 on hf_gpt2.py
// (2.3% of resnet's launches were new stacks, mostly in the first step), although a new stack's
// frames are mostly frames of stacks named before: the same code objects at the same instructions.
//
// Keyed by (code object, instruction offset). A code object can be freed and another made at its
// address, so an entry also keeps the code object's identity (its file and name objects and first
// line) and holds only while those are the same; a code object at a reused address with the same
// file object, name object and first line would name the same function.
//
// An open-addressing table of 48-byte entries (linear probing), not a node-based map: a hit is one
// line of the table where std::unordered_map read a bucket and then its node, two dependent misses
// with caches cold (a training loop's first steps, where new stacks come). name_all() prefetches
// every frame's slot and code object before naming any, so that a stack's ~20 lookups miss together
// rather than one after another (bench/RESULTS.md, thirty-sixth session: a new stack's Python names
// were 2.3-4.8 us on the GPU hosts, ~0.2 us a frame).
#pragma once
#include <cstdint>
#include <vector>

#include "profile/records.h"
#include "record/python_frames.h"

namespace aiflame {

class PyNameCache {
 public:
  static constexpr size_t kMaxEntries = size_t{1} << 16;  // then cleared: 6 MB of slots at most

  // The frame's names if known and the code object is still the one named.
  const PyFrame* find(const void* code, int32_t lasti, const CodeIdentity& id) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = slot(code, lasti);; i = (i + 1) & mask()) {
      const Entry& e = slots_[i];
      if (!e.code) return nullptr;
      if (e.code == code && e.lasti == lasti)
        return e.file == id.file && e.name == id.name && e.first_line == id.first_line ? &e.frame : nullptr;
    }
  }
  void put(const void* code, int32_t lasti, const CodeIdentity& id, const PyFrame& frame) {
    if (!code) return;  // the empty slot's mark; no frame has a null code object
    if (size_ >= kMaxEntries) clear();
    if (2 * (size_ + 1) > slots_.size()) grow();
    Entry* e = &slots_[slot(code, lasti)];
    while (e->code && !(e->code == code && e->lasti == lasti)) e = &slots_[(static_cast<size_t>(e - slots_.data()) + 1) & mask()];
    size_ += !e->code;
    *e = Entry{code, id.file, id.name, lasti, id.first_line, frame};
  }
  size_t size() const { return size_; }

  // Starts loading the line of the slot where (code, lasti) would be (name_all's first pass).
  void prefetch(const void* code, int32_t lasti) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[slot(code, lasti)]);
  }

  // A frame captured on this thread (alive): its names from here while its code object is the one
  // named, else name_it(f)'s, kept.
  template <class NameIt>
  PyFrame name(const PythonFrames& py, const RawPyFrame& f, NameIt&& name_it) {
    CodeIdentity id;
    const bool known = py.identity(f.code, &id);
    if (known)
      if (const PyFrame* p = find(f.code, f.lasti, id)) return *p;
    const PyFrame frame = name_it(f);
    if (known) put(f.code, f.lasti, id, frame);
    return frame;
  }
  // name() for each of frames[0..n), into out: every frame's slot and code object loaded first.
  template <class NameIt>
  void name_all(const PythonFrames& py, const RawPyFrame* frames, int n, PyFrame* out, NameIt&& name_it) {
    for (int i = 0; i < n; i++) {
      prefetch(frames[i].code, frames[i].lasti);
      py.prefetch_identity(frames[i].code);
    }
    for (int i = 0; i < n; i++) out[i] = name(py, frames[i], name_it);
  }

 private:
  struct Entry {  // CodeIdentity's fields inline: 48 bytes, where a CodeIdentity member padded it to 56
    const void* code = nullptr;  // nullptr: an empty slot
    const void* file = nullptr;
    const void* name = nullptr;
    int32_t lasti = 0;
    int first_line = 0;
    PyFrame frame;
  };
  static_assert(sizeof(PyFrame) == 12);
  static_assert(sizeof(Entry) == 48, "a slot spans two lines at most");
  size_t mask() const { return slots_.size() - 1; }
  size_t slot(const void* code, int32_t lasti) const {
    const uint64_t h = (reinterpret_cast<uintptr_t>(code) ^ static_cast<uint32_t>(lasti)) * 0x9e3779b97f4a7c15ull;
    return static_cast<size_t>(h >> 40) & mask();
  }
  void clear() {
    slots_.assign(slots_.size(), Entry{});
    size_ = 0;
  }
  void grow() {
    std::vector<Entry> old = std::move(slots_);
    slots_.assign(old.empty() ? size_t{1024} : 2 * old.size(), Entry{});
    size_ = 0;
    for (const Entry& e : old)
      if (e.code) put(e.code, e.lasti, CodeIdentity{e.file, e.name, e.first_line}, e.frame);
  }
  std::vector<Entry> slots_;  // a power of two in size, at most half full
  size_t size_ = 0;
};

}  // namespace aiflame
