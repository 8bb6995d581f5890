// aiflame: AI flame graphs for NVIDIA GPUs. `aiflame --help` lists the commands.
#include <malloc.h>

#include <exception>
#include <iostream>
#include <new>

#include "cli/cli_words.h"
#include "cli/commands.h"
#include "cli/diff_command.h"
#include "cli/env_check.h"

namespace {

// CLI11 asks for a subcommand before it looks at the words it does not know: "aiflame --bogus" would
// say "A subcommand is required". The first word before any subcommand that is not one names the fault.
std::string unknown_word_message(const CLI::App& app, int argc, char** argv, const std::string& what) {
  for (int i = 1; i < argc; i++) {
    std::string w = argv[i];
    if (w == "--") break;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({}))
      if (sub->check_name(w)) known = true;
    if (known) break;  // the subcommand's own words are its parser's business
    if (w == "--help" || w == "-h" || w == "--version") continue;
    if (!w.empty() && w[0] == '-') return "unknown option '" + w + "'";
    return "unknown command '" + w + "'";
  }
  return what;
}

}  // namespace

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
  aiflame::TopArgs top;
  aiflame::add_top_command(app, top);
  app.get_subcommand("record")->footer(
      "Exit status: the program's own (128+N when signal N ended it), also when it ran unprofiled because "
      "-o could not be written or there is no driver (a line says so; --require-profile refuses to run it "
      "instead); 125: the profile was lost after the program had run (a failed write at the end; one line "
      "says why and gives the program's status); 2: bad usage, or an -o that is a device, FIFO or link: "
      "nothing run; 126: the command exists but cannot be executed; 127: no such command. With --pid: 0 "
      "recorded; 2: bad usage or no such process; 3: the attach was refused or failed, or --wait ran out of "
      "--duration (one line says why); 125: a profile could not be named.");
  app.get_subcommand("report")->footer(
      "Exit status: 0 written; 1 bad input or the output could not be written; 2 bad usage; 3 the filters "
      "(--kernels, --stalls, --devices, --pids...) matched no sample: a warning names them, the output is "
      "written, empty; 4 a profile of a directory input could not be read (damaged): each is named, the "
      "others are drawn and written.");
  app.get_subcommand("diff")->footer(
      "Exit status: 0 written; 1 bad input or the output could not be written; 2 bad usage; 3 the filters "
      "(--kernels, --stalls, --devices, --pids...) matched no sample of BEFORE or AFTER: a warning names "
      "them, nothing is written.");
  // The subcommand's words; record's command may come without "--" (cli/cli_words.h).
  std::vector<std::string> words(argv, argv + argc);
  size_t sub_at = 0;
  CLI::App* sub = nullptr;
  for (size_t i = 1; i < words.size() && !sub; i++) {
    if (words[i] == "--") break;
    for (CLI::App* s : app.get_subcommands({}))
      if (s->check_name(words[i])) sub = s, sub_at = i;
  }
  if (sub && (sub->get_name() == "record" || sub->get_name() == "top")) {
    std::vector<std::string> rest = aiflame::with_command_separator(*sub, {words.begin() + static_cast<std::ptrdiff_t>(sub_at) + 1, words.end()});
    words.resize(sub_at + 1);
    words.insert(words.end(), rest.begin(), rest.end());
  }
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(w.data());
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string unknown;
    if (sub) unknown = aiflame::unknown_option_message(*sub, {words.begin() + static_cast<std::ptrdiff_t>(sub_at) + 1, words.end()});
    std::cerr << "aiflame: " << (unknown.empty() ? unknown_word_message(app, argc, argv, e.what()) : unknown)
              << " (see aiflame " << (sub ? sub->get_name() + " " : std::string()) << "--help)\n";
    return 2;
  }
  // Whatever escapes a command (an allocation that fails, a library's exception on input nobody
  // foresaw) is one line and status 1 (record: 125, its status for a failure of aiflame's own, which
  // the program's status cannot be mistaken for), never std::terminate's abort and core dump.
  const int failed = app.got_subcommand("record") ? aiflame::kRecordOwnFailure : 1;
  if (aiflame::Status env = aiflame::check_env_switches(); !env) {
    std::cerr << "aiflame: " << env.error() << "\n";
    return 2;
  }
  try {
    if (app.got_subcommand("record")) return aiflame::run_record_command(rec);
    if (app.got_subcommand("report")) return aiflame::run_report(rep);
    if (app.got_subcommand("demo")) return aiflame::run_demo(demo, argv[0]);
    if (app.got_subcommand("diff")) return aiflame::run_diff(diff);
    if (app.got_subcommand("top")) return aiflame::run_top(top);
  } catch (const std::bad_alloc&) {
    std::cerr << "aiflame: out of memory\n";
    return failed;
  } catch (const std::exception& e) {
    std::cerr << "aiflame: internal error: " << e.what() << " (please report it with the input that caused it)\n";
    return failed;
  } catch (...) {
    std::cerr << "aiflame: internal error (please report it with the input that caused it)\n";
    return failed;
  }
  return 2;
}
