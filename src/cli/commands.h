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
};

struct ReportArgs : PictureArgs {
  std::vector<std::string> inputs;
  std::string output;
  std::string format;
  std::string title;
  bool quiet = false;
  bool plain = false;
  bool force = false;
};

struct DemoArgs {
  std::string prefix = "demo";
  bool force = false;
  bool bundled = false;
};

void add_record_command(CLI::App& app, RecordArgs& args);
void add_report_command(CLI::App& app, ReportArgs& args);
void add_demo_command(CLI::App& app, DemoArgs& args);

int run_record(const RecordArgs& args);
int run_report(const ReportArgs& args);
int run_demo(const DemoArgs& args, const std::string& self_path);

// Directory holding the running aiflame executable.
std::string self_dir();

}  // namespace aiflame
