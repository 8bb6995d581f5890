#include "record/crash_report.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace aiflame {
namespace {

// Runs `body` in a child whose stderr comes back; returns it, and the child's wait status.
template <class F>
std::string in_child(F body, int* status) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    body();
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  waitpid(pid, status, 0);
  return out;
}

// A store to a page mapped without access (a null pointer's store is undefined behaviour, which the
// compiler may turn into something else).
__attribute__((noinline)) void fault() {
  void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  *static_cast<volatile int*>(page) = 1;
}

void exit_3(int) { _exit(3); }

// A crash in `phase` (working on `subject`, if any) with no handler of the program's: the child's
// stderr. (The child first takes the default action back: under AddressSanitizer its own SIGSEGV
// handler is the previous one, and it exits with status 1 instead.)
std::string crash_in(Phase phase, int* status, const char* subject = nullptr) {
  return in_child([phase, subject] {
    signal(SIGSEGV, SIG_DFL);
    install_crash_report();
    set_phase(phase);
    set_crash_subject(subject);
    fault();
  }, status);
}

// A crash with no handler of the program's: the report names the part of aiflame the thread was in
// and its stack, then the signal kills the process as it would have.
TEST(CrashReport, ACrashInsideAiflameIsReportedAndStillKills) {
  int status = 0;
  std::string err = crash_in(Phase::Collector, &status);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << status;
  EXPECT_NE(err.find("aiflame: signal 11 (code 2) at address 0x"), std::string::npos) << err;  // SEGV_ACCERR
  EXPECT_NE(err.find(" in aiflame's collector thread\naiflame: stack:\n"), std::string::npos) << err;
  // The faulting instruction, in this executable (aiflame's object here): an offset into it.
  EXPECT_NE(err.find(", pc 0x"), std::string::npos) << err;
  EXPECT_NE(err.find("aiflame_tests+0x"), std::string::npos) << err;
  int frames = 0;  // "aiflame:   #i address", without dladdr (backtrace_symbols_fd takes the loader's lock)
  for (size_t at = 0; (at = err.find("aiflame:   #", at)) != std::string::npos; at++) frames++;
  EXPECT_GE(frames, 3) << "the stack's frames follow:\n" << err;
}

// The builder names the object it works on.
TEST(CrashReport, TheThreadsSubjectIsNamed) {
  int status = 0;
  std::string err = crash_in(Phase::Builder, &status, "/lib/libexample.so");
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << status;
  EXPECT_NE(err.find("in aiflame's unwind-table builder (/lib/libexample.so)\n"), std::string::npos) << err;
}

void fault_arg(void*) { fault(); }
void no_fault(void* p) { *static_cast<int*>(p) = 7; }

// A fault inside run_guarded returns false, nothing reported, and the handler stays for the next one;
// outside it, the same fault still kills.
TEST(CrashReport, AGuardedFaultReturnsAndTheNextUnguardedOneStillKills) {
  int status = 0;
  std::string err = in_child([] {
    signal(SIGSEGV, SIG_DFL);
    install_crash_report();
    set_phase(Phase::Builder);
    int ran = 0, sig = 0;
    if (!run_guarded(no_fault, &ran, &sig) || ran != 7) _exit(10);
    for (int i = 0; i < 3; i++)
      if (run_guarded(fault_arg, nullptr, &sig) || sig != SIGSEGV) _exit(11 + i);
    std::fprintf(stderr, "survived\n");
    std::fflush(stderr);
    fault();
  }, &status);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << status << "\n" << err;
  EXPECT_NE(err.find("survived\n"), std::string::npos) << err;
  EXPECT_EQ(err.find("aiflame: signal"), err.rfind("aiflame: signal")) << "one report, the last fault's:\n" << err;
  EXPECT_NE(err.find("aiflame: signal 11"), std::string::npos) << err;
}

// The program's own handler (installed before aiflame's) runs after the report. Outside aiflame the
// report says nothing: such a program may handle SIGSEGV as part of its work (a runtime's guard page).
TEST(CrashReport, AProgramsOwnHandlerRunsAndHearsNothingOfAiflameOutsideIt) {
  int status = 0;
  std::string err = in_child([] {
    signal(SIGSEGV, exit_3);
    install_crash_report();
    fault();
  }, &status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status;
  EXPECT_EQ(err.find("aiflame:"), std::string::npos) << err;
  err = in_child([] {
    signal(SIGSEGV, exit_3);
    install_crash_report();
    set_phase(Phase::Unwind);
    fault();
  }, &status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status;
  EXPECT_NE(err.find("in native unwinding"), std::string::npos) << err;
}

// A crash in the program's own code with no handler: reported as the program's, and it still dies.
TEST(CrashReport, ACrashOutsideAiflameIsNamedAsTheProgramsOwn) {
  int status = 0;
  std::string err = crash_in(Phase::None, &status);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << status;
  EXPECT_NE(err.find("in the program (not aiflame)"), std::string::npos) << err;
  // No stack: backtrace() may hang in a crashed program, which must die as it would have.
  EXPECT_EQ(err.find("stack:"), std::string::npos) << err;
  EXPECT_EQ(err.find(")[0x"), std::string::npos) << err;
}

// aiflame's own threads name themselves: the unwind-table builder's crash is aiflame's.
TEST(CrashReport, TheUnwindTableBuildersCrashIsNamed) {
  int status = 0;
  std::string err = crash_in(Phase::Builder, &status);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << status;
  EXPECT_NE(err.find(" in aiflame's unwind-table builder\naiflame: stack:\n"), std::string::npos) << err;
}

}  // namespace
}  // namespace aiflame

namespace aiflame {
namespace {

// The guard counts only while the reporter is the installed handler of both signals.
TEST(CrashReport, TheGuardIsActiveOnlyWhileTheReporterHandlesTheSignals) {
  int status = 0;
  in_child([] {
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    if (guard_active()) _exit(10);
    install_crash_report();
    if (!guard_active()) _exit(11);
    signal(SIGBUS, exit_3);  // a later handler of the program's
    if (guard_active()) _exit(12);
    _exit(0);
  }, &status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace aiflame
