#include "record/unwind/object_table.h"

#include <link.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <tuple>

#include "record/crash_report.h"
#include "record/debug_log.h"
#include "util/fork_guard.h"
#include "util/loaded_objects.h"
#include "util/safe_memory.h"

namespace aiflame::unwind {
namespace {

struct Counters {
  unsigned long long adds = 0, subs = 0;
};

// The loader's dlopen/dlclose counters: the first object's callback has them, so stop there.
Counters loader_counters() {
  Counters c;
  iterate_loaded_objects(
      [](dl_phdr_info* info, size_t size, void* data) -> int {
        auto* out = static_cast<Counters*>(data);
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
          out->adds = info->dlpi_adds;
          out->subs = info->dlpi_subs;
        }
        return 1;
      },
      &c);
  return c;
}

// One object's rows (ObjectTable::build_now).
struct BuildJob {
  Object* o;
  std::vector<FrameRow>* rows;
  CfiStats stats;
  bool guarded;  // built under run_guarded, outside the loader's lock
  bool loaded;   // the loader still had the object
};
void build_job(void* p) {
  auto* j = static_cast<BuildJob*>(p);
  // The segment that holds .eh_frame_hdr, found when the snapshot was taken (Object::eh_lo).
  MemView mem{reinterpret_cast<const uint8_t*>(j->o->eh_lo), j->o->eh_lo, j->o->eh_size};
  build_cfi_rows(mem, j->o->hdr_addr, j->o->bias, j->rows, &j->stats);
}

struct Collect {
  const Snapshot* old;
  Snapshot* next;
  // The old snapshot's objects by bias, program headers and path, each taken out when found loaded:
  // what is left at the end is gone. (A library loaded where an unloaded one was has the same bias
  // and, its program headers at the usual file offset, the same program header address; its path
  // tells it apart, and its rows are its own.)
  std::map<std::tuple<uint64_t, const void*, std::string>, std::shared_ptr<Object>> known;
};

}  // namespace

PublishedGeneration g_published_generation;

namespace {
ObjectTable* g_table;  // instance(), for the fork handler (which must not wait for the static's guard)
std::atomic<void (*)(const Object*)> g_build_hook{nullptr};
}  // namespace

void ObjectTable::set_build_hook_for_tests(void (*hook)(const Object*)) {
  g_build_hook.store(hook, std::memory_order_release);
}

ObjectTable& ObjectTable::instance() {
  static ObjectTable* t = [] {
    g_table = new ObjectTable();  // never destroyed (see the header)
    // Neither lock held by the builder in a forked child (util/fork_guard.h; work_mu_ first: it is
    // taken before mu_), and the child, which has no builder, starts its own at its first request.
    hold_across_fork(&g_table->work_mu_);
    hold_across_fork(&g_table->mu_, [] { g_table->forget_builder_in_child(); });
    return g_table;
  }();
  return *t;
}

void ObjectTable::forget_builder_in_child() {
  std::lock_guard<std::mutex> lock(mu_);
  thread_started_ = false;
  stop_requested_ = false;
}

const Snapshot* ObjectTable::refresh_now() {
  std::lock_guard<std::mutex> lock(work_mu_);
  const Snapshot* old = current_.load(std::memory_order_acquire);
  Counters c = loader_counters();
  if (old && old->adds == c.adds && old->subs == c.subs) return old;
  auto next = std::make_unique<Snapshot>();
  next->adds = c.adds;
  next->subs = c.subs;
  Collect col{old, next.get(), {}};
  if (old)
    for (const auto& o : old->objects) col.known[{o->bias, o->phdr, o->path}] = o;
  iterate_loaded_objects(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* col = static_cast<Collect*>(data);
        std::shared_ptr<Object> o;
        auto it = col->known.find({info->dlpi_addr, info->dlpi_phdr, info->dlpi_name ? info->dlpi_name : ""});
        if (it != col->known.end()) {
          o = it->second;  // still loaded: keep its rows
          col->known.erase(it);
        } else {
          o = std::make_shared<Object>();
          o->path = info->dlpi_name ? info->dlpi_name : "";
          o->bias = info->dlpi_addr;
          o->phdr = info->dlpi_phdr;
          for (int i = 0; i < info->dlpi_phnum; i++)
            if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) o->hdr_addr = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
          for (int i = 0; i < info->dlpi_phnum && o->hdr_addr; i++) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            const uint64_t lo = info->dlpi_addr + ph.p_vaddr;
            if (ph.p_type == PT_LOAD && o->hdr_addr >= lo && o->hdr_addr < lo + ph.p_memsz) {
              o->eh_lo = lo;
              o->eh_size = ph.p_memsz;
            }
          }
        }
        bool any = false;
        for (int i = 0; i < info->dlpi_phnum; i++) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) || !ph.p_memsz) continue;
          uint64_t lo = info->dlpi_addr + ph.p_vaddr;
          col->next->ranges.push_back({lo, lo + ph.p_memsz, o.get()});
          any = true;
        }
        if (any) col->next->objects.push_back(std::move(o));
        return 0;
      },
      &col);
  std::sort(next->ranges.begin(), next->ranges.end(), [](const TextRange& a, const TextRange& b) { return a.lo < b.lo; });
  // A new generation only when an object of the old snapshot is gone (Snapshot::generation).
  next->generation = !old ? 1 : col.known.empty() ? old->generation : old->generation + 1;
  const Snapshot* published = next.get();
  retired_.push_back(std::move(next));
  current_.store(published, std::memory_order_release);
  g_published_generation.value.store(published->generation, std::memory_order_release);
  return published;
}

