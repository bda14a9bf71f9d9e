#!/usr/bin/env bash
# test_distortion_fake.sh: distortion.sh end to end on the CPU doubles (no GPU): the workload is
# ci/build/overlap_prog, the CLI and shim the debug build, CUPTI the double, and the driver double's
# CWD_TIMING_EVENTS_SERIALIZE=1 makes timing events serialise the copy behind the kernel (an instrument
# that removes overlap). Checks the script's files, the table's shape, that the serialising events are
# flagged, that CUPTI and the one-stream case hold, and that no mark is wrong. Needs make -C ci and
# cargo build. Run from anywhere; SHOW=1 prints the script's output.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/distortion-fake.XXXXXX")
trap 'rm -rf "$T"' EXIT
TARGET=${CARGO_TARGET_DIR:-$SRC/target}

python3 "$HERE/test_distortion_check.py" > "$T/unit.log" 2>&1 || {
  cat "$T/unit.log"
  echo "test_distortion_fake: FAIL (test_distortion_check.py)"
  exit 1
}
echo "ok   - test_distortion_check.py: $(grep -E '^Ran ' "$T/unit.log" || true)"
for f in "$SRC/ci/build/overlap_prog" "$SRC/ci/build/libcupti.so.13" "$TARGET/debug/causeway" \
  "$TARGET/debug/libcauseway.so"; do
  [[ -e $f ]] || {
    echo "test_distortion_fake: FAIL: $f is missing (make -C ci; cargo build)"
    exit 1
  }
done
fails=0
check() { # check WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok   - $what"; else
    echo "FAIL - $what"
    fails=$((fails + 1))
  fi
}
mkdir -p "$T/tmp"
rc=0
(cd "$SRC" && env OUT="$T/o" TMPDIR="$T/tmp" CAUSEWAY_CLI="$TARGET/debug/causeway" \
  LD_LIBRARY_PATH="$SRC/ci/build" OVERLAP_BIN="$SRC/ci/build/overlap_prog" \
  CONTROL_CUPTI="$SRC/ci/build/libcupti.so.13" CWD_TIMING_EVENTS_SERIALIZE=1 RUNS=3 TRUTH_RUNS=2 \
  STEPS=120 WARMUP=2 CASES="a:1000:8192 b:1000:8192" CONFIGS="cupti events events16" \
  bash control-experiments/device/distortion.sh > "$T/out.txt" 2>&1) || rc=$?
[[ ${SHOW:-0} == 1 ]] && cat "$T/out.txt"
S=$T/o/distortion-summary.md
check "exit 0 (got $rc)" test "$rc" -eq 0
check "summary, results, log and artifacts written" test -s "$S" -a -s "$T/o/distortion-results.json" \
  -a -s "$T/o/distortion.log" -a -s "$T/o/distortion-artifacts.tar.gz"
check "6 rows (2 cases x 3 configurations)" test "$(grep -c '^| [ab]:1000:8192 |' "$S")" -eq 6
py() { python3 -c "import json,sys; d=json.load(open('$T/o/distortion-results.json')); $1"; }
row() { py "r = [r for r in d if r['case'] == '$1' and r['config'] == '$2'][0]; $3"; }
check "serialising events on a: removed, flagged, right" \
  row a:1000:8192 events "sys.exit(0 if (r['category'], r['mark'], r['right']) == ('removed', 'does-not-survive', True) else 1)"
check "one step in 16 on a: flagged too (the timed steps are serialised)" \
  row a:1000:8192 events16 "sys.exit(0 if r['mark'] == 'does-not-survive' else 1)"
check "cupti on a: faithful, holds" \
  row a:1000:8192 cupti "sys.exit(0 if (r['category'], r['mark']) == ('faithful', 'holds') else 1)"
check "the one-stream case holds everywhere" py "
sys.exit(0 if all(r['mark'] == 'holds' for r in d if r['case'].startswith('b:')) else 1)"
check "no mark is wrong" grep -q "wrong: 0;" "$S"
if ((fails)); then
  cat "$S" 2> /dev/null || true
  echo "test_distortion_fake: $fails FAILED"
  exit 1
fi
echo "test_distortion_fake: all passed"
