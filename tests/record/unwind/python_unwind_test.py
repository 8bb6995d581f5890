"""The native walk equals libunwind's inside a real CPython (tests/record/unwind/python_probe.cpp):
20 Python frames deep through ctypes with and without the GIL, and from a Python callback that
libc's qsort calls. Usage: python3 python_unwind_test.py LIB.so"""
import ctypes
import sys

lib_path = sys.argv[1]
failures = 0


def check(what, n):
    global failures
    ok = n >= 10  # the interpreter's frames and more (3.11+ runs Python-to-Python calls in one C frame)
    print("%s: %s (%d frames)" % (what, "equal to libunwind" if ok else "DIFFERENT" if n == -1 else "fell back" if n == -2 else "too short", n))
    failures += not ok


def deep(fn, depth):
    if depth > 1:
        return deep(fn, depth - 1) + 0
    return fn()


for name, loader in (("ctypes.CDLL (GIL released)", ctypes.CDLL), ("ctypes.PyDLL (GIL held)", ctypes.PyDLL)):
    lib = loader(lib_path)
    check(name + ", 20 Python frames", deep(lib.aiflame_unwind_compare, 20))

# libc's qsort calling a Python comparison that calls the probe: libc, libffi's closure, the interpreter.
lib = ctypes.CDLL(lib_path)
libc = ctypes.CDLL(None)
results = []
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


def compare(a, b):
    if not results:
        results.append(lib.aiflame_unwind_compare())
    return a[0] - b[0]


values = (ctypes.c_int * 4)(3, 1, 2, 0)
libc.qsort(values, 4, ctypes.sizeof(ctypes.c_int), CMP(compare))
check("qsort -> Python callback (libffi closure)", results[0])
# The library finds its own TLS module id (what iterate_loaded_objects' DTV refresh needs).
refreshed = lib.aiflame_tls_refresh()
print("TLS module of the loaded library: %s" % ("found" if refreshed == 1 else "NOT FOUND"))
failures += refreshed != 1
sys.exit(1 if failures else 0)
