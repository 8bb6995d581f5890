#include "flame/frame_name.h"

#include <deque>
#include <mutex>
#include <unordered_map>

namespace aiflame {

namespace {

// Never freed: names live as long as the report that uses them (one process run).
struct Pool {
  std::mutex mutex;
  std::deque<std::string> names;  // a deque: growing it never moves a name, so the index may view them
  std::unordered_map<std::string_view, const std::string*> index;  // views `names`
};

Pool& pool() {
  static auto* p = new Pool();  // leaked on purpose: frames in static objects may outlive any destructor order
  return *p;
}

}  // namespace

const std::string& FrameName::empty_name() {
  static const std::string& e = intern("");
  return e;
}

const std::string& FrameName::intern(std::string_view s) {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  auto it = p.index.find(s);
  if (it != p.index.end()) return *it->second;
  const std::string& stored = p.names.emplace_back(s);
  p.index.emplace(stored, &stored);
  return stored;
}

size_t FrameName::pool_size() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  return p.names.size();
}

}  // namespace aiflame
