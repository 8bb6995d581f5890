# Issue #23 item 3 on one GPU: kernels launched from Python hooks that autograd runs on its engine
# thread during loss.backward(). Three kinds, each hook's function named distinctly so that its frame
# can be found in a profile (bench/backward_hooks_check.sh):
#   hook_scale_grad      Tensor.register_hook on the ReLU output inside Block.forward: a tensor pre-hook
#                        of ReluBackward0 (the current node: its forward stack is Block.forward's relu line)
#   hook_module_backward Module.register_full_backward_hook on every Block: a hook of the
#                        BackwardHookFunctionBackward node made when the Block was called (current node
#                        with a sequence number: its forward stack is the Block's first launch)
#   hook_optimizer_step  Tensor.register_post_accumulate_grad_hook on every parameter, running that
#                        parameter's own AdamW step ("optimizer in backward"): the current node is the
#                        parameter's AccumulateGrad, which no forward op made (no forward stack)
# Prints "steps N loop_s X". Env: STEPS (30).
import os, time
import torch, torch.nn as nn

torch.manual_seed(0)
steps = int(os.environ.get("STEPS", "30"))
d, B = 1024, 256


def hook_scale_grad(grad):
    return grad.clamp(-1.0, 1.0) * 0.5


def hook_module_backward(module, grad_input, grad_output):
    return tuple(None if g is None else g * 0.9 for g in grad_input)


class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.fc1 = nn.Linear(d, 4 * d)
        s.fc2 = nn.Linear(4 * d, d)

    def forward(s, x):
        h = s.fc1(x)
        h = torch.relu(h)
        h.register_hook(hook_scale_grad)
        return x + s.fc2(h)


class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.inp = nn.Linear(d, d)  # so that every Block's input requires grad
        s.blocks = nn.Sequential(*[Block() for _ in range(4)])
        s.head = nn.Linear(d, d)

    def forward(s, x):
        return s.head(s.blocks(s.inp(x)))


model = Net().cuda()
for b in model.blocks:
    b.register_full_backward_hook(hook_module_backward)
opt_of = {p: torch.optim.AdamW([p], lr=1e-4, foreach=False) for p in model.parameters()}


def hook_optimizer_step(p):
    opt_of[p].step()
    opt_of[p].zero_grad(set_to_none=True)


for p in model.parameters():
    p.register_post_accumulate_grad_hook(hook_optimizer_step)

x = torch.randn(B, d, device="cuda")
y = torch.randn(B, d, device="cuda")


def step():
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss


for _ in range(3):
    step()
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(steps):
    loss = step()
torch.cuda.synchronize()
print("steps %d loop_s %.3f loss %.4f" % (steps, time.perf_counter() - t, loss.item()))
