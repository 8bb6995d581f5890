// Locks that aiflame's own threads hold, held by the forking thread across any fork() of the program.
//
// fork() copies memory, locks included, but only the calling thread. A lock that one of aiflame's
// background threads held at that moment stays held in the child by a thread the child does not
// have, and the child's first wait for it never ends. The one that matters most is the loader's list
// lock, which dl_iterate_phdr holds while it iterates: the unwind-table builder iterates every 100 ms
// (and builds a library's rows inside the iteration where it cannot guard the build), and glibc
// (2.36 here) does not reset that lock in the child, so a child forked meanwhile hangs at its first
// dlopen or dl_iterate_phdr: a DataLoader worker importing a module, a multiprocessing worker. The
// object table's own mutexes did the same to a forked test under ThreadSanitizer (stop 46's CI ran
// out of time; tests/util/fork_guard_test.cpp).
//
// pthread_atfork's prepare handler takes every lock registered here, in the order registered, and
// then the loader iteration lock last (a thread of ours holds a registered lock while it iterates:
// never the other way round); the parent's and the child's handlers release them. A fork then waits
// for the iteration in progress, and for an unguarded build (inside the iteration). A guarded build
// (the usual case: 50-160 ms for torch's largest objects on the H200) holds none of these locks, and a
// child builds that object's rows again itself (unwind::Object::build_claim).
#pragma once
#include <mutex>

namespace aiflame {

// Held around each of aiflame's own dl_iterate_phdr calls (iterate_loaded_objects).
std::mutex& loader_iteration_lock();

// `m` held across every later fork; `in_child`, when given, runs in the child once the locks are
// released (to forget threads the child does not have). At most 8 registrations; false past them.
// A mutex registered again keeps its first registration.
bool hold_across_fork(std::mutex* m, void (*in_child)() = nullptr);

}  // namespace aiflame
