// Native symbolization edge cases on real shared libraries built by the test build
// (tests/symbolize/elf_fixture*.cpp): stripped to .dynsym, no build-id, a file replaced or deleted
// after it was loaded, and code in no file at all (JIT). A frame is named right or shown as
// "[module+0xoffset]", never given a wrong name.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

#include "record/module_map.h"
#include "symbolize/symbolizer.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string fixture(const std::string& name) { return std::string(AIFLAME_ELF_FIXTURE_DIR) + "/" + name; }

// A fixture library loaded from a private copy (so that the test may replace or delete the file).
struct Loaded {
  std::string path;
  void* handle = nullptr;
  uint64_t exported = 0, hidden = 0;  // function addresses
  ModuleRecord module;                // as the recorder's module map sees it
};

Loaded load_copy(const std::string& library, const std::string& copy_name) {
  Loaded l;
  l.path = test::temp_path(copy_name);
  test::write_file(l.path, test::read_file(fixture(library)));
  l.handle = dlopen(l.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(l.handle, nullptr) << dlerror();
  if (!l.handle) return l;
  l.exported = reinterpret_cast<uint64_t>(dlsym(l.handle, "elf_fixture_exported"));
  auto hidden = reinterpret_cast<void* (*)()>(dlsym(l.handle, "elf_fixture_hidden_address"));
  l.hidden = hidden ? reinterpret_cast<uint64_t>(hidden()) : 0;
  for (const auto& m : read_loaded_modules())
    if (m.path == l.path) l.module = m;
  EXPECT_EQ(l.module.path, l.path);
  return l;
}

// Symbolizes the first instruction of a function (lookup takes return addresses: address - 1).
NativeSymbol at(Symbolizer& s, uint64_t function) { return s.lookup(function + 1); }

TEST(ElfEdgeCases, WholeLibraryNamesExportedAndStaticFunctions) {
  Loaded l = load_copy("libelf_fixture_full.so", "libfull.so");
  ASSERT_NE(l.exported, 0u);
  EXPECT_FALSE(l.module.build_id.empty());
  Symbolizer s({l.module});
  EXPECT_EQ(at(s, l.exported).function, "elf_fixture_exported");
  EXPECT_EQ(at(s, l.hidden).function, "(anonymous namespace)::hidden_helper(int)");
  std::remove(l.path.c_str());
}

TEST(ElfEdgeCases, StrippedLibraryKeepsDynamicSymbolsOnly) {
  Loaded l = load_copy("libelf_fixture_stripped.so", "libstripped.so");
  ASSERT_NE(l.exported, 0u);
  Symbolizer s({l.module});
  EXPECT_EQ(at(s, l.exported).function, "elf_fixture_exported");
  NativeSymbol h = at(s, l.hidden);
  EXPECT_TRUE(h.function.empty()) << h.function;  // no .symtab: no name, and not its neighbour's
  char want[64];
  std::snprintf(want, sizeof want, "+0x%llx]", static_cast<unsigned long long>(l.hidden - l.module.load_bias));
  EXPECT_EQ(unknown_frame_name(h), "[" + basename_of(l.path) + want);
  std::remove(l.path.c_str());
}

TEST(ElfEdgeCases, LibraryWithoutBuildIdIsStillNamed) {
  Loaded l = load_copy("libelf_fixture_nobuildid.so", "libnobuildid.so");
  ASSERT_NE(l.exported, 0u);
  EXPECT_TRUE(l.module.build_id.empty());
  Symbolizer s({l.module});
  EXPECT_EQ(at(s, l.exported).function, "elf_fixture_exported");
  std::remove(l.path.c_str());
}

// The file on disk is another build by the time symbolization runs: its names would be wrong.
TEST(ElfEdgeCases, ReplacedFileIsNeverUsedForNames) {
  for (const char* replacement : {"libelf_fixture_other.so", "libelf_fixture_nobuildid.so"}) {
    SCOPED_TRACE(replacement);
    Loaded l = load_copy("libelf_fixture_full.so", "libreplaced.so");
    ASSERT_NE(l.exported, 0u);
    // A new file under the old name (rename: the loaded copy's pages stay intact).
    std::string fresh = l.path + ".new";
    test::write_file(fresh, test::read_file(fixture(replacement)));
    ASSERT_EQ(rename(fresh.c_str(), l.path.c_str()), 0);
    Symbolizer s({l.module});
    NativeSymbol e = at(s, l.exported);
    EXPECT_TRUE(e.function.empty()) << e.function;
    EXPECT_EQ(unknown_frame_name(e).rfind("[" + basename_of(l.path) + "+0x", 0), 0u) << unknown_frame_name(e);
    std::remove(l.path.c_str());
  }
}

TEST(ElfEdgeCases, DeletedFileShowsModuleAndOffset) {
  Loaded l = load_copy("libelf_fixture_full.so", "libdeleted.so");
  ASSERT_NE(l.exported, 0u);
  ASSERT_EQ(unlink(l.path.c_str()), 0);
  Symbolizer s({l.module});
  NativeSymbol e = at(s, l.exported);
  EXPECT_TRUE(e.function.empty());
  EXPECT_EQ(e.offset, l.exported - l.module.load_bias);
  EXPECT_EQ(unknown_frame_name(e).rfind("[" + basename_of(l.path) + "+0x", 0), 0u) << unknown_frame_name(e);
}

// JIT-compiled code lives in anonymous memory: no module, the address alone.
TEST(ElfEdgeCases, CodeInNoFileShowsItsAddress) {
  void* page = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  uint64_t pc = reinterpret_cast<uint64_t>(page) + 0x40;
  Symbolizer s(read_loaded_modules());
  NativeSymbol j = at(s, pc);
  EXPECT_TRUE(j.function.empty());
  EXPECT_TRUE(j.module.empty());
  char want[48];
  std::snprintf(want, sizeof want, "[unknown+0x%llx]", static_cast<unsigned long long>(pc + 1));
  EXPECT_EQ(unknown_frame_name(j), want);
  munmap(page, 4096);
}

}  // namespace
}  // namespace aiflame
