// aiflame: AI flame graphs for NVIDIA GPUs. `aiflame --help` lists the commands.
#include <malloc.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/diff_command.h"

int main(int argc, char** argv) {
  // One malloc arena: a report's second thread (src/attribute/batch_pipeline.h) then reuses what the
  // profile's read freed instead of growing an arena of its own (+12 to +26 MB on gpt_train.py's
  // profile, the same speed). A programme run by `record` is exec'd and keeps glibc's defaults.
  mallopt(M_ARENA_MAX, 1);
  CLI::App app{
      "aiflame " AIFLAME_VERSION
      " - AI flame graphs: sampled GPU instructions with their stall reasons, joined to the CPU stacks "
      "(Python and native) that launched their kernels."};
  app.set_version_flag("--version", AIFLAME_VERSION);
  app.require_subcommand(1);
  aiflame::RecordArgs rec;
  aiflame::ReportArgs rep;
  aiflame::DemoArgs demo;
  aiflame::add_record_command(app, rec);
  aiflame::add_report_command(app, rep);
  aiflame::add_demo_command(app, demo);
  aiflame::DiffArgs diff;
  aiflame::add_diff_command(app, diff);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "aiflame: " << e.what() << " (see aiflame --help)\n";
    return 2;
  }
  if (app.got_subcommand("record")) return aiflame::run_record(rec);
  if (app.got_subcommand("report")) return aiflame::run_report(rep);
  if (app.got_subcommand("demo")) return aiflame::run_demo(demo, argv[0]);
  if (app.got_subcommand("diff")) return aiflame::run_diff(diff);
  return 2;
}
