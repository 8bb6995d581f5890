# torch.compile (inductor: Triton kernels launched through Triton's launcher) of a small MLP block
# stack, trained on random data. STEPS (default 50); COMPILE_MODE (torch.compile's mode, e.g.
# reduce-overhead: forward and backward captured into CUDA graphs and replayed). Prints "loop_s X"
# (compilation excluded).
import os, time
import torch

class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)
    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(x))))

def main():
    steps = int(os.environ.get("STEPS", "50"))
    model = torch.nn.Sequential(*[Block(512) for _ in range(4)]).cuda()
    mode = os.environ.get("COMPILE_MODE") or None
    cmodel = torch.compile(model, mode=mode)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(64, 256, 512, device="cuda")
    def step():
        if mode == "reduce-overhead":  # cudagraph trees: a new step, the last one's outputs are free
            torch.compiler.cudagraph_mark_step_begin()
        loss = cmodel(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    print("loop_s %.3f" % (time.perf_counter() - t0))

if __name__ == "__main__":
    main()
