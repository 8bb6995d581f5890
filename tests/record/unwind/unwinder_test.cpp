// The native unwinder (src/record/unwind/) against libunwind, the reference, on live contexts of this
// program: a chain through libraries without frame pointers, with them, and without CFI (calls
// through PLT stubs), from a signal handler (through glibc's signal frame), and from asynchronous
// signals that land anywhere in a running loop (prologues, epilogues, PLT stubs). Then corrupt
// stacks, which must end the walk without a fault.
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <zlib.h>

#include <alloca.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "record/crash_report.h"
#include "record/unwind/object_table.h"
#include "record/unwind/unwinder.h"
#include "test_util.h"

extern "C" {
typedef int (*chain_cb)(void*);
int chain_nofp(int depth, chain_cb cb, void* arg);
int chain_nocfi(int depth, chain_cb cb, void* arg);
int chain_spin(void* flag);
uint64_t chain_work(uint64_t x);
}

namespace aiflame::unwind {
namespace {

// Reserved up front: capture_both runs in signal handlers, where it must not allocate (ThreadSanitizer
// reports operator new there).
struct Both {
  Both() {
    ours.reserve(256);
    ref.reserve(256);
    scratch.reserve(256);
  }
  std::vector<uint64_t> ours, ref, scratch;
  WalkStatus status;
};

// libunwind's frames from its caller: ips of the frames above capture_both's.
__attribute__((noinline)) void reference(std::vector<uint64_t>* out) {
  unw_context_t ctx;
  unw_cursor_t cur;
  unw_getcontext(&ctx);
  unw_init_local(&cur, &ctx);
  if (unw_step(&cur) <= 0) return;  // reference's own frame
  while (out->size() < 256) {
    unw_word_t ip = 0;
    unw_get_reg(&cur, UNW_REG_IP, &ip);
    if (!ip) break;
    out->push_back(ip);
    if (unw_step(&cur) <= 0) break;
  }
}

// Both unwinders from one frame: out[0] of each is the return address into capture_both's caller.
__attribute__((noinline)) void capture_both(Both* b) {
  std::vector<uint64_t>& ref = b->scratch;
  ref.clear();
  reference(&ref);  // ref[0]: the return address into capture_both; the rest its callers
  uint64_t frames[256];
  int n = unwind_here(frames, 256, &b->status);  // frames[0]: into capture_both, too
  b->ours.assign(frames + (n ? 1 : 0), frames + n);
  if (!ref.empty()) b->ref.assign(ref.begin() + 1, ref.end());
  asm volatile("" ::: "memory");
}

std::string show(const std::vector<uint64_t>& v) {
  std::string s;
  for (uint64_t a : v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %lx", static_cast<unsigned long>(a));
    s += buf;
  }
  return s;
}

class Unwinder : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ObjectTable::instance().build_all_now(); }
};

int bottom(void* arg) {
  capture_both(static_cast<Both*>(arg));
  return 0;
}

// Twelve links: four of each library, the callers below them gtest's and libc's.
TEST_F(Unwinder, ThroughLibrariesWithAndWithoutFramePointersEqualsLibunwind) {
  Both b;
  chain_nofp(11, bottom, &b);
  EXPECT_FALSE(b.status.needs_fallback());
  EXPECT_GT(b.ours.size(), 20u);
  EXPECT_EQ(b.ours, b.ref) << "ours:" << show(b.ours) << "\nref: " << show(b.ref);
  EXPECT_GT(b.status.fp_frames, 0);  // chain_nocfi has no CFI: its frames were stepped by frame pointer
}

// A thread's first walk through the chain, after another thread's: every frame its own cache lacks is
// one the first thread looked up, found in the shared rows (shared_rows.h), and the frames are still
// libunwind's.
TEST_F(Unwinder, ANewThreadWalksWithTheRowsAnotherThreadLookedUpAndEqualsLibunwind) {
  Both walks[2];
  const Both& second = walks[1];
  // Again if the loaded objects changed between the two (a new generation: rows of the old one unused).
  for (int attempt = 0; attempt < 3; attempt++) {
    const uint32_t generation = ObjectTable::instance().snapshot()->generation;
    // One lambda for both threads: two would be two instantiations of std::thread's entry, whose frames
    // (not inlined under the sanitizers) differ between the threads.
    for (Both& b : walks) std::thread([&b] { chain_nofp(11, bottom, &b); }).join();
    if (ObjectTable::instance().snapshot()->generation == generation) break;
  }
  ASSERT_FALSE(second.status.needs_fallback());
  EXPECT_EQ(second.ours, second.ref) << "ours:" << show(second.ours) << "\nref: " << show(second.ref);
  EXPECT_GT(second.ours.size(), 12u);  // the chain's twelve links, and the thread's start
  EXPECT_GE(second.status.cache_misses, 8) << "a new thread's cache is empty";
  EXPECT_EQ(second.status.shared_hits, second.status.cache_misses);
}

Both g_in_handler;
void on_sigusr1(int, siginfo_t*, void*) { capture_both(&g_in_handler); }

int raise_signal(void*) {
  raise(SIGUSR1);
  return 0;
}

// From a signal handler: through __restore_rt (its CIE says 'S') into raise() and the chain.
TEST_F(Unwinder, ThroughASignalFrameEqualsLibunwind) {
  struct sigaction sa {}, old{};
  sa.sa_sigaction = on_sigusr1;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR1, &sa, &old);
  chain_nofp(5, raise_signal, nullptr);
  sigaction(SIGUSR1, &old, nullptr);
  const Both& b = g_in_handler;
  EXPECT_FALSE(b.status.needs_fallback());
  EXPECT_GT(b.ours.size(), 10u);
  EXPECT_EQ(b.ours, b.ref) << "ours:" << show(b.ours) << "\nref: " << show(b.ref);
}

// Asynchronous signals into a thread that loops calling a function of another library through the
// PLT: the interrupted pc is anywhere, and each walk must equal libunwind's.
std::atomic<int> g_async_done{0};
constexpr int kShots = 300;
Both g_shots[kShots];
std::atomic<int> g_shot{0};
void on_sigusr2(int, siginfo_t*, void*) {
  int i = g_shot.load();
  if (i < kShots) capture_both(&g_shots[i]);
  g_shot.store(i + 1);
}
// Set once the thread is in its loop: a shot fired while it still descended the chain could land in
// a prologue of chain_nocfi (no CFI, its frame pointer not yet pushed), which a frame-pointer walk
// cannot step and which is not what this test aims at (under ASan, shot 0 missed one frame there in
// about half the runs).
std::atomic<bool> g_spinning{false};
int spin(void* flag) {
  g_spinning = true;
  return chain_spin(flag);
}

TEST_F(Unwinder, AtAsynchronousSignalsEqualsLibunwind) {
  struct sigaction sa {}, old{};
  sa.sa_sigaction = on_sigusr2;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR2, &sa, &old);
  int stop = 0;
  g_spinning = false;
  std::thread t([&] { chain_nofp(4, spin, &stop); });
  while (!g_spinning) std::this_thread::yield();
  for (int i = 0; i < kShots; i++) {
    int before = g_shot.load();
    pthread_kill(t.native_handle(), SIGUSR2);
    while (g_shot.load() == before) std::this_thread::yield();
  }
  *static_cast<volatile int*>(&stop) = 1;
  t.join();
  sigaction(SIGUSR2, &old, nullptr);
  int equal = 0;
  for (int i = 0; i < kShots; i++) {
    const Both& b = g_shots[i];
    EXPECT_FALSE(b.status.needs_fallback()) << i;
    if (b.ours == b.ref) equal++;
    else ADD_FAILURE() << "shot " << i << "\nours:" << show(b.ours) << "\nref: " << show(b.ref);
  }
  EXPECT_EQ(equal, kShots);
}

// Single-stepping (the trap flag: a SIGTRAP after each instruction, its handler walking through the
// signal frame as the asynchronous shots below do): from the entry of one function until it returns,
// every instruction is walked by both unwinders, twice (the second walk takes its frames from the
// first's record: same_step). Where asynchronous shots land by chance, this visits each instruction
// of the path once, among them each `ret` after `pop %rbp` or `leave`, whose CFI row still has the
// caller's rbp at CFA - 16, below sp in the red zone (a shot landed on one in CI on 2026-12-04 and the
// walk ended at that frame; libunwind reads the slot).
struct Step {
  uint64_t pc;
  Both both;
  Both again;  // walked again at once: its frames taken from the first walk's record (same_step)
};
struct CodeSpan {
  uint64_t lo = 0, hi = 0;
  bool holds(uint64_t pc) const { return pc >= lo && pc < hi; }
};
struct Stepping {
  uint64_t arm_pc = 0;          // steps are walked from this function's entry...
  uint64_t arm_sp = 0;          // ...until sp rises above its entry's (it returned)
  // ...where they lie in these executable segments: a step elsewhere (the loader's lazy binding of a
  // PLT slot the warm-up did not bind, under load) is stepped over, not walked.
  CodeSpan walked[3];
  CodeSpan flag_code;  // a step in it sets *flag
  volatile int* flag = nullptr;
  bool armed = false;
  Step* steps = nullptr;
  int max = 0;
  std::atomic<int> n{0};
};
Stepping* g_stepping;
constexpr uint64_t kTrapFlag = 0x100;

