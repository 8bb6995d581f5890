// One PC-sampling process per GPU. CUPTI's PC sampling owns a GPU's sampler: when a second process
// enables it on the same GPU (a launcher that exec's a CUDA child while it still holds its own
// context), CUPTI 13.0 fails that process's GetData with CUPTI_ERROR_UNKNOWN and then stops
// delivering its launches and kernel records (measured on the H100). So each
// recorded process first claims the GPU by an flock on a file named after the GPU's PCI bus id; the
// claim is released when the process exits (the kernel drops the lock) and is not inherited across
// exec (O_CLOEXEC). Vendor-neutral: the key is any stable name of the physical device.
#pragma once
#include <sys/types.h>

#include <string>

namespace aiflame {

class DeviceClaim {
 public:
  DeviceClaim() = default;
  DeviceClaim(const DeviceClaim&) = delete;
  DeviceClaim& operator=(const DeviceClaim&) = delete;
  ~DeviceClaim();

  // Claims `key` (characters outside [A-Za-z0-9.:_-] become '_') in `dir` ($TMPDIR or /tmp when
  // empty). True when claimed, or when no lock file can be made (the claim is advisory: better to
  // sample than to refuse because /tmp is read-only). False when another live process holds it;
  // holder() then names it.
  bool claim(const std::string& key, const std::string& dir = {});
  pid_t holder() const { return holder_; }
  void release();

 private:
  int fd_ = -1;
  pid_t holder_ = 0;
};

}  // namespace aiflame
