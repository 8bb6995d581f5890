// C++ symbol demangling and the short forms used in frame names.
#pragma once
#include <string>
#include <string_view>

namespace aiflame {

// Demangled name, or the input unchanged when it is not a mangled C++ name.
std::string demangle(const std::string& mangled);
// A kernel's frame name: demangled, without the leading return type and the parameter list.
std::string kernel_frame_name(const std::string& mangled);

}  // namespace aiflame