void on_sigtrap(int, siginfo_t*, void* ctx) {
  Stepping& st = *g_stepping;
  auto* uc = static_cast<ucontext_t*>(ctx);
  const uint64_t pc = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
  const uint64_t sp = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RSP]);
  if (!st.armed && !st.arm_sp && pc == st.arm_pc) {
    st.armed = true;
    st.arm_sp = sp;  // at the function's entry: its return address
  }
  if (!st.armed) return;  // still on the way there: the trap flag stays set
  if (sp > st.arm_sp) {  // it returned: stop stepping
    uc->uc_mcontext.gregs[REG_EFL] &= ~static_cast<greg_t>(kTrapFlag);
    st.armed = false;
    return;
  }
  if (st.flag && st.flag_code.holds(pc)) *st.flag = 1;
  if (!st.walked[0].holds(pc) && !st.walked[1].holds(pc) && !st.walked[2].holds(pc)) return;
  const int i = st.n.load();
  if (i >= st.max) return;
  st.steps[i].pc = pc;
  capture_both(&st.steps[i].both);
  capture_both(&st.steps[i].again);
  st.n.store(i + 1);
}
void on_step_start(int, siginfo_t*, void* ctx) {
  static_cast<ucontext_t*>(ctx)->uc_mcontext.gregs[REG_EFL] |= static_cast<greg_t>(kTrapFlag);
}
// Runs fn with the trap flag set from raise() on; the handlers are installed around it.
template <class Fn>
void single_step(Stepping& st, Fn fn) {
  struct sigaction trap {}, start{}, old_trap{}, old_start{};
  trap.sa_sigaction = on_sigtrap;
  trap.sa_flags = SA_SIGINFO;
  start.sa_sigaction = on_step_start;
  start.sa_flags = SA_SIGINFO;
  g_stepping = &st;
  sigaction(SIGTRAP, &trap, &old_trap);
  sigaction(SIGUSR1, &start, &old_start);
  fn();
  sigaction(SIGTRAP, &old_trap, nullptr);
  sigaction(SIGUSR1, &old_start, nullptr);
  g_stepping = nullptr;
}
// The executable segment that holds `at`, as the unwinder's snapshot has it (before any stepping).
CodeSpan exec_segment_of(const void* at) {
  const TextRange* r = ObjectTable::instance().snapshot()->find(reinterpret_cast<uint64_t>(at));
  return r ? CodeSpan{r->lo, r->hi} : CodeSpan{};
}
// A function's code, from its dynamic symbol's size.
CodeSpan function_code(const void* fn) {
  Dl_info info{};
  void* sym_out = nullptr;
  if (!dladdr1(fn, &info, &sym_out, RTLD_DL_SYMENT) || !sym_out) return {};
  const uint64_t lo = reinterpret_cast<uint64_t>(fn);
  return {lo, lo + static_cast<const ElfW(Sym)*>(sym_out)->st_size};
}
// Each step's two walks against libunwind's; returns how many steps lay at a `ret` right after `pop
// %rbp` or `leave`.
int expect_steps_equal_libunwind(const Stepping& st) {
  int rets_after_restore = 0;
  for (int i = 0; i < st.n.load(); i++) {
    const Step& s = st.steps[i];
    const auto* code = reinterpret_cast<const uint8_t*>(s.pc);
    rets_after_restore += code[0] == 0xc3 && (code[-1] == 0x5d || code[-1] == 0xc9);  // pop %rbp / leave; ret
    EXPECT_FALSE(s.both.status.needs_fallback()) << "step " << i;
    EXPECT_GT(s.both.ref.size(), 6u) << "step " << i;  // the chain's links and gtest's frames below them
    EXPECT_EQ(s.both.ours, s.both.ref) << "step " << i << " at pc " << std::hex << s.pc << "\nours:" << show(s.both.ours)
                                       << "\nref: " << show(s.both.ref);
    // The second walk from the same state reuses the first's frames (the interrupted frame's red-zone
    // slot re-read there too), and they are still libunwind's.
    EXPECT_EQ(s.again.ours, s.again.ref) << "step " << i << " walked again";
    EXPECT_GE(s.again.status.reused + 1u, s.again.ours.size()) << "step " << i << " at pc " << std::hex << s.pc
                                                              << ": every frame reused";
  }
  return rets_after_restore;
}

int spin_stepped(void* flag) {
  raise(SIGUSR1);  // its handler sets the trap flag: every instruction from here on traps, until chain_spin returns
  return chain_spin(flag);
}

// One call through the PLT: chain_spin (no frame pointer), its PLT stub, chain_work (frame pointer)
// from its push to its ret, and chain_spin's loop test and epilogue.
TEST_F(Unwinder, AtEveryInstructionOfACallThroughThePltEqualsLibunwind) {
  const CodeSpan spin = function_code(reinterpret_cast<void*>(&chain_spin));
  const CodeSpan work = function_code(reinterpret_cast<void*>(&chain_work));
  ASSERT_LT(spin.lo, spin.hi);
  ASSERT_LT(work.lo, work.hi);
  // chain_spin's PLT slot bound first (lazy binding would step through the loader's resolver).
  {
    volatile int stop = 0;
    std::thread t([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      stop = 1;
    });
    chain_spin(const_cast<int*>(&stop));
    t.join();
  }
  std::vector<Step> steps(256);
  volatile int flag = 0;
  Stepping st;
  st.arm_pc = spin.lo;
  st.flag_code = work;  // one call of chain_work, then chain_spin's loop ends
  st.flag = &flag;
  st.walked[0] = exec_segment_of(reinterpret_cast<void*>(&chain_spin));
  st.walked[1] = exec_segment_of(reinterpret_cast<void*>(&chain_work));
  st.steps = steps.data();
  st.max = static_cast<int>(steps.size());
  single_step(st, [&] { chain_nofp(3, spin_stepped, const_cast<int*>(&flag)); });

  const int n = st.n.load();
  ASSERT_LT(n, st.max);
  int in_work = 0, in_spin = 0, elsewhere = 0;
  for (int i = 0; i < n; i++) {
    const uint64_t pc = steps[static_cast<size_t>(i)].pc;
    in_work += work.holds(pc);
    in_spin += spin.holds(pc);
    elsewhere += !work.holds(pc) && !spin.holds(pc);  // the PLT stub
  }
  // (GCC 12: chain_work's and chain_spin's; the frames are compared at every step whatever the count.)
  EXPECT_GE(expect_steps_equal_libunwind(st), 1) << "a ret right after pop %rbp was stepped";
  EXPECT_GE(in_work, 15) << "chain_work's loop and epilogue";
  EXPECT_GE(in_spin, 5);
  EXPECT_GE(elsewhere, 1) << "the PLT stub";
}

int g_leaf_calls = 0;
__attribute__((noinline)) int step_leaf(void*) {
  asm volatile("" ::: "memory");
  return g_leaf_calls++;
}
__attribute__((noinline)) int step_chain(void* flag) {
  raise(SIGUSR1);  // the trap flag from here on
  const int r = chain_nofp(1, step_leaf, flag);
  asm volatile("" ::: "memory");  // not a tail call: chain_nofp returns here
  return r;
}

// A chain of two links, every instruction from chain_nofp's entry until it returns: its CFI-only
// prologue and epilogue (no frame pointer: sub and add of rsp), the PLT stub into chain_fp, chain_fp's
// frame-pointer prologue and its `leave; ret`, the indirect call to the leaf and the leaf itself.
TEST_F(Unwinder, AtEveryInstructionOfAChainOfTwoKindsOfFramesEqualsLibunwind) {
  chain_nofp(1, step_leaf, nullptr);  // the PLT slots bound first
  std::vector<Step> steps(512);
  Stepping st;
  st.arm_pc = reinterpret_cast<uint64_t>(&chain_nofp);
  st.walked[0] = exec_segment_of(reinterpret_cast<void*>(&chain_nofp));
  st.walked[1] = exec_segment_of(dlsym(RTLD_DEFAULT, "chain_fp"));
  st.walked[2] = exec_segment_of(reinterpret_cast<void*>(&step_leaf));  // this program's
  st.steps = steps.data();
  st.max = static_cast<int>(steps.size());
  single_step(st, [&] { step_chain(nullptr); });
  const int n = st.n.load();
  ASSERT_LT(n, st.max);
  const CodeSpan nofp = function_code(reinterpret_cast<void*>(&chain_nofp));
  void* const fp_fn = dlsym(RTLD_DEFAULT, "chain_fp");
  ASSERT_NE(fp_fn, nullptr);
  const CodeSpan fp = function_code(fp_fn);
  int in_nofp = 0, in_fp = 0, in_leaf = 0;
  for (int i = 0; i < n; i++) {
    const uint64_t pc = steps[static_cast<size_t>(i)].pc;
    in_nofp += nofp.holds(pc);
    in_fp += fp.holds(pc);
    in_leaf += st.walked[2].holds(pc);  // the leaf is the only code of this program between them
  }
  EXPECT_GE(expect_steps_equal_libunwind(st), 1) << "chain_fp's leave; ret";
  EXPECT_GE(in_nofp, 10);
  EXPECT_GE(in_fp, 10);
  EXPECT_GE(in_leaf, 2);
  EXPECT_GE(n, in_nofp + in_fp + in_leaf + 1) << "the PLT stub";
}

// Random words as a stack, with real return addresses sprinkled in: the walk ends (BadFrame or
// Outermost), never reads outside the buffer, and returns only addresses of loaded objects.
TEST_F(Unwinder, CorruptStacksEndTheWalkWithoutAFault) {
  const Snapshot* snap = ObjectTable::instance().snapshot();
  std::vector<uint64_t> text_pcs;
  for (const auto& r : snap->ranges)
    for (uint64_t a = r.lo; a < r.hi && text_pcs.size() < 4096; a += (r.hi - r.lo) / 64 + 1) text_pcs.push_back(a);
  std::mt19937_64 rng(42);
  std::vector<uint64_t> stack(512);
  int ended_bad = 0;
  for (int trial = 0; trial < 20000; trial++) {
    for (auto& w : stack) {
      switch (rng() % 4) {
        case 0: w = text_pcs[rng() % text_pcs.size()] + rng() % 64; break;
        case 1: w = reinterpret_cast<uint64_t>(&stack[rng() % stack.size()]); break;
        case 2: w = 0; break;
        default: w = rng(); break;
      }
    }
    uint64_t lo = reinterpret_cast<uint64_t>(stack.data()), hi = lo + stack.size() * 8;
    Regs r;
    r.pc = text_pcs[rng() % text_pcs.size()] + rng() % 4096;
    r.sp = lo + (rng() % 64) * 8;
    r.fp = rng() % 2 ? stack[rng() % stack.size()] : lo + (rng() % 512) * 8;
    uint64_t out[64];
    WalkStatus st;
    int n = walk(r, hi, out, 64, &st);
    ASSERT_LE(n, 64);
    for (int i = 0; i < n; i++) ASSERT_NE(snap->find(out[i] - 1), nullptr) << "trial " << trial << " frame " << i;
    ended_bad += st.end == WalkEnd::BadFrame;
  }
  EXPECT_GT(ended_bad, 10000);  // garbage mostly ends as a bad frame, not as a clean outermost frame
}

// Every object's rows: sorted, one per location, and the chain libraries' code covered.
TEST_F(Unwinder, RowsOfLoadedObjectsAreSortedAndCoverTheirCode) {
  const Snapshot* snap = ObjectTable::instance().snapshot();
  int with_rows = 0;
  for (const auto& o : snap->objects) {
    const auto* rows = o->rows.load();
    ASSERT_NE(rows, nullptr) << o->path;
    for (size_t i = 1; i < rows->size(); i++) ASSERT_LT((*rows)[i - 1].loc, (*rows)[i].loc) << o->path;
    with_rows += !rows->empty();
    EXPECT_EQ(o->stats.bad_entries, 0u) << o->path;
  }
  EXPECT_GE(with_rows, 4);
  for (void* fn : {reinterpret_cast<void*>(&chain_nofp), reinterpret_cast<void*>(&chain_spin)}) {
    const TextRange* r = snap->find(reinterpret_cast<uint64_t>(fn));
    ASSERT_NE(r, nullptr);
    const auto* rows = r->object->rows.load();
    const FrameRow* row = find_row(rows->data(), rows->size(), static_cast<uint32_t>(reinterpret_cast<uint64_t>(fn) - r->object->bias));
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->rule(), kCfaSp);  // at a function's entry: CFA = rsp + 8
    EXPECT_EQ(row->cfa_off(), 8);
  }
}

