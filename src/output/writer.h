// One interface for every output format; the CLI picks a writer by format name.
#pragma once
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "flame/flame_data.h"

namespace aiflame {

class Writer {
 public:
  virtual ~Writer() = default;
  virtual std::string_view format() const = 0;
  virtual void write(const FlameData& data, std::ostream& out) const = 0;
  // Whether the writer reads FlameData's times (timeline, kernels, cpu_stacks). A report leaves them
  // out for writers that do not: the timeline grows with the length of the run.
  virtual bool uses_times() const { return true; }
  // One line when the output of `data` leaves something out or scales it to stay within the
  // writer's stated bound (docs/reliability.md), else empty. The CLI prints it as a note.
  virtual std::string bound_note(const FlameData&) const { return {}; }
};

// Known format names, e.g. "folded", "svg".
std::vector<std::string> writer_formats();
// nullptr when the name is unknown.
std::unique_ptr<Writer> make_writer(std::string_view format);
// Format implied by a file name's extension ("x.svg" -> "svg"), empty if none.
std::string format_from_path(std::string_view path);

}  // namespace aiflame
