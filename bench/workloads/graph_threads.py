# PyTorch CUDA graphs and threads: a small MLP's forward captured into a CUDA graph and replayed, and
# THREADS Python threads (default 4) each running eager matmuls on its own stream at the same time.
# STEPS (default 300). Prints "loop_s X".
import os, threading, time
import torch

def graph_part(steps):
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 1024)).cuda()
    x = torch.randn(256, 1024, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = model(x)
    for _ in range(steps):
        g.replay()
    return y

def thread_part(steps, k):
    s = torch.cuda.Stream()
    a = torch.randn(512, 512, device="cuda")
    with torch.cuda.stream(s):
        for _ in range(steps):
            a = torch.tanh(a @ a) * 0.5
    s.synchronize()

def main():
    steps = int(os.environ.get("STEPS", "300"))
    threads = int(os.environ.get("THREADS", "4"))
    graph_part(3)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    graph_part(steps)
    ts = [threading.Thread(target=thread_part, args=(steps, k)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    torch.cuda.synchronize()
    print("loop_s %.3f" % (time.perf_counter() - t0))

if __name__ == "__main__":
    main()
