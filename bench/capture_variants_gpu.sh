#!/usr/bin/env bash
# The launch path's cost under several settings of one build (and optionally a previous build), on the
# GPU machine: each round records a workload once per variant, in an order that rotates from round to
# round, with AIFLAME_CAPTURE_STATS=1 (STATS=1, the breakdown by part) or without (STATS=0: the
# summary's "stack capture cost" as a user sees it). Prints a line per run, then per workload and
# variant the median [range] of the capture cost, and each variant's paired difference from the first.
#
# Variants (VARIANTS, default "new vm dyn old"):
#   new   this tree's build (B), defaults
#   vm    AIFLAME_SAFE_READ=vm: other threads' stacks read with process_vm_readv instead of the pipe
#   dyn   GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0: the injection library's thread-locals in
#         dynamic TLS (each access a __tls_get_addr call), as before the TLS-descriptor build
#   noag  AIFLAME_AUTOGRAD=0 (no autograd tracking)
#   light AIFLAME_AUTOGRAD_LIGHT=1 (torch's state read at every launch and backward()'s caller found,
#         but no forward table, backward-id sets or counts: what a tracker that leaves those to the
#         collector would cost the launch path)
#   light2 AIFLAME_AUTOGRAD_LIGHT=2: as light, and no call into torch at a launch (a thread's graph task
#         read once; no node, no sequence number): what the tracker's own lines and caller scan cost
#   ab    AIFLAME_AUTOGRAD_AB=1: the tracking on and off in alternate 40-70 ms slices of one run; the
#         line's ab= is the with-minus-without capture cost of that run (issue 23 item 5 without the
#         drift between runs)
#   defer AIFLAME_AUTOGRAD_DEFER=1 (the default since 2026-11-27): the forward table and backward
#         launches' forward lookup, counts and interning left to the collector (AutogradTracker::remember
#         and resolve); abdefer: the same with AIFLAME_AUTOGRAD_AB=1
#   atlaunch AIFLAME_AUTOGRAD_DEFER=0: all of it at the launch, as before 2026-11-27
#   nokernel AIFLAME_MEMO_KEY_KERNEL=0: walk memos keyed without the launch's kernel
#   nonode AIFLAME_MEMO_KEY_NODE=0: backward launches' walk memos keyed without their autograd node's
#         class (by depth alone on an engine thread, as before the twenty-third session)
#   memos2 AIFLAME_MEMOS_PER_KEY=2: walk memos per key as before 2026-11-27 (4 since)
#   lru   AIFLAME_MEMO_EVICT_LRU=1: a key whose memos all failed replaces the least recently used of
#         them, not the last one checked (twelfth session: stale memos kept the cold benchmark's paths
#         from ever keeping theirs)
#   ablight, ablight2: AIFLAME_AUTOGRAD_AB=1 with AIFLAME_AUTOGRAD_LIGHT=1 or 2: the in-run A/B of what
#         light and light2 leave on the launch path (ab minus ablight: the deferred notes; ablight
#         minus ablight2: the calls into torch)
#   nopf  AIFLAME_PY_PREFETCH=0: no prefetch of the thread's last Python walk's frames at a capture's start
#   old   the previous build (A)
#
# The first recording of a call on a fresh machine ran 0.4-0.9 us per launch slower than the rest
# (H200, 2026-11-27, four calls in a row): WARMUP=1 (the default) makes one recording first that
# counts in nothing.
#
# Usage: bench/capture_variants_gpu.sh [ROUNDS=2]
# Env:   A (.dist/old), B (.dist), WORKLOADS ("gpt_train hf_gpt2"), STATS (1), STEPS_<workload>
#        (gpt_train 100, resnet_train 20, others 30), OUT (a temporary directory)
set -u
rounds=${1:-2}
a=${A:-.dist/old}
b=${B:-.dist}
workloads=${WORKLOADS:-gpt_train hf_gpt2}
variants=${VARIANTS:-new vm dyn old}
stats=${STATS:-1}
# Without a previous build (A), no old variant.
[ -x "$a/aiflame" ] || variants=$(tr ' ' '\n' <<<"$variants" | grep -vx old | tr '\n' ' ')
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
run() {  # variant workload round
  local v=$1 w=$2 r=$3 bin=$b steps log cost line
  local -a env_=(AIFLAME_CAPTURE_STATS=$stats)
  case $v in
    vm) env_+=(AIFLAME_SAFE_READ=vm) ;;
    dyn) env_+=(GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0) ;;
    noag) env_+=(AIFLAME_AUTOGRAD=0) ;;
    light) env_+=(AIFLAME_AUTOGRAD_LIGHT=1) ;;
    light2) env_+=(AIFLAME_AUTOGRAD_LIGHT=2) ;;
    ab) env_+=(AIFLAME_AUTOGRAD_AB=1) ;;
    defer) env_+=(AIFLAME_AUTOGRAD_DEFER=1) ;;
    abdefer) env_+=(AIFLAME_AUTOGRAD_AB=1 AIFLAME_AUTOGRAD_DEFER=1) ;;
    atlaunch) env_+=(AIFLAME_AUTOGRAD_DEFER=0) ;;
    memos2) env_+=(AIFLAME_MEMOS_PER_KEY=2) ;;
    lru) env_+=(AIFLAME_MEMO_EVICT_LRU=1) ;;
    nokernel) env_+=(AIFLAME_MEMO_KEY_KERNEL=0) ;;
    nonode) env_+=(AIFLAME_MEMO_KEY_NODE=0) ;;
    nopf) env_+=(AIFLAME_PY_PREFETCH=0) ;;
    ablight) env_+=(AIFLAME_AUTOGRAD_AB=1 AIFLAME_AUTOGRAD_LIGHT=1) ;;
    ablight2) env_+=(AIFLAME_AUTOGRAD_AB=1 AIFLAME_AUTOGRAD_LIGHT=2) ;;
    old) bin=$a ;;
  esac
  steps_var="STEPS_$w"
  steps=${!steps_var:-}
  [ -z "$steps" ] && case $w in gpt_train) steps=100 ;; resnet_train) steps=20 ;; *) steps=30 ;; esac
  log=$(env "${env_[@]}" timeout -k 5 150 "$bin/aiflame" record -f --sass-timeout 0 -o "$out/cv.aiflame" -- \
          env STEPS="$steps" python3 "bench/workloads/$w.py" 2>&1)
  cost=$(grep -o 'stack capture cost [0-9.]*' <<<"$log" | grep -o '[0-9.]*$')
  line=$(grep -o 'capture stats: .*' <<<"$log")
  full=$(grep -o 'record buffer full [0-9]*' <<<"$log" | grep -o '[0-9]*$')
  # The A/B line's last figure compares walked launches apart from memo launches (stratified); the
  # one before it is all launches together (raw).
  ab=$(grep -o 'autograd A/B: .*' <<<"$log" | grep -o '[-+][0-9.]* us$' | grep -o '^[-+][0-9.]*')
  abraw=$(grep -o 'autograd A/B: .*' <<<"$log" | grep -o '[-+][0-9.]* us;' | grep -o '^[-+][0-9.]*')
  echo "$w r$r $v cost_us=${cost:-?}${ab:+ ab=$ab}${abraw:+ abraw=$abraw}${full:+ full=$full} ${line}" | tee -a "$out/lines"
  # A run that printed no figure (a crash, a hang killed by the timeout, a warning instead of the
  # summary): its log is kept and its end shown, so that a failure is never only a "?".
  if [ -z "$cost" ]; then
    printf '%s\n' "$log" > "$out/failed_${w}_r${r}_${v}.log"
    echo "  no figure; the log's end ($out/failed_${w}_r${r}_${v}.log):"
    tail -15 <<<"$log" | sed 's/^/    /'
  fi
}
nvidia-smi --query-gpu=name --format=csv,noheader
if [ "${WARMUP:-1}" = 1 ]; then
  set -- $workloads
  w0=$1
  set -- $variants
  run "$1" "$w0" warmup >/dev/null
  sed -i '/ rwarmup /d' "$out/lines"
