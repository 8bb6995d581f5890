"""Checks PythonFrames inside a real interpreter: with the GIL held (C API) and without it (in-place
walk), the frames, names and line numbers must be those of this file. Usage: python3 this.py LIB.so"""
import ctypes
import sys

lib_path = sys.argv[1]
with_gil = ctypes.PyDLL(lib_path)     # calls keep the GIL
without_gil = ctypes.CDLL(lib_path)   # calls release the GIL, like PyTorch around its kernels
failures = 0
checks = 0


def check(name, cond, detail=""):
    global failures, checks
    checks += 1
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

# The interpreter's initialized flag and this thread's state, read from _PyRuntime once found and
# checked (record/py_runtime_fields.h): found here, and the walk gives the same frames as through the
# functions, on this thread and on another (each thread's own state under the one key).
check("initialized flag and thread state read in place", without_gil.aiflame_probe_state_in_place() == 3,
      without_gil.aiflame_probe_state_in_place())
check("the same frames through the fields and the functions", without_gil.aiflame_probe_same_both_ways() == 1)
on_thread = []
import threading as _threading


def other_thread_frames():
    on_thread.append(Model().forward(without_gil))
    on_thread.append(without_gil.aiflame_probe_same_both_ways())


t = _threading.Thread(target=other_thread_frames)
t.start()
t.join()
check("another thread's own frames through the fields", on_thread[0][:3] == expected and
      on_thread[0][3].startswith("other_thread_frames python_frames_test.py:") and
      " threading.py:" in on_thread[0][-1], on_thread)
check("another thread: the same frames both ways", on_thread[1] == 1, on_thread)

# The walk's hash of the frames (a launch's walk memo checks its Python frames by it): the hash of the
# frames it returned, the same for the same frames, another for a frame at another line.
def hash_here(dll):
    h = ctypes.c_uint64()
    return dll.aiflame_probe_hash(ctypes.byref(h)), h.value


def hash_other_line(dll):
    h = ctypes.c_uint64()
    return dll.aiflame_probe_hash(ctypes.byref(h)), h.value


for name, dll in (("with the GIL", with_gil), ("without the GIL", without_gil)):
    twice = [hash_here(dll) for _ in range(2)]
    other = hash_other_line(dll)
    check("walk hash is hash() of its frames " + name, twice[0][0] == 1 and other[0] == 1, (twice, other))
    check("walk hash the same for the same frames " + name, twice[0][1] == twice[1][1], twice)
    check("walk hash differs for another line " + name, twice[0][1] != other[1], (twice, other))

# The launch path's fingerprint of the frames (StackCapture::capture checks its predicted memo by it):
# the same for the same frames, another for another line, another caller or one frame more; none for
# 3.10's frame objects (capture walks them) or a stack deeper than it reads (64 frames).
def fingerprint_here():
    h = ctypes.c_uint64()
    return without_gil.aiflame_probe_fingerprint(ctypes.byref(h)), h.value  # LINE_FP_A


def fingerprint_other_line():
    h = ctypes.c_uint64()
    return without_gil.aiflame_probe_fingerprint(ctypes.byref(h)), h.value  # LINE_FP_B


def fingerprint_via_caller():
    return fingerprint_here()


def fingerprint_two_lines():
    first = fingerprint_here()
    return first, fingerprint_here()  # one function, the same callee, another instruction


def fingerprint_deeper(k):
    return fingerprint_deeper(k - 1) if k else fingerprint_here()


same = [fingerprint_here() for _ in range(2)]
if sys.version_info < (3, 11):
    check("no fingerprint for 3.10's frame objects", same[0][0] == 0, same)
else:
    other, caller, one_more, deep70 = fingerprint_other_line(), fingerprint_via_caller(), fingerprint_deeper(1), fingerprint_deeper(70)
    check("fingerprint available", same[0][0] == 1 and same[1][0] == 1 and other[0] == 1 and caller[0] == 1, same)
    check("fingerprint the same for the same frames", same[0][1] == same[1][1] != 0, same)
    check("fingerprint differs for another line", other[1] != same[0][1], (same, other))
    two = fingerprint_two_lines()
    check("fingerprint differs for a call from another line of a function", two[0][1] != two[1][1], two)
    check("fingerprint differs for another caller", caller[1] != same[0][1], (same, caller))
    check("fingerprint differs for one frame more", one_more[1] not in (same[0][1], caller[1]), (same, one_more))
    check("no fingerprint past 64 frames", deep70[0] == 0, deep70)

