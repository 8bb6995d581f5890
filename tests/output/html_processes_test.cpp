// What the HTML report's data block carries for its rank/device selector and per-process table: the
// process of every stack, the per-process rows with the same totals line as the stderr table, and
// kernel times per process and device. Also the per-process totals themselves (output/process_totals.h).
#include <gtest/gtest.h>

#include <sstream>

#include "output/html_writer.h"
#include "flame/process_totals.h"
#include "test_util.h"

namespace aiflame {
namespace {

ProcessRow row(int32_t rank, uint32_t pid, uint32_t device, uint64_t samples, double busy) {
  ProcessRow r;
  r.rank = rank;
  r.pid = pid;
  r.name = "python";
  r.host = "node1";
  r.devices = {device};
  r.samples = samples;
  r.kernels = 2;
  r.launches = 3;
  r.seconds = 10;
  r.busy_seconds = 10 * busy;
  return r;
}

WeightedStack stack(const std::string& root, const std::string& kernel, uint64_t count, uint32_t process) {
  WeightedStack s{{{root, FrameKind::Process}, {"-", FrameKind::Separator}, {kernel, FrameKind::GpuKernel}}, count};
  s.process = process;
  return s;
}

KernelSpan span(const std::string& name, uint32_t device, uint64_t ns, uint32_t process) {
  KernelSpan k;
  k.name = name;
  k.device = device;
  k.end_ns = ns;
  k.process = process;
  return k;
}

// Two ranks (rank 1 listed first, as inputs may come) and a folded input's stack of no process.
FlameData two_ranks() {
  FlameData d;
  d.processes = {row(1, 20, 1, 4, 0.5), row(0, 30, 0, 6, 0.9)};
  d.stacks = {stack("rank 0", "gemm", 6, 1), stack("rank 1", "gemm", 4, 0), stack("folded", "k", 2, kNoProcess)};
  d.timeline = {{0, 0, 1000000, 6}, {1, 1, 2000000, 4}};
  d.kernels = {span("gemm", 0, 2000000, 1), span("gemm", 0, 1000000, 1), span("gemm", 1, 3000000, 0),
               span("k", 0, 1000000, kNoProcess)};
  d.duration_ns = 5000000;
  return d;
}

TEST(ProcessTotals, LabelsAndImbalanceBetweenTheProcessesThatRanKernels) {
  ProcessRow launcher = row(-1, 10, 0, 0, 0);
  launcher.kernels = 0;
  std::vector<ProcessRow> rows = {row(1, 20, 1, 4, 0.5), launcher, row(0, 30, 0, 6, 0.9)};
  EXPECT_EQ(process_label(rows[0]), "rank 1");
  EXPECT_EQ(process_label(launcher), "pid 10");
  auto b = busy_imbalance(rows);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->least, 0u);  // rank 1; the launcher's 0% is not compared
  EXPECT_EQ(b->most, 2u);
  EXPECT_EQ(process_totals_line(rows), "3 processes, 10 GPU samples in all; GPU busy from 50.0% (rank 1) to 90.0% (rank 0)");
  EXPECT_FALSE(busy_imbalance({rows[0], launcher}));
  EXPECT_EQ(process_totals_line({rows[0], launcher}), "2 processes, 4 GPU samples in all");
  // Equal fractions: the lower rank is both, whatever the order of the rows.
  std::vector<ProcessRow> tie = {row(3, 1, 0, 1, 0.5), row(2, 2, 0, 1, 0.5)};
  EXPECT_EQ(busy_imbalance(tie)->least, 1u);
  EXPECT_EQ(busy_imbalance(tie)->most, 1u);
}

TEST(HtmlReport, CarriesEachStacksProcessAndThePerProcessTable) {
  FlameData d = two_ranks();
  auto j = html_report_data(d);
  // By stack index; 2 (the number of processes) stands for "no recorded process".
  EXPECT_EQ(test::unpack_numbers(j["stack_process"]), (std::vector<uint32_t>{1, 0, 2}));
  const auto& t = j["processes"];
  ASSERT_EQ(t["rows"].size(), 2u);
  EXPECT_EQ(t["rows"][1]["rank"], 0);
  EXPECT_EQ(t["rows"][1]["pid"], 30);
  EXPECT_EQ(t["rows"][1]["name"], "python");
  EXPECT_EQ(t["rows"][1]["host"], "node1");
  EXPECT_EQ(t["rows"][1]["devices"], nlohmann::json::array({0}));
  EXPECT_EQ(t["rows"][1]["samples"], 6);
  EXPECT_EQ(t["rows"][1]["kernels"], 2);
  EXPECT_EQ(t["rows"][1]["launches"], 3);
  EXPECT_DOUBLE_EQ(t["rows"][1]["busy"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(t["rows"][1]["seconds"].get<double>(), 10);
  EXPECT_EQ(t["line"], process_totals_line(d.processes));
  EXPECT_EQ(t["imbalance"], nlohmann::json::array({0, 1}));  // least busy: rank 1 (row 0); most: rank 0
  // Kernels: (process, device, GPU ms, launches) for each pair that ran the kernel.
  EXPECT_EQ(j["kernel_table"]["gemm"], nlohmann::json::parse("[0, 1, 3.0, 1, 1, 0, 3.0, 2]"));
  EXPECT_EQ(j["kernel_table"]["k"], nlohmann::json::parse("[2, 0, 1.0, 1]"));
}

TEST(HtmlReport, NoProcessDataForInputsWithoutProcesses) {
  FlameData d = two_ranks();
  d.processes.clear();
  for (auto& s : d.stacks) s.process = kNoProcess;
  for (auto& k : d.kernels) k.process = kNoProcess;
  auto j = html_report_data(d);
  EXPECT_FALSE(j.contains("stack_process"));
  EXPECT_FALSE(j.contains("processes"));
  EXPECT_EQ(j["kernel_table"]["gemm"], nlohmann::json::parse("[0, 0, 3.0, 2, 0, 1, 3.0, 1]"));
}

TEST(HtmlReport, HostileProcessNamesStayInsideTheDataBlock) {
  FlameData d = two_ranks();
  d.processes[0].name = "</script><script>alert(3)</script>";
  d.processes[1].host = "<img src=x onerror=alert(4)>";
  std::ostringstream out;
  HtmlWriter().write(d, out);
  std::string s = out.str();
  EXPECT_EQ(s.find("<script>alert(3)"), std::string::npos);
  EXPECT_EQ(s.find("<img"), std::string::npos);
  EXPECT_NE(s.find("\\u003cimg src=x onerror=alert(4)>"), std::string::npos);
  // The page's places for the selector and the table.
  EXPECT_NE(s.find("<div id=\"selector\""), std::string::npos);
  EXPECT_NE(s.find("<table id=\"t-procs\">"), std::string::npos);
}

}  // namespace
}  // namespace aiflame
