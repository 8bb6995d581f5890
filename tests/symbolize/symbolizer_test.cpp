#include "symbolize/symbolizer.h"

#include <gtest/gtest.h>

#include "record/module_map.h"
#include "symbolize/demangle.h"

namespace aiflame {
namespace {

__attribute__((noinline)) uint64_t return_address_here() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

namespace ns {
__attribute__((noinline)) uint64_t a_named_caller(int x) {
  uint64_t r = return_address_here();
  asm volatile("" ::"r"(x));
  return r;
}
}  // namespace ns

TEST(Symbolizer, NamesAFunctionOfThisTestProgram) {
  uint64_t ra = ns::a_named_caller(3);
  Symbolizer sym(read_loaded_modules());
  NativeSymbol s = sym.lookup(ra);
  EXPECT_EQ(s.function, "aiflame::(anonymous namespace)::ns::a_named_caller(int)");
  EXPECT_EQ(s.module, "aiflame_tests");
}

TEST(Symbolizer, MismatchedBuildIdGivesModulePlusOffset) {
  uint64_t ra = ns::a_named_caller(4);
  auto mods = read_loaded_modules();
  for (auto& m : mods) m.build_id = "00112233";  // a different build of every file
  Symbolizer sym(mods);
  NativeSymbol s = sym.lookup(ra);
  EXPECT_TRUE(s.function.empty());
  EXPECT_EQ(s.module, "aiflame_tests");
  EXPECT_EQ(unknown_frame_name(s).rfind("[aiflame_tests+0x", 0), 0u);
}

TEST(Symbolizer, MissingFileAndUnmappedAddress) {
  std::vector<ModuleRecord> mods = {{1, "/deleted/libgone.so", 0x1000, 0x1000, 0x5000, "abcd"}};
  Symbolizer sym(mods);
  NativeSymbol s = sym.lookup(0x1235);
  EXPECT_TRUE(s.function.empty());
  EXPECT_EQ(unknown_frame_name(s), "[libgone.so+0x234]");
  NativeSymbol none = sym.lookup(0x9999);
  EXPECT_EQ(unknown_frame_name(none), "[unknown+0x9999]");
}

TEST(Demangle, CxxAndPlainNames) {
  EXPECT_EQ(demangle("_ZN2at6native4gemmEv"), "at::native::gemm()");
  EXPECT_EQ(demangle("cudaLaunchKernel"), "cudaLaunchKernel");
  EXPECT_EQ(demangle("_Z"), "_Z");
  EXPECT_EQ(demangle("_Zgarbage!"), "_Zgarbage!");
}

}  // namespace
}  // namespace aiflame

namespace aiflame {
namespace {

TEST(ShortFunctionName, DropsParametersQualifiersAndClones) {
  EXPECT_EQ(short_function_name("at::native::gemm(at::Tensor const&, long)"), "at::native::gemm");
  EXPECT_EQ(short_function_name("Foo::bar(int) const"), "Foo::bar");
  EXPECT_EQ(short_function_name("Foo::operator()(int) const &"), "Foo::operator()");
  EXPECT_EQ(short_function_name("at::native::(anonymous namespace)::addmm_out_cuda_impl(at::Tensor&) [clone .isra.0]"),
            "at::native::(anonymous namespace)::addmm_out_cuda_impl");
  EXPECT_EQ(short_function_name("main"), "main");
  EXPECT_EQ(short_function_name("(anonymous namespace)::f()"), "(anonymous namespace)::f");
}

TEST(ShortFunctionName, CollapsesOnlyLongTemplateArguments) {
  EXPECT_EQ(short_function_name("std::vector<int>::push_back(int const&)"), "std::vector<int>::push_back");
  std::string lng = "c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer<at::Tensor (at::Tensor const&), &at::wrapper_CUDA_mm>, at::Tensor> >::call(c10::OperatorKernel*)";
  EXPECT_EQ(short_function_name(lng), "c10::impl::wrap_kernel_functor_unboxed_<...>::call");
  EXPECT_EQ(short_function_name("bool operator<(A const&, B const&)"), "bool operator<");
  EXPECT_EQ(short_function_name("std::ostream::operator<<(int)"), "std::ostream::operator<<");
  EXPECT_EQ(short_function_name("broken<unbalanced(int)"), "broken<unbalanced");
}

}  // namespace
}  // namespace aiflame