# The capture's memos in a real interpreter: two Python lines launching through one native path
# (ctypes from one function, so the native stacks are alike) take their own stacks, every launch from
# its memo gives the stack a full walk gives (AIFLAME_LAB=verify_memos), and on 3.11+ nearly every launch
# takes its memo by the Python fingerprint, without a Python walk.
import os
import tempfile


def launch_a():
    return without_gil.aiflame_probe_stack_id()  # LINE_LAUNCH_A


def launch_b():
    return without_gil.aiflame_probe_stack_id()  # LINE_LAUNCH_B


def launch_from(f):
    return f()


stacks_dir = tempfile.mkdtemp(prefix="aiflame_pyprobe_")
check("stack capture opened", without_gil.aiflame_probe_stacks_open(os.path.join(stacks_dir, "s.aiflame").encode()) == 1)
ids = {"a": set(), "b": set(), "a via": set()}
# The first rounds apart: 3.13 specialises the calls, and a specialised call is another native path.
for i in range(10):
    launch_a(), launch_b(), launch_from(launch_a)
before = [ctypes.c_uint64() for _ in range(3)]
without_gil.aiflame_probe_stacks_counts(*[ctypes.byref(c) for c in before])
for i in range(300):
    ids["a"].add(launch_a())
    ids["b"].add(launch_b())
    ids["a via"].add(launch_from(launch_a))
after = [ctypes.c_uint64() for _ in range(3)]
without_gil.aiflame_probe_stacks_counts(*[ctypes.byref(c) for c in after])
checked, differed, fast = [a.value - b.value for a, b in zip(after, before)]
check("one stack per Python path", all(len(v) == 1 for v in ids.values()), ids)
check("each Python path its own stack", len(set().union(*ids.values())) == 3, ids)
# 900: every launch. The loop's first round has three new keys (another line of this module than the
# rounds above), whose native walks the rounds above made at the same depths: each takes that walk's memo
# (take_donor in stack_capture.cpp) and is walked again in full and compared too (897 without the donors).
check("launches from their memo as the full walk gives them", checked == 900 and after[1].value == 0,
      (checked, after[1].value))
if sys.version_info >= (3, 11):
    check("launches from their memo by the fingerprint", fast >= 890, fast)
import shutil
shutil.rmtree(stacks_dir, ignore_errors=True)

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

# same_stack: the stack kept from one read is found again in one read while the thread sits where it
# was, and not once it moved.
def wait_step(k):
    while without_gil.aiflame_probe_step() != k:
        time.sleep(0.001)
    time.sleep(0.01)  # inside the C call, GIL released


def kept_then_moved(target, k):
    """target parks at step k, then at k + 1: (frames kept at k, same at k, same at k + 1)."""
    waiter = threading.Thread(target=target)
    waiter.start()
    wait_step(k)
    kept = without_gil.aiflame_probe_keep_other()
    same_before = without_gil.aiflame_probe_same_other()
    without_gil.aiflame_probe_go(k)
    wait_step(k + 1)
    same_after = without_gil.aiflame_probe_same_other()
    without_gil.aiflame_probe_go(k + 1)
    waiter.join()
    return kept, same_before, same_after


# Moved to another line of the same frame.
def two_steps():
    without_gil.aiflame_probe_park_step(1)  # LINE_STEP1
    without_gil.aiflame_probe_park_step(2)  # LINE_STEP2


kept, same_at_1, same_at_2 = kept_then_moved(two_steps, 1)
# 3.10's frames are heap objects: no stack is kept there, and none is ever the same.
windowed = sys.version_info >= (3, 11)
check("a thread's stack kept", kept >= 3 if windowed else kept == -1, kept)
check("the same stack found again in one read", same_at_1 == (1 if windowed else 0), same_at_1)
check("a stack that moved is not the same", same_at_2 == 0, same_at_2)


# A thread whose innermost frame returned: its old frame's bytes stay in the data stack, and a walk
# from there reads them (on 3.11 the returned frame's instruction moved on to its return, so the
# frames differ too; the thread's own frame pointer says it moved in any case).
# The outer frame calls both from one instruction, so that only the innermost frame differs.
def inner_step():
    without_gil.aiflame_probe_park_step(3)  # LINE_STEP3