// The page index finds the row a binary search over all rows finds: at every 4th byte of every
// loaded object's code covered by rows (and around page edges), and on small hand-made rows.
TEST_F(Unwinder, PagedRowLookupEqualsTheBinarySearch) {
  const Snapshot* snap = ObjectTable::instance().snapshot();
  uint64_t checked = 0;
  auto check = [&](const std::vector<FrameRow>& rows, const std::vector<uint32_t>& pages, uint32_t loc) {
    ASSERT_EQ(find_row_paged(rows.data(), rows.size(), pages.data(), pages.size(), loc),
              find_row(rows.data(), rows.size(), loc))
        << "loc " << loc;
    checked++;
  };
  for (const auto& o : snap->objects) {
    const auto* rows = o->rows.load();
    ASSERT_NE(rows, nullptr);
    ASSERT_NE(o->pages, nullptr);
    if (rows->empty()) continue;
    ASSERT_EQ(o->pages->size(), (rows->back().loc >> kRowPageBits) + 2u) << o->path;
    uint32_t end = std::min<uint32_t>(rows->back().loc + 8192, rows->front().loc + (8u << 20));
    for (uint32_t loc = rows->front().loc >= 64 ? rows->front().loc - 64 : 0; loc < end; loc += 4)
      check(*rows, *o->pages, loc);
    for (const FrameRow& r : *rows)
      for (uint32_t d : {0u, 1u}) {
        check(*rows, *o->pages, r.loc - d);
        check(*rows, *o->pages, ((r.loc >> kRowPageBits) << kRowPageBits) - d);
      }
  }
  std::vector<FrameRow> small = {{0x10, kCfaSp | 8 << 8, kFpSame}, {0x1000, kCfaFp | 16 << 8, -16},
                                 {0x1001, kCfaSp | 16 << 8, kFpSame}, {0x5000, kCfaNoInfo, kFpSame}};
  std::vector<uint32_t> pages = build_row_pages(small);
  EXPECT_EQ(pages, (std::vector<uint32_t>{0, 2, 3, 3, 3, 4, 4}));
  for (uint32_t loc = 0; loc < 0x8000; loc++) check(small, pages, loc);
  EXPECT_GT(checked, 100000u);
}

// The object chain_nofp is in (a library without frame pointers, with CFI), or null.
const Object* chain_nofp_object() {
  const TextRange* r = ObjectTable::instance().snapshot()->find(reinterpret_cast<uint64_t>(&chain_nofp));
  return r ? r->object : nullptr;
}

// An FDE read in place (find_cfi_row, for a walk through an object whose rows are being built) gives
// the row the object's table gives: at the start, the middle, the last byte and the end of every
// FDE's code of every loaded object, and around them. The objects' own segments, as the walk reads them.
TEST_F(Unwinder, AnFdeReadInPlaceGivesTheTablesRow) {
  const Snapshot* snap = ObjectTable::instance().snapshot();
  uint64_t checked = 0, objects = 0;
  for (const auto& o : snap->objects) {
    const auto* rows = o->rows.load();
    ASSERT_NE(rows, nullptr);
    if (!o->hdr_addr || rows->empty()) continue;
    ASSERT_GT(o->eh_size, 0u) << o->path;
    objects++;
    const MemView mem{reinterpret_cast<const uint8_t*>(o->eh_lo), o->eh_lo, o->eh_size};
    auto check = [&](uint32_t loc) {
      FrameRow lazy{};
      ASSERT_TRUE(find_cfi_row(mem, o->hdr_addr, o->bias, loc, &lazy)) << o->path;
      const FrameRow* want = find_row(rows->data(), rows->size(), loc);
      const int32_t cfa = want ? want->cfa : kCfaNoInfo, fp_off = want ? want->fp_off : kFpSame;
      ASSERT_EQ(lazy.cfa, cfa) << o->path << " loc " << loc;
      if (cfa != kCfaNoInfo) {
        ASSERT_EQ(lazy.fp_off, fp_off) << o->path << " loc " << loc;
      }
      checked++;
    };
    // Every row's location (each FDE's start and each change in it), the bytes around it, and the
    // middle to the next row: up to 20,000 rows of each object.
    for (size_t i = 0; i < rows->size() && i < 20000; i++) {
      const uint32_t loc = (*rows)[i].loc;
      for (uint32_t d : {0u, 1u}) check(loc - d);
      check(loc + 1);
      if (i + 1 < rows->size()) check(loc + ((*rows)[i + 1].loc - loc) / 2);
    }
  }
  EXPECT_GT(objects, 3u);
  EXPECT_GT(checked, 10000u);
}

// The in-place lookup on damaged copies of chain_nofp's segment: every single-byte corruption of its
// .eh_frame_hdr and .eh_frame, at every row's location. It stays inside the copy (AddressSanitizer)
// and either declines or gives a row.
TEST_F(Unwinder, AnFdeReadInPlaceStaysInsideDamagedSections) {
  const Object* o = chain_nofp_object();
  ASSERT_NE(o, nullptr);
  ASSERT_GT(o->eh_size, 0u);
  const auto* rows = o->rows.load();
  ASSERT_NE(rows, nullptr);
  std::vector<uint8_t> copy(reinterpret_cast<const uint8_t*>(o->eh_lo), reinterpret_cast<const uint8_t*>(o->eh_lo) + o->eh_size);
  const uint64_t from = o->hdr_addr - o->eh_lo, to = std::min<uint64_t>(copy.size(), from + 2048);
  int answered = 0, differed = 0;
  for (uint64_t at = from; at < to; at++) {
    std::vector<uint8_t> bad = copy;
    bad[at] ^= 0xff;
    const MemView mem{bad.data(), o->eh_lo, bad.size()};
    for (const FrameRow& want : *rows) {
      FrameRow got{};
      if (!find_cfi_row(mem, o->hdr_addr, o->bias, want.loc, &got)) continue;
      answered++;
      differed += got.cfa != want.cfa;
    }
    std::vector<uint8_t> cut(copy.begin(), copy.begin() + static_cast<long>(at));
    FrameRow got{};
    (void)find_cfi_row(MemView{cut.data(), o->eh_lo, cut.size()}, o->hdr_addr, o->bias, rows->front().loc, &got);
  }
  EXPECT_GT(answered, 0);
  EXPECT_GT(differed, 0);  // the damage reaches the rows it gives
}

bool sorted_unique(const std::vector<FrameRow>& rows) {
  for (size_t i = 1; i < rows.size(); i++)
    if (rows[i - 1].loc >= rows[i].loc) return false;
  return true;
}

// The builder on a real object's segment (a copy of chain_nofp's, at its own address) and on damaged
// copies: every single-byte corruption and every truncation of its .eh_frame_hdr and .eh_frame.
// Each build stays inside the copy (AddressSanitizer watches the heap buffer) and gives sorted rows;
// the undamaged copy gives exactly the rows built from the loaded object.
TEST_F(Unwinder, RowBuilderOnRealAndDamagedSections) {
  const Object* o = chain_nofp_object();
  ASSERT_NE(o, nullptr);
  ASSERT_NE(o->hdr_addr, 0u);
  const struct {
    uint64_t lo, size;
  } seg{o->eh_lo, o->eh_size};  // the segment holding .eh_frame_hdr
  ASSERT_GT(seg.size, 0u);
  std::vector<uint8_t> copy(reinterpret_cast<const uint8_t*>(seg.lo), reinterpret_cast<const uint8_t*>(seg.lo) + seg.size);
  std::vector<FrameRow> rows;
  ASSERT_TRUE(build_cfi_rows(MemView{copy.data(), seg.lo, copy.size()}, o->hdr_addr, o->bias, &rows));
  const auto* loaded = o->rows.load();
  ASSERT_EQ(rows.size(), loaded->size());
  for (size_t i = 0; i < rows.size(); i++) {
    EXPECT_EQ(rows[i].loc, (*loaded)[i].loc);
    EXPECT_EQ(rows[i].cfa, (*loaded)[i].cfa);
    EXPECT_EQ(rows[i].fp_off, (*loaded)[i].fp_off);
  }
  // The .eh_frame_hdr and .eh_frame bytes: from the header to the end of the segment's CFI (small here).
  uint64_t from = o->hdr_addr - seg.lo, to = std::min<uint64_t>(copy.size(), from + 4096);
  int damaged_builds = 0, fewer_rows = 0;
  for (uint64_t at = from; at < to; at++) {
    for (uint8_t flip : {uint8_t{0xff}, uint8_t{0x80}, uint8_t{0x01}}) {
      std::vector<uint8_t> bad = copy;
      bad[at] ^= flip;
      std::vector<FrameRow> out;
      if (build_cfi_rows(MemView{bad.data(), seg.lo, bad.size()}, o->hdr_addr, o->bias, &out)) {
        ASSERT_TRUE(sorted_unique(out)) << "byte " << at;
        damaged_builds++;
        fewer_rows += out.size() < rows.size();
      }
    }
    std::vector<uint8_t> cut(copy.begin(), copy.begin() + static_cast<long>(at));
    std::vector<FrameRow> out;
    if (build_cfi_rows(MemView{cut.data(), seg.lo, cut.size()}, o->hdr_addr, o->bias, &out)) {
      ASSERT_TRUE(sorted_unique(out)) << "cut at " << at;
    }
  }
  EXPECT_GT(damaged_builds, 0);
  EXPECT_GT(fewer_rows, 0);  // damage is detected and the entry dropped, not read on blindly
}


// On an alternate signal stack the walk does not start (its reads are bounded to the thread's own
// stack): the caller falls back to backtrace().
WalkStatus g_altstack_status;
int g_altstack_frames = -1;
void on_sigurg(int) {
  uint64_t out[64];
  g_altstack_frames = unwind_here(out, 64, &g_altstack_status);
}

TEST_F(Unwinder, OnAnAlternateSignalStackTheCallerFallsBack) {
  std::vector<char> alt(1 << 16);
  stack_t ss{}, old_ss{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  ASSERT_EQ(sigaltstack(&ss, &old_ss), 0);
  struct sigaction sa {}, old{};
  sa.sa_handler = on_sigurg;
  sa.sa_flags = SA_ONSTACK;
  sigaction(SIGURG, &sa, &old);
  raise(SIGURG);
  sigaction(SIGURG, &old, nullptr);
  sigaltstack(&old_ss, nullptr);
  EXPECT_EQ(g_altstack_frames, 0);
  EXPECT_EQ(g_altstack_status.end, WalkEnd::OffStack);
  EXPECT_TRUE(g_altstack_status.needs_fallback());
}

// A library loaded after the snapshot (zlib, dlopen'ed here, calling back into this program from
// deflateInit): the first walks through it fall back (stale snapshot, then rows being built), then
// the walk equals libunwind's. After dlclose the background thread drops it from the snapshot.
Both g_in_zalloc;
int g_zalloc_calls = 0;
WalkStatus g_first_walk;  // of the first call: nothing has asked for zlib's rows before it
void* zalloc_capture(void*, unsigned items, unsigned size) {
  capture_both(&g_in_zalloc);
  if (g_zalloc_calls++ == 0) g_first_walk = g_in_zalloc.status;
  return calloc(items, size);
}
void zfree(void*, void* p) { free(p); }

// zlib dlopen'ed here (not loaded before: else the caller skips), and what the deflateInit macro calls,
// looked up in that copy (zlib.h gives the layout).
struct Zlib {
  void* handle = nullptr;
  int (*init)(z_stream*, int, const char*, int) = nullptr;
  int (*end)(z_stream*) = nullptr;
};
Zlib load_zlib() {
  Zlib z;
  if (dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD)) return z;
  z.handle = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!z.handle) return z;
  z.init = reinterpret_cast<decltype(z.init)>(dlsym(z.handle, "deflateInit_"));
  z.end = reinterpret_cast<decltype(z.end)>(dlsym(z.handle, "deflateEnd"));
  return z;
}

