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
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    print("loop_s %.3f" % (time.perf_counter() - t0))

if __name__ == "__main__":
    main()
