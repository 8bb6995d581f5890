#!/usr/bin/env bash
# `aiflame record --duty`: duty-cycled recording with CUPTI finalized between windows, on a machine
# without a GPU. The fake libcuda.so.1 calls the injection library's InitializeInjection at the first
# launch (as cuInit does), and the fake libcupti logs every subscription, finalize and delivered launch
# callback (tests/cli/attach/fake_*.c). Checked: windows open and close on schedule with a fresh
# subscription each and CUPTI finalized after each; launches between windows reach no callback; each
# window's profile has launches and samples; the code object of a module loaded in the first window is
# carried into later ones; a window whose sampling stays silent is reopened; the directory keeps the
# newest --duty-keep windows; `report DIR` merges them and --since/--until pick a span; the heatmap
# shows the gaps as unrecorded; `--pid --duty` on a running program; the program's RSS does not grow
# with the number of windows.
set -u
AIFLAME=$1 TARGET=$2 FAKE_CUDA=$3 FAKE_CUPTI=$4
T=$(mktemp -d); [ -n "${KEEP:-}" ] && echo "keeping $T"
chmod 755 "$T"
trap 'kill $(jobs -p) 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export AIFLAME_CUPTI=$FAKE_CUPTI
windows() { grep -c '^window ' "$1"/windows.*.log 2>/dev/null | awk -F: '{s += $NF} END {print s + 0}'; }
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1"; }  # the values of key $2 in the window lines of log $1
# Windows of log $1 that had launches but no sample (a window that opens as the program exits has neither).
unsampled() { awk '/^window / && / samples=0 / && !/ launches=0 /' "$1" | wc -l; }

# --- Windows open and close; CUPTI finalized between them -------------------------------------------
FAKE_CUPTI_LOG=$T/cupti.log FAKE_CUPTI_MODULE=1 "$AIFLAME" record --duty 200ms/600ms --sass-timeout 0 -o "$T/duty" -- \
  "$TARGET" 150 "$FAKE_CUDA" >"$T/out" 2>"$T/err"
rc=$?
check "the program's exit status passes through (7)" '[ $rc -eq 7 ]'
check "the program printed every tick" '[ "$(grep -c "^tick " "$T/out")" -eq 150 ] && grep -q "^sum " "$T/out"'
log=$(ls "$T"/duty/windows.*.log 2>/dev/null | head -1)
n=$(windows "$T/duty")
run_s=$(sed -n 's/.* recorded of \([0-9.]*\) s.*/\1/p' "$T/err")
expected=$(awk -v s="${run_s:-0}" 'BEGIN {print int(s / 0.6 * 0.85)}')
check "at 200ms/600ms, a window every 0.54-0.66 s of the ${run_s:-?} s run: $n windows (at least $expected)" \
  '[ "$n" -ge 4 ] && [ "$n" -ge "$expected" ] && [ "$n" -le "$(awk -v s="${run_s:-0}" "BEGIN {print int(s / 0.54) + 1}")" ]'
check "one profile per window in the directory" '[ "$(ls "$T"/duty/window-* | wc -l)" -eq "$n" ]'
subs=$(grep -c subscribe "$T/cupti.log"); fins=$(grep -c finalize "$T/cupti.log")
# The program may end inside a window: that one is closed at exit without cuptiFinalize (CUPTI goes with the process).
check "a fresh subscription per window, each finalized (subscribe $subs, finalize $fins)" \
  '[ "$subs" -eq "$n" ] && { [ "$fins" -eq "$n" ] || [ "$fins" -eq $((n - 1)) ]; }'
# Between a finalize and the next subscription no launch callback was delivered, though the program
# launched at every tick: the callbacks are only those of the windows.
check "no launch callback between windows" \
  '! awk "/subscribe/ {on = 1} /finalize/ {on = 0} /callback/ && !on {bad = 1} END {exit !bad}" "$T/cupti.log"'
cb=$(grep -c callback "$T/cupti.log")
check "fewer callbacks than launches: the program ran detached between windows ($cb of 150)" '[ "$cb" -gt 0 ] && [ "$cb" -lt 120 ]'
check "every window got launches (but one opened as the program exited) and samples" \
  '[ "$(field "$log" launches | grep -cx 0)" -le 1 ] && [ "$(unsampled "$log")" -eq 0 ]'
