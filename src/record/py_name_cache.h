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
// name_all() names a whole stack's frames and keeps them, root first: the next stack's frames that are
// the same code object (same identity) at the same instruction at the same height above the root are
// named from there, without a lookup. A training loop's new stacks share most of their outer frames
// with the stack named before them (the loop, the model's forward, the module calls), and each lookup
// of the map was a cold miss or two, with its TLB miss: cold, a 12-frame stack's names took 1.5-3 us
// on the development machine, the code objects' identity reads 0.1-0.8 of it (bench/capture/
// names_bench.py at d9aa39d).
#pragma once
#include <cstdint>
#include <unordered_map>

#include "profile/records.h"
#include "record/python_frames.h"

namespace aiflame {

class PyNameCache {
 public:
  static constexpr size_t kMaxEntries = size_t{1} << 16;  // then cleared: ~6 MB at most

  // The frame's names if known and the code object is still the one named.
  const PyFrame* find(const void* code, int32_t lasti, const CodeIdentity& id) const {
    auto it = map_.find(Key{code, lasti});
    return it != map_.end() && it->second.id == id ? &it->second.frame : nullptr;
  }
  void put(const void* code, int32_t lasti, const CodeIdentity& id, const PyFrame& frame) {
    if (map_.size() >= kMaxEntries) map_.clear();
    map_[Key{code, lasti}] = Entry{id, frame};
  }
  size_t size() const { return map_.size(); }

  // name() for each of frames[0..n) (leaf first), into out: a frame that the last stack named by
  // name_all had at the same height above the root, with the same code object identity, takes that
  // stack's name; the identities are loaded together first. Returns how many frames took it.
  template <class NameIt>
  int name_all(const PythonFrames& py, const RawPyFrame* frames, int n, PyFrame* out, NameIt&& name_it) {
    for (int i = 0; i < n; i++) py.prefetch_identity(frames[i].code);
    int reused = 0;
    const int shared = n < last_n_ ? n : last_n_;
    int h = 0;  // height above the root
    for (; h < shared; h++) {
      const RawPyFrame& f = frames[n - 1 - h];
      const Last& l = last_[h];
      CodeIdentity id;
      if (!(l.raw == f) || !py.identity(f.code, &id) || !(id == l.id)) break;
      out[n - 1 - h] = l.frame;
      reused++;
    }
    for (; h < n; h++) {
      const RawPyFrame& f = frames[n - 1 - h];
      out[n - 1 - h] = name(py, f, name_it);
      if (h < kLast) {
        CodeIdentity id;
        last_[h] = py.identity(f.code, &id) ? Last{f, id, out[n - 1 - h]} : Last{};
      }
    }
    last_n_ = n < kLast ? n : kLast;
    // A frame whose identity could not be read is kept as no frame (code nullptr): it matches none.
    for (int k = 0; k < last_n_; k++)
      if (!last_[k].raw.code) {
        last_n_ = k;
        break;
      }
    return reused;
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

 private:
  struct Key {
    const void* code;
    int32_t lasti;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(reinterpret_cast<uintptr_t>(k.code) * 0x9e3779b97f4a7c15ull ^ static_cast<uint32_t>(k.lasti));
    }
  };
  struct Entry {
    CodeIdentity id;
    PyFrame frame;
  };
  std::unordered_map<Key, Entry, KeyHash> map_;
  // The last stack named by name_all, root first (its first kLast frames).
  static constexpr int kLast = 64;
  struct Last {
    RawPyFrame raw;
    CodeIdentity id;
    PyFrame frame;
  };
  Last last_[kLast];
  int last_n_ = 0;
};

}  // namespace aiflame
