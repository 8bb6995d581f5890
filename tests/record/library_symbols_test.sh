#!/usr/bin/env bash
# The injection library lives inside someone else's process: it must neither export its compression
# libraries (zlib, zstd: linked in and hidden) nor import them, nor let the program's definitions of
# zstd's weak tracing hooks reach its private zstd.
set -u
LIB=$1
fail=0
check() { if ! eval "$2"; then echo "FAIL $1"; fail=1; fi; }
defined=$(nm -D --defined-only "$LIB" | awk '$2 ~ /^[TDBR]$/ {print $3}')
check "the only exported function is InitializeInjection (got: $defined)" '[ "$defined" = InitializeInjection ]'
pattern='ZSTD_|ZDICT_|deflate|inflate|compress|crc32|adler32|zlibVersion'
check "no compression symbol in the dynamic table: $(nm -D "$LIB" | grep -E "$pattern" | tr '\n' ' ')" \
  '! nm -D "$LIB" | grep -qE "$pattern"'
check "zstd's trace hooks are defined inside, hidden" \
  '[ "$(nm "$LIB" | grep -cE " t ZSTD_trace_compress_(begin|end)$")" -eq 2 ]'
[ "$fail" -eq 0 ] && echo "library symbols: all checks passed"
exit "$fail"
