#include "record/gpu_backend.h"

#include "record/cupti/cupti_backend.h"

namespace aiflame {

// One vendor today. Another one's factory goes here, tried in turn: the first whose library loads
// records the process (a machine with GPUs of two vendors would want an option naming one).
std::unique_ptr<GpuBackend> make_gpu_backend(Recorder& rec, const RecordOptions& opt, std::string* why) {
  return make_cupti_backend(rec, opt, why);
}

}  // namespace aiflame
