#!/usr/bin/env bash
# Issue #22, thirty-fourth session: the walk memos of other call paths at a launch's depth ("donors",
# AIFLAME_MEMO_DONORS) on and off, alternating in one loop per round, at the default lengths with the
# product's defaults otherwise; each run's summary line (the stack capture cost with its split). Then per
# workload one run with AIFLAME_CAPTURE_STATS=1 (the launches that took a donor's walk) and runs with
# AIFLAME_VERIFY_MEMOS=1 (every launch from a memo, a donor's included, walked again in full and compared).
# Since the thirty-fifth session the general switch A/B (bench/env_ab_gpu.sh) runs it, its verify runs
# with each value.
# Usage: bench/donors_ab_gpu.sh [ROUNDS=2]   Env: B (.dist), WORKLOADS, STATS (1), VERIFY (1)
exec bash "$(dirname "$0")/env_ab_gpu.sh" AIFLAME_MEMO_DONORS "${1:-2}"
