#include "symbolize/nvidia/sass_cache.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

namespace aiflame {
namespace {

using Clock = std::chrono::steady_clock;

struct Job {
  uint64_t crc = 0;
  const SassCache::Want* want = nullptr;
  std::vector<size_t> symbols;           // --function indices; empty: the whole image
  std::optional<Result<SassListing>> result;  // unset: not reached within the budget
  bool whole_run = false;
  bool timed_out = false;
};

int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(std::min<int64_t>(left, 1 << 30)) : 0;
}

// One nvdisasm run within what is left of the budget; killed at the limit is a time-out. No run starts
// with less than SassCache::kMinRunMs left: a remainder of a millisecond or two (the budget is counted
// in whole ms) would start a run that can only time out, and made the count of cubins left depend on
// scheduling (issue #20: cubins_left 0 or 1 instead of 2 in 1 of ~15 runs).
void run_once(const std::string& tool, Job& job, Clock::time_point deadline, const std::vector<size_t>& symbols) {
  int allowed = ms_left(deadline);
  if (allowed < SassCache::kMinRunMs) return;
  auto t0 = Clock::now();
  job.result = disassemble(tool, job.want->image, allowed, symbols);
  job.timed_out = !job.result->ok() && Clock::now() - t0 >= std::chrono::milliseconds(allowed - 100);
}

void run(const std::string& tool, Job& job, Clock::time_point deadline) {
  run_once(tool, job, deadline, job.symbols);
  // A tool that refused --function fails at once; one that ran out of time would only do so again.
  if (!job.result || job.result->ok() || job.timed_out || job.symbols.empty()) return;
  job.whole_run = true;
  run_once(tool, job, deadline, {});
}

}  // namespace

void SassCache::derive(const std::string& tool, const std::map<uint64_t, Want>& wanted, int budget_ms,
                       unsigned threads, std::vector<std::string>& notes) {
  auto note = [&](std::string text) {
    if (std::find(notes.begin(), notes.end(), text) == notes.end()) notes.push_back(std::move(text));
  };
  std::vector<Job> jobs;
  for (const auto& [crc, want] : wanted) {
    std::set<std::string> fresh;
    for (const auto& k : want.kernels)
      if (!tried(crc, k)) fresh.insert(k);
    if (fresh.empty()) continue;
    for (const auto& k : fresh) tried_.insert({crc, k});
    if (tool.empty()) {
      jobs.push_back(Job{crc, &want, {}, std::nullopt, false, false});
      continue;
    }
    // A kernel the symbol table lacks (or an image libelf cannot read): nvdisasm gets the whole image.
    std::vector<size_t> symbols = function_symbols(want.image, fresh);
    if (symbols.size() < fresh.size()) symbols.clear();
    jobs.push_back(Job{crc, &want, std::move(symbols), std::nullopt, false, false});
  }
  if (jobs.empty()) return;
  if (tool.empty()) {
    note(nvdisasm_not_found_note());
    return;
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.want->samples > b.want->samples; });

  auto t0 = Clock::now();
  auto deadline = t0 + std::chrono::milliseconds(budget_ms);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) run(tool, jobs[i], deadline);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<size_t>(std::max(1u, threads), jobs.size()); t++) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  stats_.seconds += std::chrono::duration<double>(Clock::now() - t0).count();

  size_t left = 0;
  for (Job& job : jobs) {
    if (!job.result) {
      left++;
      continue;
    }
    if (job.whole_run) stats_.whole_runs++;
    if (job.timed_out) stats_.timeouts++;
    if (!job.result->ok()) {
      note(job.result->error() + ": GPU instructions of that cubin show their offsets only");
      continue;
    }
    stats_.cubins++;
    SassListing& mine = by_cubin_[job.crc];
    for (const auto& k : job.want->kernels) {
      answered_.insert({job.crc, k});
      auto it = (*job.result)->find(k);
      if (it == (*job.result)->end() || mine.count(k)) continue;
      mine[k] = std::move(it->second);
      stats_.kernels++;
    }
  }
  stats_.cubins_left += left;
  if (left)
    note("SASS of " + std::to_string(left) + " cubin(s) not derived within --sass-timeout (" +
         std::to_string(budget_ms / 1000) + " s): their instructions show offsets; `aiflame report` derives them "
         "where nvdisasm is found (the cubins are in the profile)");
}

void want_kernel(std::map<uint64_t, SassCache::Want>& wanted, const Profile& p, uint64_t crc, uint32_t function,
                 uint64_t samples) {
  auto cubin = p.cubins.find(crc);
  if (cubin == p.cubins.end() || cubin->second.image.empty()) return;
  SassCache::Want& w = wanted[crc];
  w.image = cubin->second.image;
  w.kernels.insert(p.str(function));
  w.samples += samples;
}

const std::string* SassCache::mnemonic(uint64_t crc, const std::string& kernel, uint64_t offset) const {
  auto c = by_cubin_.find(crc);
  if (c == by_cubin_.end()) return nullptr;
  auto k = c->second.find(kernel);
  if (k == c->second.end()) return nullptr;
  auto i = k->second.find(offset);
  return i == k->second.end() ? nullptr : &i->second;
}

}  // namespace aiflame
