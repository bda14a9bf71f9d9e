#!/usr/bin/env bash
# test_costs_fake.sh: a CPU-only run of costs.sh with the real causeway CLI and shim, the real driver
# double (ci/build) for the pressure section, and a fake python3 standing in for the three torch
# workloads (it prints their "result:" and "checksum:" lines; under the shim, level by level, it costs
# a known amount more). First runs test_costs_summary.py.
#
# Checks: every section's arms run in every round, the TSV holds the paired values, the summary has
# the profiler ratio, entries per step from the real captures (the fake workload is a shell that
# records nothing at level 1 and 2: only its NVTX-less process), pressure rows with 0 drops at 0.9 of
# the ring and exact drops at 2x capacity, identical checksums, and no script errors.
#
# Run: bash control-experiments/device/test_costs_fake.sh  [CAUSEWAY_CLI=... CAUSEWAY_SHIM=...]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
python3 "$HERE/test_costs_summary.py" 2>&1 | tail -1
T=$(mktemp -d "${TMPDIR:-/tmp}/costs-fake.XXXXXX")
trap 'rm -rf "$T"' EXIT
CLI=${CAUSEWAY_CLI:-$SRC/target/debug/causeway}
SO=${CAUSEWAY_SHIM:-$SRC/target/debug/libcauseway.so}
[[ -x $CLI && -f $SO ]] || { echo "FAIL: build causeway first ($CLI, $SO)"; exit 1; }
make -s -C "$SRC/ci" build/pressure
mkdir -p "$T/bin"
# The fake python: the workload's name picks its result lines; the level the shim runs at (seen in the
# environment) adds a known cost; -c and other scripts go to the real python.
cat > "$T/bin/python3" <<'EOF'
#!/usr/bin/env bash
case "$1" in
  */tiny_loop.py) base=10; key=tiny_us_per_op ;;
  */decode_loop.py) base=2; key=decode_b1_ms ;;
  */copy_loop.py) base=5; key=copy_step_ms ;;
  *) exec /usr/bin/python3 "$@" ;;
esac
add=0
case "${CAUSEWAY_LEVEL:-}" in 1) add=0.01 ;; 2) add=0.1 ;; 3) add=1 ;; 4) add=0.5 ;; esac
[[ " $* " == *" --profile "* ]] && add=5
v=$(/usr/bin/python3 -c "print($base + $add)")
echo "result: $key=$v maxrss_kb=$((100000 + ${CAUSEWAY_LEVEL:-0} * 1000))"
echo "checksum: fake=1"
EOF
chmod +x "$T/bin/python3"
rc=0
( cd "$SRC" && PATH="$T/bin:$PATH" PYTHON="$T/bin/python3" CAUSEWAY_CLI="$CLI" CAUSEWAY_SHIM="$SO" \
  ROUNDS=2 DIAG=0 ARMS_TINY="bare profiler level1 level2 l3events" ARMS_DECODE="bare level2" \
  ARMS_COPY="bare level4" OUT="$T/out" bash control-experiments/device/costs.sh > "$T/stdout" 2>&1 ) || rc=$?
fail() { echo "FAIL: $*"; echo "--- costs.sh stdout"; cat "$T/stdout"; exit 1; }
((rc == 0)) || fail "costs.sh exited $rc"
S="$T/out/costs-summary.txt"
[[ -f $S ]] || fail "no summary"
grep -q "script errors" "$T/stdout" && fail "script errors reported"
grep -q "level2      n=2  10.100 / 10.100 / 10.100" "$S" || fail "tiny level2 row"
grep -q "profiler added / this added = 50.00" "$S" || fail "profiler ratio for level2 (5 / 0.1)"
grep -q "profiler added / this added = 5.00" "$S" || fail "profiler ratio for l3events (5 / 1)"
grep -q "maxrss_kb" "$S" || fail "RSS rows"
grep -q "level4      n=2  5.500 / 5.500 / 5.500" "$S" || fail "copy level4 row"
grep -q "checksums: identical in every run" "$S" || fail "checksums"
for k in ring64_drop_x0.9 ring256_drop_x0.9 ring64_overwrite_x0.9 ring64_drop_x2; do
  grep -q "${k}_calls_per_s" "$S" || fail "pressure $k"
done
grep -q "shim ring64_drop_x0.9_dropped: 0 / 0 / 0" "$S" || fail "no drops at 0.9 of a 64 MiB ring"
grep -q "shim ring256_drop_x0.9_dropped: 0 / 0 / 0" "$S" || fail "no drops at 0.9 of a 256 MiB ring"
# 2x capacity: 16 threads x 131072 calls, plus the program's own setup calls, into 1048576 slots.
line=$(grep "shim ring64_drop_x2_dropped:" "$S") || fail "drops at 2x"
d=$(echo "$line" | awk '{print $3}')
e=$(grep "shim ring64_drop_x2_entries:" "$S" | awk '{print $3}')
((e == 1048576)) || fail "a full 64 MiB ring holds 1048576 entries, got $e"
((d >= 16 * 131072 - 1048576 && d <= 16 * 131072 - 1048576 + 64)) || fail "dropped $d at 2x capacity"
[[ ${SHOW:-0} == 1 ]] && cat "$S"
echo "PASS: costs.sh on the CPU (fake torch workloads, real shim and driver double)"
