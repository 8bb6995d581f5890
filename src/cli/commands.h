// The subcommands of the aiflame CLI. Each returns the process exit status.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace aiflame {

struct RecordArgs {
  std::string output = "aiflame.data";
  bool force = false;
  bool require_profile = false;  // refuse to run the program when its profile cannot be written
  // The injection library's options given on the command line: schema name -> value, as the library
  // parses it (record/record_options.h registers the flags and describes each value).
  std::map<std::string, std::string> options;
  std::string lib;
  std::string nvdisasm;
  unsigned sass_timeout_s = 60;
  std::vector<std::string> command;
  bool quiet() const { return options.count("quiet") > 0; }
  const std::string& option(const std::string& name) const {
    static const std::string none;
    auto it = options.find(name);
    return it == options.end() ? none : it->second;
  }
  // Attach to running programs instead of starting one (attach_command.cpp).
  std::vector<int> pids;
  double duration_s = 0;  // 0: until Ctrl-C or the program ends (launching: then SIGINT to it)
  double rate_hz = 0;     // --rate: samples/s per SM, turned into --period (cli/sampling_rate.h)
  bool wait = false;
};

// The options of `report` and `diff` that shape the picture (cli/picture_options.h registers them).
struct PictureArgs {
  bool no_python = false;
  bool no_native = false;
  size_t max_depth = 0;
  bool full_names = false;
  bool lines = false;
  std::string group_by = "process";
  std::string kernels, exclude_kernels, stalls, devices, pids;  // filters
  std::string nvdisasm;
  std::string stall_reasons = "all";
  int fold_runs = 0;  // --fold-runs 1, --no-fold-runs -1, else by format (output/formats.cpp)
  std::string since, until;  // duty-cycled windows by start time (cli/time_span.h)
};

struct ReportArgs : PictureArgs {
  std::vector<std::string> inputs;
  std::string output;
  std::string format;
  std::string title;
  bool quiet = false;
  bool plain = false;
  bool annotate = false;  // folded: iaprof's annotations (plain is the default)
  bool force = false;
};

struct TopArgs {
  std::vector<std::string> command;
  std::vector<int> pids;
  std::string replay;          // a recorded profile fed over time instead of a recording
  unsigned replay_steps = 10;
  double refresh_s = 1;
  double duration_s = 0;
  unsigned rows = 10;
  bool plain = false;
};

struct DemoArgs {
  std::string prefix = "demo";
  bool force = false;
  bool bundled = false;
};

// `record` passes the program's exit status through (128 + N when a signal N ended it), and uses this
// one for a failure of its own once the program has run: the profile could not be written. env,
// nohup and docker run use 125 the same way (126: not executable, 127: not found, as a shell).
inline constexpr int kRecordOwnFailure = 125;
// `report` and `diff`: 0 done, 1 bad input or a failed write, 2 bad usage, 3 the filters matched no
// sample (report writes its output, empty; diff writes none).
inline constexpr int kReportNothingMatched = 3;
// `report DIR`: 4, a profile of the directory could not be read (each named); the rest is written.
inline constexpr int kReportMembersLeftOut = 4;

void add_record_command(CLI::App& app, RecordArgs& args);
void add_report_command(CLI::App& app, ReportArgs& args);
void add_demo_command(CLI::App& app, DemoArgs& args);
void add_top_command(CLI::App& app, TopArgs& args);

int run_record(const RecordArgs& args);
struct Publish;
// `record -o flame.svg` (any output format's extension): records FLAME.aiflame, then reports it into
// the picture (cli/record_picture.cpp); any other -o: run_record.
int run_record_command(const RecordArgs& args);
// `aiflame record --pid PID...`: `library` and `output` (absolute) as run_record found them; the
// processes write PREFIX.<pid>, named at the end as `previous` (record_output.h) allows.
int run_attach(const RecordArgs& args, const std::string& library, const std::string& output, const std::string& prefix,
               const Publish& previous);
int run_report(const ReportArgs& args);
int run_top(const TopArgs& args);
int run_demo(const DemoArgs& args, const std::string& self_path);

// Directory holding the running aiflame executable.
std::string self_dir();

}  // namespace aiflame
