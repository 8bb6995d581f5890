"""resolve_torch() inside a Python that imported a real torch (Debian's python3-torch 1.13 on the
build machine, torch 2.x elsewhere): it finds the loaded libtorch_cpu.so and torch's version.py,
resolves what this torch exports, and its sequence number moves by one per autograd node.
Usage: python3 this.py LIB.so (exits 77, skipped, without torch)"""
import ctypes
import sys

try:
    import torch
except ImportError:
    print("torch_api: no torch in this Python; skipped")
    sys.exit(77)

lib = ctypes.CDLL(sys.argv[1])
lib.aiflame_torch_peek.restype = ctypes.c_ulonglong
lib.aiflame_torch_thread_id.restype = ctypes.c_ulonglong
buf = ctypes.create_string_buffer(4096)
failures = 0


def check(name, cond, detail=""):
    global failures
    if not cond:
        failures += 1
        print("FAIL", name, detail)


check("found", lib.aiflame_torch_resolve(buf, 4096) == 1)
facts = dict(line.split("=", 1) for line in buf.value.decode().splitlines())
print(facts)
check("library", "libtorch_cpu.so" in facts["library"], facts)
check("version", facts["version"] == torch.__version__, (facts["version"], torch.__version__))
check("peek and thread id resolved", facts["peek"] == "1" and facts["thread_id"] == "1", facts)
major, minor = (int(v) for v in torch.__version__.split(".")[:2])
if (major, minor) >= (2, 0):
    check("2.x: graph task and current node", facts["graph_task_id"] == "1" and facts["current_node"] == "1", facts)
    check("2.x: no problem up to 2.11", facts["problem"] == "" or (major, minor) > (2, 11), facts)
else:
    check("1.x: get_current_node is missing", facts["current_node"] == "0" and "get_current_node" in facts["problem"], facts)
    check("1.x: layout not trusted", facts["node_layout"] == "0", facts)

# The sequence number: one per autograd node created on this thread, none without grad.
x = torch.ones(4, requires_grad=True)
before = lib.aiflame_torch_peek()
y = x * 2
z = y.sum()
check("two nodes, two numbers", lib.aiflame_torch_peek() == before + 2, (before, lib.aiflame_torch_peek()))
with torch.no_grad():
    x * 3
check("no node under no_grad", lib.aiflame_torch_peek() == before + 2)
check("a torch thread id", 0 < lib.aiflame_torch_thread_id() < 1 << 20, lib.aiflame_torch_thread_id())
if facts["graph_task_id"] == "1":
    check("outside backward", lib.aiflame_torch_graph_task_id() == -1)
    seen = []
    y.register_hook(lambda g: seen.append(lib.aiflame_torch_graph_task_id()) or g)
    z.backward()
    check("inside backward", seen and seen[0] >= 0, seen)
print("torch_api (torch %s): %d failed" % (torch.__version__, failures))
sys.exit(1 if failures else 0)