def outer_steps():
    import functools
    for fn in (inner_step, functools.partial(without_gil.aiflame_probe_park_step, 4)):
        fn()  # LINE_STEP4


kept, same_at_3, same_at_4 = kept_then_moved(outer_steps, 3)
check("an inner frame's stack found again", kept >= 3 and same_at_3 == 1 if windowed else same_at_3 == 0,
      (kept, same_at_3))
check("a returned frame is not the same stack", same_at_4 == 0, same_at_4)


# Frames named through PyNameCache, as StackCapture names the Python frames of a stack new to the
# process: the names and lines of this file; a second capture from the same places describes none
# of them again; a code object freed and another made at its address is named anew.
def cached(dll):
    described = ctypes.c_int(0)
    buf = ctypes.create_string_buffer(8192)
    dll.aiflame_probe_capture_cached(buf, 8192, ctypes.byref(described))  # LINE_CACHED
    return buf.value.decode().splitlines(), described.value


def cached_inner(dll):
    return cached(dll)  # LINE_CACHED_INNER


(first, described_first), (second, described_second) = [cached_inner(with_gil) for _ in range(2)]  # one place
name = "python_frames_test.py"
check("cached names", first[:2] == ["cached %s:%d" % (name, line_of("LINE_CACHED")),
                                     "cached_inner %s:%d" % (name, line_of("LINE_CACHED_INNER"))], first)
check("every frame described at the first capture", described_first == len(first) > 2, (described_first, first))
check("none described again at the second", described_second == 0 and second == first, (described_second, second))
check("the second's frames all named from the first's by position", with_gil.aiflame_probe_names_reused() == len(first),
      (with_gil.aiflame_probe_names_reused(), first))


# Stacks that share their outer frames and differ at the leaf end, named one after another: the shared
# frames take their names by position, the others are looked up; each name is its own frame's.
def cached_other(dll):
    return cached(dll)  # LINE_CACHED_OTHER


def named_here(f):
    out, _ = f(with_gil)  # LINE_NAMED_HERE
    return out, with_gil.aiflame_probe_names_reused()


(a, reused_a), (b, reused_b), (c, reused_c) = [named_here(f) for f in (cached_inner, cached_other, cached_inner)]  # one place
check("a stack that differs at its leaf end reuses only the frames above",
      b[1] == "cached_other %s:%d" % (name, line_of("LINE_CACHED_OTHER")) and b[0] == a[0] and b[2:] == a[2:] and
      reused_b == len(b) - 2, (reused_b, a, b))
check("back to the first stack: its own names again", c == a and reused_c == len(c) - 2, (reused_c, c, a))


# The same code object at another instruction at the same height: its own line, not the one named before.
def two_lines(dll, first):
    if first:
        return cached(dll)  # LINE_TWO_A
    return cached(dll)  # LINE_TWO_B


(d, _), (e, reused_e) = [named_here(lambda dll: two_lines(dll, k)) for k in (True, False)]  # one place
check("another instruction of the same code object at the same height is named anew",
      d[1] == "two_lines %s:%d" % (name, line_of("LINE_TWO_A")) and e[1] == "two_lines %s:%d" % (name, line_of("LINE_TWO_B"))
      and reused_e == len(e) - 2, (reused_e, d, e))


def generated(fn_name):
    ns = {"cached": cached}
    exec(compile("def %s(dll):\n    return cached(dll)\n" % fn_name, "<generated>", "exec"), ns)
    return ns[fn_name]


import gc
fn = generated("gen_aa")
address = id(fn.__code__)
out_a, _ = fn(with_gil)
del fn
gc.collect()
kept = []
for attempt in range(100):
    fn = generated("gen_bb")
    if id(fn.__code__) == address:
        break
    kept.append(fn)
if id(fn.__code__) == address:
    out_b, described_b = fn(with_gil)
    check("a code object at a freed one's address is named anew",
          out_a[1].startswith("gen_aa ") and out_b[1].startswith("gen_bb ") and described_b >= 1, (out_a, out_b))
else:
    print("note: no code object was made at a freed one's address in 100 tries; that check did not run")
print("python_frames (Python %s): %d passed, %d failed" % (sys.version.split()[0], checks - failures, failures))
sys.exit(1 if failures else 0)
