#!/bin/sh
# Self test of the CUDA doubles: `make -C ci check` (optionally with
# REAL_CUDART=/path/to/libcudart.so.13).  Usage: selftest.sh BUILD_DIR [REAL_CUDART]
set -u
B=$1
REAL=${2:-}
D=$(dirname "$0")
export LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fails=0
out=$(mktemp)
truth=$(mktemp)
trap 'rm -f "$out" "$out.2" "$truth"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }

# Exported functions must be exactly the counted symbol list (+ the counter
# API), so every exported variant has a counter.
check_exports() { # lib source list-macro prefix
    nm -D --defined-only "$1" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' |
        grep -v "^$4_" | sort >"$out"
    sed -n "/^#define $3(X)/,/^\$/p" "$2" | grep -o 'X([A-Za-z0-9_]*)' |
        sed 's/^X(//; s/)$//' | sort >"$out.2"
    if cmp -s "$out" "$out.2"; then pass "exports of $1 match $3"
    else fail "exports of $1 differ from $3:"; diff "$out" "$out.2"; fi
}
check_exports "$B/libcuda.so.1" "$D/libcuda_double.c" CWD_SYMBOLS cwd
check_exports "$B/libcudart.so.13" "$D/libcudart_double.c" CWR_SYMBOLS cwr
check_exports "$B/libcupti.so.13" "$D/libcupti_double.c" CWP_SYMBOLS cwp

