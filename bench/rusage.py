# Runs a command and prints its resource use the way `aiflame record` does, so plain and recorded
# runs are compared alike: "the program ran S s (CPU U s user, Y s system, peak RSS M MB)".
import os, resource, subprocess, sys, time

t = time.monotonic()
rc = subprocess.call(sys.argv[1:])
wall = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("the program ran %.2f s (CPU %.2f s user, %.2f s system, peak RSS %d MB)"
      % (wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss // 1024), file=sys.stderr)
sys.exit(rc)
