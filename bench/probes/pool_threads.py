"""A pool's new threads launching (bench/RESULTS.md, twentieth session).

Each round starts one thread that launches once (its frames walked and, with the shared rows on,
stored), then THREADS new threads one after another, each launching once from the same Python function.
Their native stacks (the interpreter's thread start and eval loop, ctypes, libffi) are new to each
thread, as XLA's pool threads' were on the H200 (8% of jax_train.py's launches on stacks new to their
thread). Caches and TLB are evicted before each timed capture.

Measured, in rounds that alternate between the settings:
- a thread's first launch: the shared rows off or on (unwind/shared_rows.h), and the thread's hot-page
  region from the stock that the recorder's collector backs ahead, or mapped by the launch itself
  (util/hot_pages.h);
- a thread's second launch, after one from another native path (what is left is the walk of the frames
  new to the thread): the shared rows off or on.

Prints per setting the median capture, and the median lookups and their time in one launch.

Usage: python3 bench/probes/pool_threads.py build/libaiflame_capture_bench.so [ROUNDS] [THREADS]"""
import ctypes
import statistics
import sys
import threading

lib = ctypes.CDLL(sys.argv[1])
lib.aiflame_bench_pool_capture.restype = ctypes.c_double
lib.aiflame_bench_pool_capture.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                           ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_double)]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 6
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 40


def launch(shared, warm, out):
    lookups, hits, us = ctypes.c_int(), ctypes.c_int(), ctypes.c_double()
    ns = lib.aiflame_bench_pool_capture(shared, warm, ctypes.byref(lookups), ctypes.byref(hits), ctypes.byref(us))
    out.append((ns / 1000.0, lookups.value, hits.value, us.value))


def on_new_thread(shared, warm, stock):
    if stock:
        lib.aiflame_bench_hot_stock()  # as the collector does every 10 ms
    out = []
    t = threading.Thread(target=launch, args=(shared, warm, out))
    t.start()
    t.join()
    return out[0]


# (what, shared rows, warm: a launch from elsewhere first, stock)
settings = [
    ("first launch,  shared rows off, region mapped by the launch", 0, 0, 0),
    ("first launch,  shared rows on,  region mapped by the launch", 1, 0, 0),
    ("first launch,  shared rows on,  region from the stock      ", 1, 0, 1),
    ("second launch, shared rows off", 0, 1, 1),
    ("second launch, shared rows on ", 1, 1, 1),
]
results = {s: [] for s in settings}
for r in range(rounds):
    for s in settings if r % 2 == 0 else reversed(settings):
        _, shared, warm, stock = s
        on_new_thread(shared, warm, stock)  # the round's first thread: walked, and stored with the rows on
        results[s] += [on_new_thread(shared, warm, stock) for _ in range(threads)]
for s in settings:
    v = results[s]
    print("%s: capture median %8.3f us (p90 %8.3f), %4.1f lookups of which %4.1f shared, %.3f us in them "
          "(medians of %d threads)" % (s[0], statistics.median(x[0] for x in v), sorted(x[0] for x in v)[int(0.9 * len(v))],
                                       statistics.median(x[1] for x in v), statistics.median(x[2] for x in v),
                                       statistics.median(x[3] for x in v), len(v)))