TEST_F(Unwinder, ALibraryLoadedLaterIsWalkedOnceItsRowsAreBuiltAndDroppedAfterDlclose) {
  const auto [z, init, end] = load_zlib();
  if (!z) GTEST_SKIP() << "libz is already loaded, or missing";
  ASSERT_TRUE(init && end);
  uint64_t zlib_pc = reinterpret_cast<uint64_t>(init);
  EXPECT_EQ(ObjectTable::instance().snapshot()->find(zlib_pc), nullptr);
  for (int i = 0; i < 400; i++) {
    z_stream s{};
    s.zalloc = zalloc_capture;
    s.zfree = zfree;
    g_in_zalloc = Both{};
    ASSERT_EQ(init(&s, 6, ZLIB_VERSION, static_cast<int>(sizeof s)), Z_OK);
    end(&s);
    if (!g_in_zalloc.status.needs_fallback()) break;
    usleep(5000);
  }
  // The first walk met an object that the snapshot did not have: it fell back. (Or, if the builder's
  // periodic look at the loader refreshed the snapshot first, one without rows: it read zlib's FDEs
  // in place, AFdeReadInPlaceWalksALibraryWhoseRowsAreBeingBuilt.) (deflateInit allocates several
  // times: the builder may be done before the last of them, so a whole deflateInit may not fall back.)
  EXPECT_TRUE(g_first_walk.end == WalkEnd::Stale || g_first_walk.lazy_rows > 0);
  ASSERT_FALSE(g_in_zalloc.status.needs_fallback());
  EXPECT_EQ(g_in_zalloc.ours, g_in_zalloc.ref) << "ours:" << show(g_in_zalloc.ours) << "\nref: " << show(g_in_zalloc.ref);
  ASSERT_NE(ObjectTable::instance().snapshot()->find(zlib_pc), nullptr);
  dlclose(z);
  if (dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD)) GTEST_SKIP() << "libz stayed loaded";
  bool dropped = false;
  for (int i = 0; i < 100 && !dropped; i++) {
    usleep(10000);
    dropped = ObjectTable::instance().snapshot()->find(zlib_pc) == nullptr;
  }
  EXPECT_TRUE(dropped);  // the builder thread saw the loader's dlclose counter move
}


// A library loaded after the snapshot, the snapshot then refreshed: its rows are not built when the
// first walk meets it (the walk asks for them). The walk reads the FDEs of zlib's frames in place
// instead of falling back, gives libunwind's frames, and is no memo.
Both g_lazy;
int g_lazy_calls = 0;
WalkStatus g_lazy_first;
bool g_lazy_memo = false;  // the first walk made a memo
void* zalloc_lazy(void*, unsigned items, unsigned size) {
  WalkMemo memo;
  if (g_lazy_calls++ == 0) {
    g_lazy.scratch.clear();
    reference(&g_lazy.scratch);
    uint64_t frames[256];
    const int n = unwind_here(frames, 256, &g_lazy_first, true, nullptr, 0, &memo);
    g_lazy.ours.assign(frames + (n ? 1 : 0), frames + n);
    if (!g_lazy.scratch.empty()) g_lazy.ref.assign(g_lazy.scratch.begin() + 1, g_lazy.scratch.end());
    g_lazy_memo = memo.words > 0;
  }
  return calloc(items, size);
}

TEST_F(Unwinder, AFdeReadInPlaceWalksALibraryWhoseRowsAreBeingBuilt) {
  const auto [z, init, end] = load_zlib();
  if (!z) GTEST_SKIP() << "libz is already loaded, or missing";
  ASSERT_TRUE(init && end);
  ObjectTable::instance().refresh_now();
  const TextRange* r = ObjectTable::instance().snapshot()->find(reinterpret_cast<uint64_t>(init));
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->object->rows.load(), nullptr) << "zlib's rows built before any walk asked for them";
  z_stream s{};
  s.zalloc = zalloc_lazy;
  s.zfree = zfree;
  ASSERT_EQ(init(&s, 6, ZLIB_VERSION, static_cast<int>(sizeof s)), Z_OK);
  end(&s);
  dlclose(z);
  EXPECT_FALSE(g_lazy_first.needs_fallback()) << "walk end " << static_cast<int>(g_lazy_first.end);
  EXPECT_GT(g_lazy_first.lazy_rows, 0);
  EXPECT_EQ(g_lazy.ours, g_lazy.ref) << "ours:" << show(g_lazy.ours) << "\nref: " << show(g_lazy.ref);
  EXPECT_FALSE(g_lazy_memo) << "a walk through FDEs read in place made a memo";
}

// A context stopped inside a PLT stub (recorded by hand: pc at the stub's first jump, at its push,
// and past the push): the row built from the .plt's CFA expression gives the same caller as libunwind.
__attribute__((noinline)) uint64_t some_return_address(int which) {
  return which ? reinterpret_cast<uint64_t>(&capture_both) + 5 : reinterpret_cast<uint64_t>(&reference) + 7;
}

TEST_F(Unwinder, InsideAPltStubEqualsLibunwind) {
  const Snapshot* snap = ObjectTable::instance().snapshot();
  const TextRange* r = snap->find(reinterpret_cast<uint64_t>(&chain_nofp));
  ASSERT_NE(r, nullptr);
  const auto* rows = r->object->rows.load();
  const FrameRow* plt = nullptr;
  for (const auto& row : *rows)
    if (row.rule() == kCfaPlt && !plt) plt = &row;
  ASSERT_NE(plt, nullptr) << "no .plt row in chain_nofp (is the PLT built with -z ibtplt?)";
  uint64_t entry = r->object->bias + plt->loc;  // the first entry after PLT0
  std::vector<uint64_t> stack = {some_return_address(0), some_return_address(1), 0, 0, 0, 0, 0, 0};
  uint64_t lo = reinterpret_cast<uint64_t>(stack.data()), hi = lo + stack.size() * 8;
  for (uint64_t at : {uint64_t{0}, uint64_t{6}, uint64_t{11}}) {
    Regs regs;
    regs.pc = entry + at;
    regs.sp = lo;
    regs.fp = lo + 48;
    uint64_t out[8];
    WalkStatus st;
    int n = walk(regs, hi, out, 8, &st);
    ASSERT_GE(n, 1) << at;
    unw_context_t ctx;
    unw_getcontext(&ctx);
    ctx.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(regs.pc);
    ctx.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(regs.sp);
    ctx.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(regs.fp);
    unw_cursor_t cur;
    ASSERT_EQ(unw_init_local2(&cur, &ctx, UNW_INIT_SIGNAL_FRAME), 0);
    ASSERT_GT(unw_step(&cur), 0);
    unw_word_t ip = 0;
    unw_get_reg(&cur, UNW_REG_IP, &ip);
    EXPECT_EQ(out[0], ip) << "pc at PLT entry + " << at;
    EXPECT_EQ(out[0], at < 11 ? stack[0] : stack[1]) << "pc at PLT entry + " << at;
  }
}

// Incremental unwinding (issue 22): a walk takes the frames it shares with the previous walk on its
// thread from that walk's record after re-reading their stack words. Each test below changes the
// stack between two walks where a reuse that checked too little would return the previous frames.

// Two callers of the chain with the same frame size, called from one place: between two captures
// only the caller differs, at the same depth, under the same leaf frames.
__attribute__((noinline)) int outer_a(void* b) {
  volatile int pad = 1;
  int r = chain_nofp(5, bottom, b);
  return r + pad;
}
__attribute__((noinline)) int outer_b(void* b) {
  volatile int pad = 2;
  int r = chain_nofp(5, bottom, b);
  return r + pad;
}
__attribute__((noinline)) int call_outer(int (*fn)(void*), void* b) {
  int r = fn(b);
  asm volatile("" ::: "memory");
  return r + 1;
}

TEST_F(Unwinder, ADifferentCallerAtTheSameDepthIsWalkedNotTakenFromThePreviousWalk) {
  Both walks[4];
  int (*const callers[4])(void*) = {outer_a, outer_b, outer_a, outer_a};
  // From one call site: b1 walks into a1's record (the frames below outer_b are checked, then the
  // caller differs), a2 into b1's, and a3 into a2's, the same stack (taken from the record).
  for (int i = 0; i < 4; i++) call_outer(callers[i], &walks[i]);
  const Both &a1 = walks[0], &b1 = walks[1], &a2 = walks[2], &a3 = walks[3];
  for (const Both* b : {&a1, &b1, &a2, &a3}) {
    EXPECT_FALSE(b->status.needs_fallback());
    EXPECT_GT(b->ours.size(), 15u);
    EXPECT_EQ(b->ours, b->ref) << "ours:" << show(b->ours) << "\nref: " << show(b->ref);
  }
  ASSERT_EQ(a1.ours.size(), b1.ours.size());
  EXPECT_NE(a1.ours, b1.ours);  // the return address into outer_a or outer_b
  EXPECT_EQ(a1.ours, a2.ours);
  // The reuse was tried: the leaf frames up to the chain's outermost link came from the record (and
  // stopped at the caller that differed), and a3's whole stack did.
  EXPECT_GE(b1.status.reused, 6);
  EXPECT_EQ(b1.status.reuse_runs, 2);  // again above outer_b: call_outer's frame and its callers'
  EXPECT_EQ(a3.status.reuse_runs, 1);
  EXPECT_LT(b1.status.reused, a3.status.reused);
  EXPECT_GE(a3.status.reused + 2u, a3.ours.size());
}

// gcc realigns the stack of a function with over-aligned locals through a DRAP register when the
// function also calls alloca (or passes arguments on the stack): its CFA is *(rbp - 8k) and the
// caller's rbp is saved at rbp (DW_CFA_expression r6 (DW_OP_breg6 0)). A builder that took
// that rbp rule for an unsupported one failed this: the walk stepped such a frame by the frame
// pointer chain, took a wrong sp for its caller and ended there (found when a test's own body became
// such a frame).
__attribute__((noinline)) int realigned(int depth, void* b) {
  alignas(64) volatile uint64_t pad[8];
  pad[0] = static_cast<uint64_t>(depth);
  char* p = static_cast<char*>(alloca(16 + static_cast<size_t>(depth & 1) * 16));
  p[0] = 1;
  asm volatile("" ::"r"(p) : "memory");
  int r = chain_nofp(depth, bottom, b);
  return r + static_cast<int>(pad[0]);
}
// With a frame pointer: its CFA is rbp + 16, so the walk needs the rbp that realigned saved.
__attribute__((noinline, optimize("no-omit-frame-pointer"))) int call_realigned(int depth, void* b) {
  volatile uint64_t pad[3] = {1, 2, 3};
  int r = realigned(depth, b) + static_cast<int>(pad[1]);
  asm volatile("" ::: "memory");
  return r + 1;
}

