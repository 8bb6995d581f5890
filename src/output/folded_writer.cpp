#include "output/folded_writer.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

namespace aiflame {

std::string folded_frame_name(std::string_view name) {
  std::string s;
  s.reserve(name.size());
  for (char c : name) {
    if (c == ';') s += ':';
    else if (c == '\n' || c == '\r' || c == '\t' || c == '\0') s += ' ';
    else s += c;
  }
  if (s.empty()) s = "[empty]";
  return s;
}

std::string annotated_frame_name(const Frame& f) {
  std::string s = folded_frame_name(f.name);
  switch (f.kind) {
    case FrameKind::GpuSource:
    case FrameKind::GpuKernel: return s + "_[G]";
    case FrameKind::GpuInstruction:
    case FrameKind::Stall: return s + "_[g]";
    case FrameKind::Python: return "py::" + s;
    default: return s;  // process, pid, native, runtime, "-", [unattributed]: as iaprof writes them
  }
}

std::string folded_stack(const FrameList& frames, bool plain) {
  std::string line;
  for (size_t i = 0; i < frames.size(); i++) {
    if (i) line += ';';
    line += plain ? folded_frame_name(frames[i].name) : annotated_frame_name(frames[i]);
  }
  return line;
}

namespace {

// The folded lines of a picture, compared as the text they will be without building that text: a
// report grouped by rank holds a million-odd stacks of 2 KB lines, and a sorted map of the lines
// held the output about twice over in memory. Frames that are the same interned (name, kind) render
// the same, so two stacks are walked frame by frame and only their first differing frames are
// rendered and compared character by character (with the ';' between frames), which gives exactly the
// byte order of the joined lines.
class LineOrder {
 public:
  explicit LineOrder(bool plain) : plain_(plain) {}

  const std::string& rendered(const Frame& f) {
    auto [it, fresh] = cache_.try_emplace(Key{f.name.data(), f.kind});
    if (fresh) it->second = plain_ ? folded_frame_name(f.name) : annotated_frame_name(f);
    return it->second;
  }

  // <0, 0, >0 as the joined lines of `a` and `b` compare.
  int compare(const FrameList& a, const FrameList& b) {
    size_t i = shared_head(a, b);
    while (i < a.size() && i < b.size() && a[i] == b[i]) i++;
    Cursor ca{this, &a, i}, cb{this, &b, i};
    if (i > 0) {  // both lines continue past the common frames with a ';' or end there
      ca.pos = cb.pos = kSeparator;
    }
    for (;;) {
      int x = ca.next(), y = cb.next();
      if (x != y) return x < y ? -1 : 1;
      if (x < 0) return 0;
    }
  }

 private:
  static constexpr size_t kSeparator = SIZE_MAX;  // the cursor stands on the ';' before frame `frame`
  struct Cursor {
    LineOrder* order;
    const FrameList* frames;
    size_t frame;
    size_t pos = 0;
    const std::string* text = nullptr;  // the rendered name of `frame`, looked up once per frame
    int next() {  // the next byte of the line (as unsigned), -1 at its end
      if (frame >= frames->size()) return -1;
      if (pos == kSeparator) {
        pos = 0;
        text = nullptr;
        return ';';
      }
      if (!text) text = &order->rendered((*frames)[frame]);
      if (pos < text->size()) return static_cast<unsigned char>((*text)[pos++]);
      frame++;
      pos = kSeparator;
      return next();
    }
  };
  struct Key {
    const char* name;
    FrameKind kind;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.name) * 31 + static_cast<size_t>(k.kind);
    }
  };
  bool plain_;
  std::unordered_map<Key, std::string, KeyHash> cache_;
};

}  // namespace

void FoldedWriter::write(const FlameData& data, std::ostream& out) const {
  // Lines sorted and merged, so the output is deterministic and each line appears once.
  LineOrder order(options_.plain);
  std::vector<uint32_t> lines;
  lines.reserve(data.stacks.size());
  for (uint32_t i = 0; i < data.stacks.size(); i++)
    if (data.stacks[i].count != 0) lines.push_back(i);
  std::sort(lines.begin(), lines.end(), [&](uint32_t a, uint32_t b) {
    return order.compare(data.stacks[a].frames, data.stacks[b].frames) < 0;
  });
  std::string text;
  const FrameList* prev = nullptr;
  size_t prev_frames = 0, prev_bytes = 0;  // a prefix of `text` that the next line may keep
  for (size_t i = 0; i < lines.size();) {
    const auto& frames = data.stacks[lines[i]].frames;
    uint64_t count = 0;
    size_t j = i;
    for (; j < lines.size() && (j == i || order.compare(frames, data.stacks[lines[j]].frames) == 0); j++)
      count += data.stacks[lines[j]].count;
    // Sorted lines of one CPU stack and kernel follow each other and share that head run: its text
    // is rendered once for them all.
    size_t f = 0;
    if (prev && prev_frames && shared_head(*prev, frames) == prev_frames) {
      text.resize(prev_bytes);
      f = prev_frames;
    } else {
      text.clear();
    }
    prev = &frames;
    prev_frames = shared_head(frames, frames);
    for (; f < frames.size(); f++) {
      if (f) text += ';';
      text += order.rendered(frames[f]);
      if (f + 1 == prev_frames) prev_bytes = text.size();
    }
    // One space before the count: flamegraph.pl splits the count off at the last whitespace.
    out << text << ' ' << count << '\n';
    i = j;
  }
}

}  // namespace aiflame
