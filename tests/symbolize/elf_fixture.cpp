// A small shared library for the symbolizer's edge cases (tests/symbolize/elf_edge_cases_test.cpp),
// built several ways by tests/CMakeLists.txt: whole, without a build-id, stripped to .dynsym.
namespace {
__attribute__((noinline)) int hidden_helper(int x) {
  asm volatile("" : "+r"(x));
  return x * 3 + 1;
}
}  // namespace

extern "C" __attribute__((noinline)) int elf_fixture_exported(int x) { return hidden_helper(x) + 1; }
extern "C" void* elf_fixture_hidden_address() { return reinterpret_cast<void*>(&hidden_helper); }
