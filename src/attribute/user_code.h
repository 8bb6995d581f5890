// Which CPU frames are the user's own code: the HTML report's "launch site" of a kernel is the
// deepest of them in its launch stack (not the framework code nearest the launch, e.g. PyTorch's
// `gpu_kernel_impl<...>`).
#pragma once
#include <string_view>

namespace aiflame {

// A Python source file of the user's: not the standard library, site-packages/dist-packages, a
// frozen or generated module, nor a framework's own tree (torch, transformers, triton...) wherever
// it is installed.
bool is_user_python_file(std::string_view path);

// A native module of the user's: the program itself, or a library outside the system and framework
// directories (/usr, /lib*, /opt/nvidia, site-packages...) that is not a CUDA or C/C++ runtime.
// `program` is the basename of argv[0].
bool is_user_native_module(std::string_view path, std::string_view program);

// A function of the CUDA runtime linked into the user's own program (nvcc links libcudart_static by
// default): cudaLaunchKernel, libcudart_static_<hash>, __cudart*, and nvcc's generated launch stubs
// (__device_stub__*). Their module is the user's; they are not the user's code.
bool is_cuda_runtime_function(std::string_view name);

}  // namespace aiflame
