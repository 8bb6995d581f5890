"""Unwind rows built for every object a real program has loaded, in one process, no recording.

Runs a workload of bench/workloads for a few steps (its imports and first CUDA calls load what it
needs: torch, transformers' Rust tokenizers, JAX's XLA, CuPy, Triton), then builds the rows of every
loaded object on this thread through the capture benchmark's library (aiflame_bench_build_all), each
object named on stderr before its build: a build that faults names its object.

Usage: python3 bench/probes/build_all_objects.py LIB WORKLOAD [STEPS]
"""
import ctypes
import os
import runpy
import sys

lib_path, workload = sys.argv[1], sys.argv[2]
os.environ.setdefault("STEPS", sys.argv[3] if len(sys.argv) > 3 else "2")
here = os.path.dirname(os.path.abspath(__file__))
try:
    runpy.run_path(os.path.join(here, "..", "workloads", workload + ".py"), run_name="__main__")
except SystemExit:
    pass
except Exception as e:  # still build what was loaded (the development machine has no torch)
    print(f"{workload}: stopped by {type(e).__name__}: {e}", flush=True)
lib = ctypes.CDLL(lib_path)
n = lib.aiflame_bench_build_all()
print(f"{workload}: {n} objects built", flush=True)
