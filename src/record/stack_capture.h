// The CPU stack of a kernel launch, captured on the launching thread inside the driver callback.
//
// Cost is what matters here (glibc backtrace() costs ~17 us at 43 frames). A launch site is keyed by
// its Python stack (code object + instruction offset per frame), the kernel, the API and the depth of the native
// stack in bytes (free to read; it separates native call paths). The native stack of a key
// is unwound on first sight and re-checked at hits 2, 4, 8, ... (the "sampled" policy). A key whose
// native stack changes (one function launching a kernel from two lines, two callers at one depth) is
// marked unstable; from then on its key is refined by the values in the stack slots where its first
// unwind found its return addresses (a few loads), which gives each path an entry of its own. Only a
// refined key that still varies is unwound at every launch (or one in AIFLAME_UNSTABLE_SAMPLE). Python
// frames are read at every launch: they are cheap and they are what distinguishes most launch sites.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "profile/profile_writer.h"
#include "record/python_frames.h"
#include "record/string_table.h"

namespace aiflame {

enum class UnwindPolicy { Sampled, Always, Off };

class StackCapture {
 public:
  StackCapture(ProfileWriter& w, StringTable& strings) : writer_(w), strings_(strings) {}
  // unstable_sample: unwind one launch in N (on average) at sites whose native stack varies.
  void init(UnwindPolicy policy, bool python, uint32_t unstable_sample = 1);
  // Address ranges whose frames are the profiler's own or the driver's, trimmed from the leaf end.
  void add_skip_range(uint64_t lo, uint64_t hi) { skip_.push_back({lo, hi}); }

  struct Result {
    uint32_t stack_id = 0;
    bool unwound = false;
  };
  // site: anything that tells launch sites apart cheaply (kernel function pointer, API id).
  Result capture(uint64_t site);

  uint64_t stacks() const { return next_stack_id_.load() - 1; }

 private:
  struct SiteEntry {
    uint32_t stack_id = 0;
    uint64_t hits = 0;
    bool unstable = false;
    bool refined = false;         // an entry keyed by a site plus its return-address slots
    std::vector<uint32_t> slots;  // where the first return addresses sat (distance from stack top)
  };
  static constexpr size_t kSlots = 8;
  int unwind(uint64_t* out, int max) const;
  uint32_t intern_stack(const uint64_t* native, int nn, const RawPyFrame* py, int np);
  PyFrame name_python(const RawPyFrame& f);

  ProfileWriter& writer_;
  StringTable& strings_;
  PythonFrames python_;
  bool use_python_ = true;
  UnwindPolicy policy_ = UnwindPolicy::Sampled;
  uint32_t unstable_sample_ = 1;
  std::vector<std::pair<uint64_t, uint64_t>> skip_;

  std::mutex mu_;
  std::unordered_map<uint64_t, SiteEntry> sites_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> stack_ids_;  // content hash -> ids (collisions checked)
  std::vector<std::vector<uint64_t>> stack_content_;               // by id - 1, for collision checks
  std::atomic<uint32_t> next_stack_id_{1};
};

}  // namespace aiflame
