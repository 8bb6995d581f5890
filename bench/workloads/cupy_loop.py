# CuPy: elementwise kernels, a reduction and a matmul in a loop (CuPy's own kernels and cuBLAS,
# launched from Python through CuPy's Cython layer). STEPS (default 2000). Prints "loop_s X".
import os, time
import cupy as cp

def work(a, b):
    c = a @ b
    d = cp.tanh(c) * 0.5 + a
    return d / (cp.sum(d, axis=1, keepdims=True) + 1.0)

def main():
    steps = int(os.environ.get("STEPS", "2000"))
    a = cp.random.rand(512, 512, dtype=cp.float32)
    b = cp.random.rand(512, 512, dtype=cp.float32)
    for _ in range(3):
        a = work(a, b)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        a = work(a, b)
    cp.cuda.Device().synchronize()
    print("loop_s %.3f" % (time.perf_counter() - t0))

if __name__ == "__main__":
    main()