TEST_F(Unwinder, ThroughAFrameRealignedWithADrapRegisterEqualsLibunwind) {
  // The row of realigned's calls: this build made it a DRAP frame (else the test tests nothing).
  const Snapshot* snap = ObjectTable::instance().snapshot();
  const uint64_t fn = reinterpret_cast<uint64_t>(&realigned);
  const TextRange* tr = snap->find(fn);
  ASSERT_NE(tr, nullptr);
  const auto* rows = tr->object->rows.load();
  bool drap = false;
  for (uint32_t d = 0; d < 512 && !drap; d++) {
    const FrameRow* row = find_row(rows->data(), rows->size(), static_cast<uint32_t>(fn + d - tr->object->bias));
    drap = row && row->rule() == kCfaDerefFp && row->fp_off == kFpAtFp;
  }
  ASSERT_TRUE(drap) << "realigned() has no row with CFA *(rbp + off) and rbp saved at rbp";
  Both walks[3];
  for (Both& b : walks) call_realigned(3, &b);  // one call site: the later walks reuse the first's record
  for (const Both& b : walks) {
    EXPECT_FALSE(b.status.needs_fallback());
    EXPECT_EQ(b.status.end, WalkEnd::Outermost);
    EXPECT_GT(b.ours.size(), 8u);
    EXPECT_EQ(b.ours, b.ref) << "ours:" << show(b.ours) << "\nref: " << show(b.ref);
  }
  EXPECT_GE(walks[2].status.reused + 2u, walks[2].ours.size());  // taken from the record, through realigned's frame
}

// unwind_here(..., incremental = false) (StackCapture::set_incremental_unwind(false)): every frame walked, the same frames.
__attribute__((noinline)) int walk_twice(void* arg) {
  auto* w = static_cast<Both*>(arg);  // [0]: incremental, [1]: every frame walked
  uint64_t frames[2][256];
  int n[2];
  for (int i = 0; i < 2; i++) n[i] = unwind_here(frames[i], 256, &w[i].status, i == 0);
  for (int i = 0; i < 2; i++) w[i].ours.assign(frames[i] + 1, frames[i] + n[i]);
  asm volatile("" ::: "memory");
  return 0;
}

TEST_F(Unwinder, TheFullWalkIsTheIncrementalWalksFrames) {
  Both w[2];
  for (int round = 0; round < 3; round++) chain_nofp(4, walk_twice, w);
  EXPECT_GT(w[0].ours.size(), 10u);
  EXPECT_EQ(w[0].ours, w[1].ours);
  EXPECT_GT(w[0].status.reused, 10);
  EXPECT_EQ(w[1].status.reused, 0);
}

// Stacks made by hand: a frame pointer chain through chain_nocfi's object (no CFI: each frame is
// stepped by its saved rbp at rbp and its return address above it), in a buffer.
// The page after the buffer is inaccessible: a read past the stack's top faults.
struct HandStack {
  static constexpr size_t kPage = 4096;
  void* map = mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  std::span<uint64_t> w{static_cast<uint64_t*>(map), kPage / 8};
  HandStack() { mprotect(static_cast<char*>(map) + kPage, kPage, PROT_NONE); }
  ~HandStack() { munmap(map, 2 * kPage); }
  HandStack(const HandStack&) = delete;
  HandStack& operator=(const HandStack&) = delete;
  uint64_t lo() const { return reinterpret_cast<uint64_t>(w.data()); }
  uint64_t hi() const { return lo() + w.size() * 8; }
  uint64_t at(size_t i) const { return lo() + i * 8; }
  // Frames at these word indices (increasing), each returning to the given address; the last one's
  // caller is the outermost (return address 0).
  void chain(const std::vector<size_t>& f, const std::vector<uint64_t>& ra) {
    for (size_t i = 0; i < f.size(); i++) {
      w[f[i]] = i + 1 < f.size() ? at(f[i + 1]) : 0;
      w[f[i] + 1] = i + 1 < f.size() ? ra[i] : 0;
    }
  }
};

struct Walked {
  std::vector<uint64_t> frames;
  WalkStatus status;
  bool operator==(const Walked& o) const {
    return frames == o.frames && status.end == o.status.end && status.fp_frames == o.status.fp_frames;
  }
};
Walked walk_of(const Regs& r, uint64_t hi, int max = 64, bool incremental = true) {
  Walked out;
  uint64_t frames[300];
  out.frames.assign(frames, frames + walk(r, hi, frames, max, &out.status, incremental));
  return out;
}
// The walk with every frame walked (the thread's record untouched): the reference for the incremental walk.
Walked full_walk_of(const Regs& r, uint64_t hi, int max = 64) { return walk_of(r, hi, max, false); }

const TextRange* nocfi_text() {
  const TextRange* r = ObjectTable::instance().snapshot()->find(reinterpret_cast<uint64_t>(&chain_nocfi));
  return r && !r->object->hdr_addr ? r : nullptr;
}

// Only a saved rbp changes between the walks, not a return address: the frame above it is another
// one (found through the new rbp), which a reuse that compared return addresses alone would miss.
TEST_F(Unwinder, ASavedFramePointerChangedBetweenTwoWalksIsFollowed) {
  const TextRange* text = nocfi_text();
  ASSERT_NE(text, nullptr) << "chain_nocfi's object has CFI";
  HandStack s;
  std::vector<size_t> f = {2, 10, 20, 30, 40, 50, 60, 70};
  std::vector<uint64_t> ra;
  for (size_t i = 0; i < f.size(); i++) ra.push_back(text->lo + 16 + i * 4);
  s.chain(f, ra);
  // Another chain higher up, with other return addresses.
  std::vector<size_t> g = {100, 110, 120};
  std::vector<uint64_t> rb = {text->lo + 200, text->lo + 204, text->lo + 208};
  s.chain(g, rb);
  Regs r;
  r.pc = text->lo + 8;
  r.sp = s.lo();
  r.fp = s.at(f[0]);
  forget_walk();
  const Walked first = walk_of(r, s.hi());
  ASSERT_EQ(first, full_walk_of(r, s.hi()));
  ASSERT_EQ(first.status.end, WalkEnd::Outermost);
  ASSERT_EQ(first.frames.size(), f.size() - 1);
  const Walked again = walk_of(r, s.hi());
  EXPECT_EQ(again, first);
  EXPECT_EQ(again.status.reused, first.frames.size());  // all of it from the record
  s.w[f[3]] = s.at(g[0]);  // frame 3's saved rbp: the chain above it is g's
  const Walked changed = walk_of(r, s.hi());
  const Walked ref = full_walk_of(r, s.hi());
  EXPECT_EQ(changed, ref) << "incremental:" << show(changed.frames) << "\nfull:       " << show(ref.frames);
  EXPECT_NE(ref, first);
  EXPECT_EQ(ref.frames.size(), 4u + g.size() - 1);
  // Back: the steps up to frame 3's were taken from the record (its return address is the same; the
  // rbp it restores is read as it is now), the next one, whose CFA is that rbp plus 16, was walked.
  walk_of(r, s.hi());  // the record of the changed stack
  s.w[f[3]] = s.at(f[4]);
  const Walked back = walk_of(r, s.hi());
  EXPECT_EQ(back, first);
  EXPECT_EQ(back.status.reused, 4);
}

// The same leaf frames at another depth (the launch path under a deeper caller): the first frames
// are checked at their new place (every address and every saved rbp shifted), up to the frame whose
// caller is not shifted; that one is walked, and the frames above it are again the record's.
TEST_F(Unwinder, TheSameLeafFramesAtAnotherDepthAreCheckedThere) {
  const TextRange* text = nocfi_text();
  ASSERT_NE(text, nullptr) << "chain_nocfi's object has CFI";
  HandStack s;
  std::vector<size_t> f = {20, 30, 40, 50, 80, 90, 100, 110};
  std::vector<uint64_t> ra;
  for (size_t i = 0; i < f.size(); i++) ra.push_back(text->lo + 16 + i * 4);
  s.chain(f, ra);
  Regs r;
  r.pc = text->lo + 8;
  r.sp = s.at(18);
  r.fp = s.at(f[0]);
  forget_walk();
  const Walked first = walk_of(r, s.hi());
  ASSERT_EQ(first.frames.size(), f.size() - 1);
  for (int k : {-6, 8, -14, 20}) {  // words; f[3] + k + 2 <= f[4]
    std::vector<size_t> g = f;
    for (size_t i = 0; i < 4; i++) g[i] = f[i] + static_cast<size_t>(k);
    for (size_t i = 0; i < 40; i++) s.w[i] = 0;
    s.chain(g, ra);  // frames 0-3 moved by k words, the rest in place
    Regs moved = r;
    moved.sp = r.sp + static_cast<uint64_t>(k * 8);
    moved.fp = s.at(g[0]);
    const Walked ref = full_walk_of(moved, s.hi());
    EXPECT_EQ(ref.frames, first.frames) << k;  // the same return addresses
    s.chain(f, ra);
    walk_of(r, s.hi());  // the record: the frames in place
    s.chain(g, ra);
    const Walked again = walk_of(moved, s.hi());
    EXPECT_EQ(again, ref) << k;
    // Frames 0-3 were checked shifted (frame 3 restores an rbp that is not shifted), frame 4's step
    // (CFA = that rbp + 16) was walked, the rest checked in place.
    EXPECT_EQ(again.status.reuse_runs, 2) << k;
    EXPECT_EQ(again.status.reused, 4 + 2) << k;  // steps 0-3, then 5 and 6 (7's caller is the outermost)
    // Again on the same stack: the record of the moved frames has their moved rbps: all checked.
    const Walked same = walk_of(moved, s.hi());
    EXPECT_EQ(same, ref) << k;
    EXPECT_EQ(same.status.reuse_runs, 1) << k;
    EXPECT_EQ(same.status.reused, f.size() - 1) << k;
  }
}

// Moved up, the record's frames near the stack's top would lie past it: the check stops where the
// walk would (the next stack pointer past the top), without reading there (the page above faults).
TEST_F(Unwinder, TheSameLeafFramesMovedUpAreNotReadPastTheStacksTop) {
  const TextRange* text = nocfi_text();
  ASSERT_NE(text, nullptr) << "chain_nocfi's object has CFI";
  HandStack s;
  ASSERT_EQ(s.w.size(), 512u);
  const std::vector<size_t> f = {400, 420, 440, 460, 480, 500, 506, 510};
  std::vector<uint64_t> ra;
  for (size_t i = 0; i < f.size(); i++) ra.push_back(text->lo + 16 + i * 4);
  s.chain(f, ra);
  Regs r;
  r.pc = text->lo + 8;
  r.sp = s.at(398);
  r.fp = s.at(f[0]);
  forget_walk();
  ASSERT_EQ(walk_of(r, s.hi()).frames.size(), f.size() - 1);
  // The same frames 10 words up, as far as they fit: the frame at 510 holds the moved frame's rbp
  // (past the top: 516) and its return address.
  for (size_t i = 380; i < 512; i++) s.w[i] = 0;
  s.chain({410, 430, 450, 470, 490, 510}, ra);
  s.w[510] = s.at(516);
  s.w[511] = ra[5];
  Regs moved = r;
  moved.sp = r.sp + 80;
  moved.fp = s.at(410);
  const Walked ref = full_walk_of(moved, s.hi());
  EXPECT_EQ(ref.status.end, WalkEnd::BadFrame);
  EXPECT_EQ(ref.frames.size(), 6u);
  const Walked again = walk_of(moved, s.hi());
  EXPECT_EQ(again, ref);
  EXPECT_EQ(again.status.reused, 6);
}

