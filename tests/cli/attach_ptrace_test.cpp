// The checks `aiflame record --pid` makes before ptrace, on hand-made inputs: ELF headers of programs
// it must refuse, the diagnosis of a refused ptrace, and finding a libc function in a running process.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "cli/attach_ptrace.h"
#include "test_util.h"

namespace aiflame {
namespace {

// The first 20 bytes of an ELF header: magic, class, data (LSB), version, padding, e_type, e_machine.
std::string elf_header(unsigned char elf_class, uint16_t machine) {
  std::string h = {'\x7f', 'E', 'L', 'F', static_cast<char>(elf_class), 1, 1, 0};
  h.resize(16, '\0');
  h += {2, 0};  // ET_EXEC
  h += {static_cast<char>(machine & 0xff), static_cast<char>(machine >> 8)};
  h.resize(52, '\0');  // the rest of a 32-bit header, zero
  return h;
}

std::string write_file(const std::string& name, const std::string& bytes) {
  std::string path = test::temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(AttachTarget, Refuses32BitPrograms) {
  std::string p = write_file("elf32", elf_header(1 /*ELFCLASS32*/, 3 /*EM_386*/));
  std::string why = elf_target_problem(p);
  EXPECT_NE(why.find("32-bit executable"), std::string::npos) << why;
  std::remove(p.c_str());
}

TEST(AttachTarget, RefusesOtherArchitectures) {
  std::string p = write_file("elf_arm64", elf_header(2, 183 /*EM_AARCH64*/));
  std::string why = elf_target_problem(p);
  EXPECT_NE(why.find("not an x86-64 executable (ELF machine 183)"), std::string::npos) << why;
  std::remove(p.c_str());
}

TEST(AttachTarget, AcceptsX86_64AndThisProcess) {
  std::string p = write_file("elf_x86_64", elf_header(2, 62 /*EM_X86_64*/));
  EXPECT_EQ(elf_target_problem(p), "");
  std::remove(p.c_str());
  EXPECT_EQ(elf_target_problem("/proc/self/exe"), "");
}

TEST(AttachTarget, RefusesWhatIsNotElf) {
  std::string p = write_file("script", "#!/bin/sh\necho hello, this is not an ELF file\n");
  EXPECT_NE(elf_target_problem(p).find("not an ELF executable"), std::string::npos);
  std::remove(p.c_str());
}

TEST(AttachTarget, NonexistentProcess) {
  auto s = check_target(2147483, "/nonexistent.so");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "no process with pid 2147483");
}

TEST(PtraceRefusal, NamesTheFixForEachCause) {
  PtraceFacts f;
  f.yama_scope = 1;
  EXPECT_NE(ptrace_refusal(42, f).find("kernel.yama.ptrace_scope = 1"), std::string::npos);
  EXPECT_NE(ptrace_refusal(42, f).find("sudo sysctl kernel.yama.ptrace_scope=0"), std::string::npos);
  f.yama_scope = 2;
  EXPECT_NE(ptrace_refusal(42, f).find("ptrace_scope = 2 lets only administrators"), std::string::npos);
  f.yama_scope = 3;
  EXPECT_NE(ptrace_refusal(42, f).find("ptrace_scope = 3"), std::string::npos);
  f.yama_scope = 0;
  f.same_uid = false;
  EXPECT_EQ(ptrace_refusal(42, f), "process 42 runs as another user: run aiflame as that user, or as root (sudo)");
  // Root without the capability: a container.
  f = {};
  f.is_root = true;
  EXPECT_NE(ptrace_refusal(42, f).find("--cap-add=SYS_PTRACE"), std::string::npos);
  // Already traced: the debugger is named, whatever else holds.
  f.tracer_pid = 777;
  EXPECT_EQ(ptrace_refusal(42, f), "process 42 is already traced by process 777 (a debugger or strace): detach that first");
  // Root with the capability and Yama off, still refused: a security module.
  f = {};
  f.is_root = f.cap_sys_ptrace = true;
  EXPECT_NE(ptrace_refusal(42, f).find("AppArmor"), std::string::npos);
}

TEST(RemoteSymbol, FindsLibcFunctionsAtTheirRunTimeAddress) {
  // This process as the "target": the address computed from /proc/self/maps and libc's symbol table
  // must be the one the loader resolved.
  auto maps = read_maps(getpid());
  for (const char* name : {"dlopen", "dlsym", "dlclose", "dlerror"}) {
    auto a = remote_symbol(getpid(), maps, "libc.so.6", name);
    ASSERT_TRUE(a.ok()) << a.error();
    void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(libc, nullptr);
    EXPECT_EQ(*a, reinterpret_cast<uint64_t>(dlsym(libc, name))) << name;
    dlclose(libc);
  }
  auto missing = remote_symbol(getpid(), maps, "libc.so.6", "no_such_function_here");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("has no symbol no_such_function_here"), std::string::npos);
  EXPECT_FALSE(remote_symbol(getpid(), maps, "libnotloaded.so", "f").ok());
}

}  // namespace
}  // namespace aiflame