bool ObjectTable::claim_build(Object* o) {
  const int32_t me = static_cast<int32_t>(getpid());
  for (;;) {
    if (o->state.load(std::memory_order_acquire) == Object::kBuilt) return false;
    int32_t claim = o->build_claim.load(std::memory_order_acquire);
    if (claim == me) {
      // Another thread of this process builds it (a test's build_all_now beside the builder thread).
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    // Unclaimed, or claimed by the process this one was forked from: its building thread is not here.
    if (o->build_claim.compare_exchange_weak(claim, me, std::memory_order_acq_rel)) return true;
  }
}

void ObjectTable::build_now(Object* o) {
  if (o->state.load(std::memory_order_acquire) == Object::kBuilt) return;
  // The build does not hold work_mu_, which a fork waits for: a DataLoader worker forked during a
  // build would wait for the rest of it (libtorch_cpu's takes 160 ms CPU on the H200).
  if (!claim_build(o)) return;
  if (auto hook = g_build_hook.load(std::memory_order_acquire)) hook(o);
  timespec t0{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  auto rows = std::make_unique<std::vector<FrameRow>>();
  // Still loaded? Asked under the loader's lock, and the rows built outside it: a build of libtorch_cpu
  // takes ~0.2 s (H200), during which every dlopen and dl_iterate_phdr of the program would wait. An
  // object unloaded meanwhile faults the build, which run_guarded turns into an object without rows
  // (frame pointers), as any other fault of the build: the builder is off the launch path and must not
  // take the program down (one hf_gpt2.py recording in ~20 reported "signal 11 ... in aiflame's
  // unwind-table builder" and died). Where the guard cannot catch a fault (the
  // program's own SIGSEGV handler replaced aiflame's, or `record --pid` installed none), the build runs
  // inside dl_iterate_phdr, so that at least the object stays loaded while it is read.
  BuildJob job{o, rows.get(), {}, guard_active(), false};
  if (o->hdr_addr && o->eh_size)
    iterate_loaded_objects(
        [](dl_phdr_info* info, size_t, void* data) -> int {
          auto* j = static_cast<BuildJob*>(data);
          if (info->dlpi_addr != j->o->bias || info->dlpi_phdr != j->o->phdr) return 0;
          j->loaded = true;
          if (!j->guarded) build_job(j);
          return 1;
        },
        &job);
  int fault = 0;
  if (job.loaded && job.guarded) {
    set_crash_subject(o->path.empty() ? "the main program's unwind rows" : o->path.c_str());
    const bool done = run_guarded(build_job, &job, &fault);
    set_crash_subject(nullptr);
    if (!done) {
      // What the build left (its vectors' memory leaks: destructors did not run) is dropped; no rows.
      (void)rows.release();
      rows = std::make_unique<std::vector<FrameRow>>();
      job.stats = {};
      build_faults_++;
      warn_fault(o, fault);
    }
  }
  o->stats = job.stats;
  timespec t1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  debug("unwind rows of %s: %zu rows (%u FDEs, %u rejected) in %.1f ms CPU", o->path.empty() ? "(main program)" : o->path.c_str(),
        rows->size(), o->stats.fdes, o->stats.bad_entries,
        static_cast<double>(t1.tv_sec - t0.tv_sec) * 1e3 + static_cast<double>(t1.tv_nsec - t0.tv_nsec) / 1e6);
  o->pages = new std::vector<uint32_t>(build_row_pages(*rows));  // freed with the process, as the rows
  o->rows.store(rows.release(), std::memory_order_release);
  o->state.store(Object::kBuilt, std::memory_order_release);
  builds_++;
}

void ObjectTable::warn_fault(const Object* o, int sig) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!fault_note_.empty()) return;
  fault_note_ = "signal " + std::to_string(sig) + " while building the unwind rows of " +
                (o->path.empty() ? std::string("the main program") : o->path) +
                ": its frames are unwound by frame pointers (the program ran on)";
  debug("%s", fault_note_.c_str());
}

std::string ObjectTable::fault_note() {
  std::lock_guard<std::mutex> lock(mu_);
  return fault_note_;
}

void ObjectTable::build_all_now() {
  refresh_now();
  const Snapshot* s = snapshot();
  for (const auto& o : s->objects) build_now(o.get());
}

