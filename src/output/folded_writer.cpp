#include "output/folded_writer.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
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

// The folded lines of a picture, sorted as the text they will be without building that text: a report
// grouped by rank holds a million-odd stacks of 2 KB lines, and a sorted map of the lines held the
// output about twice over in memory.
//
// Every distinct frame (interned name, kind) is rendered once and ranked twice: as a frame followed by
// ';' and as a line's last frame (followed by the line's end, which sorts before every byte). Frame
// text never holds a ';' (folded_frame_name), so where two lines first differ, in frame i, comparing
// "text_i;" or "text_i<end>" decides exactly as comparing the joined lines byte by byte does: lines
// compare as sequences of these ranks, integers instead of strings. Ranks and rendered text are kept
// per shared run of frames (FrameList), so a frame is looked up once per run, not once per line.
class FoldedLines {
 public:
  FoldedLines(const FlameData& data, bool plain) : plain_(plain) {
    for (uint32_t i = 0; i < data.stacks.size(); i++) {
      if (data.stacks[i].count == 0) continue;
      const FrameList& f = data.stacks[i].frames;
      Line l;
      l.head = run(f.head_run());
      l.tail = run(f.tail_run());
      l.size = static_cast<uint32_t>(f.size());
      lines_.push_back(l);
      index_.push_back(i);
    }
    rank_frames();
  }

  // The lines (positions in the constructor's order) sorted by their text.
  std::vector<uint32_t> sorted() const {
    std::vector<uint32_t> order(lines_.size());
    for (uint32_t i = 0; i < order.size(); i++) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return compare(a, b) < 0; });
    return order;
  }

  // <0, 0, >0 as the text of lines a and b (positions in the constructor's order) compare.
  int compare(uint32_t a, uint32_t b) const {
    const Line &x = lines_[a], &y = lines_[b];
    // A shared head: its frames are equal; what follows it (or the line's end) decides.
    size_t i = x.head && x.head == y.head ? x.head->frames.size() : 0;
    const size_t n = std::min(x.size, y.size);
    for (; i < n; i++) {
      uint32_t r = rank(x, i), s = rank(y, i);
      if (r != s) return r < s ? -1 : 1;
    }
    return x.size == y.size ? 0 : (x.size < y.size ? -1 : 1);
  }

  uint32_t stack(uint32_t line) const { return index_[line]; }
  size_t frames(uint32_t line) const { return lines_[line].size; }
  bool same_head(uint32_t a, uint32_t b) const { return lines_[a].head && lines_[a].head == lines_[b].head; }
  size_t head_size(uint32_t line) const { return lines_[line].head ? lines_[line].head->frames.size() : 0; }
  const std::string& text(uint32_t line, size_t i) const { return text_[frame(lines_[line], i)]; }

 private:
  struct Run {
    std::vector<uint32_t> frames;  // distinct-frame numbers
  };
  struct Line {
    const Run* head = nullptr;
    const Run* tail = nullptr;
    uint32_t size = 0;
  };
  struct Key {
    const char* name;
    FrameKind kind;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<const void*>()(k.name) * 31 + static_cast<size_t>(k.kind); }
  };

  const Run* run(const std::vector<Frame>* frames) {
    if (!frames) return nullptr;
    auto [it, fresh] = runs_.try_emplace(frames);
    if (fresh) {
      it->second.frames.reserve(frames->size());
      for (const Frame& f : *frames) {
        auto [k, new_frame] = frames_.try_emplace(Key{f.name.data(), f.kind}, static_cast<uint32_t>(text_.size()));
        if (new_frame) text_.push_back(plain_ ? folded_frame_name(f.name) : annotated_frame_name(f));
        it->second.frames.push_back(k->second);
      }
    }
    return &it->second;
  }

  uint32_t frame(const Line& l, size_t i) const {
    const size_t h = l.head ? l.head->frames.size() : 0;
    return i < h ? l.head->frames[i] : l.tail->frames[i - h];
  }
  uint32_t rank(const Line& l, size_t i) const {
    const uint32_t f = frame(l, i);
    return i + 1 == l.size ? last_rank_[f] : mid_rank_[f];
  }

  // Ranks of "text;" (mid) and "text<end>" (last) for every distinct frame; equal strings, equal ranks.
  void rank_frames() {
    const auto n = static_cast<uint32_t>(text_.size());
    std::vector<uint32_t> keys(2 * size_t{n});  // f * 2 + 1: followed by ';'; f * 2: at the line's end
    for (uint32_t i = 0; i < keys.size(); i++) keys[i] = i;
    auto cmp = [&](uint32_t a, uint32_t b) {
      const std::string &x = text_[a / 2], &y = text_[b / 2];
      const size_t m = std::min(x.size(), y.size());
      if (int c = m ? std::memcmp(x.data(), y.data(), m) : 0) return c;
      // The byte after the common prefix: the shorter one's terminator against the other's next byte.
      auto after = [](const std::string& s, size_t at, uint32_t key) {
        return at < s.size() ? static_cast<int>(static_cast<unsigned char>(s[at])) : (key % 2 ? ';' : -1);
      };
      int p = after(x, m, a), q = after(y, m, b);
      return p == q ? 0 : (p < q ? -1 : 1);
    };
    std::sort(keys.begin(), keys.end(), [&](uint32_t a, uint32_t b) { return cmp(a, b) < 0; });
    mid_rank_.assign(n, 0);
    last_rank_.assign(n, 0);
    uint32_t r = 0;
    for (size_t i = 0; i < keys.size(); i++) {
      if (i && cmp(keys[i - 1], keys[i]) != 0) r++;
      (keys[i] % 2 ? mid_rank_ : last_rank_)[keys[i] / 2] = r;
    }
  }

  bool plain_;
  std::unordered_map<const void*, Run> runs_;  // by the FrameList run they describe
  std::unordered_map<Key, uint32_t, KeyHash> frames_;
  std::vector<std::string> text_;              // by distinct-frame number: the rendered name
  std::vector<uint32_t> mid_rank_, last_rank_;  // by distinct-frame number
  std::vector<Line> lines_;                    // the stacks with a count, in the picture's order
  std::vector<uint32_t> index_;                // their positions in the picture's stacks
};

}  // namespace

void FoldedWriter::write(const FlameData& data, std::ostream& out) const {
  // Lines sorted and merged, so the output is deterministic and each line appears once.
  FoldedLines lines(data, options_.plain);
  const std::vector<uint32_t> order = lines.sorted();
  std::string text;
  uint32_t prev = 0;
  size_t prev_head = 0, prev_bytes = 0;  // `text` up to prev_bytes is the previous line's head run
  for (size_t i = 0; i < order.size();) {
    const uint32_t line = order[i];
    uint64_t count = 0;
    size_t j = i;
    for (; j < order.size() && (j == i || lines.compare(line, order[j]) == 0); j++)
      count += data.stacks[lines.stack(order[j])].count;
    // Sorted lines of one CPU stack and kernel follow each other and share that head run: its text
    // is rendered once for them all.
    size_t f = 0;
    if (i && prev_head && lines.same_head(prev, line)) {
      text.resize(prev_bytes);
      f = prev_head;
    } else {
      text.clear();
    }
    prev = line;
    prev_head = lines.head_size(line);
    for (const size_t n = lines.frames(line); f < n; f++) {
      if (f) text += ';';
      text += lines.text(line, f);
      if (f + 1 == prev_head) prev_bytes = text.size();
    }
    // One space before the count: flamegraph.pl splits the count off at the last whitespace.
    out << text << ' ' << count << '\n';
    i = j;
  }
}

}  // namespace aiflame
