#!/usr/bin/env bash
# Issue #23 item 3 on one GPU: kernels launched from hooks that autograd runs (DDP's gradient
# all-reduce through its reducer's hooks) sit under the script's loss.backward() and [backward].
# Records `torchrun --nproc_per_node=1 gpt_ddp.py` (NCCL with one rank still runs DDP's reducer and
# its all-reduce kernels), reports folded stacks and prints: the share of NCCL kernel samples (and of
# all samples) under [backward], under a frame of gpt_ddp.py, and under gpt_ddp.py's backward line.
# Usage (repo root, binaries in .dist/): bench/ddp_backward_check.sh   Env: AIFLAME_BIN, DDP_OUT, STEPS (30), NPROC (1; 2 on two GPUs)
# On two GPUs (nvidia-h200-x2): NPROC=2 bash bench/ddp_backward_check.sh. Exit 0 PASS, 1 FAIL, 2 no NCCL samples.
set -u
bin=${AIFLAME_BIN:-.dist}
out=${DDP_OUT:-/tmp/ddp_backward}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# DDP_PERIOD (default 18): NCCL's all-reduce kernels are short; at the default 2^22 two H200s gave 20 of
# their samples in a 30-step run, too few to judge.
STEPS=${STEPS:-30} "$bin/aiflame" record -f --sass-timeout 0 --period "${DDP_PERIOD:-18}" -o "$out/ddp.aiflame" -- \
  torchrun --standalone --nproc_per_node=${NPROC:-1} bench/workloads/gpt_ddp.py >"$out/record.log" 2>&1
echo "record exit $?"; grep -E "loop_s|autograd|GPU samples" "$out/record.log" | head -6
prof=$(ls "$out"/ddp.aiflame* | head -1)
"$bin/aiflame" report -q -f "$out"/ddp.aiflame* -o "$out/ddp.folded"
# The gradient all-reduce is launched by DDP's reducer from autograd's hooks (c10d::Reducer::autograd_hook
# in the stack): those kernels must sit under loss.backward(). NCCL kernels launched elsewhere are
# counted apart: DDP's constructor broadcasting the module's state, and the reducer's own broadcasts
# from the forward pass (DistributedDataParallel._pre_forward -> Reducer::sync_bucket_indices, in the
# first steps), which rightly sit under the forward line.
awk '{ n = $NF; t += n; nccl = ($0 ~ /;-;[^;]*nccl/); bw = ($0 ~ /\[backward\]/); sc = ($0 ~ /gpt_ddp\.py/);
       line = ($0 ~ /step \(gpt_ddp\.py:45\)/ && bw); red = ($0 ~ /c10d::Reducer::autograd_hook/);
       if (nccl) { N += n; if (bw) NB += n; if (sc) NS += n; if (line) NL += n;
                   if (red) { R += n; if (line) RL += n } else if ($0 ~ /DistributedDataParallel\.__init__/) I += n; else if ($0 ~ /_pre_forward/) F += n }
       if (bw) B += n; if (sc) S += n }
     END { printf "all samples %d: %.1f%% with a gpt_ddp.py frame, %.1f%% under [backward]\n", t, 100*S/t, 100*B/t;
           if (N) { printf "NCCL kernel samples %d (%.1f%% of all): %.1f%% under [backward], %.1f%% with a gpt_ddp.py frame, %.1f%% under step (gpt_ddp.py:45) -> [backward]\n", N, 100*N/t, 100*NB/N, 100*NS/N, 100*NL/N;
                    printf "NCCL samples launched by the reducer hooks %d, by DistributedDataParallel.__init__ %d, by its _pre_forward %d, elsewhere %d\n", R, I, F, N-R-I-F;
                    ok = R > 0 && RL >= 0.95*R;
                    printf "%s NCCL kernels of the reducer hooks under loss.backward() (gpt_ddp.py:45) and [backward] (>= 95%%): %.1f%%\n", (ok ? "PASS" : "FAIL"), R ? 100*RL/R : 0;
                    exit (ok ? 0 : 1) }
           else { print "SKIP no NCCL kernel samples (one rank launches none: NPROC=2 on two GPUs)"; exit 2 } }' "$out/ddp.folded"
status=$?
echo "heaviest NCCL stacks outside the reducer:"; grep ';-;[^;]*nccl' "$out/ddp.folded" | grep -v 'c10d::Reducer::autograd_hook' | sort -t' ' -k2 -n -r | head -3 | \
  sed 's/;-;.*//' | tr ';' '\n' | grep -E 'py::|backward' | head -12
echo "heaviest NCCL stack:"; grep ';-;[^;]*nccl' "$out/ddp.folded" | sort -t' ' -k2 -n -r | head -1 | \
  sed 's/;-;.*//' | tr ';' '\n' | grep -nE 'py::|backward|Reducer|hook|nccl' | head -20
exit $status