void ObjectTable::request_build(Object* o) {
  uint8_t expected = Object::kNone;
  if (!o->state.compare_exchange_strong(expected, Object::kQueued)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(o);
    ensure_thread();
  }
  cv_.notify_one();
}

void ObjectTable::request_builds_for(const uint64_t* pcs, int n) {
  const Snapshot* s = snapshot();
  for (int i = 0; i < n; i++)
    if (const TextRange* r = s->find(pcs[i] - 1); r && r->object->hdr_addr) request_build(r->object);
}

void ObjectTable::request_refresh() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (refresh_requested_) return;
    refresh_requested_ = true;
    ensure_thread();
  }
  cv_.notify_one();
}

void ObjectTable::ensure_thread() {
  if (thread_started_) return;
  thread_started_ = true;
  std::thread([this] { builder_loop(); }).detach();
}

void ObjectTable::stop_builder() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!thread_started_) return;
  stop_requested_ = true;
  cv_.notify_all();
  cv_.wait(lock, [this] { return !thread_started_; });
  stop_requested_ = false;
}

PageRange cfi_readahead_range(const Object& o) {
  if (!o.hdr_addr || !o.eh_lo || o.hdr_addr < o.eh_lo || o.hdr_addr >= o.eh_lo + o.eh_size) return {};
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return {o.hdr_addr & ~(page - 1), o.eh_lo + o.eh_size};
}

PageRange cfi_header_range(const Object& o) {
  uint8_t h[12];
  // A copy, not a read: an object unloaded since its snapshot has no header to read.
  if (!o.hdr_addr || !safe_copy(reinterpret_cast<const void*>(o.hdr_addr), h, sizeof h)) return {};
  if (h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b) return {};
  uint32_t count;
  std::memcpy(&count, h + 8, sizeof count);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t end = o.hdr_addr + 12 + 8 * uint64_t{count};
  if (o.eh_lo && end > o.eh_lo + o.eh_size) return {};  // a count past its segment: not a table to trust
  return {o.hdr_addr & ~(page - 1), end};
}

namespace {
// Asks the kernel to read the range's file pages ahead (asynchronous for a file mapping): whether it took the request.
bool read_ahead(const PageRange& r) {
  return r.hi > r.lo && madvise(reinterpret_cast<void*>(r.lo), r.hi - r.lo, MADV_WILLNEED) == 0;
}
}  // namespace

void ObjectTable::advise_headers() {
  const int level = readahead_.load(std::memory_order_relaxed);
  if (!level) return;
  const Snapshot* s = current_.load(std::memory_order_acquire);
  if (!s) return;
  uint64_t objects = 0, bytes = 0;
  for (const auto& o : s->objects) {
    if (o->header_advised.exchange(true, std::memory_order_relaxed)) continue;
    const PageRange r = level == 2 ? cfi_readahead_range(*o) : cfi_header_range(*o);
    if (read_ahead(r)) {
      header_readaheads_++;
      objects++;
      bytes += r.hi - r.lo;
      o->header_advised_bytes.store(r.hi - r.lo, std::memory_order_relaxed);
    }
  }
  if (objects)
    debug("unwind tables of %llu objects read ahead (%.1f MB, %s)", static_cast<unsigned long long>(objects),
          static_cast<double>(bytes) / 1e6, level == 2 ? ".eh_frame_hdr and .eh_frame" : ".eh_frame_hdr");
}

void ObjectTable::builder_loop() {
  set_phase(Phase::Builder);  // a crash here is aiflame's (the crash report names it)
  std::vector<Object*> advise;
  for (;;) {
    Object* o = nullptr;
    bool refresh = false;
    advise.clear();
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Also wakes every 100 ms to notice a dlclose (the loader's counters), which no walk can see.
      cv_.wait_for(lock, std::chrono::milliseconds(100),
                   [this] { return !queue_.empty() || refresh_requested_ || stop_requested_; });
      if (stop_requested_) {
        thread_started_ = false;
        cv_.notify_all();
        return;
      }
      if (!queue_.empty()) {
        o = queue_.front();
        queue_.pop_front();
        if (readahead_.load(std::memory_order_relaxed)) {
          advise.push_back(o);
          advise.insert(advise.end(), queue_.begin(), queue_.end());
        }
      }
      refresh = refresh_requested_;
      refresh_requested_ = false;
    }
    // Every queued object's CFI read ahead at once, before the first build (the builds go one at a time,
    // and libtorch_cpu.so's took 195 ms on the H200: its walks read its FDEs in place meanwhile).
    for (Object* a : advise) {
      if (a->advised.exchange(true, std::memory_order_relaxed)) continue;
      const PageRange r = cfi_readahead_range(*a);
      if (read_ahead(r)) {
        readaheads_++;
        debug("unwind tables of %s read ahead (%.1f MB)", a->path.empty() ? "(main program)" : a->path.c_str(),
              static_cast<double>(r.hi - r.lo) / 1e6);
      }
    }
    if (o) build_now(o);
    if (refresh || !o) refresh_now();
    advise_headers();
  }
}

}  // namespace aiflame::unwind
