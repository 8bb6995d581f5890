# The machine code of CPython's Py_IsInitialized and PyGILState_GetThisThreadState (and what they call),
# which the Python walk reads in place of calling them (src/record/py_runtime_fields.h): their first
# bytes in hex and, where objdump is installed, disassembled at their own addresses. Also where
# _PyRuntime lies and which of its Py_tss_t-shaped pairs hold this thread's state.
import ctypes, struct, subprocess, sys, tempfile

api = ctypes.pythonapi
libc = ctypes.CDLL(None)
def addr_of(lib, name):
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
def show(label, addr, n):
    code = ctypes.string_at(addr, n)
    print(label, hex(addr), code.hex())
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(code)
        f.flush()
        r = subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64", "--adjust-vma=%#x" % addr, f.name],
                           capture_output=True, text=True)
        if r.returncode == 0:
            print("\n".join(l for l in r.stdout.splitlines() if l.startswith("  ")))
print(sys.version.replace("\n", " "), sys.executable)
for name, n in [("Py_IsInitialized", 32), ("PyGILState_GetThisThreadState", 96), ("PyThread_tss_get", 48),
                ("PyThread_tss_is_created", 32)]:
    show(name, addr_of(api, name), n)
show("pthread_getspecific", addr_of(libc, "pthread_getspecific"), 64)
runtime = ctypes.addressof(ctypes.c_char.in_dll(api, "_PyRuntime"))
get = api.PyGILState_GetThisThreadState
get.restype = ctypes.c_void_p
print("_PyRuntime", hex(runtime), "this thread's state", hex(get()))
