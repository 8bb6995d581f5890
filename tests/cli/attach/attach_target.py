# A Python program to attach to in tests/cli/attach_test.sh: every 20 ms a "training step" launches
# through the fake libcuda (argv[1]); prints "step N" for N steps (argv[2]), then exits with status 5.
import ctypes
import sys
import time

cuda = ctypes.CDLL(sys.argv[1]) if sys.argv[1] != "-" else None


def train_step(i):
    if cuda:
        cuda.fake_launch()
    return i * i


def train_loop(steps):
    total = 0
    for i in range(steps):
        time.sleep(0.02)
        total += train_step(i)
        print("step", i, flush=True)
    print("total", total, flush=True)


train_loop(int(sys.argv[2]))
sys.exit(5)