# Every exported body counts itself first: CW_DEF(name / cudaX(...) { then CW_COUNT(name).
for src in "$D/libcuda_double.c" "$D/libcudart_double.c" "$D/libcupti_double.c"; do
    bad=$(awk '
        /^CW_DEF\(/ { match($0, /^CW_DEF\([A-Za-z0-9_]+/); name = substr($0, 8, RLENGTH - 7); next }
        /^CW_PUBLIC [^(]*[ *](cuda|__cuda|cupti)[A-Za-z0-9_]*\(/ {
            match($0, /(cuda|__cuda|cupti)[A-Za-z0-9_]*\(/); name = substr($0, RSTART, RLENGTH - 1); next }
        name != "" && /CW_COUNT\(/ {
            match($0, /CW_COUNT\([A-Za-z0-9_]+/); got = substr($0, RSTART + 9, RLENGTH - 9)
            if (got != name) print name " counts " got
            name = ""
        }' "$src")
    if [ -z "$bad" ]; then pass "counter calls in $(basename "$src")"
    else fail "counter calls in $(basename "$src"): $bad"; fi
done

# run NAME EXPECTED_RC GREP... : run a program, check exit code and lines.
run() {
    name=$1; want=$2; shift 2
    timeout "${T:-60}" "$B"/$name >"$out" 2>&1
    rc=$?
    if [ "$rc" != "$want" ]; then fail "$name: exit $rc, want $want"; cat "$out"; return; fi
    for pat in "$@"; do
        if ! grep -qx -- "$pat" "$out"; then fail "$name: no line '$pat'"; cat "$out"; return; fi
    done
    pass "$name"
}

run "mt_launch 4 50" 0 total_launches=200 total_memcpy_async=20 cuLaunchKernel=200 \
    cuMemcpyHtoDAsync_v2=20 cuEventRecord=20 cudaLaunchKernel=200
run "rtld_local" 0 app_run=100 cuLaunchKernel=100
run "dlsym_driver 20" 0 launches=20 cuLaunchKernel=20 cuMemcpyHtoD_v2=1
run "procaddr 20" 0 "check cuLaunchKernel_ptsz=20 cuLaunchKernel=0" \
    "cuNoSuchThing(12000,0)=500 status=1" pfn_null=1 pfn_is_cuLaunchKernel_ptsz=1 \
    pfn_is_cuMemcpyHtoD_v2_ptds=1 cuMemcpyHtoD_v2_ptds=1
run "rtld_next" 0 next_probe=2
run "nvtx_prog" 0 nvtxRangePushA=15 nvtxDomainRangePushEx=2 kernel_launches=7 cuLaunchKernel=7
run "forker 5" 0 "parent pid=[0-9]* launches_total=10" "child pid=[0-9]* launches=5" \
    "parent pid=[0-9]* child_exit=0"
run "spin 20000" 0 "progress 10000" "progress 20000" launches=20000 cuLaunchKernel=20000
T=2 run "hang" 124 syncing; T=60
run "exitcode 3" 3 launches=1 exit=3
run "nvcc13_launch 20" 0 launches=20 __cudaLaunchKernel=10 __cudaLaunchKernel_ptsz=10 \
    cuLaunchKernel=10 cuLaunchKernel_ptsz=10 __cudaGetKernel=1 cuLibraryGetKernel=1
run "graph_prog 5" 0 graph_launches=5 captured_launches=3 direct_launches=2 \
    "expect sleep_1us=10" "expect sleep_10us=7" cudaGraphInstantiate=1 \
    cuGraphInstantiateWithFlags=1 cudaGraphLaunch=5 cuGraphLaunch=5 cuLaunchKernel=5 \
    __cudaLaunchKernel=1 cuMemsetD8Async=1
run "graph_tree 5" 0 graph_launches=5 "expect sleep_1us=10" "expect sleep_0us=5" \
    "expect sleep_10us=5" cuGraphInstantiateWithParams=1 cuGraphLaunch=5 \
    cuGraphAddKernelNode=1 cuGraphAddKernelNode_v2=3 cuGraphAddChildGraphNode=1
run "semantics" 0 result=PASS
# CUPTI double: the consumer checks its records itself (result=PASS); once
# per test switch.
run "cupti_consumer 20" 0 result=PASS subscribe#2=39 pop_empty=18 "records=76 .* dropped=0" missing=0 \
    "ok records delivered + dropped = 3N+16 = 76" "record kernel name=sleep_1us corr=[0-9]* ext=3000 .*"
export CWC_BUSY=1
run "cupti_consumer 20" 0 cupti=busy result=PASS "subscribe=39 (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)"
unset CWC_BUSY
export CWC_DROP_EVERY=3
run "cupti_consumer 20" 0 result=PASS "records=51 .* dropped=25" "ok records delivered + dropped = 3N+16 = 76"
unset CWC_DROP_EVERY
export CWC_LATE_CORRELATION=1
run "cupti_consumer 20" 0 result=PASS missing=0 \
    "ok external correlation records came in later buffers (CWC_LATE_CORRELATION)"
unset CWC_LATE_CORRELATION
run "cupti_consumer callbacks 5" 0 result=PASS enable_errors=1,1,1,1,1,1 enable_domain=0 \
    "callbacks=12 after_disable=0" enable_after_unsubscribe=1 \
    "callback cudaLaunchKernel cbid=211 corr=[0-9]* enter=1 exit=1 ret=0 device=sleep_10us ext=[0-9]*" \
    "callback cudaMemcpyAsync cbid=41 corr=[0-9]* enter=1 exit=1 ret=0 device=memcpy ext=[0-9]*"
run "static_launch 5" 0 launches=5 memcpy_async=1 cuLaunchKernel=5 cuMemcpyHtoDAsync_v2=1
if nm -D "$B/static_launch" | grep -E ' U (cudaLaunchKernel|cudaMemcpyAsync|cudaStreamSynchronize|__cudaRegister)' >/dev/null
then fail "static_launch imports a public runtime launch/copy/sync/registration symbol"
else pass "static_launch calls the runtime only through cwr_static_*"; fi
if [ -n "$REAL" ]; then run "real_cudart $REAL" 0 dlopen=ok; fi
run "token_prog" 0 launches=2 traced=0 cuLaunchKernel=2
run "token_prog nvtx" 0 launches=2 traced=0 cuLaunchKernel=2

# Device clock, ground-truth log and the capture/context entry points.
run "multistream 5" 0 "multistream iterations=5 memcpy_h2d=5 sleep_200us=5 sleep_300us=5 sleep_50us=5 graph_launches=2 sleep_20us=2 sleep_40us=2 kernels=19" \
    cuLaunchKernel=17 cuMemcpyHtoDAsync_v2=5 cuEventRecord=5 cuStreamWaitEvent=5 cuGraphLaunch=2 \
    cuStreamCreate=2
run "devclock" 0 result=PASS "ok elapsed time is in device-clock units (drift 0)" \
    "ok cuStreamIsCapturing(legacy, blocking stream capturing)" \
    "ok cuGetProcAddress(cuCtxGetDevice,13000,0)=cuCtxGetDevice_v2" \
    "ok cuGetProcAddress(cuStreamIsCapturing,10000,2)=cuStreamIsCapturing_ptsz"
# A device clock twice as fast as the host's: elapsed times double (devclock
# checks elapsed >= 2 ms * 2 around a 2 ms kernel), and the events bracket
# the kernel's true times from the log.
export CWD_DEVICE_CLOCK_DRIFT_PPM=1000000 CWD_DEVICE_CLOCK_OFFSET_NS=-123456789012 CWD_TRUTH="$truth"
: >"$truth"
run "devclock" 0 result=PASS "ok elapsed time is in device-clock units (drift 1)" \
    "ok events bracket the kernel's true start and end" "ok truth kernel=1 memcpy=1 memset=1"
export CWD_DEVICE_CLOCK_DRIFT_PPM=-500000 CWD_DEVICE_CLOCK_OFFSET_NS=987654321
: >"$truth"
run "devclock" 0 result=PASS "ok elapsed time is in device-clock units (drift -0.5)" \
    "ok events bracket the kernel's true start and end"
export CWD_DEVICE_CLOCK_DRIFT_PPM=abc
: >"$truth"
run "devclock" 0 result=PASS "cwd: ignoring bad CWD_DEVICE_CLOCK_DRIFT_PPM=abc"
# multistream's truth: lines per kind and name, one stream for the copies,
# sleep_200us and the graph, another for sleep_300us and sleep_50us, minimum
# durations, and the cross-stream order of each iteration (sleep_200us after
# the copy; sleep_50us after sleep_300us and, through the event, sleep_200us).
export CWD_DEVICE_CLOCK_DRIFT_PPM=1000 CWD_DEVICE_CLOCK_OFFSET_NS=-5000000000
: >"$truth"
run "multistream 10" 0 "multistream iterations=10 .* kernels=34"
bad=$(awk '
    NF != 5 || $3 !~ /^[0-9]+$/ || $4 !~ /^[0-9]+$/ || $4 < $3 { print "malformed: " $0; next }
    { key = $1 " " $5; n[key]++; k = n[key]; s[key, k] = $3; e[key, k] = $4
      if (!(key in sid)) sid[key] = $2; else if (sid[key] != $2) print key " on two streams" }
    END {
        want["memcpy -"] = 10; want["kernel sleep_200us"] = 10; want["kernel sleep_300us"] = 10
        want["kernel sleep_50us"] = 10; want["kernel sleep_20us"] = 2; want["kernel sleep_40us"] = 2
        for (key in want) if (n[key] != want[key]) print key ": " n[key] + 0 " lines, want " want[key]
        for (key in n) if (!(key in want)) print "unexpected " key
        if (NR != 44) print NR " lines, want 44"
        a = sid["memcpy -"]; b = sid["kernel sleep_300us"]
        if (a == b || sid["kernel sleep_200us"] != a || sid["kernel sleep_20us"] != a ||
            sid["kernel sleep_40us"] != a || sid["kernel sleep_50us"] != b) print "wrong streams"
        for (k = 1; k <= 10; k++) {
            if (e["memcpy -", k] - s["memcpy -", k] < 100000) print "copy " k " shorter than 100 us"
            if (e["kernel sleep_200us", k] - s["kernel sleep_200us", k] < 200000) print "sleep_200us " k " short"
            if (s["kernel sleep_200us", k] < e["memcpy -", k]) print "sleep_200us " k " before its copy ended"
            if (s["kernel sleep_50us", k] < e["kernel sleep_200us", k]) print "sleep_50us " k " before the event"
            if (s["kernel sleep_50us", k] < e["kernel sleep_300us", k]) print "sleep_50us " k " before sleep_300us ended"
        }
    }' "$truth")
if [ -z "$bad" ]; then pass "multistream truth log (44 lines, streams, order)"
else fail "multistream truth log: $bad"; cat "$truth"; fi
# Two processes appending to one log: whole lines only.
: >"$truth"
"$B"/multistream 3 >/dev/null 2>&1 & p1=$!
"$B"/multistream 3 >/dev/null 2>&1 & p2=$!
wait $p1; r1=$?; wait $p2; r2=$?
lines=$(wc -l <"$truth")
if [ "$r1$r2" = 00 ] && [ "$lines" -eq 32 ] &&
   [ -z "$(awk 'NF != 5 || ($1 != "kernel" && $1 != "memcpy")' "$truth")" ]
then pass "two processes append whole lines to one truth log"
else fail "two processes appending: exit $r1/$r2, $lines lines, want 32"; cat "$truth"; fi
unset CWD_DEVICE_CLOCK_DRIFT_PPM CWD_DEVICE_CLOCK_OFFSET_NS CWD_TRUTH

# CWD_TIMING_EVENTS_SERIALIZE=1: a timing-enabled event on a copy stream waits for the kernels
# outstanding on other streams. overlap_prog a (kernel on S1, then a copy on S0, per step) with its
# own timing events around each operation: every step's copy must start after its kernel ended;
# without the switch (or without timing events) some copy starts while its kernel runs.
run "overlap_prog a --steps 3 --kernel-us 1000 --copy-mib 10" 0 \
    "overlap mode=a part=both steps=3 warmup=2 copy_bytes=10485760 kernel_us=1000 x=copy y=kernel timing_events=0 .*" \
    cuLaunchKernel=5 cuMemcpyHtoDAsync_v2=5
# overlap_truth: the steps' (warm-up left out) copies that start before their kernel ended.
overlap_truth() {
    sort -n -k3 "$truth" | awk '
        $1 == "kernel" { ke[nk++] = $4 } $1 == "memcpy" { cs[nc++] = $3 }
        END { for (i = 2; i < nk && i < nc; i++) if (cs[i] < ke[i]) n++; print n + 0 }'
}
for sw in 0 1; do
    for te in "" --timing-events; do
        : >"$truth"
        CWD_TRUTH=$truth CWD_TIMING_EVENTS_SERIALIZE=$sw "$B"/overlap_prog a --steps 3 --kernel-us 1000 \
            --copy-mib 10 $te >"$out" 2>&1 || { fail "overlap_prog (switch $sw $te): exit $?"; cat "$out"; }
        n=$(overlap_truth)
        if [ "$sw$te" = "1--timing-events" ]; then want=0; else want=">0"; fi
        if { [ "$want" = 0 ] && [ "$n" -eq 0 ]; } || { [ "$want" != 0 ] && [ "$n" -gt 0 ]; }
        then pass "overlap_prog: CWD_TIMING_EVENTS_SERIALIZE=$sw ${te:-(no timing events)}: $n of 3 copies overlap their kernel"
        else fail "overlap_prog: CWD_TIMING_EVENTS_SERIALIZE=$sw ${te:-(no timing events)}: $n of 3 copies overlap their kernel, want $want"; cat "$truth"; fi
    done
done
CWD_TIMING_EVENTS_SERIALIZE=yes "$B"/overlap_prog b --steps 1 --kernel-us 200 --copy-mib 1 >"$out" 2>&1
if grep -q "cwd: ignoring bad CWD_TIMING_EVENTS_SERIALIZE=yes" "$out"; then pass "a bad CWD_TIMING_EVENTS_SERIALIZE is ignored, with a message"
else fail "no message for a bad CWD_TIMING_EVENTS_SERIALIZE"; cat "$out"; fi

# Output must be stable from run to run (what shim tests diff).
"$B"/mt_launch 3 30 >"$out" 2>&1; "$B"/mt_launch 3 30 >"$out.2" 2>&1
if cmp -s "$out" "$out.2"; then pass "mt_launch output is stable"; else fail "mt_launch output differs between runs"; fi
"$B"/graph_prog 3 >"$out" 2>&1; "$B"/graph_prog 3 >"$out.2" 2>&1
if cmp -s "$out" "$out.2"; then pass "graph_prog output is stable"; else fail "graph_prog output differs between runs"; fi

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all checks passed"
