"""Checks, in the running torch and without aiflame, what the autograd tracking relies on (issue 23):
the four exported functions of libtorch_cpu.so and the Node layout (sequence_nr_ at 24, thread_id_ at
48). Inside a backward hook on a CUDA tensor (on an engine thread), it calls
torch::autograd::get_current_node() through ctypes and compares the sequence number read at the
offset with what Python says (Node._sequence_nr()). Prints every fact it finds; exit 1 on a mismatch."""
import ctypes
import os
import sys
import threading

import torch

print("torch", torch.__version__, "from", os.path.dirname(torch.__file__), "python", sys.version.split()[0])
lib_path = None
for line in open("/proc/self/maps"):
    if "libtorch_cpu.so" in line:
        lib_path = line.split()[-1]
        break
print("libtorch_cpu.so:", lib_path)
version_py = os.path.join(os.path.dirname(lib_path), "..", "version.py") if lib_path else ""
print("version.py beside it:", os.path.normpath(version_py), "exists" if os.path.exists(version_py) else "MISSING")
lib = ctypes.CDLL(lib_path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
names = {
    "peek": "_ZN2at15sequence_number4peekEv",
    "thread_id": "_ZN2at14RecordFunction15currentThreadIdEv",
    "graph_task_id": "_ZN5torch8autograd25get_current_graph_task_idEv",
    "current_node": "_ZN5torch8autograd16get_current_nodeEv",
}
fns = {}
for key, name in names.items():
    try:
        fns[key] = getattr(lib, name)
        print("symbol %-14s %s: found" % (key, name))
    except AttributeError:
        print("symbol %-14s %s: MISSING" % (key, name))
if len(fns) < 4:
    sys.exit(1)
fns["peek"].restype = ctypes.c_uint64
fns["thread_id"].restype = ctypes.c_uint64
fns["graph_task_id"].restype = ctypes.c_int
fns["current_node"].restype = None               # returns std::shared_ptr<Node> through a hidden pointer
fns["current_node"].argtypes = [ctypes.c_void_p]
print("main thread: peek", fns["peek"](), "thread_id", fns["thread_id"](), "graph_task_id", fns["graph_task_id"]())

dev = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.randn(64, 64, device=dev, requires_grad=True)
w = torch.randn(64, 64, device=dev, requires_grad=True)
before = fns["peek"]()
y = (x @ w).relu()
loss = y.sum()
after = fns["peek"]()
print("forward on %s: peek %d -> %d (%d nodes made)" % (dev, before, after, after - before))
checks = []


def hook_on(node):
    def pre(grad_outputs):
        out = (ctypes.c_uint64 * 2)()  # the shared_ptr: (Node*, control block*); its reference is leaked
        fns["current_node"](ctypes.addressof(out))
        ptr = out[0]
        raw_seq = ctypes.c_uint64.from_address(ptr + 24).value if ptr else None
        raw_tid = ctypes.c_uint64.from_address(ptr + 48).value if ptr else None
        try:
            comm = open("/proc/self/task/%d/comm" % threading.get_native_id()).read().strip()
        except OSError:
            comm = "?"
        checks.append((node.name(), node._sequence_nr(), raw_seq, raw_tid, fns["graph_task_id"](), comm, ptr != 0))
    node.register_prehook(pre)


n = loss.grad_fn
while n is not None:
    hook_on(n)
    n = n.next_functions[0][0] if n.next_functions and n.next_functions[0][0] is not None and \
        n.next_functions[0][0].name() != "torch::autograd::AccumulateGrad" else None
loss.backward()
ok = bool(checks)
for name, seq, raw_seq, raw_tid, gt, thread, has in checks:
    good = has and seq == raw_seq and 0 < raw_tid < (1 << 20)
    ok &= good
    print("node %-20s sequence_nr %s, read at +24: %s, thread_id at +48: %s, graph task %d, thread %s: %s"
          % (name, seq, raw_seq, raw_tid, gt, thread, "ok" if good else "MISMATCH"))
print("layout check:", "ok" if ok else "FAILED")
sys.exit(0 if ok else 1)