// Random hand-made stacks for the property tests: every word random (a return address into some
// object, an address on the stack, zero or anything), then a frame pointer chain of up to 40 frames
// returning mostly into chain_nocfi's object (no CFI: stepped by frame pointer), sometimes into
// objects with CFI (walked by their rows), and a start in chain_nocfi's code at its first frame.
struct RandomChains {
  const TextRange* text;
  std::vector<uint64_t> text_pcs;  // addresses across every loaded object's code
  std::mt19937_64 rng;
  RandomChains(const TextRange* t, uint64_t seed) : text(t), rng(seed) {
    // The table fixed while the properties compare two walks: the builder stopped (a walk restarts it
    // only for an object missing from the snapshot), every loaded object in the snapshot with its rows
    // built. With the builder running, the table changed between two walks about once in 40 runs
    // under ThreadSanitizer, and they differed by a frame: its refresh dropped a library that an
    // earlier test had unloaded (a new generation: the second walk emptied its cache and stopped where
    // the first had gone on), or it built the rows of one an earlier test had loaded (the first walk
    // ended NotReady, the second went on with the rows).
    ObjectTable::instance().stop_builder();
    ObjectTable::instance().build_all_now();
    for (const auto& r : ObjectTable::instance().snapshot()->ranges)
      for (uint64_t a = r.lo; a < r.hi && text_pcs.size() < 4096; a += (r.hi - r.lo) / 64 + 1) text_pcs.push_back(a);
  }
  uint64_t nocfi_pc() { return text->lo + 1 + rng() % (text->hi - text->lo - 1); }
  // Fills s; f: the chain's frames (word indices), ra: their return addresses. Returns the start.
  Regs fill(HandStack& s, std::vector<size_t>& f, std::vector<uint64_t>& ra) {
    for (auto& w : s.w) {
      switch (rng() % 4) {
        case 0: w = text_pcs[rng() % text_pcs.size()] + rng() % 64; break;
        case 1: w = s.at(rng() % s.w.size()); break;
        case 2: w = 0; break;
        default: w = rng(); break;
      }
    }
    for (size_t at = 2 + rng() % 8; at + 2 < s.w.size() && f.size() < 40; at += 2 + rng() % 16) f.push_back(at);
    for (size_t i = 0; i < f.size(); i++) ra.push_back(rng() % 8 ? nocfi_pc() : text_pcs[rng() % text_pcs.size()]);
    s.chain(f, ra);
    Regs r;
    r.pc = nocfi_pc();
    r.sp = s.lo();
    r.fp = s.at(f[0]);
    return r;
  }
};

// Property: whatever changes between two walks on one stack (return addresses, saved rbps, other
// words, the starting registers, the frame limit), the second walk, which starts from the first's
// record, equals the walk of every frame. Hand-made frame pointer chains with random words around
// them, some of those words return addresses into objects with CFI (walked by their rows).
TEST_F(Unwinder, IncrementalWalkEqualsTheFullWalkWhateverChangedOnTheStack) {
  const TextRange* text = nocfi_text();
  ASSERT_NE(text, nullptr) << "chain_nocfi's object has CFI";
  RandomChains gen(text, 7);
  auto& rng = gen.rng;
  auto nocfi_pc = [&] { return gen.nocfi_pc(); };
  auto& text_pcs = gen.text_pcs;
  HandStack s;
  int trials = 0, reused_all = 0, reused_part = 0, two_runs = 0, shifted = 0, deep = 0;
  for (int trial = 0; trial < 20000; trial++) {
    std::vector<size_t> f;
    std::vector<uint64_t> ra;
    Regs r = gen.fill(s, f, ra);
    const int max1 = rng() % 4 ? 64 : 1 + static_cast<int>(rng() % 40);
    forget_walk();
    const uint64_t generation = ObjectTable::instance().snapshot()->generation;
    const Walked first = walk_of(r, s.hi(), max1);
    uint64_t last_sp = r.sp;
    ASSERT_EQ(first, full_walk_of(r, s.hi(), max1)) << "trial " << trial << ", snapshot generation " << generation << " then "
                                                    << ObjectTable::instance().snapshot()->generation;
    deep += first.frames.size() >= 20;
    // Three rounds of 1-3 changes, each followed by the incremental walk (from the record that the
    // previous incremental walk left) and the full one: a return address, a saved rbp (to another
    // frame of the chain or anywhere), any word; or the starting registers (another frame to start
    // from, another pc), the frame limit.
    for (int round = 0; round < 3; round++) {
      for (int c = 1 + static_cast<int>(rng() % 3); c > 0; c--) {
        const size_t i = rng() % f.size();
        switch (rng() % 7) {
          case 0: s.w[f[i] + 1] = nocfi_pc(); break;
          case 1: s.w[f[i]] = s.at(f[rng() % f.size()]); break;
          case 2: s.w[f[i]] = s.at(rng() % s.w.size()); break;
          case 3: s.w[rng() % s.w.size()] = rng() % 2 ? nocfi_pc() : rng(); break;
          case 4: r.fp = s.at(f[i]); r.sp = s.at(f[i] > 8 ? f[i] - 1 - rng() % 8 : 0); break;
          case 5: {  // the frames below frame i moved by k words (the chain's leaf part at another depth)
            const int k = static_cast<int>(rng() % 17) - 8;
            if (static_cast<int>(f[0]) + k < 1 || static_cast<int>((r.sp - s.lo()) / 8) + k < 0 || f[i] + 2 + static_cast<size_t>(std::max(k, 0)) > (i + 1 < f.size() ? f[i + 1] : s.w.size())) break;
            for (size_t j = 0; j <= i; j++) f[j] += static_cast<size_t>(k);
            s.chain(f, ra);
            r.sp += static_cast<uint64_t>(k * 8);
            r.fp = s.at(f[0]);
            break;
          }
          default: r.pc = rng() % 2 ? nocfi_pc() : text_pcs[rng() % text_pcs.size()]; break;
        }
      }
      const int max2 = rng() % 4 ? 64 : 1 + static_cast<int>(rng() % 40);
      const uint64_t round_generation = ObjectTable::instance().snapshot()->generation;
      const Walked incremental = walk_of(r, s.hi(), max2);
      const Walked ref = full_walk_of(r, s.hi(), max2);
      ASSERT_EQ(incremental, ref) << "trial " << trial << " round " << round << "\nincremental:" << show(incremental.frames)
                                  << "\nfull:       " << show(ref.frames) << "\nsnapshot generation " << round_generation << " then "
                                  << ObjectTable::instance().snapshot()->generation;
      trials++;
      if (incremental.status.reused && incremental.status.reused + 1u >= incremental.frames.size()) reused_all++;
      else if (incremental.status.reused) reused_part++;
      two_runs += incremental.status.reuse_runs >= 2;
      shifted += incremental.status.reused && r.sp != s.lo() && r.sp != last_sp;
      last_sp = r.sp;
    }
  }
  EXPECT_EQ(trials, 60000);
  // The cases the property is about did occur: deep chains, reuses cut short by a change, whole reuses.
  EXPECT_GT(deep, 3000);
  EXPECT_GT(reused_part, 2000);
  EXPECT_GT(reused_all, 2000);
  EXPECT_GT(two_runs, 1000);  // frames reused again above a part that differed
  EXPECT_GT(shifted, 1000);   // frames reused from a walk that started at another sp
}

// The memo of a walk (WalkMemo): from the same place it holds and the walk is skipped; from another
// caller whose frames have the same sizes (the same start sp, the same depth) the return address it
// logged differs, so it does not hold, and the walk gives that caller's frames.
__attribute__((noinline)) int walk_here(const WalkMemo* check, WalkMemo* memo, uint64_t* frames) {
  WalkStatus st;
  int n = unwind_here(frames, 256, &st, true, &check, check ? 1 : 0, memo);
  asm volatile("" ::: "memory");
  return n;
}
__attribute__((noinline)) int from_a(const WalkMemo* c, WalkMemo* m, uint64_t* f) {
  int n = walk_here(c, m, f);
  asm volatile("");
  return n;
}
__attribute__((noinline)) int from_b(const WalkMemo* c, WalkMemo* m, uint64_t* f) {
  int n = walk_here(c, m, f);
  asm volatile("");
  return n;
}
using From = int (*)(const WalkMemo*, WalkMemo*, uint64_t*);
__attribute__((noinline)) int via_from(From p, const WalkMemo* c, WalkMemo* m, uint64_t* f) {
  int n = p(c, m, f);
  asm volatile("");
  return n;
}

TEST_F(Unwinder, AWalksMemoHoldsFromTheSamePlaceAndNotFromAnotherCallerAtTheSameDepth) {
  auto memo = std::make_unique<WalkMemo>();
  auto other = std::make_unique<WalkMemo>();
  uint64_t a[256], again[256], b[256], b_again[256], a_other[256];
  struct Step {
    From from;
    const WalkMemo* check;
    WalkMemo* memo;
    uint64_t* out;
    int n = 0;
  } steps[] = {
      {from_a, nullptr, memo.get(), a},          // the memo of from_a's walk
      {from_a, memo.get(), nullptr, again},      // holds
      {from_b, memo.get(), other.get(), b},      // does not: walked, and from_b's memo
      {from_b, other.get(), nullptr, b_again},   // holds
      {from_a, other.get(), nullptr, a_other},   // does not
  };
  for (Step& st : steps) st.n = via_from(st.from, st.check, st.memo, st.out);  // one call site: the same stack above
  const int na = steps[0].n, nb = steps[2].n;
  ASSERT_GT(na, 3);
  ASSERT_GT(memo->words, 0) << "a walk to the outermost frame is a memo";
  EXPECT_EQ(steps[1].n, kMemoHeld);
  ASSERT_NE(nb, kMemoHeld) << "from_b's return address is not from_a's";
  ASSERT_EQ(other->sp, memo->sp) << "the two callers do not start at the same depth: the test proves nothing";
  ASSERT_EQ(nb, na);
  EXPECT_NE(b[1], a[1]);  // [0]: into walk_here's caller; [1]: into via_from, from from_a / from_b
  EXPECT_TRUE(std::equal(a + 2, a + na, b + 2));
  EXPECT_EQ(steps[3].n, kMemoHeld);
  EXPECT_NE(steps[4].n, kMemoHeld);
  EXPECT_TRUE(std::equal(a, a + na, a_other));
}