check "the summary gives windows, samples per window, duty reached and the opening cost" \
  'grep -q "duty 200ms/600ms: $n windows opened" "$T/err" && grep -q "duty reached" "$T/err" && grep -q "GPU samples per window: min" "$T/err" && grep -q "windows left silent: 0" "$T/err" && grep -q "opening a window took up to" "$T/err"'
first=$(ls "$T"/duty/window-* | head -1); second=$(ls "$T"/duty/window-* | sed -n 2p)
"$AIFLAME" report "$first" -o "$T/w1.folded" 2>"$T/w1.err"
"$AIFLAME" report "$second" -o "$T/w2.folded" 2>"$T/w2.err"
check "the first window holds the module loaded in it" 'grep -q ", 1 cubins" "$T/w1.err"'
check "a later window holds it too, carried from the first" 'grep -q ", 1 cubins" "$T/w2.err"'
check "a window's flame graph has the launch stack and kernel" 'grep -q "fake_launch.*fake_kernel" "$T/w2.folded"'

# --- report DIR merges the windows; --since/--until pick a span --------------------------------------
"$AIFLAME" report "$T/duty" -o "$T/all.folded" 2>"$T/all.err"
check_status "report DIR" $? "$T/all.err"
sum() { awk '{s += $NF} END {print s + 0}' "$1"; }
logged=$(field "$log" samples | awk '{s += $1} END {print s}')
check "report DIR counts every window's samples ($(sum "$T/all.folded") of $logged)" '[ "$(sum "$T/all.folded")" -eq "$logged" ]'
"$AIFLAME" report "$T/duty" --until 1ms -o "$T/first.folded" 2>"$T/first.err"
w1=$(field "$log" samples | head -1)
check "--until 1ms: the first window alone ($(sum "$T/first.folded") of $w1)" '[ "$(sum "$T/first.folded")" -eq "$w1" ]'
"$AIFLAME" report "$T/duty" --since 1ms -o "$T/rest.folded" 2>"$T/rest.err"
check "--since 1ms: all windows but the first" '[ "$(( $(sum "$T/rest.folded") + w1 ))" -eq "$logged" ]'
"$AIFLAME" report "$T/duty" --since -0s -o "$T/last.folded" 2>"$T/last.err"
wl=$(field "$log" samples | tail -1)
check "--since -0s: the last window alone" '[ "$(sum "$T/last.folded")" -eq "$wl" ]'
"$AIFLAME" report "$T/duty" --since 1h -o "$T/none.folded" 2>"$T/none.err"
check "a span no window started in: exit 1, one line naming the span the windows cover" \
  '[ $? -eq 1 ] && [ "$(wc -l <"$T/none.err")" -eq 1 ] && grep -q "no profile started in the span" "$T/none.err"'
"$AIFLAME" report "$T/duty" --since yesterday -o "$T/bad.folded" 2>"$T/bad.err"
check "a bound that is not a time: exit 2" '[ $? -eq 2 ] && grep -q "is not a time" "$T/bad.err"'
"$AIFLAME" diff "$T/duty" "$T/duty" --until 1ms -o "$T/diff.folded" 2>"$T/diff.err"
check_status "diff DIR DIR --until" $? "$T/diff.err"
"$AIFLAME" report "$T/duty" -o "$T/heat.heatmap.svg" 2>/dev/null
heat=$T/heat.heatmap.svg
check "the heatmap greys the seconds between windows as not recorded" '[ -n "$heat" ] && grep -q "class=\"unrecorded\"" "$heat"'

# --- A silent window is reopened with a fresh subscription -------------------------------------------
# 200 launches a tick: a window counts as silent only once 500 launches brought no sample.
FAKE_CUPTI_SILENT=1 "$AIFLAME" record --duty 400ms/2s --sass-timeout 0 -o "$T/silent" -- "$TARGET" 60 "$FAKE_CUDA" 200 \
  >/dev/null 2>"$T/silent.err"
