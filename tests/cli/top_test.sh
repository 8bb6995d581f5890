#!/usr/bin/env bash
# `aiflame top` (issue 66 item 2) against a recorded replay (--replay: a profile's chunks fed into the
# directory top reads, one step per refresh, as a recording grows): the plain blocks when stdout is no
# terminal, and the full screen view in a real terminal (tmux: send-keys, capture-pane) with its keys.
# No timing is asserted: each wait polls for what the screen must come to show, bounded only as a
# guard against a hang.
set -u
AIFLAME=$1
SRC=$2
T=$(mktemp -d)
SOCK="aiflame-top-test-$$"
trap 'tmux -L "$SOCK" kill-server 2>/dev/null; rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
FIX="$SRC/tests/data/backward/gpt_train_autograd_on.aiflame"
TOTAL=$("$AIFLAME" report -q --format folded "$FIX" | awk '{ n += $NF } END { print n }')

# Plain: one block per refresh, totals growing to the profile's, the last one marked ended.
"$AIFLAME" top --replay "$FIX" --replay-steps 4 --refresh 0.05 >"$T/plain" 2>"$T/err"
check_status "plain: exits 0" $? "$T/err"
grep '^aiflame top' "$T/plain" | sed 's/.*|  \([0-9]*\) GPU samples.*/\1/' >"$T/totals"
check "plain: several blocks ($(grep -c '' "$T/totals"))" '[ "$(grep -c "" "$T/totals")" -ge 3 ]'
check "plain: totals never shrink" 'sort -n -c "$T/totals"'
check "plain: the last block has all $TOTAL samples, ended" \
  'grep "^aiflame top" "$T/plain" | tail -1 | grep -q "|  $TOTAL GPU samples .*\[ended\]"'
check "plain: no terminal escapes" '! grep -q $'"'"'\x1b'"'"' "$T/plain"'
check "plain: kernels with their launch sites in the script" 'grep -q "<-  Block.forward (gpt_train.py:12)" "$T/plain"'

# The kernel rows' column C (1: samples, 3: GPU ms, 4: launches) never increases.
sorted_by() {
  grep -E '^ +[0-9]+ +[0-9.]+% +[0-9.]+ +[0-9]+  ' "$1" | awk -v c="$2" '{ print $c }' | sed 's/%//' >"$T/col"
  [ "$(grep -c '' "$T/col")" -ge 2 ] && sort -g -r -c "$T/col"
}
pane() { tmux -L "$SOCK" capture-pane -p -t top >"$T/pane"; }
wait_for() {  # wait_for REGEX: until the pane shows it (guard: 60 s)
  for _ in $(seq 600); do
    pane
    grep -qE -- "$1" "$T/pane" && return 0
    sleep 0.1
  done
  return 1
}

if ! command -v tmux >/dev/null; then
  echo "FAIL tmux is not installed (tests/run_all.sh installs it)"
  fail=$((fail + 1))
  finish top
  exit
fi
tmux -L "$SOCK" -f /dev/null new-session -d -s top -x 200 -y 60 \
  "'$AIFLAME' top --replay '$FIX' --replay-steps 100000 --refresh 0.1; echo \$? >'$T/rc'; sleep 120"
check "tty: the screen comes up" 'wait_for "^aiflame top - python3 .*sort: samples"'
check "tty: kernels come in" 'wait_for "<-  Block.forward"'
pane
check "tty: sorted by samples" 'sorted_by "$T/pane" 1'
check "tty: the keys are shown" 'grep -q "keys: s sort" "$T/pane"'
tmux -L "$SOCK" send-keys -t top s
check "tty: s sorts by GPU time" 'wait_for "sort: GPU time"'
pane
check "tty: ... and the rows are in GPU-time order" 'sorted_by "$T/pane" 3'
tmux -L "$SOCK" send-keys -t top s
check "tty: s again sorts by launches" 'wait_for "sort: launches"'
pane
check "tty: ... in launch order" 'sorted_by "$T/pane" 4'
tmux -L "$SOCK" send-keys -t top p
check "tty: p pauses" 'wait_for "\[paused\]"'
pane
cp "$T/pane" "$T/paused1"
sleep 1
pane
check "tty: paused, the screen stands still" 'cmp -s "$T/paused1" "$T/pane"'
tmux -L "$SOCK" send-keys -t top p
check "tty: p again resumes" 'for _ in $(seq 600); do pane; grep -q "\[paused\]" "$T/pane" || break; sleep 0.1; done; ! grep -q "\[paused\]" "$T/pane"'
tmux -L "$SOCK" send-keys -t top q
check "tty: q quits, status 0" 'for _ in $(seq 600); do [ -s "$T/rc" ] && break; sleep 0.1; done; [ "$(cat "$T/rc" 2>/dev/null)" = 0 ]'
pane
check "tty: the last screen stays on the terminal" 'grep -q "^aiflame top - .*\[ended\]" "$T/pane"'

finish top
