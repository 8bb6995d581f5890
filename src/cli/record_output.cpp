#include "cli/record_output.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace aiflame {
namespace {

const char* kind_of(mode_t m) {
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// A regular file this user may write: the only kind `record` moves aside or replaces.
bool ours_to_move(const struct stat& st, const char* path) {
  return S_ISREG(st.st_mode) && access(path, W_OK) == 0;
}

// Creates `to` from `from` without ever replacing what is at `to`. RENAME_NOREPLACE where the file
// system has it; else a hard link and the unlink of `from` (also atomic, also never replacing).
bool rename_noreplace(const char* from, const char* to) {
  if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return false;
  if (link(from, to) != 0) return false;
  unlink(from);
  return true;
}

// Copies s and a "-N" suffix into buf, without allocating (a signal handler runs this).
bool numbered_name(const std::string& s, unsigned n, char* buf, size_t size) {
  char digits[12];
  size_t k = 0;
  do digits[k++] = static_cast<char>('0' + n % 10), n /= 10;
  while (n && k < sizeof digits);
  if (s.size() + 1 + k + 1 > size) return false;
  memcpy(buf, s.data(), s.size());
  size_t at = s.size();
  buf[at++] = '-';
  while (k) buf[at++] = digits[--k];
  buf[at] = '\0';
  return true;
}

void set_published(Publish& p, const std::string& name) {
  size_t n = name.size() < sizeof p.published ? name.size() : sizeof p.published - 1;
  memcpy(p.published, name.data(), n);
  p.published[n] = '\0';
}

}  // namespace

std::string record_output_refusal(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return {};
  if (S_ISLNK(st.st_mode))
    return path + " is a symbolic link; aiflame does not write through links nor move them (remove it or choose another name)";
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return {};
  return path + " exists and is " + kind_of(st.st_mode) + ", not a regular file; choose another name";
}

Publish plan_publish(const std::string& tmp, const std::string& final_name) {
  Publish p;
  p.tmp = tmp;
  p.final_name = final_name;
  p.old_name = final_name + ".old";
  struct stat st;
  if (lstat(final_name.c_str(), &st) == 0 && ours_to_move(st, final_name.c_str())) {
    p.had_previous = true;
    p.previous_dev = st.st_dev;
    p.previous_ino = st.st_ino;
  }
  return p;
}

namespace {

bool same_file(const struct stat& st, const Publish& p) { return st.st_dev == p.previous_dev && st.st_ino == p.previous_ino; }

// Names `from` base-2, base-3... (the first that is free) into out; false when none could be made.
bool name_numbered(const char* from, const std::string& base, char* out, size_t size) {
  for (unsigned n = 2; n < 10000; n++) {
    if (!numbered_name(base, n, out, size)) return false;
    if (rename_noreplace(from, out)) return true;
    if (errno != EEXIST) return false;
  }
  return false;
}

// Moves the previous file away from final_name: to old_name, or removed with force. The file at
// final_name is first renamed aside (atomically: whatever is there at that instant), then checked: a
// profile another run named there meanwhile is put back (or beside, as final_name-N), never moved
// over old_name nor removed. True when final_name is free of the previous file.
bool move_previous(const Publish& p, bool force) {
  char aside[4096];
  const std::string& tmp = p.tmp;
  static constexpr char kSuffix[] = ".aside";
  if (tmp.size() + sizeof kSuffix > sizeof aside) return false;
  memcpy(aside, tmp.data(), tmp.size());
  memcpy(aside + tmp.size(), kSuffix, sizeof kSuffix);
  if (rename(p.final_name.c_str(), aside) != 0) return errno == ENOENT;
  struct stat st;
  if (lstat(aside, &st) == 0 && same_file(st, p) && ours_to_move(st, aside)) {
    if (force ? unlink(aside) == 0 : rename(aside, p.old_name.c_str()) == 0) return true;
  }
  // Not the previous file (or it could not be moved on): back where it was, or beside it.
  char beside[4096];
  if (!rename_noreplace(aside, p.final_name.c_str())) name_numbered(aside, p.final_name, beside, sizeof beside);
  return false;
}

}  // namespace

int publish_profile(Publish& p, bool force) {
  const char* final_name = p.final_name.c_str();
  if (rename_noreplace(p.tmp.c_str(), final_name)) return set_published(p, p.final_name), 1;
  if (errno != EEXIST) return 0;
  struct stat st, old;
  // Still the file that was there when the run started: moved aside, or replaced with --force; an
  // old_name that is not a regular file this user may write is never replaced.
  if (p.had_previous && lstat(final_name, &st) == 0 && same_file(st, p) && ours_to_move(st, final_name) &&
      (force || lstat(p.old_name.c_str(), &old) != 0 || ours_to_move(old, p.old_name.c_str())) &&
      move_previous(p, force) && rename_noreplace(p.tmp.c_str(), final_name))
    return set_published(p, p.final_name), 1;
  // Taken by another run's profile (or by what is not ours to move): the first free FILE-N.
  if (name_numbered(p.tmp.c_str(), p.final_name, p.published, sizeof p.published)) return 2;
  p.published[0] = '\0';
  return 0;
}

}  // namespace aiflame
