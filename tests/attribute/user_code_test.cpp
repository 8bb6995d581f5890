// Which frames are the user's own code (attribute/user_code.h): the HTML report's launch sites.
#include "attribute/user_code.h"

#include <gtest/gtest.h>

namespace aiflame {
namespace {

TEST(UserCode, PythonFilesOutsideTheLibraryAndFrameworks) {
  EXPECT_TRUE(is_user_python_file("/root/aiflame/bench/workloads/gpt_train.py"));
  EXPECT_TRUE(is_user_python_file("train.py"));
  EXPECT_FALSE(is_user_python_file("/usr/lib/python3.12/runpy.py"));
  EXPECT_FALSE(is_user_python_file("/root/.pyenv/versions/3.12.3/lib/python3.12/threading.py"));
  EXPECT_FALSE(is_user_python_file("/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py"));
  EXPECT_FALSE(is_user_python_file("/venv/lib/python3.12/site-packages/transformers/models/gpt2/modeling_gpt2.py"));
  EXPECT_FALSE(is_user_python_file("/src/pytorch/torch/nn/modules/linear.py"));  // pip install -e
  EXPECT_FALSE(is_user_python_file("<frozen runpy>"));
  EXPECT_FALSE(is_user_python_file(""));
}

TEST(UserCode, NativeModulesOfTheProgramNotSystemOrFrameworkLibraries) {
  EXPECT_TRUE(is_user_native_module("/root/aiflame/build/aiflame_demo_matmul", "aiflame_demo_matmul"));
  EXPECT_TRUE(is_user_native_module("/home/me/build/libmykernels.so", "python3"));
  EXPECT_FALSE(is_user_native_module("/usr/bin/python3.12", "python3"));
  EXPECT_FALSE(is_user_native_module("/usr/lib/x86_64-linux-gnu/libc.so.6", "demo"));
  EXPECT_FALSE(is_user_native_module("/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", "python3"));
  EXPECT_FALSE(is_user_native_module("/opt/libs/libcublasLt.so.13", "python3"));
  EXPECT_FALSE(is_user_native_module("[vdso]", "python3"));
}

// nvcc links the CUDA runtime into the program: its functions sit in the user's module but are not the
// user's code (the demo's launch site is multiply_basic, not libcudart_static_<hash>).
TEST(UserCode, TheCudaRuntimeLinkedIntoTheProgramIsNotTheUsersCode) {
  EXPECT_TRUE(is_cuda_runtime_function("cudaLaunchKernel"));
  EXPECT_TRUE(is_cuda_runtime_function("libcudart_static_4d8b33a106dceb3c07a56e26de61f2d53bb62a68"));
  EXPECT_TRUE(is_cuda_runtime_function("__device_stub__Z12matmul_basicPKfS0_Pfi"));
  EXPECT_TRUE(is_cuda_runtime_function("__cudart1234"));
  EXPECT_FALSE(is_cuda_runtime_function("multiply_basic"));
  EXPECT_FALSE(is_cuda_runtime_function("cudaify"));
  EXPECT_FALSE(is_cuda_runtime_function("cuda"));
}

}  // namespace
}  // namespace aiflame
