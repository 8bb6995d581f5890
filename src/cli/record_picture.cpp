// `aiflame record -o flame.svg -- CMD`: record and draw in one step. The profile is kept beside the
// picture (flame.aiflame), so that other pictures of the same run need no second run; the picture is
// what `aiflame report flame.aiflame -o flame.svg` writes.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "output/writer.h"

namespace aiflame {

namespace {

bool exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

// What `record` wrote for `profile`: the file itself, or FILE.<pid> per process when there were several.
std::vector<std::string> recorded_files(const std::string& profile) {
  if (exists(profile)) return {profile};
  std::vector<std::string> found;
  size_t slash = profile.rfind('/');
  std::string dir = slash == std::string::npos ? "." : profile.substr(0, slash);
  std::string base = (slash == std::string::npos ? profile : profile.substr(slash + 1)) + ".";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > base.size() && name.compare(0, base.size(), base) == 0 &&
          name.find_first_not_of("0123456789", base.size()) == std::string::npos)
        found.push_back(slash == std::string::npos ? name : dir + "/" + name);
    }
    closedir(d);
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

int run_record_command(const RecordArgs& args) {
  const std::string format = format_from_path(args.output);
  if (format.empty()) return run_record(args);  // a profile: aiflame.data, x.aiflame, x.data
  std::string ext;
  for (const OutputFormat& f : output_formats())
    if (f.name == format)
      for (std::string_view e : f.extensions)
        if (args.output.size() > e.size() && args.output.compare(args.output.size() - e.size(), e.size(), e) == 0)
          ext = e;
  RecordArgs rec = args;
  rec.output = args.output.substr(0, args.output.size() - ext.size()) + ".aiflame";
  const int rc = run_record(rec);
  std::vector<std::string> files = recorded_files(rec.output);
  if (files.empty()) return rc;  // nothing recorded; record has said why
  ReportArgs rep;
  rep.inputs = files;
  rep.output = args.output;
  rep.quiet = true;  // record has printed the summary
  // An existing picture is kept as PICTURE.old, as record keeps an existing profile.
  if (!args.force && exists(args.output)) std::rename(args.output.c_str(), (args.output + ".old").c_str());
  rep.force = true;
  const int drawn = run_report(rep);
  if (drawn == 0 && !args.quiet()) std::cerr << "aiflame: wrote " << args.output << " (profile: " << rec.output << ")\n";
  return drawn == 0 || drawn == kReportNothingMatched ? rc : (rc ? rc : kRecordOwnFailure);
}

}  // namespace aiflame
