#include "cli/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace aiflame {

Status write_output_file(const std::string& path, const std::function<void(std::ostream&)>& fill) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Error{"cannot create " + path + ": " + std::strerror(errno)};
  ::close(fd);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    fill(out);
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Error{"writing " + path + " failed (disk full?)"};
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    std::remove(tmp.c_str());
    return Error{"cannot create " + path + ": " + std::strerror(e)};
  }
  return Ok{};
}

}  // namespace aiflame
