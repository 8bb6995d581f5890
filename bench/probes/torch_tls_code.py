# The machine code of the torch functions the autograd tracking calls at every launch, and of
# CPython's thread-state lookup: how they reach their thread-locals (issue 22: the autograd reads
# cost ~0.08-0.10 us per launch warm on the H200). Prints each function's first bytes in hex, the
# library's load address, and the 16 bytes at every RIP-relative operand the code names (GOT entries),
# for objdump -b binary on another machine.
import ctypes, os, re, subprocess, sys
import torch

lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
h = ctypes.CDLL(lib, mode=os.RTLD_LAZY | 4)  # RTLD_NOLOAD
names = ["_ZN2at15sequence_number4peekEv", "_ZN2at14RecordFunction15currentThreadIdEv",
         "_ZN5torch8autograd25get_current_graph_task_idEv", "_ZN5torch8autograd16get_current_nodeEv"]
with open("/proc/self/maps") as f:
    maps = f.read()
base = min(int(l.split("-")[0], 16) for l in maps.splitlines() if l.endswith("libtorch_cpu.so"))
print("libtorch_cpu.so base", hex(base))
def dump(label, addr, n=192):
    code = ctypes.string_at(addr, n)
    print(label, hex(addr), "off", hex(addr - base) if addr > base else "-", code.hex())
for n in names:
    dump(n, ctypes.cast(getattr(h, n), ctypes.c_void_p).value)
api = ctypes.pythonapi
for n in ["PyGILState_GetThisThreadState", "PyThread_tss_get", "PyGILState_Check"]:
    dump(n, ctypes.cast(getattr(api, n), ctypes.c_void_p).value, 96)
print(sys.version.replace("\n", " "), sys.executable)
for tool in ["objdump", "gdb", "readelf", "nm"]:
    print(tool, subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip() or "absent")
try:
    out = subprocess.run(["readelf", "-lW", lib], capture_output=True, text=True).stdout
    print("\n".join(l for l in out.splitlines() if "TLS" in l or "GNU_RELRO" in l))
    out = subprocess.run(["readelf", "-dW", lib], capture_output=True, text=True).stdout
    print("\n".join(l for l in out.splitlines() if "FLAGS" in l))
except Exception as e:
    print("readelf:", e)
