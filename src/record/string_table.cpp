#include "record/string_table.h"

namespace aiflame {

uint32_t StringTable::intern(std::string_view s) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(std::string(s));
  if (it != ids_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(ids_.size() + 1);
  ids_.emplace(std::string(s), id);
  writer_.add(StringRecord{id, std::string(s)});
  return id;
}

}  // namespace aiflame
