#include "record/gpu_backend.h"

#include "record/cupti/cupti_backend.h"
#ifdef AIFLAME_LEVEL_ZERO
#include "record/levelzero/ze_backend.h"
#endif

namespace aiflame {

// One vendor today. Another one's factory goes here, tried in turn: the first whose library loads
// records the process (a machine with GPUs of two vendors would want an option naming one).
std::unique_ptr<GpuBackend> make_gpu_backend(Recorder& rec, const RecordOptions& opt, std::string* why) {
  return make_cupti_backend(rec, opt, why);
}

std::unique_ptr<GpuBackend> make_gpu_backend(Recorder& rec, const RecordOptions& opt, std::string* why, GpuVendor vendor) {
  if (vendor == GpuVendor::Cuda) return make_gpu_backend(rec, opt, why);
#ifdef AIFLAME_LEVEL_ZERO
  return make_levelzero_backend(rec, opt, why);
#else
  *why = "this aiflame was built without the Level Zero headers (libze-dev), so it cannot record Level Zero programs";
  return nullptr;
#endif
}

}  // namespace aiflame
