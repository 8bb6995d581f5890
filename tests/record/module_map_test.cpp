#include "record/module_map.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>

#include <cstring>

namespace aiflame {
namespace {

// An object as the loader would describe it, in memory of our own: page 0 readable (its notes), page
// 1 never mapped readable (PROT_NONE), at bias `base`.
struct FakeObject {
  static constexpr size_t kPage = 4096;
  char* base = static_cast<char*>(mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ElfW(Phdr) ph[3] = {};
  dl_phdr_info info = {};
  FakeObject() {
    mprotect(base + kPage, kPage, PROT_NONE);
    info.dlpi_addr = reinterpret_cast<ElfW(Addr)>(base);
    info.dlpi_name = "fake";
    info.dlpi_phdr = ph;
    ph[0].p_type = PT_LOAD;
    ph[0].p_flags = PF_R | PF_X;
    ph[0].p_vaddr = 0;
    ph[0].p_filesz = ph[0].p_memsz = kPage;
    ph[1].p_type = PT_NOTE;
    info.dlpi_phnum = 2;
  }
  ~FakeObject() { munmap(base, 2 * kPage); }
  FakeObject(const FakeObject&) = delete;
  FakeObject& operator=(const FakeObject&) = delete;
  // A GNU build-id note at `at` (in page 0) with the given descriptor bytes; the PT_NOTE covers it.
  void note(size_t at, const unsigned char* id, uint32_t n, uint32_t descsz_field) {
    ElfW(Nhdr) nh{4, descsz_field, NT_GNU_BUILD_ID};
    std::memcpy(base + at, &nh, sizeof nh);
    std::memcpy(base + at + sizeof nh, "GNU", 4);
    std::memcpy(base + at + sizeof nh + 4, id, n);
    ph[1].p_vaddr = at;
    ph[1].p_memsz = ph[1].p_filesz = sizeof nh + 4 + ((n + 3) & ~3u);
  }
};

const unsigned char kId[] = {0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10};

TEST(ModuleMap, ReadsTheBuildIdNoteOfALoadedSegment) {
  FakeObject o;
  o.note(64, kId, sizeof kId, sizeof kId);
  EXPECT_EQ(build_id_of(&o.info), "deadbeef0102030405060708090a0b0c0d0e0f10");
}

// A PT_NOTE that no PT_LOAD covers is not mapped by the loader: reading it could fault. Here it points
// at the PROT_NONE page (a read kills the test), and at page 0 through a load that is not readable.
TEST(ModuleMap, NeverReadsANoteOutsideTheLoadedSegments) {
  FakeObject o;
  o.note(64, kId, sizeof kId, sizeof kId);
  o.ph[1].p_vaddr = FakeObject::kPage + 64;
  EXPECT_EQ(build_id_of(&o.info), "");
  o.ph[1].p_vaddr = FakeObject::kPage - 16;  // straddling the end of the load
  EXPECT_EQ(build_id_of(&o.info), "");
  o.ph[1].p_vaddr = 64;
  o.ph[0].p_flags = PF_X;
  EXPECT_EQ(build_id_of(&o.info), "");
  o.ph[0].p_flags = PF_R;
  o.ph[0].p_filesz = 32;  // the note lies in the load's zero-filled part, not its file contents
  EXPECT_EQ(build_id_of(&o.info), "");
}

// A note whose sizes run past its segment ends the scan, however large they are.
TEST(ModuleMap, ANoteLargerThanItsSegmentEndsTheScan) {
  FakeObject o;
  for (uint32_t descsz : {uint32_t{sizeof kId} + 4, uint32_t{0x7fffffff}, uint32_t{0xffffffff}}) {
    o.note(64, kId, sizeof kId, descsz);
    EXPECT_EQ(build_id_of(&o.info), "") << descsz;
  }
}

// The test binary itself (Debian's GCC links with --build-id): found among the loaded modules.
TEST(ModuleMap, TheLoadedModulesCarryTheirBuildIds) {
  auto mods = read_loaded_modules();
  ASSERT_FALSE(mods.empty());
  EXPECT_EQ(mods[0].build_id.size(), 40u) << mods[0].path;
}

}  // namespace
}  // namespace aiflame
