// Where `record` puts its profiles, and what it may do to what is already there. Only a regular file
// that this user may write, and that was at the name before the run started, is ever moved aside (to
// FILE.old) or replaced (--force); anything else (a device node, a FIFO, a socket, a symbolic link, a
// directory, another run's profile named meanwhile) is left as it is. A device or FIFO at -o is refused
// before the program starts (record_output_refusal); a name taken at the end by another run's profile
// makes this run's profile FILE-2 (FILE-3...), created atomically, never over another file.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <string>

namespace aiflame {

// Empty when `path` may be the profile: nothing there, a regular file or a directory (which
// record_command reports itself); else the line that refuses it, as `report -o` words it.
std::string record_output_refusal(const std::string& path);

// A profile this run wrote under its run-unique name (tmp), the name it gets at the end, and what was
// at that name when the run started (the only file publish_profile may move aside or replace).
struct Publish {
  std::string tmp, final_name, old_name;
  bool had_previous = false;
  dev_t previous_dev = 0;
  ino_t previous_ino = 0;
  // The name the profile got: final_name, or a FILE-N one when final_name was taken (NUL-terminated:
  // filled in a signal handler too).
  char published[4096] = {};
  volatile sig_atomic_t done = 0;
};

// The Publish for `final_name`, with what is at final_name now as its previous file (when it is a
// regular file this user may write).
Publish plan_publish(const std::string& tmp, const std::string& final_name);

// Names the profile: final_name when it is free, or when it still holds the previous file (moved to
// old_name first, or replaced with force; an old_name that is not a regular file is never replaced);
// else the first free final_name-N. Every name is created without replacing (RENAME_NOREPLACE, or a
// hard link). Returns 0 on failure (errno set; the profile stays at tmp), 1 when named final_name,
// 2 when named otherwise (p.published). Only calls that are safe in a signal handler.
int publish_profile(Publish& p, bool force);

}  // namespace aiflame
