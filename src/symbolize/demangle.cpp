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
