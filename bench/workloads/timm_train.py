# timm ViT-S/16 training on random data (random weights: no download), bf16 autocast, AdamW.
# A model family outside transformers/torchvision for the launch-path checks (issue 22/23).
# STEPS (default 20). Prints "loop_s X".
import os, time
import torch
import timm

def main():
    steps = int(os.environ.get("STEPS", "20"))
    model = timm.create_model("vit_small_patch16_224", pretrained=False, num_classes=100).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(32, 3, 224, 224, device="cuda")
    y = torch.randint(0, 100, (32,), device="cuda")
    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    # STEP_TIMES=1: each step's end (CLOCK_MONOTONIC ns, the loop's start first), for bench/callback_ab.py.
    ends = [] if os.environ.get("STEP_TIMES") == "1" else None
    t0 = time.perf_counter()
    if ends is not None:
        ends.append(time.monotonic_ns())
    for _ in range(steps):
        step()
        if ends is not None:
            ends.append(time.monotonic_ns())
    torch.cuda.synchronize()
    print("loop_s %.3f" % (time.perf_counter() - t0))
    if ends is not None:
        print("step_end_ns " + " ".join(map(str, ends)))

if __name__ == "__main__":
    main()
