#include "attribute/frame_naming.h"

#include <cstdio>

#include "symbolize/symbolizer.h"
#include "symbolize/intel/ze_names.h"
#include "symbolize/nvidia/cupti_names.h"

namespace aiflame {

bool is_interpreter_module(const std::string& m) {
  return m.rfind("python", 0) == 0 || m.rfind("libpython", 0) == 0;
}

FrameKind classify_module(const std::string& m) {
  // The GPU vendors' runtime and math libraries, the C/C++ runtimes and the loader: "the
  // driver/runtime" layer.
  for (const char* pre : nvidia_runtime_library_prefixes())
    if (m.rfind(pre, 0) == 0) return FrameKind::Runtime;
  for (const char* pre : intel_runtime_library_prefixes())
    if (m.rfind(pre, 0) == 0) return FrameKind::Runtime;
  static const char* system_prefixes[] = {"libc.so", "libc-", "libpthread", "ld-linux", "libstdc++", "libgcc_s", "libdl."};
  for (const char* pre : system_prefixes)
    if (m.rfind(pre, 0) == 0) return FrameKind::Runtime;
  if (is_interpreter_module(m)) return FrameKind::Runtime;
  return FrameKind::Native;
}

std::string pc_frame_name(uint64_t offset, const std::string& mnemonic) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(offset));
  return mnemonic.empty() ? std::string(buf) : mnemonic + " " + buf;
}

std::string stall_frame_name(const Profile& p, const std::string& reason) {
  if (!p.process || p.process->backend.empty() || p.process->backend == "cupti") return short_stall_name(reason);
  return reason;
}

std::string launch_api_name(const Profile& p, uint32_t api) {
  if (!p.process || p.process->backend.empty() || p.process->backend == "cupti") return cupti_launch_api_name(api);
  return "launch";
}

std::string program_name(const Profile& p) {
  if (!p.process || p.process->command.empty()) return "[process]";
  const std::string& cmd = p.process->command;
  return basename_of(cmd.substr(0, cmd.find(' ')));
}

}  // namespace aiflame
