// The same code as elf_fixture.cpp under other names: the "replaced file" of
// tests/symbolize/elf_edge_cases_test.cpp, whose functions sit where elf_fixture.cpp's do.
namespace {
__attribute__((noinline)) int WRONG_hidden(int x) {
  asm volatile("" : "+r"(x));
  return x * 3 + 1;
}
}  // namespace

extern "C" __attribute__((noinline)) int WRONG_function_of_another_build(int x) { return WRONG_hidden(x) + 1; }
extern "C" void* elf_fixture_hidden_address() { return reinterpret_cast<void*>(&WRONG_hidden); }
