// Issue #23 on recordings from the H100 (tests/data/backward/, bench/record_backward_fixtures.sh at
// aa22ed2: 3 training steps, --period 24, --no-cubins), each workload recorded with the autograd
// tracking on and off (AIFLAME_AUTOGRAD=0: the picture before #23), replayed through the report's path.
//
// The budgets of the issue, by GPU samples:
//   - >= 95% carry a frame of the training script;
//   - of the backward samples, >= 90% carry [backward] and sit under the script's forward call.
// Backward samples are told apart without the tracking's own marker: their CPU stacks run through
// autograd's engine (torch::autograd::Engine::thread_main or ::evaluate_function), so that the same
// definition counts them in the "off" recordings, which must miss the budgets.
// "Under the script's forward call": among the Python frames between [backward] and the engine's own
// frames (the forward stack of the node that launched the kernel) is a frame of the script.
//
// Beside the budgets, a small golden per workload (tests/data/backward/*.composition.txt): each stack
// reduced to its frames of the script, [backward] and the autograd node being applied, summed, so that
// a change in where the backward samples land shows in review. AIFLAME_UPDATE_GOLDEN=1 rewrites them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>
#include <string>

#include "attribute/profile_flame.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string backward_path(const std::string& name) {
  return std::string(AIFLAME_SOURCE_DIR) + "/tests/data/backward/" + name;
}

FlameData report_of(const std::string& fixture) {
  auto pf = flame_from_profile_file(backward_path(fixture + ".aiflame"), FrameOptions{});
  EXPECT_TRUE(pf.ok()) << fixture << ": " << pf.error();
  return pf.ok() ? std::move(pf->flame) : FlameData{};
}

bool is_engine_frame(const Frame& f) {
  return f.name.find("autograd::Engine::thread_main") != std::string::npos ||
         f.name.find("autograd::Engine::evaluate_function") != std::string::npos;
}

bool is_script_frame(const Frame& f, const std::string& script) {
  return f.kind == FrameKind::Python && f.name.find("(" + script + ":") != std::string::npos;
}

struct Shares {
  uint64_t total = 0;
  uint64_t with_script = 0;
  uint64_t backward = 0;          // under the engine's frames
  uint64_t tagged = 0;            // carrying [backward]
  uint64_t tagged_not_engine = 0; // [backward] on a stack that is not the engine's (none expected)
  uint64_t under_forward = 0;     // backward, [backward], a script frame in the forward part
  double pct(uint64_t n, uint64_t of) const { return of ? 100.0 * static_cast<double>(n) / static_cast<double>(of) : 0; }
  double script_pct() const { return pct(with_script, total); }
  double under_forward_pct() const { return pct(under_forward, backward); }
};

Shares shares_of(const FlameData& d, const std::string& script) {
  Shares s;
  for (const auto& st : d.stacks) {
    s.total += st.count;
    bool script_frame = false, engine = false, tag = false, forward_script = false, in_forward = false;
    for (const Frame& f : st.frames) {
      if (f.kind == FrameKind::Separator) break;  // the CPU part only
      script_frame |= is_script_frame(f, script);
      engine |= is_engine_frame(f);
      if (f.name == std::string_view("[backward]")) {
        tag = in_forward = true;
        continue;
      }
      if (in_forward && f.kind != FrameKind::Python) in_forward = false;  // the engine's own frames
      if (in_forward && is_script_frame(f, script)) forward_script = true;
    }
    if (script_frame) s.with_script += st.count;
    if (tag) s.tagged += st.count;
    if (tag && !engine) s.tagged_not_engine += st.count;
    if (engine) s.backward += st.count;
    if (engine && tag && forward_script) s.under_forward += st.count;
  }
  return s;
}

// One line per fixture, the figures of bench/RESULTS.md ("Backward pass").
void print_shares(const std::string& fixture, const Shares& s) {
  std::printf("%s: %llu GPU samples, %.1f%% with a frame of the script; %llu backward (%.1f%%), %.1f%% with "
              "[backward], %.1f%% under the script's forward call\n",
              fixture.c_str(), static_cast<unsigned long long>(s.total), s.script_pct(),
              static_cast<unsigned long long>(s.backward), s.pct(s.backward, s.total), s.pct(s.tagged, s.backward),
              s.under_forward_pct());
}

