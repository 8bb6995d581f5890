// Writes an output file whole or not at all, safely in shared directories: into a temporary file
// created beside it (O_EXCL, random name, never through a symlink), renamed over the target at the end,
// so a failure never leaves a partial file (an unnamed O_TMPFILE where the file system has it: not even
// an abort or SIGKILL leaves one). An existing target is replaced only with force, and a
// symbolic link at the target path is refused even then (writing "through" it is what an attacker
// who planted it wants; remove it or pick another name).
#pragma once
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "util/result.h"

namespace aiflame {

// The checks write_output_file makes first, for commands to run before their work: a symlink or a
// non-regular file at path is refused, an existing file needs force.
Status check_output_path(const std::string& path, bool force);

// Refuses an output that is one of the inputs (the same file by device and inode: another name, a
// hard link, a path through a link), which --force would otherwise replace with what was read from it.
Status check_output_not_input(const std::string& path, const std::vector<std::string>& inputs);

Status write_output_file(const std::string& path, const std::function<void(std::ostream&)>& fill, bool force);

// `report` and `diff`: the output file as write_output_file writes it, or standard output when path is
// empty, checked to the end (a full disk or a closed pipe behind stdout is an error, not status 0).
Status write_output(const std::string& path, const std::function<void(std::ostream&)>& fill, bool force);

}  // namespace aiflame
