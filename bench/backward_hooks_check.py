"""Issue #23 item 3: where kernels launched from Python hooks that autograd runs land in a folded report
of bench/workloads/hooks_train.py (`aiflame report X -o X.folded`). For each hook function of that
script (hook_scale_grad, hook_module_backward, hook_optimizer_step), its samples are those whose CPU
stack has the hook's Python frame; each check prints PASS/FAIL with its share of those samples:
  caller     the script's `loss.backward()` line, then "[backward]", both before the hook's frame
  engine     autograd's engine frames (Engine::thread_main or evaluate_function) after "[backward]"
             and before the hook's frame (true call order: the engine called the hook)
  forward    (hooks whose current node has a forward stack) a frame of the script's model code
             (Block.forward) between "[backward]" and the engine frames: the forward code that created
             the node (ReluBackward0 for hook_scale_grad, the Block's BackwardHookFunctionBackward for
             hook_module_backward). hook_optimizer_step runs in AccumulateGrad, which no forward op
             made: its share is printed, expected 0%, not checked.
A check passes at >= 95% of the hook's samples (every launch is composed the same way; the slack is
for launches before the tracker found backward()'s caller). Also prints each hook's heaviest stack,
its Python frames and markers in order. Usage: backward_hooks_check.py FILE.folded hooks_train.py"""
import collections
import os
import sys

folded, script_path = sys.argv[1], sys.argv[2]
script = os.path.basename(script_path)
src = open(script_path).read().splitlines()


def line_of(text):
    for i, l in enumerate(src, 1):
        if text in l and not l.lstrip().startswith("#"):
            return i
    sys.exit("%s: no line with %r" % (script_path, text))


backward_line = "(%s:%d)" % (script, line_of("loss.backward()"))
model_frame = "py::Block.forward (%s:" % script
engine = ("torch::autograd::Engine::thread_main", "torch::autograd::Engine::evaluate_function")
hooks = {  # function -> does its current node have a forward stack?
    "hook_scale_grad": True,
    "hook_module_backward": True,
    "hook_optimizer_step": False,
}

total = 0
count = collections.Counter()
where = collections.defaultdict(collections.Counter)  # hook -> the forward part's deepest model frame
heaviest = {}
for raw in open(folded):
    stack, _, n = raw.rstrip("\n").rpartition(" ")
    if not stack:
        continue
    n = int(n)
    total += n
    cpu = stack.split(";-;")[0].split(";")
    for h in hooks:
        mark = "py::%s (%s:" % (h, script)
        at = next((i for i, f in enumerate(cpu) if f.startswith(mark)), -1)
        if at < 0:
            continue
        count[h, "all"] += n
        if n > heaviest.get(h, (0, None))[0]:
            heaviest[h] = (n, cpu)
        bw = cpu.index("[backward]") if "[backward]" in cpu else -1
        if 0 <= bw < at and any(backward_line in f for f in cpu[:bw]):
            count[h, "caller"] += n
        eng = next((i for i, f in enumerate(cpu) if f in engine), -1)
        if 0 <= bw < eng < at:
            count[h, "engine"] += n
        end = eng if eng > bw else at
        model = [f for f in cpu[bw + 1:end] if f.startswith(model_frame)] if bw >= 0 else []
        if model:
            count[h, "forward"] += n
            where[h][model[-1][4:]] += n


def pct(a, b):
    return 100.0 * a / b if b else 0.0


print("%s: %d GPU samples; the caller line is %s, the model code %s" % (script, total, backward_line, model_frame[4:]))
failed = 0
for h, has_node in hooks.items():
    k = count[h, "all"]
    print("== %s: %d samples (%.1f%% of all)" % (h, k, pct(k, total)))
    checks = [("caller", "under %s -> [backward]" % backward_line), ("engine", "engine frames between [backward] and the hook")]
    if has_node:
        checks.append(("forward", "under the forward stack of its node (Block.forward after [backward])"))
    for key, what in checks:
        ok = k > 0 and pct(count[h, key], k) >= 95
        failed += not ok
        print("  %s %s: %.1f%%" % ("PASS" if ok else "FAIL", what, pct(count[h, key], k)))
    if has_node:
        print("  info: the forward part's deepest model line: %s" % ", ".join(
            "%s %.1f%%" % (f, pct(m, k)) for f, m in where[h].most_common(3)))
    else:
        print("  info: with a forward part (expected 0%%: AccumulateGrad): %.1f%%" % pct(count[h, "forward"], k))
    if h in heaviest:
        n, cpu = heaviest[h]
        keep = [f for f in cpu if f.startswith("py::") or f == "[backward]" or f in engine or "hook" in f.lower()]
        print("  heaviest (%d samples), Python frames and markers in order:\n    %s" % (n, "\n    ".join(keep)))
print("%d check(s) failed" % failed if failed else "all checks passed")
sys.exit(1 if failed else 0)
