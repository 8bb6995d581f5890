"""What naming a stack's Python frames costs, with and without PyNameCache (issue #22), inside a real
CPython on the development machine: 3,000 captures of one ~12-frame stack through the test probe
(tests/record/python_frames_probe.cpp), each frame described every time (aiflame_probe_capture) or
named through the cache (aiflame_probe_capture_cached), and the ctypes call alone, twice each.
Warm caches: the GPU loops' new stacks are named cold, so this is the lower bound of the gain. Then
the same capture with every cache evicted before each (aiflame_probe_names_cold), named through the
cache (every frame named before) and alone: their difference is what naming a new stack's frames costs
cold.
Usage: python3 bench/capture/names_bench.py build/tests/libaiflame_pyprobe.so"""
import ctypes
import sys
import time

dll = ctypes.PyDLL(sys.argv[1])
dll.aiflame_probe_init()
buf = ctypes.create_string_buffer(8192)
described = ctypes.c_int(0)


def deep(n, f):
    return deep(n - 1, f) if n else f()


def describe_all():
    return dll.aiflame_probe_capture(buf, 8192)


def through_cache():
    return dll.aiflame_probe_capture_cached(buf, 8192, ctypes.byref(described))


def call_only():
    return 0


for name, f in (("every frame described", describe_all), ("through the cache", through_cache), ("the call alone", call_only)):
    for _ in range(2):
        t = time.perf_counter()
        for i in range(3000):
            deep(8, f)
        print("%-22s %.2f us per capture" % (name, (time.perf_counter() - t) / 3000 * 1e6))

dll.aiflame_probe_names_cold.restype = ctypes.c_double
for _ in range(2):
    named = deep(8, lambda: dll.aiflame_probe_names_cold(400, 1))
    alone = deep(8, lambda: dll.aiflame_probe_names_cold(400, 0))
    print("cold, caches evicted: capture and names %.2f us, capture alone %.2f us, names %.2f us (medians of 400)" %
          (named / 1e3, alone / 1e3, (named - alone) / 1e3))
