# The pass/fail bookkeeping of the shell tests under tests/cli; each sources it after `set -u`:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# check NAME CONDITION         CONDITION, a shell string, is evaluated where check is called (its
#                              variables, and $? of the command before); a pass is counted, or
#                              "FAIL NAME" printed and a failure counted.
# check_status NAME STATUS [FILE]  the same for a status already taken: `cmd; check_status NAME $?`
#                              (never inside a $(...) of the same line: that would be the status of the
#                              substitution); FILE, when given, is printed on failure.
# finish NAME                  prints "NAME: N passed, N failed"; its status is the test's, so it is the
#                              script's last command.
# Checks that print their own line count themselves: pass=$((pass + 1)) or fail=$((fail + 1)).
fail=0
pass=0
check() { if eval "$2"; then pass=$((pass + 1)); else echo "FAIL $1"; fail=$((fail + 1)); fi; }
check_status() {
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL $1"; [ -n "${3:-}" ] && sed 's/^/  | /' "$3"; fail=$((fail + 1)); fi
}
finish() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
