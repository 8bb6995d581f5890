#include "attribute/user_code.h"

#include <array>

namespace aiflame {

namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

std::string_view basename(std::string_view p) {
  size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

}  // namespace

bool is_user_python_file(std::string_view path) {
  if (path.empty() || path[0] == '<') return false;  // <frozen runpy>, <string>, <eval_with_key>
  // The interpreter's library: /usr/lib/python3.12/..., ~/.pyenv/versions/3.12.3/lib/python3.12/...
  // (site-packages lives inside it too).
  if (contains(path, "/lib/python") || contains(path, "/lib64/python") || contains(path, "-packages/")) return false;
  // Frameworks installed from a checkout (pip install -e) are theirs, not the user's.
  static constexpr std::array<std::string_view, 16> kFrameworks = {
      "/torch/",     "/transformers/", "/triton/", "/accelerate/", "/deepspeed/", "/jax/",
      "/tensorflow/", "/keras/",        "/numpy/",  "/diffusers/",  "/vllm/",      "/apex/",
      "/xformers/",  "/flash_attn/",   "/functorch/", "/torchvision/"};
  for (auto f : kFrameworks)
    if (contains(path, f)) return false;
  return true;
}

bool is_user_native_module(std::string_view path, std::string_view program) {
  if (path.empty() || path[0] == '[') return false;  // [vdso], [anon]
  std::string_view base = basename(path);
  if (!program.empty() && base == program) return true;
  if (path.rfind("/usr/", 0) == 0 || path.rfind("/lib", 0) == 0 || path.rfind("/opt/nvidia", 0) == 0 ||
      contains(path, "-packages/") || contains(path, "/cuda"))
    return false;
  static constexpr std::array<std::string_view, 8> kRuntimes = {"libcuda", "libcu", "libnv", "libnccl",
                                                                  "libc.", "libstdc++", "libtorch", "libpython"};
  for (auto r : kRuntimes)
    if (base.rfind(r, 0) == 0) return false;
  return true;
}

bool is_cuda_runtime_function(std::string_view name) {
  if (name.rfind("libcudart_static", 0) == 0 || name.rfind("__cudart", 0) == 0 || name.rfind("__device_stub", 0) == 0)
    return true;
  // The runtime API: cuda followed by a capital (cudaLaunchKernel, cudaMemcpyAsync), not cudaify().
  return name.size() > 4 && name.rfind("cuda", 0) == 0 && name[4] >= 'A' && name[4] <= 'Z';
}

}  // namespace aiflame
