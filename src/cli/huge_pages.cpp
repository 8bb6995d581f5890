#include "cli/huge_pages.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace aiflame {

void reexec_with_huge_pages(int argc, char** argv) {
  if (argc < 2 || (std::strcmp(argv[1], "report") != 0 && std::strcmp(argv[1], "diff") != 0)) return;
  if (const char* off = std::getenv("AIFLAME_HUGE_PAGES"); off && std::strcmp(off, "0") == 0) return;
  std::string tunables = std::getenv("GLIBC_TUNABLES") ? std::getenv("GLIBC_TUNABLES") : "";
  if (tunables.find("glibc.malloc.hugetlb") != std::string::npos) return;  // set: by us or by the user
  tunables += tunables.empty() ? "glibc.malloc.hugetlb=1" : ":glibc.malloc.hugetlb=1";
  if (setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure: go on without huge pages
}

}  // namespace aiflame
