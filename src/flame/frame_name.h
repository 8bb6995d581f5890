// A frame's name, interned for the life of the process: each distinct name is stored once and frames
// hold a pointer to it. A report holds every stack of its picture (tens of thousands of stacks of
// 40-odd frames, per rank when ranks are grouped), and most names repeat across stacks: stored as
// std::string each frame cost 32 bytes plus a heap copy of its name (about 7 KB a stack on
// realistic profiles); interned, 8 bytes. Names compare by content, so output order never depends on
// addresses; equality is a pointer comparison.
#pragma once
#include <compare>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace aiflame {

class FrameName {
 public:
  FrameName() : s_(&empty_name()) {}
  FrameName(std::string_view s) : s_(&intern(s)) {}  // NOLINT: implicit, a name is a string
  FrameName(const std::string& s) : FrameName(std::string_view(s)) {}
  FrameName(const char* s) : FrameName(std::string_view(s)) {}

  const std::string& str() const { return *s_; }
  operator const std::string&() const { return *s_; }  // NOLINT
  operator std::string_view() const { return *s_; }    // NOLINT

  size_t size() const { return s_->size(); }
  size_t length() const { return s_->size(); }
  bool empty() const { return s_->empty(); }
  const char* data() const { return s_->data(); }
  const char* c_str() const { return s_->c_str(); }
  std::string::const_iterator begin() const { return s_->begin(); }
  std::string::const_iterator end() const { return s_->end(); }
  char operator[](size_t i) const { return (*s_)[i]; }
  char front() const { return s_->front(); }
  char back() const { return s_->back(); }
  size_t find(std::string_view v, size_t pos = 0) const { return s_->find(v, pos); }
  size_t find(char c, size_t pos = 0) const { return s_->find(c, pos); }
  size_t rfind(std::string_view v, size_t pos = std::string::npos) const { return s_->rfind(v, pos); }
  size_t rfind(char c, size_t pos = std::string::npos) const { return s_->rfind(c, pos); }
  size_t find_first_of(std::string_view v, size_t pos = 0) const { return s_->find_first_of(v, pos); }
  size_t find_last_of(std::string_view v, size_t pos = std::string::npos) const {
    return s_->find_last_of(v, pos);
  }
  std::string substr(size_t pos, size_t n = std::string::npos) const { return s_->substr(pos, n); }
  bool starts_with(std::string_view v) const { return s_->starts_with(v); }
  bool starts_with(char c) const { return s_->starts_with(c); }
  bool ends_with(std::string_view v) const { return s_->ends_with(v); }
  bool ends_with(char c) const { return s_->ends_with(c); }
  int compare(std::string_view v) const { return s_->compare(v); }

  friend bool operator==(const FrameName& a, const FrameName& b) { return a.s_ == b.s_; }
  // One overload per string type: each would otherwise convert both to FrameName and to string_view.
  friend bool operator==(const FrameName& a, std::string_view b) { return *a.s_ == b; }
  friend bool operator==(const FrameName& a, const std::string& b) { return *a.s_ == b; }
  friend bool operator==(const FrameName& a, const char* b) { return *a.s_ == b; }
  friend std::strong_ordering operator<=>(const FrameName& a, const FrameName& b) {
    return a.s_ == b.s_ ? std::strong_ordering::equal : *a.s_ <=> *b.s_;
  }
  friend std::strong_ordering operator<=>(const FrameName& a, std::string_view b) {
    return std::string_view(*a.s_) <=> b;
  }
  friend std::strong_ordering operator<=>(const FrameName& a, const std::string& b) { return *a.s_ <=> b; }
  friend std::strong_ordering operator<=>(const FrameName& a, const char* b) {
    return std::string_view(*a.s_) <=> std::string_view(b);
  }
  friend std::string operator+(const FrameName& a, std::string_view b) { return *a.s_ + std::string(b); }
  friend std::string operator+(std::string_view a, const FrameName& b) { return std::string(a) + *b.s_; }
  friend std::string operator+(const FrameName& a, char b) { return *a.s_ + b; }
  friend std::string operator+(char a, const FrameName& b) { return a + *b.s_; }
  friend std::ostream& operator<<(std::ostream& os, const FrameName& n) { return os << *n.s_; }

  // Names held by the pool (for tests and memory accounting).
  static size_t pool_size();

 private:
  static const std::string& intern(std::string_view s);
  static const std::string& empty_name();
  const std::string* s_;
};

}  // namespace aiflame

template <>
struct std::hash<aiflame::FrameName> {
  size_t operator()(const aiflame::FrameName& n) const { return std::hash<const void*>()(n.data()); }
};

template <>
struct fmt::formatter<aiflame::FrameName> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(const aiflame::FrameName& n, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(std::string_view(n), ctx);
  }
};
