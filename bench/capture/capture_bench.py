"""Runs the launch-capture benchmarks inside this interpreter, 20 Python frames deep and 40 native
frames deep through three libraries with and without frame pointers and CFI (see capture_probe.cpp).
Prints `per-launch capture: median X us, p99 Y us (N native + M Python frames, every launch unwound)`.
Usage: python3 capture_bench.py LIB.so [--benchmark_* flags]"""
import ctypes
import sys

PYTHON_DEPTH = 20   # Python frames on the stack at the capture, this module's frame included
NATIVE_DEPTH = 40   # native frames the probe recurses (chain_nofp -> chain_fp -> chain_nocfi -> ...) before it runs the benchmarks

lib = ctypes.CDLL(sys.argv[1])  # CDLL: calls release the GIL, as PyTorch does around a launch
args = [b"capture_bench"] + [a.encode() for a in sys.argv[2:]]
argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)


def layer(depth):
    if depth > 1:
        return layer(depth - 1) + 0  # not a tail position: every level keeps its frame
    return lib.aiflame_bench_run(len(args), argv, NATIVE_DEPTH)


# A thread parked in C under a function named like torch's entry into the autograd engine, in a file
# under torch/autograd/ (a temporary copy; the real torch is not needed), as the thread that called
# backward() is while the engine threads launch (BM_LaunchAutogradBackward finds its stack there).
import importlib.util
import os
import tempfile
import threading
import time

fake_dir = tempfile.mkdtemp(prefix="aiflame_bench_")
os.makedirs(os.path.join(fake_dir, "torch", "autograd"))
graph_py = os.path.join(fake_dir, "torch", "autograd", "graph.py")
with open(graph_py, "w") as f:
    f.write("def _engine_run_backward(lib):\n    return lib.aiflame_bench_park()\n")
spec = importlib.util.spec_from_file_location("aiflame_fake_graph", graph_py)
graph = importlib.util.module_from_spec(spec)
spec.loader.exec_module(graph)


def train_step():
    return graph._engine_run_backward(lib)


caller = threading.Thread(target=train_step, daemon=True)
caller.start()
while not lib.aiflame_bench_parked():
    time.sleep(0.001)

rc = layer(PYTHON_DEPTH - 1)  # plus this module's frame
lib.aiflame_bench_unpark()
caller.join()
if rc < 0:
    print("capture_bench: Python frames are not read in place in Python %s" % sys.version.split()[0])
sys.exit(1 if rc else 0)
