"""Checks PythonFrames inside a real interpreter: with the GIL held (C API) and without it (in-place
walk), the frames, names and line numbers must be those of this file. Usage: python3 this.py LIB.so"""
import ctypes
import sys

lib_path = sys.argv[1]
with_gil = ctypes.PyDLL(lib_path)     # calls keep the GIL
without_gil = ctypes.CDLL(lib_path)   # calls release the GIL, like PyTorch around its kernels
failures = 0


def check(name, cond, detail=""):
    global failures
    if not cond:
        failures += 1
        print("FAIL", name, detail)


def capture(dll):
    buf = ctypes.create_string_buffer(8192)
    dll.aiflame_probe_capture(buf, 8192)  # LINE_CAPTURE
    return buf.value.decode().splitlines()


def inner(dll):
    return capture(dll)  # LINE_INNER


class Model:
    def forward(self, dll):
        return inner(dll)  # LINE_FORWARD


def line_of(tag):
    for i, text in enumerate(open(__file__), 1):
        if text.rstrip().endswith("# " + tag):
            return i
    raise AssertionError(tag)


check("init", with_gil.aiflame_probe_init() == 1)
# Python 3.10's code objects have no qualified name: the method is "forward" there.
method = "forward" if sys.version_info < (3, 11) else "Model.forward"
expected = [
    "capture python_frames_test.py:%d" % line_of("LINE_CAPTURE"),
    "inner python_frames_test.py:%d" % line_of("LINE_INNER"),
    "%s python_frames_test.py:%d" % (method, line_of("LINE_FORWARD")),
]
held = Model().forward(with_gil)
check("frames with the GIL", held[:3] == expected, held)
check("layout validated", with_gil.aiflame_probe_raw_enabled() == 1,
      "in-place walk not enabled for Python %s" % sys.version)
released = Model().forward(without_gil)
check("frames without the GIL", released[:3] == expected, released)
check("same depth both ways", len(held) == len(released), (held, released))
check("module frame at the root", released and released[-1].startswith("<module> python_frames_test.py:"), released)
# A process whose CUDA starts on a thread without the GIL never launches with it held: the layout is
# then checked by the code objects' type, and the in-place walk still runs.
check("init without the GIL", without_gil.aiflame_probe_reset_and_init() == 1)
check("not validated before the first capture", without_gil.aiflame_probe_raw_enabled() == 0)
first = Model().forward(without_gil)
check("frames without ever holding the GIL", first[:3] == expected, first)
check("layout validated by type", without_gil.aiflame_probe_raw_enabled() == 1)

# Another thread's frames, read while it sits in C with the GIL released (as the thread that called
# backward() does while autograd's engine threads launch): names and lines of this file, leaf first.
import os
import threading
import time


def park():
    return without_gil.aiflame_probe_park()  # LINE_PARK


def parked_caller():
    return park()  # LINE_PARKED_CALLER


waiter = threading.Thread(target=parked_caller)
waiter.start()
while not without_gil.aiflame_probe_parked():
    time.sleep(0.001)
buf = ctypes.create_string_buffer(65536)
threads = without_gil.aiflame_probe_other_threads(buf, 65536)


def frames_of(f):
    """What Python itself says of a thread's stack, leaf first, as the probe prints it."""
    out = []
    while f is not None:
        name = getattr(f.f_code, "co_qualname", f.f_code.co_name)
        out.append("%s %s:%d" % (name, os.path.basename(f.f_code.co_filename), f.f_lineno))
        f = f.f_back
    return out


truth = frames_of(sys._current_frames()[waiter.ident])
without_gil.aiflame_probe_time_other_threads.restype = ctypes.c_double
print("capture_thread of a %d-frame stack: %.1f us" % (len(truth), without_gil.aiflame_probe_time_other_threads(200)))
without_gil.aiflame_probe_unpark()
waiter.join()
blocks = [b.strip().splitlines() for b in buf.value.decode().split("--") if b.strip()]
check("other threads listed", threads >= 1, threads)
theirs = [b for b in blocks if b and b[0].startswith("park ")]
check("the parked thread's frames", len(theirs) == 1 and theirs[0][:2] == [
    "park python_frames_test.py:%d" % line_of("LINE_PARK"),
    "parked_caller python_frames_test.py:%d" % line_of("LINE_PARKED_CALLER")], blocks)
# Every frame down to the thread's bootstrap, as sys._current_frames() has them (the walk copies the
# data stack's pages in one read and moves its window to frames outside it).
check("the parked thread's whole stack", len(theirs) == 1 and theirs[0] == truth, (theirs, truth))


# A deeper stack, through a generator (its frame lives in the generator object, not the data stack)
# and 60 recursive calls: the window moves, then frames are copied one by one.
def deep(k):
    if k == 0:
        return park()  # LINE_DEEP
    return deep(k - 1)


def gen():
    yield deep(60)


waiter = threading.Thread(target=lambda: next(gen()))
without_gil.aiflame_probe_rearm()
waiter.start()
while not without_gil.aiflame_probe_parked():
    time.sleep(0.001)
threads = without_gil.aiflame_probe_other_threads(buf, 65536)
truth = frames_of(sys._current_frames()[waiter.ident])
print("capture_thread of a %d-frame stack: %.1f us" % (len(truth), without_gil.aiflame_probe_time_other_threads(200)))
without_gil.aiflame_probe_unpark()
waiter.join()
blocks = [b.strip().splitlines() for b in buf.value.decode().split("--") if b.strip()]
theirs = [b for b in blocks if b and b[0].startswith("park ")]
check("a deep stack through a generator", len(theirs) == 1 and theirs[0] == truth and len(truth) > 60,
      (theirs, truth))
print("python_frames (Python %s): %d passed, %d failed" % (sys.version.split()[0], 14 - failures, failures))
sys.exit(1 if failures else 0)
