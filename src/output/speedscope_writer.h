// speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json): frames shared
// by all profiles, one "sampled" profile per GPU device (one in all when the input has no devices),
// each sample a root-first stack of frame indices weighted by its sample count.
#pragma once
#include "output/writer.h"

namespace aiflame {

class SpeedscopeWriter : public Writer {
 public:
  std::string_view format() const override { return "speedscope"; }
  void write(const FlameData& data, std::ostream& out) const override;
};

}  // namespace aiflame
