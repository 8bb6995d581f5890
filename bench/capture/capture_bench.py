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


rc = layer(PYTHON_DEPTH - 1)  # plus this module's frame
if rc < 0:
    print("capture_bench: Python frames are not read in place in Python %s" % sys.version.split()[0])
sys.exit(1 if rc else 0)
