#include "record/measure/capture_stats.h"

#include <fmt/format.h>

#include "util/hot_pages.h"
#include "util/static_tls.h"
#include "util/tls_offsets.h"
#include "util/tsc_clock.h"

namespace aiflame {

std::atomic<bool> CaptureStats::enabled_{false};


CaptureStats& CaptureStats::instance() {
  static CaptureStats* s = new CaptureStats();  // never destroyed: launches may run during exit
  return *s;
}

void CaptureStats::enable() {
  CaptureStats& s = instance();
  s.tsc0 = __rdtsc();
  s.ns0 = TscClock::mono_ns();
  enabled_.store(true);
}

void CaptureStats::reset() {
  for (auto& t : ticks) t.store(0);
  for (auto& c : memo_miss) c.store(0);
  for (auto* c : {&launches, &backward_launches, &backward_walked, &native_frames, &python_frames, &cache_misses, &shared_hits, &fp_frames, &reused_frames, &memo_held, &memo_checks, &memo_slow, &memo_missing, &memo_failed, &memo_failed_same, &donated, &thread_new, &process_new, &caller_scans, &caller_reads, &caller_rereads, &fallbacks, &walks, &walks_after_reset, &lazy_frames, &forward_lookups, &forward_slots, &forward_found}) c->store(0);
  for (auto& e : ends) e.store(0);
}

std::string CaptureStats::miss_causes() const {
  static constexpr const char* kNames[8] = {"held", "empty", "start", "sp", "fp", "generation", "bounds", "words"};
  std::string out;
  for (int i = 0; i < 8; i++)
    if (uint64_t k = memo_miss[i].load()) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", kNames[i], k);
  return out.empty() ? "none" : out;
}

std::string CaptureStats::line() const {
  uint64_t n = launches.load();
  double ns_per_tick = 0;
  if (uint64_t dt = __rdtsc() - tsc0; dt) ns_per_tick = static_cast<double>(TscClock::mono_ns() - ns0) / static_cast<double>(dt);
  auto us = [&](Part p) { return n ? static_cast<double>(ticks[p].load()) * ns_per_tick / 1e3 / static_cast<double>(n) : 0.0; };
  auto tick_us = [&](Part p) { return static_cast<double>(ticks[p].load()) * ns_per_tick / 1e3; };
  const uint64_t bw = backward_launches.load();
  const uint64_t held = memo_held.load(), walked = n > held ? n - held : 0;
  auto per = [&](const std::atomic<uint64_t>& c) { return n ? static_cast<double>(c.load()) / static_cast<double>(n) : 0.0; };
  const HotRegions regions = hot_regions();
  return fmt::format(
      "capture stats: {} launches; us per launch: total {:.3f} = python walk {:.3f} + native unwind {:.3f} + hash and "
      "local lookup {:.3f} + shared intern {:.3f} (lock wait {:.3f}, Python names {:.3f}, stack record write {:.3f}) + autograd {:.3f} (backward launches {:.1f}%, {:.3f} each; {:.3f} per backward launch in {} caller scans, on the caller scanner's thread unless resolved at the launch, of {:.1f} us each, {:.1f} us of it reading {:.1f} thread stacks, {} scans the last caller's stack read again in one; forward {:.3f} each) + launch record write {:.3f}; per launch: {:.1f} "
      "native frames ({:.1f} by frame pointer, {:.1f} reused from the thread's previous walk), {:.1f}% of launches from their path's memo ({:.2f} memos checked each, {:.1f}% of them not the predicted one; {:.1f}% had none, {:.1f}% had one that did not hold, {:.1f}% of these walking to its stack; {} took another key's walk that held, not walking; memos checked failed on: {}; {:.3f} us per walked launch's unwind ({} of these launches backward), {} walks at {:.1f} us each ({:.1f} of it in {:.1f} lookups of addresses not cached, {:.1f} of them found in the rows other threads looked up; {} walks with the thread's cache emptied by an object unloaded; {} frames through objects whose rows were being built, by their FDEs read in place), {} from backtrace() at {:.1f} us each), {:.1f} Python frames, {:.2f} unwind cache misses, {:.4f} stacks new to "
      "the thread ({:.4f} new to the process); walk ends: outermost {} limit {} bad {} not-ready {} stale {} off-stack {}; forward lookups {} ({:.2f} slots read each, {:.1f}% found); thread-locals in static TLS: {} (reached by offset: {}); hot-page regions on a huge page: {} of {}",
      n, us(Total), us(Python), us(Unwind), us(Hash), us(Intern), us(InternLock), us(InternNames), us(InternWrite), us(Autograd),
      100.0 * per(backward_launches), bw ? tick_us(AutogradBackward) / static_cast<double>(bw) : 0.0,
      bw ? tick_us(CallerScan) / static_cast<double>(bw) : 0.0, caller_scans.load(),
      caller_scans.load() ? tick_us(CallerScan) / static_cast<double>(caller_scans.load()) : 0.0,
      caller_scans.load() ? tick_us(CallerRead) / static_cast<double>(caller_scans.load()) : 0.0,
      caller_scans.load() ? static_cast<double>(caller_reads.load()) / static_cast<double>(caller_scans.load()) : 0.0,
      caller_rereads.load(),
      n > bw ? (tick_us(Autograd) - tick_us(AutogradBackward)) / static_cast<double>(n - bw) : 0.0, us(Write), per(native_frames),
      per(fp_frames), per(reused_frames), 100.0 * per(memo_held),
      held ? static_cast<double>(memo_checks.load()) / static_cast<double>(held) : 0.0,
      held ? 100.0 * static_cast<double>(memo_slow.load()) / static_cast<double>(held) : 0.0, 100.0 * per(memo_missing), 100.0 * per(memo_failed),
      memo_failed.load() ? 100.0 * static_cast<double>(memo_failed_same.load()) / static_cast<double>(memo_failed.load()) : 0.0,
      donated.load(), miss_causes(),
      walked ? tick_us(UnwindWalked) / static_cast<double>(walked) : 0.0, backward_walked.load(), walks.load(),
      walks.load() ? tick_us(UnwindWalk) / static_cast<double>(walks.load()) : 0.0,
      walks.load() ? tick_us(UnwindLookup) / static_cast<double>(walks.load()) : 0.0,
      walks.load() ? static_cast<double>(cache_misses.load()) / static_cast<double>(walks.load()) : 0.0,
      walks.load() ? static_cast<double>(shared_hits.load()) / static_cast<double>(walks.load()) : 0.0,
      walks_after_reset.load(), lazy_frames.load(), fallbacks.load(),
      fallbacks.load() ? tick_us(UnwindFallback) / static_cast<double>(fallbacks.load()) : 0.0, per(python_frames), per(cache_misses), per(thread_new), per(process_new), ends[0].load(), ends[1].load(),
      ends[2].load(), ends[3].load(), ends[4].load(), ends[5].load(), forward_lookups.load(),
      forward_lookups.load() ? static_cast<double>(forward_slots.load()) / static_cast<double>(forward_lookups.load()) : 0.0,
      forward_lookups.load() ? 100.0 * static_cast<double>(forward_found.load()) / static_cast<double>(forward_lookups.load()) : 0.0,
      thread_locals_static() ? "yes" : "no", tls::learn() ? "yes" : "no", regions.huge,
      regions.regions);
}

}  // namespace aiflame