// Each stack's CPU part reduced to the script's frames, [backward] and, after it, the autograd node
// whose apply() launched the kernel ("AddmmBackward0"); summed and sorted.
std::string composition(const FlameData& d, const std::string& script) {
  std::map<std::string, uint64_t> sums;
  for (const auto& st : d.stacks) {
    std::string key;
    bool after_backward = false, node = false;
    for (const Frame& f : st.frames) {
      if (f.kind == FrameKind::Separator) break;
      std::string_view name = f.name;
      std::string part;
      if (is_script_frame(f, script)) {
        part = name;
      } else if (name == "[backward]") {
        part = name;
        after_backward = true;
      } else if (after_backward && !node && name.size() > 7 && name.ends_with("::apply")) {
        std::string_view cls = name.substr(0, name.size() - 7);
        part = cls.substr(cls.rfind("::") == std::string_view::npos ? 0 : cls.rfind("::") + 2);
        node = true;
      }
      if (!part.empty()) key += (key.empty() ? "" : ";") + part;
    }
    sums[key.empty() ? "(no frame of " + script + ")" : key] += st.count;
  }
  std::ostringstream out;
  for (const auto& [k, n] : sums)
    if (n) out << k << " " << n << "\n";  // stacks whose samples were all split away weigh 0
  return out.str();
}

struct Workload {
  const char* name;
  const char* script;
};
void PrintTo(const Workload& w, std::ostream* os) { *os << w.name; }
constexpr Workload kWorkloads[] = {
    {"gpt_train", "gpt_train.py"}, {"hf_gpt2", "hf_gpt2.py"}, {"resnet_train", "resnet_train.py"}};

class BackwardFixtures : public ::testing::TestWithParam<Workload> {};

TEST_P(BackwardFixtures, TrackingOnMeetsTheBudgets) {
  const Workload& w = GetParam();
  FlameData d = report_of(std::string(w.name) + "_autograd_on");
  Shares s = shares_of(d, w.script);
  print_shares(std::string(w.name) + "_autograd_on", s);
  ASSERT_GT(s.total, 1000u);
  EXPECT_GE(s.script_pct(), 95.0) << s.with_script << " of " << s.total;
  // The engine's kernels are a large part of a training step (measured 47-63%), and every one of
  // them is told by the tracking: exactly the engine's samples carry [backward].
  EXPECT_GE(s.pct(s.backward, s.total), 30.0) << s.backward << " of " << s.total;
  EXPECT_EQ(s.tagged, s.backward);
  EXPECT_EQ(s.tagged_not_engine, 0u);
  EXPECT_GE(s.under_forward_pct(), 90.0) << s.under_forward << " of " << s.backward;
}

// The same definitions on the recordings without the tracking: the engine's samples are there (so the
// budgets are missed for the reason the issue names, not for want of backward samples), without
// [backward] and without any frame of the script.
TEST_P(BackwardFixtures, TrackingOffMissesThem) {
  const Workload& w = GetParam();
  FlameData d = report_of(std::string(w.name) + "_autograd_off");
  Shares s = shares_of(d, w.script);
  print_shares(std::string(w.name) + "_autograd_off", s);
  ASSERT_GT(s.total, 1000u);
  EXPECT_GE(s.pct(s.backward, s.total), 30.0) << s.backward << " of " << s.total;
  EXPECT_LT(s.script_pct(), 95.0);
  EXPECT_LT(s.under_forward_pct(), 90.0);
  EXPECT_EQ(s.tagged, 0u);
}

TEST_P(BackwardFixtures, CompositionGolden) {
  const Workload& w = GetParam();
  std::string got = composition(report_of(std::string(w.name) + "_autograd_on"), w.script);
  std::string golden_path = backward_path(std::string(w.name) + ".composition.txt");
  if (std::getenv("AIFLAME_UPDATE_GOLDEN")) test::write_file(golden_path, got);
  std::string golden = test::read_file(golden_path);
  ASSERT_FALSE(golden.empty()) << golden_path << " is missing";
  EXPECT_EQ(got, golden);
}

INSTANTIATE_TEST_SUITE_P(Fixture, BackwardFixtures, ::testing::ValuesIn(kWorkloads),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace aiflame
