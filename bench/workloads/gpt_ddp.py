# gpt_train.py adapted to DistributedDataParallel, for torchrun (one process per GPU):
#   torchrun --standalone --nproc_per_node=2 bench/workloads/gpt_ddp.py
# Each rank trains the same small GPT on its own data; DDP all-reduces the gradients with NCCL.
# Prints "rank R steps N loop_s X" per rank.
import os, time
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

d, L, T, B, V = 512, 6, 256, 16, 8192


class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1 = nn.LayerNorm(d); s.att = nn.MultiheadAttention(d, 8, batch_first=True)
        s.ln2 = nn.LayerNorm(d); s.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(s, x):
        h = s.ln1(x); x = x + s.att(h, h, h, need_weights=False)[0]; return x + s.mlp(s.ln2(x))


class GPT(nn.Module):
    def __init__(s):
        super().__init__()
        s.emb = nn.Embedding(V, d); s.blocks = nn.Sequential(*[Block() for _ in range(L)]); s.head = nn.Linear(d, V)

    def forward(s, idx):
        return s.head(s.blocks(s.emb(idx)))


def main():
    dist.init_process_group("nccl")
    rank, local = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    torch.manual_seed(0)
    steps = int(os.environ.get("STEPS", "60"))
    model = DDP(GPT().cuda(), device_ids=[local])
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    g = torch.Generator(device="cuda").manual_seed(rank)
    x = torch.randint(0, V, (B, T), device="cuda", generator=g)
    y = torch.randint(0, V, (B, T), device="cuda", generator=g)

    def step():
        loss = nn.functional.cross_entropy(model(x).view(-1, V), y.view(-1))
        opt.zero_grad(); loss.backward(); opt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    print("rank %d steps %d loop_s %.3f" % (rank, steps, time.perf_counter() - t), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