slog=$(ls "$T"/silent/windows.*.log | head -1)
check "the silent first window was found silent" '[ "$(field "$slog" silent | head -1)" = 1 ]'
check "and reopened at once with samples" '[ "$(field "$slog" retry | sed -n 2p)" = 1 ] && [ "$(field "$slog" samples | sed -n 2p)" -gt 0 ]'
check "the summary says no window was left silent" 'grep -q "windows left silent: 0 (1 found silent and reopened)" "$T/silent.err"'

# --- The directory keeps the newest --duty-keep windows ----------------------------------------------
"$AIFLAME" record --duty 100ms/300ms --duty-keep 2 --sass-timeout 0 -o "$T/keep" -- "$TARGET" 100 "$FAKE_CUDA" \
  >/dev/null 2>"$T/keep.err"
klog=$(ls "$T"/keep/windows.*.log | head -1)
opened=$(grep -c '^window ' "$klog"); last=$(field "$klog" seq | tail -1)
kept=$(ls "$T"/keep/window-* | sed 's/.*window-0*\([0-9]*\)\..*/\1/' | tr '\n' ' ')
check "$opened windows opened, the newest 2 kept ($kept)" '[ "$opened" -ge 4 ] && [ "$kept" = "$((last - 1)) $last " ]'
"$AIFLAME" record --duty 100ms/300ms -o "$T/keep" -- true 2>/dev/null
check "a second recording moves the earlier directory to .old" '[ -d "$T/keep.old" ] && ls "$T"/keep.old/window-* >/dev/null'

# --- RSS bounded over many windows (the program's, which holds the injection library) ---------------
"$AIFLAME" record --duty 100ms/200ms --sass-timeout 0 -o "$T/many" -- "$TARGET" 700 "$FAKE_CUDA" >"$T/many.out" 2>"$T/many.err" &
CLI=$!
PID=
for _ in $(seq 200); do PID=$(pgrep -P $CLI | head -1); [ -n "$PID" ] && break; sleep 0.05; done
rss() { awk '/^VmRSS/ {print $2}' "/proc/$PID/status"; }
wait_windows() { for _ in $(seq 1200); do [ "$(windows "$T/$1")" -ge "$2" ] && return 0; sleep 0.05; done; return 1; }
wait_windows many 5; rss5=$(rss)
wait_windows many 40; rss40=$(rss)
wait $CLI
grown=$(( (${rss40:-0} - ${rss5:-0}) / 1024 ))
echo "RSS after 5 windows ${rss5:-?} kB, after 40 ${rss40:-?} kB"
check "40 windows or more, each with samples" '[ "$(windows "$T/many")" -ge 40 ] && [ "$(unsampled "$(ls "$T"/many/windows.*.log)")" -eq 0 ]'
check "the program's RSS grew under 4 MB from window 5 to 40 (${grown} MB)" '[ -n "$rss5" ] && [ -n "$rss40" ] && [ "$grown" -lt 4 ]'

# --- --pid --duty on a running program ------------------------------------------------------------------
("$TARGET" 200 "$FAKE_CUDA" >"$T/pid.out"; echo $? >"$T/pid.rc") &
SUB=$!
for _ in $(seq 100); do PID=$(pgrep -P $SUB | head -1); [ -n "$PID" ] && break; sleep 0.05; done
for _ in $(seq 100); do [ -s "$T/pid.out" ] && break; sleep 0.05; done
"$AIFLAME" record --pid "$PID" --duty 200ms/500ms --duration 2 --sass-timeout 0 -o "$T/pid" 2>"$T/pid.err"
rc=$?
if grep -q ptrace "$T/pid.err" && [ -z "${CI:-}" ]; then
  echo "SKIP --pid --duty: ptrace is not permitted here: $(cat "$T/pid.err")"
else
  check "--pid --duty: aiflame exits 0 after the duration" '[ $rc -eq 0 ]'
  check "--pid --duty: 3 windows or more, each with samples" '[ "$(windows "$T/pid")" -ge 3 ] && [ "$(unsampled "$(ls "$T"/pid/windows.*.log)")" -eq 0 ]'
  for _ in $(seq 600); do [ -e "$T/pid.rc" ] && break; sleep 0.05; done
  check "--pid --duty: the program's output and status unchanged" '[ "$(cat "$T/pid.rc")" = 7 ] && [ "$(grep -c "^tick " "$T/pid.out")" -eq 200 ]'
fi

finish duty
