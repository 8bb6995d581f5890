#include "record/device_claim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace aiflame {

DeviceClaim::~DeviceClaim() { release(); }

void DeviceClaim::release() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor drops the flock
  fd_ = -1;
}

bool DeviceClaim::claim(const std::string& key, const std::string& dir) {
  release();
  holder_ = 0;
  std::string d = dir;
  if (d.empty()) {
    const char* t = std::getenv("TMPDIR");
    d = t && *t ? t : "/tmp";
  }
  std::string name;
  for (char ch : key) {
    bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == ':' || ch == '_' || ch == '-';
    name += ok ? ch : '_';
  }
  std::string path = d + "/aiflame-pc-sampling-" + name + ".lock";
  // O_NOFOLLOW: a shared directory must not let anyone point the lock at another file.
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) return true;
  fchmod(fd, 0666);  // other users' recorded processes must be able to lock it too (umask)
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    holder_ = n > 0 ? static_cast<pid_t>(std::atol(buf)) : -1;
    close(fd);
    return false;
  }
  std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, pid.data(), pid.size(), 0);
  fd_ = fd;
  return true;
}

}  // namespace aiflame
