#!/bin/sh
# Self test of the Level Zero driver double through the real loader:
# `make -C ci ze-check`.  Usage: ze_selftest.sh BUILD_DIR
# Needs the real loader (libze_loader.so.1, Debian package libze1); the
# validation-layer runs also use its libze_validation_layer.so.1.
set -u
B=$(cd "$1" && pwd)
D=$(dirname "$0")
DRV="$B/libze_double.so"
fails=0
out=$(mktemp)
truth=$(mktemp)
trap 'rm -f "$out" "$out.2" "$out.3" "$truth"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }
# run ENV... -- ARGS: ze_prog on the double, stdout in $out, stderr in $out.3
run() {
    env ZE_ENABLE_ALT_DRIVERS="$DRV" "$@" "$B/ze_prog" ${ARGS:-} >"$out" 2>"$out.3"
}
has() { grep -qx "$1" "$out"; }
expect() { # name line...
    name=$1
    shift
    for l in "$@"; do
        if ! has "$l"; then fail "$name: no line '$l'"; sed 's/^/    /' "$out.3"; return; fi
    done
    pass "$name"
}

# Exports: exactly the DDI-table getters (+ cwz_*), as a real driver.
nm -D --defined-only "$DRV" | awk '$2 == "T" { print $3 }' | grep -v '^cwz_' | sort >"$out"
sed -n '/^#define CWZ_\(FILLED\|EMPTY\)_GETTERS(X)/,/^$/p' "$D/libze_double.c" |
    grep -o 'X([A-Za-z]*' | sed 's/^X(//' | sort >"$out.2"
if cmp -s "$out" "$out.2"; then pass "exports of libze_double.so are the $(wc -l <"$out.2") getters"
else fail "exports of libze_double.so differ from the getter lists:"; diff "$out" "$out.2"; fi

# Every entry point counts itself first.
bad=$(awk '
    /^ZE_DEF\(/ { match($0, /^ZE_DEF\([A-Za-z0-9_]+/); name = substr($0, 8, RLENGTH - 7); next }
    name != "" && /CW_COUNT\(/ {
        match($0, /CW_COUNT\([A-Za-z0-9_]+/); got = substr($0, RSTART + 9, RLENGTH - 9)
        if (got != name) print name " counts " got
        name = ""
    }' "$D/libze_double.c")
if [ -z "$bad" ]; then pass "every ZE_DEF counts itself"; else fail "miscounted: $bad"; fi

# The program, twice: the output (facts and counters) must be identical.
FACTS="launches=11 copies=9 fills=5 barriers=5 global_timestamps=4 executes=5 host_syncs=7
not_ready=3 timestamps_ok=1 data_ok=1 bad_handles_ok=13 zeInit=2
zeCommandQueueExecuteCommandLists=7 zeCommandListAppendLaunchKernel=8 zeEventQueryKernelTimestamp=12"
ARGS=4 run
cp "$out" "$out.2"
# shellcheck disable=SC2086
expect "ze_prog 4" $FACTS
ARGS=4 run
if cmp -s "$out" "$out.2"; then pass "ze_prog 4 output identical across runs"
else fail "ze_prog 4 output differs across runs:"; diff "$out.2" "$out"; fi

# The real validation layer answers the NULL cases itself, with the same codes.
ARGS=4 run ZE_ENABLE_VALIDATION_LAYER=1 ZE_ENABLE_PARAMETER_VALIDATION=1
expect "ze_prog 4 under the validation layer" bad_handles_ok=13 timestamps_ok=1 \
    zeCommandListAppendLaunchKernel=5 zeContextCreate=1
# Loader intercept (handles wrapped by the loader): no bad handles there.
ARGS="4 0" run ZE_ENABLE_LOADER_INTERCEPT=1
expect "ze_prog 4 0 with ZE_ENABLE_LOADER_INTERCEPT=1" bad_handles=skipped timestamps_ok=1 \
    data_ok=1 zeDriverGet=3

# Ground truth and the device clock.
: >"$truth"
ARGS=4 run CWZ_TRUTH="$truth" CWZ_DEVICE_CLOCK_DRIFT_PPM=1000 CWZ_DEVICE_CLOCK_OFFSET_NS=-5000000000
got=$(awk '{ n[$1]++ } END { printf "kernel=%d memcpy=%d memset=%d", n["kernel"], n["memcpy"], n["memset"] }' "$truth")
# Kernels last their sleep_<N>us, 1 MB copies (all) and fills (queue: engine 1) 100 us.
short=$(awk '$1 == "kernel" { split($5, a, "_"); if ($4 - $3 < (a[2] + 0) * 1000) print }
             $1 == "memcpy" && $4 - $3 < 100000 { print }
             $1 == "memset" && $2 == 1 && $4 - $3 < 100000 { print }' "$truth" | grep -c .)
if has timestamps_ok=1 && [ "$got" = "kernel=11 memcpy=9 memset=5" ] && [ "$short" = 0 ]; then
    pass "CWZ_TRUTH log: $got, none short; timestamps ok at 1000 ppm, -5 s"
else fail "CWZ_TRUTH: $got, $short short lines"; fi
ARGS=20 run CWZ_DEVICE_CLOCK_DRIFT_PPM=1000000
expect "ze_prog 20 at +1000000 ppm" timestamps_ok=1
ARGS=20 run CWZ_DEVICE_CLOCK_DRIFT_PPM=-500000 CWZ_DEVICE_CLOCK_OFFSET_NS=123456789012345
expect "ze_prog 20 at -500000 ppm, offset 1.2e14 ns" timestamps_ok=1
# An offset that puts a wrap of the 32-bit kernel timestamps (2^32 ticks of
# 80 ns) about 60 ms after python3 reads CLOCK_MONOTONIC: mid-run (ze_prog 100
# starts its work some 10 ms later and runs for over 100 ms).
off=$(python3 -c 'import time; p = 2**32 * 80; t = time.monotonic_ns() + 60000000
print((t // p + 1) * p - t)' 2>/dev/null)
if [ -n "$off" ]; then
    ARGS=100 run CWZ_DEVICE_CLOCK_OFFSET_NS="$off"
    expect "ze_prog 100 across a kernel timestamp wrap" timestamps_ok=1
fi
ARGS=1 run CWZ_DEVICE_CLOCK_DRIFT_PPM=abc
if grep -q 'cwz: ignoring bad CWZ_DEVICE_CLOCK_DRIFT_PPM=abc' "$out.3" && has timestamps_ok=1
then pass "bad CWZ_DEVICE_CLOCK_DRIFT_PPM ignored with a message"; else fail "bad drift value"; fi

# Failing initialisation and a missing driver.
ARGS=1 run CWZ_INIT_RESULT=0x78000001
if [ -s "$out" ] || ! grep -q 'zeInit(0) = 0x78000001' "$out.3"; then fail "CWZ_INIT_RESULT"
else pass "CWZ_INIT_RESULT=0x78000001 makes zeInit fail"; fi
ARGS=1 DRV=/nonexistent/libze_double.so run
if grep -q 'zeInit(0) = 0x78000001' "$out.3"; then pass "no driver: zeInit = ZE_RESULT_ERROR_UNINITIALIZED"
else fail "no driver"; fi

if [ "$fails" -ne 0 ]; then echo "ze selftest: $fails FAILED"; exit 1; fi
echo "ze selftest: all passed"
