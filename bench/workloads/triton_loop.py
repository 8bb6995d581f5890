# A Triton kernel loop for bench/overhead.sh: a row-wise softmax written in Triton, launched STEPS
# times (default 20000). Prints "loop_s X". Triton kernels carry their Python source lines.
import os, time
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + cols, num / den, mask=mask)


def softmax(x, out):
    rows, cols = x.shape
    softmax_kernel[(rows,)](out, x, cols, BLOCK=triton.next_power_of_2(cols))


def main():
    steps = int(os.environ.get("STEPS", "20000"))
    x = torch.randn(4096, 1024, device="cuda")
    out = torch.empty_like(x)
    softmax(x, out)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        softmax(x, out)
    torch.cuda.synchronize()
    print("launched %d loop_s %.3f" % (steps, time.perf_counter() - t))


if __name__ == "__main__":
    main()
