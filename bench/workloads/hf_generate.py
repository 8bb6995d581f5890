# Held-out: a Hugging Face GPT-2 decode loop, generate() with its KV cache at batch 1 (small config,
# random weights, no download, bf16): each step is one generate() call of NEW_TOKENS greedy tokens
# (min_new_tokens = max_new_tokens, so that every step decodes as many). Launch-bound: one token is a
# few hundred small kernels. STEPS env (default 50); STEP_TIMES=1 prints each step's end
# (CLOCK_MONOTONIC ns, the first entry the loop's start) on one line at the end, as hf_gpt2.py does.
import os, time, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, n_positions=1024, vocab_size=32000)
m = GPT2LMHeadModel(cfg).cuda().to(torch.bfloat16).eval()
new = int(os.environ.get("NEW_TOKENS", 32))
prompt = torch.randint(0, 32000, (1, 64), device="cuda")
def step():
    with torch.no_grad():
        m.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=new, min_new_tokens=new,
                   do_sample=False, use_cache=True, pad_token_id=0)
for _ in range(3): step()
ends = [] if os.environ.get("STEP_TIMES") == "1" else None
torch.cuda.synchronize(); t = time.perf_counter()
if ends is not None: ends.append(time.monotonic_ns())
for _ in range(int(os.environ.get("STEPS", 50))):
    step()
    if ends is not None: ends.append(time.monotonic_ns())
torch.cuda.synchronize(); print("loop_s %.4f" % (time.perf_counter() - t))
if ends is not None: print("step_end_ns " + " ".join(map(str, ends)))
