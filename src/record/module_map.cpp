#include "record/module_map.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "util/loaded_objects.h"

namespace aiflame {
namespace {

std::string hex(const unsigned char* p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; i++) { s += digits[p[i] >> 4]; s += digits[p[i] & 15]; }
  return s;
}

// True if [vaddr, vaddr + size) lies in the file contents of one readable PT_LOAD segment of the
// object: only PT_LOAD segments are mapped, so a PT_NOTE outside them (objects rewritten by patchelf
// or similar tools can have one: a repaired wheel's libraries) points at an address that may be
// unmapped or another mapping's, and reading it could kill the program (issue 22's crash hunt,
// 2026-11-27: a recorded hf_gpt2.py run was killed by SIGSEGV once in ~35 at about the collector's
// first module scan; not proven to be this).
bool in_loaded_contents(const dl_phdr_info* info, uint64_t vaddr, uint64_t size) {
  if (vaddr + size < vaddr) return false;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_R)) continue;
    if (vaddr >= ph.p_vaddr && vaddr + size <= ph.p_vaddr + ph.p_filesz) return true;
  }
  return false;
}

}  // namespace

std::string build_id_of(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE || !in_loaded_contents(info, ph.p_vaddr, ph.p_memsz)) continue;
    const char* base = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const uint64_t size = ph.p_memsz;
    // Offsets, not pointers: a note's sizes come from the file and may be anything.
    uint64_t off = 0;
    while (size - off >= sizeof(ElfW(Nhdr))) {
      ElfW(Nhdr) nh;
      std::memcpy(&nh, base + off, sizeof nh);
      const uint64_t name = off + sizeof nh;
      const uint64_t desc = name + ((uint64_t{nh.n_namesz} + 3) & ~uint64_t{3});
      if (desc > size || nh.n_descsz > size - desc) break;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && std::memcmp(base + name, "GNU", 4) == 0)
        return hex(reinterpret_cast<const unsigned char*>(base + desc), nh.n_descsz);
      off = desc + ((uint64_t{nh.n_descsz} + 3) & ~uint64_t{3});
      if (off > size) break;
    }
  }
  return {};
}

namespace {

std::string exe_path() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

int collect(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<ModuleRecord>*>(data);
  ModuleRecord m;
  m.path = info->dlpi_name ? info->dlpi_name : "";
  if (m.path.empty()) {
    if (!out->empty()) return 0;  // vdso and anonymous objects carry no file; the first one is the executable
    m.path = exe_path();
  }
  m.load_bias = info->dlpi_addr;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    lo = std::min<uint64_t>(lo, info->dlpi_addr + ph.p_vaddr);
    hi = std::max<uint64_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (lo >= hi) return 0;
  m.lo = lo;
  m.hi = hi;
  m.build_id = build_id_of(info);
  m.id = static_cast<uint32_t>(out->size() + 1);
  out->push_back(std::move(m));
  return 0;
}

}  // namespace

std::vector<ModuleRecord> read_loaded_modules() {
  std::vector<ModuleRecord> mods;
  iterate_loaded_objects(collect, &mods);
  return mods;
}

bool find_module_range(const std::string& name_part, uint64_t* lo, uint64_t* hi, std::string* path) {
  for (const auto& m : read_loaded_modules()) {
    auto slash = m.path.rfind('/');
    std::string base = slash == std::string::npos ? m.path : m.path.substr(slash + 1);
    if (base.find(name_part) != std::string::npos) {
      *lo = m.lo;
      *hi = m.hi;
      if (path) *path = m.path;
      return true;
    }
  }
  return false;
}

}  // namespace aiflame