fi
for w in $workloads; do
  for ((r = 0; r < rounds; r++)); do
    set -- $variants
    n=$#
    for ((k = 0; k < n; k++)); do
      i=$(( (k + r) % n + 1 ))
      run "${!i}" "$w" "$r"
    done
  done
done
python3 - "$out/lines" "$variants" <<'PY'
import collections, re, statistics, sys
variants = sys.argv[2].split()
cost = collections.defaultdict(dict)
ab = collections.defaultdict(lambda: collections.defaultdict(list))
for l in open(sys.argv[1]):
    m = re.match(r"(\S+) r(\d+) (\S+) cost_us=([0-9.]+)", l)
    if m:
        cost[(m[1], int(m[2]))][m[3]] = float(m[4])
    m = re.match(r"(\S+) r\d+ (\S+) cost_us=\S+ ab=([-+0-9.]+)", l)
    if m:
        ab[m[1]][m[2]].append(float(m[3]))
def f(v):
    return "%.3f [%.3f, %.3f] (%d)" % (statistics.median(v), min(v), max(v), len(v)) if v else "-"
for w in sorted({k[0] for k in cost}):
    rows = [c for (ww, _), c in sorted(cost.items()) if ww == w]
    print(w)
    for v in variants:
        vals = [c[v] for c in rows if v in c]
        d = [c[v] - c[variants[0]] for c in rows if v in c and variants[0] in c]
        print("  %-5s cost %s; minus %s %s" % (v, f(vals), variants[0], f(d) if v != variants[0] else ""))
    for v, vals in sorted(ab[w].items()):
        print("  autograd A/B inside each %s run (with minus without, walked and memo launches apart): %s" % (v, f(vals)))
PY
