#!/usr/bin/env bash
# The injection library lives inside someone else's process: it must neither export its compression
# libraries (zlib, zstd: linked in and hidden) nor import them, nor let the program's definitions of
# zstd's weak tracing hooks reach its private zstd. With TLSDESC=1 (the x86-64 build without
# sanitizers), its thread-locals must be reachable through TLS descriptors alone and fit in glibc's
# optional static TLS surplus (512 bytes by default), or every access on the launch path is a call to
# __tls_get_addr (src/util/static_tls.h). (One call to __tls_get_addr is deliberate: it brings a
# thread's DTV up to date before dl_iterate_phdr, src/util/loaded_objects.h; a thread-local compiled
# without TLS descriptors shows as a DTPMOD64 relocation instead.)
set -u
LIB=$1
TLSDESC=${2:-0}
fail=0
check() { if ! eval "$2"; then echo "FAIL $1"; fail=1; fi; }
defined=$(nm -D --defined-only "$LIB" | awk '$2 ~ /^[TDBR]$/ {print $3}')
check "the only exported functions are InitializeInjection, aiflame_attach and aiflame_levelzero_initialize (got: $defined)" \
  '[ "$(echo $defined | tr " " "\n" | sort | tr "\n" " ")" = "InitializeInjection aiflame_attach aiflame_levelzero_initialize " ]'
# No STB_GNU_UNIQUE symbol: one makes the library impossible to unload, and a refused attach
# (`aiflame record --pid`) unloads it from the program again.
check "no GNU unique symbol: $(readelf -Ws "$LIB" | grep UNIQUE | awk '{print $8}' | sort -u | tr '\n' ' ')" \
  '! readelf -Ws "$LIB" | grep -q UNIQUE'
pattern='ZSTD_|ZDICT_|deflate|inflate|compress|crc32|adler32|zlibVersion'
check "no compression symbol in the dynamic table: $(nm -D "$LIB" | grep -E "$pattern" | tr '\n' ' ')" \
  '! nm -D "$LIB" | grep -qE "$pattern"'
check "zstd's trace hooks are defined inside, hidden" \
  '[ "$(nm "$LIB" | grep -cE " t ZSTD_trace_compress_(begin|end)$")" -eq 2 ]'
# It loads on glibc 2.34 (RHEL 9): nothing newer is imported (glibc 2.35's _dl_find_object, for walks
# through objects whose unwind rows are being built, is looked up with dlsym).
newest=$(objdump -T "$LIB" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1)
check "no glibc symbol newer than GLIBC_2.34 (newest: $newest)" \
  '[ "$(printf "%s\n%s\n" "$newest" GLIBC_2.34 | sort -V | tail -1)" = GLIBC_2.34 ]'
if [ "$TLSDESC" = 1 ]; then
  check "no DTPMOD64 relocation (a thread-local compiled without -mtls-dialect=gnu2)" \
    '! readelf -rW "$LIB" | grep -q R_X86_64_DTPMOD64'
  tls=$(readelf -lW "$LIB" | awk '$1 == "TLS" {print $6}')
  check "the TLS block ($tls bytes) fits in glibc's 512-byte optional static TLS surplus" \
    '[ -n "$tls" ] && [ $((tls)) -le 512 ]'
fi
[ "$fail" -eq 0 ] && echo "library symbols: all checks passed"
exit "$fail"