// unwind_from: a walk from a state taken in a frame, made by any function called below it, is that
// frame's stack (what unwind_here called there gives, past its own return address), and a memo made by
// one such function holds when another checks it (StackCapture::capture checks in its own frame what
// capture_walk's walks made in theirs). Two callees with different frames, so that only the start
// makes the two agree.
__attribute__((noinline)) int walk_from_below(const Regs& start, uint64_t* out, WalkMemo* memo) {
  WalkStatus st;
  volatile char pad[64];  // another frame size than check_from_below's
  pad[0] = 0;
  const int n = unwind_from(start, out, 256, &st, true, nullptr, 0, memo);
  asm volatile("" ::"r"(pad) : "memory");
  return n;
}
__attribute__((noinline)) bool check_from_below(const Regs& start, const WalkMemo& memo) {
  volatile char pad[640];
  pad[0] = 0;
  const bool held = memo_holds_here(memo, start, 256);
  asm volatile("" ::"r"(pad) : "memory");
  return held;
}

TEST_F(Unwinder, AWalkFromAStateTakenAboveIsThatFramesStackAndItsMemoHoldsFromAnyCallee) {
  Regs start;
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(start.pc), "=r"(start.sp), "=r"(start.fp));
  uint64_t here[256], from[256];
  WalkStatus st;
  const int n = unwind_here(here, 256, &st);  // here[0]: unwind_here's return address into this frame
  auto memo = std::make_unique<WalkMemo>();
  const int m = walk_from_below(start, from, memo.get());
  ASSERT_GT(n, 3);
  ASSERT_EQ(m, n - 1) << "ours:" << show({from, from + std::max(m, 0)}) << " here:" << show({here, here + n});
  EXPECT_TRUE(std::equal(from, from + m, here + 1));
  ASSERT_GT(memo->words, 0) << "a walk to the outermost frame is a memo";
  EXPECT_TRUE(check_from_below(start, *memo));
  Regs deeper = start;  // the same pc at another depth: not this memo's start
  deeper.sp -= 16;
  EXPECT_FALSE(check_from_below(deeper, *memo));
  Regs off_stack = start;  // not on this thread's stack: false, nothing read
  off_stack.sp = reinterpret_cast<uint64_t>(memo.get()) & ~uint64_t{15};
  EXPECT_FALSE(check_from_below(off_stack, *memo));
}

// Property: whenever a memo holds for a walk's start on a stack changed since the memo was made
// (return addresses, saved rbps, other words, the start, the limit), the walk of every frame returns
// the memo's frames and end. Hand-made frame pointer chains as in the incremental walk's property,
// whose words the walk reads; a memo is remade after each check, as the capture does on a miss.
TEST_F(Unwinder, AMemoHoldsOnlyWhereTheWalkReturnsItsFrames) {
  const TextRange* text = nocfi_text();
  ASSERT_NE(text, nullptr) << "chain_nocfi's object has CFI";
  RandomChains gen(text, 11);
  auto& rng = gen.rng;
  auto nocfi_pc = [&] { return gen.nocfi_pc(); };
  HandStack s;
  auto memo = std::make_unique<WalkMemo>();
  int held = 0, held_changed = 0, not_held = 0, memos = 0;
  int causes[static_cast<int>(MemoMiss::kCount)] = {};
  for (int trial = 0; trial < 10000; trial++) {
    std::vector<size_t> f;
    std::vector<uint64_t> ra;
    Regs r = gen.fill(s, f, ra);
    int max = rng() % 4 ? 64 : 1 + static_cast<int>(rng() % 40);
    uint64_t frames[300];
    Walked made;
    made.frames.assign(frames, frames + walk(r, s.hi(), frames, max, &made.status, rng() % 2, memo.get()));
    for (int round = 0; round < 4; round++) {
      const std::vector<uint64_t> before(s.w.begin(), s.w.end());
      const Regs r0 = r;
      for (int c = static_cast<int>(rng() % 3); c > 0; c--) {  // round with no change: the memo must hold
        const size_t i = rng() % f.size();
        switch (rng() % 7) {
          case 0: s.w[f[i] + 1] = nocfi_pc(); break;
          case 1: s.w[f[i]] = s.at(f[rng() % f.size()]); break;
          case 2: s.w[f[i]] = s.at(rng() % s.w.size()); break;
          case 3: s.w[rng() % s.w.size()] = rng() % 2 ? nocfi_pc() : rng(); break;
          case 4: r.fp = s.at(f[i]); break;
          case 5: r.sp = s.at(f[i] > 8 ? f[i] - 1 - rng() % 8 : 0); break;
          default: max = rng() % 4 ? 64 : 1 + static_cast<int>(rng() % 40); break;
        }
      }
      const bool holds = memo->words && memo_holds(*memo, r, s.hi(), max);
      // memo_miss (the capture stats' cause) agrees with memo_holds, and names the input that moved.
      const MemoMiss why = memo_miss(*memo, r, s.hi(), max);
      ASSERT_EQ(holds, why == MemoMiss::Held) << "trial " << trial << " round " << round;
      causes[static_cast<int>(why)]++;
      if (why == MemoMiss::Sp) {
        EXPECT_NE(r.sp, r0.sp);
      }
      if (why == MemoMiss::Words) {
        EXPECT_FALSE(std::equal(s.w.begin(), s.w.end(), before.begin()));
      }
      const Walked ref = full_walk_of(r, s.hi(), max);
      if (holds) {
        ASSERT_EQ(ref.frames, made.frames) << "trial " << trial << " round " << round << "\nmemo:" << show(made.frames)
                                           << "\nfull:" << show(ref.frames);
        ASSERT_EQ(ref.status.end, made.status.end) << "trial " << trial << " round " << round;
        held++;
        held_changed += !std::equal(s.w.begin(), s.w.end(), before.begin()) || r0.fp != r.fp;
      } else {
        not_held++;
        if (std::equal(s.w.begin(), s.w.end(), before.begin()) && r0.sp == r.sp && r0.fp == r.fp && memo->words) {
          EXPECT_NE(memo->max, max) << "an unchanged stack's memo did not hold, trial " << trial;
        }
      }
      made.frames.assign(frames, frames + walk(r, s.hi(), frames, max, &made.status, rng() % 2, memo.get()));
      memos += memo->words > 0;
    }
  }
  // Both sides of the property occurred, and memos held across changes that the walk does not read
  // (words off its path, saved rbps that no rule used).
  EXPECT_GT(held, 5000);
  EXPECT_GT(held_changed, 2000);
  EXPECT_GT(not_held, 5000);
  EXPECT_GT(memos, 8000);
  for (MemoMiss m : {MemoMiss::Start, MemoMiss::Sp, MemoMiss::Fp, MemoMiss::Words})
    EXPECT_GT(causes[static_cast<int>(m)], 100) << "cause " << static_cast<int>(m) << " never named";
}

// The fingerprint sees every single moved word: for each word a memo logged (first, middle, last, the
// tail after the last group of four), changed alone by differences of one bit anywhere (a return
// address moved by 1, a stack address by 8, the top bit), the memo must not hold; put back, it holds.
TEST_F(Unwinder, AMemoFailsWhenAnyOneOfItsWordsMoves) {
  const TextRange* text = nocfi_text();
  ASSERT_NE(text, nullptr) << "chain_nocfi's object has CFI";
  RandomChains gen(text, 29);
  HandStack s;
  auto memo = std::make_unique<WalkMemo>();
  int checked = 0, sizes_mod4[4] = {};
  for (int trial = 0; trial < 200; trial++) {
    std::vector<size_t> f;
    std::vector<uint64_t> ra;
    Regs r = gen.fill(s, f, ra);
    if (trial % 2) r.fp = gen.rng();  // the first frame's rbp rule then reads no saved rbp: odd counts too
    const int max = 1 + static_cast<int>(gen.rng() % 40);
    uint64_t frames[300];
    WalkStatus st;
    walk(r, s.hi(), frames, max, &st, false, memo.get());
    if (!memo->words) continue;
    ASSERT_TRUE(memo_holds(*memo, r, s.hi(), max)) << "trial " << trial;
    sizes_mod4[memo->words % 4]++;
    for (int i = 0; i < memo->words; i++) {
      uint64_t& word = s.w[memo->offset[i]];  // r.sp is the hand stack's first word
      const uint64_t was = word;
      for (uint64_t delta : {uint64_t{1}, uint64_t{8}, uint64_t{1} << 32, uint64_t{1} << 63, ~uint64_t{0}}) {
        word = was + delta;
        EXPECT_FALSE(memo_holds(*memo, r, s.hi(), max)) << "trial " << trial << ": word " << i << " of " << memo->words
                                                       << " moved by " << delta;
        checked++;
      }
      word = was;
    }
    ASSERT_TRUE(memo_holds(*memo, r, s.hi(), max)) << "trial " << trial << ": words put back";
  }
  EXPECT_GT(checked, 1000);
  for (int m = 0; m < 4; m++) EXPECT_GT(sizes_mod4[m], 0) << "no memo of 4k+" << m << " words: a tail not covered";
}

}  // namespace
}  // namespace aiflame::unwind

