#!/usr/bin/env bash
# Issue #23 item 5 on the GPU machine: what the autograd tracking adds to the launch path, as a user
# sees it (the summary's "stack capture cost", no breakdown timing in it). Each round records a
# workload without the tracking (noag: AIFLAME_AUTOGRAD=0, the baseline), with it (new: this tree's
# build B) and with the previous build's tracking (old: A), in an order that rotates from round to
# round, after one warm-up recording; then per workload the paired differences from noag.
# (bench/capture_variants_gpu.sh does the work; until the ninth session this script had its own loop
# and named the variants new0, new1 and old1.)
#
# Usage: bench/autograd_cost_gpu.sh [ROUNDS=5]
# Env:   A (.dist/old), B (.dist), WORKLOADS ("gpt_train resnet_train hf_gpt2"), STEPS_<workload>, OUT
WORKLOADS=${WORKLOADS:-gpt_train resnet_train hf_gpt2} VARIANTS="noag new old" STATS=0 \
  exec bash "$(dirname "$0")/capture_variants_gpu.sh" "${1:-5}"
