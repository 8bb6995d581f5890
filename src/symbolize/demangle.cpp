#include "symbolize/demangle.h"

#include <cxxabi.h>

#include <cstdlib>

namespace aiflame {

std::string demangle(const std::string& mangled) {
  if (mangled.size() < 2 || mangled[0] != '_' || mangled[1] != 'Z') return mangled;
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) {
    std::free(d);
    return mangled;
  }
  std::string out(d);
  std::free(d);
  return out;
}

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Index of the '(' opening the balanced "(...)" that ends s, or npos.
size_t trailing_parens(const std::string& s) {
  if (s.empty() || s.back() != ')') return std::string::npos;
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')') depth++;
    else if (s[i] == '(' && --depth == 0) return i;
  }
  return std::string::npos;
}

}  // namespace

std::string short_function_name(const std::string& demangled, size_t max_template) {
  std::string s = demangled;
  for (size_t c; (c = s.rfind(" [clone ")) != std::string::npos && s.back() == ']';) s.erase(c);
  for (bool again = true; again;) {
    again = false;
    for (std::string_view q : {" const", " volatile", " &&", " &", " noexcept"})
      if (ends_with(s, q)) {
        s.erase(s.size() - q.size());
        again = true;
      }
  }
  size_t open = trailing_parens(s);
  if (open != std::string::npos && open > 0) s.erase(open);
  // Collapse long template argument lists; "operator<" and friends are not brackets.
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); i++) {
    bool is_operator = i >= 8 && s.compare(i - 8, 8, "operator") == 0;
    if (s[i] != '<' || is_operator) {
      out += s[i];
      continue;
    }
    int depth = 0;
    size_t j = i;
    for (; j < s.size(); j++) {
      if (s[j] == '<') depth++;
      else if (s[j] == '>' && --depth == 0) break;
    }
    if (j == s.size()) {  // unbalanced: leave the rest as it is
      out += s.substr(i);
      break;
    }
    if (j - i - 1 > max_template) out += "<...>";
    else out += s.substr(i, j - i + 1);
    i = j;
  }
  return out;
}

std::string kernel_frame_name(const std::string& mangled) {
  std::string s = demangle(mangled);
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  // Drop the top-level parameter list: the last balanced "(...)" at the end.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') depth++;
      else if (s[i] == '(' && --depth == 0) {
        if (i > 0) s.erase(i);
        break;
      }
    }
  }
  return s;
}

}  // namespace aiflame
