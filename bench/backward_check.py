"""Reads a folded report (`aiflame report X -o X.folded`) of a PyTorch training script and prints the
two shares of issue 23, by GPU samples:
  script: samples with a frame of the training script anywhere in their stack (budget >= 95%);
  backward: samples of kernels launched by autograd's engine threads, i.e. stacks with a "[backward]"
    frame, and of those the ones with a frame of the script after "[backward]": the forward stack of
    the node that launched them was found, and it runs through the script (its model code, or the
    script's line that called the model) (budget >= 90%).
Also lists the heaviest backward stacks that miss, to see why. Usage: backward_check.py FILE.folded SCRIPT.py"""
import collections
import os
import sys

folded, script = sys.argv[1], os.path.basename(sys.argv[2])
mark = "(%s:" % script
total = with_script = backward = under_forward = forward_found = 0
misses = collections.Counter()
for line in open(folded):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    if not stack:
        continue
    n = int(count)
    frames = stack.split(";")
    total += n
    if any(mark in f for f in frames):
        with_script += n
    if "[backward]" in frames:
        backward += n
        after = frames[frames.index("[backward]") + 1:]
        # A forward stack was found when a Python frame ("name (file.py:line)") follows [backward].
        if after and after[0].endswith(")") and ".py:" in after[0]:
            forward_found += n
        if any(mark in f for f in after):
            under_forward += n
        else:
            cpu = after[:after.index("-")] if "-" in after else after
            misses[";".join(cpu[:4] + ["..."] + cpu[-3:])] += n


def pct(a, b):
    return 100.0 * a / b if b else 0.0


ok_script = pct(with_script, total) >= 95
ok_backward = backward > 0 and pct(under_forward, backward) >= 90
print("%s: %d GPU samples; %.1f%% with a frame of %s (budget >= 95%%: %s)"
      % (script, total, pct(with_script, total), script, "ok" if ok_script else "MISSED"))
print("%s: %d backward samples (%.1f%% of all); %.1f%% with a forward stack, %.1f%% under the script's forward call "
      "(budget >= 90%%: %s)" % (script, backward, pct(backward, total), pct(forward_found, backward),
                                 pct(under_forward, backward), "ok" if ok_backward else "MISSED"))
for stack, n in misses.most_common(5):
    print("  miss %.1f%%: %s" % (pct(n, backward), stack))
sys.exit(0 if ok_script and ok_backward else 1)