namespace aiflame::unwind {
namespace {

// A build that faults (here: the object's .eh_frame_hdr segment made unreadable, as an object unloaded
// during its build would be) leaves that object without rows, counted and noted, and the process
// running. In a child: the crash report's handler replaces the test process's own.
TEST(ObjectTableBuild, AFaultingBuildLeavesTheObjectWithoutRowsAndTheProcessRunning) {
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL);  // under AddressSanitizer, its handler would be the crash report's previous one
    install_crash_report();
    ObjectTable& table = ObjectTable::instance();
    const Snapshot* snap = table.refresh_now();
    const TextRange* r = snap->find(reinterpret_cast<uint64_t>(&chain_nofp));
    if (!r || !r->object->hdr_addr || !r->object->eh_size) _exit(10);
    // The same loaded object (bias and program headers: the builder finds it loaded), its segment
    // replaced by a page without access.
    void* page = mmap(nullptr, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) _exit(11);
    Object o;
    o.path = "/lib/faulting.so";
    o.bias = r->object->bias;
    o.phdr = r->object->phdr;
    o.eh_lo = reinterpret_cast<uint64_t>(page);
    o.eh_size = 8192;
    o.hdr_addr = o.eh_lo + 64;
    table.build_now(&o);
    if (o.state.load() != Object::kBuilt) _exit(12);
    if (!o.rows.load() || !o.rows.load()->empty()) _exit(13);
    if (table.build_faults() != 1) _exit(14);
    if (table.fault_note().find("signal 11 while building the unwind rows of /lib/faulting.so") != 0) _exit(15);
    // The real object still builds.
    table.build_now(r->object);
    if (!r->object->rows.load() || r->object->rows.load()->empty()) _exit(16);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << test::child_ending(status);
}

// A loaded object's identity and CFI segment, into an object of the test's that has no rows yet.
void copy_unbuilt(const Object& from, Object* to) {
  to->path = from.path;
  to->bias = from.bias;
  to->phdr = from.phdr;
  to->eh_lo = from.eh_lo;
  to->eh_size = from.eh_size;
  to->hdr_addr = from.hdr_addr;
}

// Children forked while another thread takes snapshots back to back (the table's locks and the
// loader's held nearly all the time) take snapshots, read the fault note and build rows of their own:
// the forks waited for the locks (util/fork_guard.h), and a child, which has no builder thread, starts
// its own at its first request. Before, the existing test above hung once in ~20 runs under
// ThreadSanitizer, its child waiting for the table's mutex (stop 46's CI ran out of time).
TEST(ObjectTableBuild, ChildrenForkedWhileAnotherThreadTakesSnapshotsUseTheTable) {
  ObjectTable& table = ObjectTable::instance();
  const TextRange* r = table.refresh_now()->find(reinterpret_cast<uint64_t>(&chain_nofp));
  ASSERT_TRUE(r && r->object->hdr_addr && r->object->eh_size);
  table.start_builder();
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  std::thread snapshots([&] {
    while (!stop.load()) {
      table.refresh_now();
      (void)table.fault_note();
      rounds++;
    }
  });
  while (rounds.load() < 3) std::this_thread::yield();
  for (int i = 0; i < 10; i++) {
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(5);
      table.refresh_now();
      (void)table.fault_note();
#if !defined(__SANITIZE_THREAD__)  // ThreadSanitizer ends a forked child that starts a thread
      // A copy of a loaded object, never built: the child's own builder builds it.
      Object o;
      copy_unbuilt(*r->object, &o);
      table.request_build(&o);
      while (o.state.load() != Object::kBuilt) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (!o.rows.load() || o.rows.load()->empty()) _exit(3);
#endif
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << i << ": " << test::child_ending(status);
  }
  stop = true;
  snapshots.join();
}

// A fork while another thread builds an object's rows does not wait for the build, which holds none
// of the locks a fork waits for (util/fork_guard.h), and the child builds that object's rows itself:
// its parent's claim names a thread the child does not have. The build is held in the test's hook
// until the fork has returned, or for 3 s. A build that held the table's work_mu_, registered with the
// fork guard, failed this: the fork returned only once the build was released.
std::atomic<const Object*> g_held_object{nullptr};
std::atomic<int> g_held_in{0};     // the pid whose build is held (a child's own build is not)
std::atomic<int> g_held_stage{0};  // 1: the build is in the hook; 2: released
void hold_build(const Object* o) {
  if (o != g_held_object.load() || getpid() != g_held_in.load()) return;
  g_held_stage.store(1);
  while (g_held_stage.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(ObjectTableBuild, AForkDuringARowBuildDoesNotWaitForItAndTheChildBuildsTheRows) {
  ObjectTable& table = ObjectTable::instance();
  const TextRange* r = table.refresh_now()->find(reinterpret_cast<uint64_t>(&chain_nofp));
  ASSERT_TRUE(r && r->object->hdr_addr && r->object->eh_size);
  Object o;  // a copy of a loaded object, never built
  copy_unbuilt(*r->object, &o);
  g_held_object = &o;
  g_held_in = getpid();
  g_held_stage = 0;
  ObjectTable::set_build_hook_for_tests(hold_build);
  std::thread builder([&] { table.build_now(&o); });
  while (g_held_stage.load() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread watchdog([] {  // a fork that waits for the build returns late instead of never
    for (int i = 0; i < 3000 && g_held_stage.load() != 2; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    g_held_stage = 2;
  });
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    if (o.state.load() == Object::kBuilt) _exit(2);  // the parent's build was over before the fork
    table.build_now(&o);
    if (o.state.load() != Object::kBuilt || !o.rows.load() || o.rows.load()->empty()) _exit(3);
    _exit(0);
  }
  const double fork_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  g_held_stage = 2;
  watchdog.join();
  builder.join();
  ObjectTable::set_build_hook_for_tests(nullptr);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_LT(fork_ms, 1000.0) << "fork() returned only once the build was released";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << test::child_ending(status) << " (2: built before the fork; 3: the child did not build the rows)";
  ASSERT_TRUE(o.rows.load());
  EXPECT_FALSE(o.rows.load()->empty());
  delete o.rows.load();  // what the table keeps for the process's life, for a table object
  delete o.pages;
}

}  // namespace
}  // namespace aiflame::unwind

namespace aiflame::unwind {
namespace {

const Object* object_at(const Snapshot& snap, uint64_t bias) {
  for (const auto& o : snap.objects)
    if (o->bias == bias) return o.get();
  return nullptr;
}

uint64_t bias_of(void* handle) {
  link_map* map = nullptr;
  return handle && dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map ? map->l_addr : 0;
}

// A library loaded where an unloaded one was, between two snapshots: the same bias and (program headers
// at the usual file offset) the same program header address, but an object of its own with its own
// rows, and a new generation (the old object is gone), not the unloaded library's object, rows and
// path.
TEST(ObjectTableSnapshot, ALibraryLoadedWhereAnUnloadedOneWasIsAnObjectOfItsOwn) {
  // Small libraries of glibc's, each loaded after the previous one is unloaded: the loader usually
  // puts it where the previous one was (not always: another thread's mapping may take the place first,
  // as the object table's own refresh did under AddressSanitizer; then the next pair is tried).
  const char* names[] = {"libanl.so.1", "libBrokenLocale.so.1", "libutil.so.1", "libnss_files.so.2", "libnss_dns.so.2"};
  for (const char* name : names)
    if (dlopen(name, RTLD_NOW | RTLD_NOLOAD)) GTEST_SKIP() << name << " is loaded already";
  ObjectTable& table = ObjectTable::instance();
  void* loaded = dlopen(names[0], RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(loaded, nullptr) << dlerror();
  bool met = false;
  for (size_t i = 1; i < std::size(names) && !met; i++) {
    const uint64_t bias = bias_of(loaded);
    const Snapshot* before = table.refresh_now();
    const Object* old = object_at(*before, bias);
    ASSERT_NE(old, nullptr);
    ASSERT_NE(old->path.find(names[i - 1]), std::string::npos) << old->path;
    const uint32_t generation = before->generation;
    dlclose(loaded);
    loaded = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(loaded, nullptr) << dlerror();
    if (bias_of(loaded) != bias) continue;
    met = true;
    const Snapshot* after = table.refresh_now();
    const Object* now = object_at(*after, bias);
    ASSERT_NE(now, nullptr);
    EXPECT_NE(now->path.find(names[i]), std::string::npos) << now->path;
    EXPECT_NE(now, old);
    EXPECT_EQ(after->generation, generation + 1);
  }
  dlclose(loaded);
  table.refresh_now();
  EXPECT_TRUE(met) << "no library was loaded where the one before it had been";
}

}  // namespace
}  // namespace aiflame::unwind

namespace aiflame::unwind {
namespace {

// A library this process had not loaded (nullptr: it had, or it is missing), and its object in a fresh
// snapshot.
Object* fresh_object(const char* soname, const char* symbol, void** handle) {
  *handle = nullptr;
  if (void* h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(h);
    return nullptr;
  }
  *handle = dlopen(soname, RTLD_NOW);
  void* fn = *handle ? dlsym(*handle, symbol) : nullptr;
  if (!fn) return nullptr;
  const TextRange* r = ObjectTable::instance().refresh_now()->find(reinterpret_cast<uint64_t>(fn));
  return r ? r->object : nullptr;
}

bool built_within(const Object* o, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (o->state.load() != Object::kBuilt && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return o->state.load() == Object::kBuilt;
}

// The range read ahead holds the .eh_frame_hdr table and every FDE it names (and starts on a page).
TEST(ObjectTable, TheCfiReadAheadHoldsTheHeaderAndEveryFde) {
  ObjectTable::instance().start_builder();  // as the recorder's start does
  void* h = nullptr;
  Object* o = fresh_object("libmd.so.0", "MD5Init", &h);
  if (!o) GTEST_SKIP() << "libmd.so.0 is loaded already, or missing";
  const PageRange r = cfi_readahead_range(*o);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  ASSERT_GT(r.hi, r.lo);
  EXPECT_EQ(r.lo % page, 0u);
  EXPECT_EQ(r.hi, o->eh_lo + o->eh_size);
  const auto* hdr = reinterpret_cast<const uint8_t*>(o->hdr_addr);
  // The common encodings (GNU ld's and lld's): eh_frame_ptr pcrel sdata4, count udata4, table datarel sdata4.
  ASSERT_EQ(hdr[0], 1);
  ASSERT_EQ(hdr[1], 0x1b);
  ASSERT_EQ(hdr[2], 0x03);
  ASSERT_EQ(hdr[3], 0x3b);
  int32_t eh_frame_rel;
  uint32_t count;
  std::memcpy(&eh_frame_rel, hdr + 4, 4);
  std::memcpy(&count, hdr + 8, 4);
  ASSERT_GT(count, 10u);
  auto inside = [&](uint64_t a) { return a >= r.lo && a < r.hi; };
  EXPECT_TRUE(inside(o->hdr_addr + 4 + static_cast<uint64_t>(static_cast<int64_t>(eh_frame_rel))));
  EXPECT_TRUE(inside(o->hdr_addr + 12 + 8ull * count - 1));
  for (uint32_t i = 0; i < count; i++) {
    int32_t fde_rel;
    std::memcpy(&fde_rel, hdr + 12 + 8ull * i + 4, 4);
    ASSERT_TRUE(inside(o->hdr_addr + static_cast<uint64_t>(static_cast<int64_t>(fde_rel)))) << i;
  }
  // The header's range: exactly its search table, from its page on.
  const PageRange table = cfi_header_range(*o);
  EXPECT_EQ(table.lo, o->hdr_addr & ~(page - 1));
  EXPECT_EQ(table.hi, o->hdr_addr + 12 + 8ull * count);
  // The builder asks for its header once it is in a snapshot (within its 100-ms look at the loader);
  // for the rest once the object is queued; neither with the readahead off.
  ObjectTable& t = ObjectTable::instance();
  for (int i = 0; i < 1000 && !o->header_advised; i++) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_TRUE(o->header_advised);
  // At the default level the whole CFI at once (the search table alone at level 1).
  EXPECT_EQ(ObjectTable::kDefaultReadahead, 2);
  EXPECT_EQ(o->header_advised_bytes.load(), r.hi - r.lo);
  EXPECT_GT(r.hi - r.lo, table.hi - table.lo);
  const uint64_t before = t.readaheads();
  t.request_build(o);
  ASSERT_TRUE(built_within(o, std::chrono::seconds(20)));
  EXPECT_EQ(t.readaheads(), before + 1);
  EXPECT_TRUE(o->advised);
  t.set_readahead(0);
  struct On {
    ~On() { ObjectTable::instance().set_readahead(ObjectTable::kDefaultReadahead); }  // on again however the test ends
  } on;
  // The counts once a look at the loader that began with the readahead on has ended (under TSan one
  // such look advised an object the process had loaded meanwhile, after a count taken earlier).
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  const uint64_t headers = t.header_readaheads(), fulls = t.readaheads();
  Object* off = fresh_object("libbz2.so.1.0", "BZ2_bzlibVersion", &h);
  if (!off) GTEST_SKIP() << "libbz2.so.1.0 is loaded already, or missing";
  t.request_build(off);
  ASSERT_TRUE(built_within(off, std::chrono::seconds(20)));
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // two looks at the loader
  EXPECT_EQ(t.readaheads(), fulls);
  EXPECT_FALSE(off->advised);
  EXPECT_FALSE(off->header_advised);
  EXPECT_EQ(t.header_readaheads(), headers);
}

}  // namespace
}  // namespace aiflame::unwind
