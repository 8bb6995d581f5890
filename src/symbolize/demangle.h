// C++ symbol demangling and the short forms used in frame names.
#pragma once
#include <string>
#include <string_view>

namespace aiflame {

// Demangled name, or the input unchanged when it is not a mangled C++ name.
std::string demangle(const std::string& mangled);
// A native function's frame name: without its parameter list, cv-qualifiers and "[clone .x]" suffixes,
// and with template argument lists longer than max_template collapsed to "<...>".
std::string short_function_name(const std::string& demangled, size_t max_template = 60);
// A kernel's frame name: demangled, without the leading return type and the parameter list.
std::string kernel_frame_name(const std::string& mangled);

}  // namespace aiflame
