#!/usr/bin/env bash
# test_control_fake.sh: CPU-only runs of control.sh, first running test_control_check.py (the checker's
# unit tests on fixed inputs).
#
# The GPU is the C test doubles (ci/build: libcuda.so.1, libcudart.so.13, libcupti.so.13) with
# CWD_TIMING_EVENTS_SERIALIZE=1 — timing events make the copy engine wait for compute, the Intel
# behaviour; the workload is overlap_prog (overlap.cu's CPU stand-in: same arguments, same summary
# line), "built" by a fake nvcc; causeway is the real CLI and shim of this checkout (target/debug).
# Everything else is control.sh as it runs on the H200: the bare ground truth, `causeway control` for
# l2, cupti (the CUPTI double, --cupti) and events on modes a b p c i, control_check.py's table.
# Scenario A: every step runs (exit 0); the truth agrees with each mode's construction, the workload's
#   own timing events serialise mode a (the switch works without any tracer), the events backend's
#   copy/compute claim on mode a is marked "does-not-survive" and judged right, CUPTI's "holds", and no
#   mark is wrong.
# Scenario B: nvcc fails: a script error (exit 1), and the summary says the script stopped early.
#
# Needs `make -C ci` and `cargo build` (libcauseway.so, causeway) first, as ci/test.sh does.
# Run: bash control-experiments/device/test_control_fake.sh   (prints ok/FAIL; SHOW=1 prints the table)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/control-fake.XXXXXX")
trap 'rm -rf "$T"' EXIT
TARGET=${CARGO_TARGET_DIR:-$SRC/target}

python3 "$HERE/test_control_check.py" > "$T/unit.log" 2>&1 || {
  cat "$T/unit.log"
  echo "test_control_fake: FAIL (test_control_check.py)"
  exit 1
}
echo "ok   - test_control_check.py: $(grep -E '^Ran ' "$T/unit.log" || true)"

for f in "$SRC/ci/build/overlap_prog" "$SRC/ci/build/libcupti.so.13" "$TARGET/debug/causeway" \
  "$TARGET/debug/libcauseway.so"; do
  [[ -e $f ]] || {
    echo "test_control_fake: FAIL: $f is missing (make -C ci; cargo build)"
    exit 1
  }
done
mkdir -p "$T/cuda/bin" "$T/cuda/include"
cat > "$T/cuda/bin/nvcc" << EOF
#!/usr/bin/env bash
# fake nvcc: "builds" overlap.cu as the doubles' overlap_prog (FAKE_NVCC_FAIL=1: fails)
[[ \${FAKE_NVCC_FAIL:-0} == 1 ]] && { echo "nvcc: fake failure" >&2; exit 2; }
[[ \$1 == --version ]] && { echo "Cuda compilation tools, release 13.0 (fake)"; exit 0; }
while ((\$#)); do [[ \$1 == -o ]] && { cp "$SRC/ci/build/overlap_prog" "\$2"; exit 0; }; shift; done
exit 1
EOF
chmod +x "$T/cuda/bin/nvcc"

fails=0
check() { # check WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok   - $what"; else
    echo "FAIL - $what"
    fails=$((fails + 1))
  fi
}

run_script() { # run_script OUTDIR [VAR=VALUE...]: control.sh on the doubles; sets SRC_RC
  local out=$1
  shift
  SRC_RC=0
  mkdir -p "$T/tmp"
  (cd "$SRC" && env "$@" OUT="$out" TMPDIR="$T/tmp" CUDA_HOME="$T/cuda" \
    CAUSEWAY_CLI="$TARGET/debug/causeway" LD_LIBRARY_PATH="$SRC/ci/build" \
    CWD_TIMING_EVENTS_SERIALIZE=1 CONTROL_CUPTI="$SRC/ci/build/libcupti.so.13" CONTROL_RUNS=3 \
    TRUTH_RUNS=2 STEPS=6 KERNEL_US=20000 COPY_MIB=200 RING_MB=2 \
    bash control-experiments/device/control.sh > "$out.stdout" 2>&1) || SRC_RC=$?
}

# ---- A: the whole experiment on the doubles ----------------------------------------------------------------
run_script "$T/a"
S=$T/a/control-summary.md
[[ ${SHOW:-0} == 1 ]] && cat "$T/a.stdout"
check "A: exit 0 (got $SRC_RC)" test "$SRC_RC" -eq 0
check "A: summary, results and artifacts written" test -s "$S" -a -s "$T/a/control-results.json" \
  -a -s "$T/a/control-artifacts.tar.gz" -a -s "$T/a/control.log"
check "A: the captures came back" test -s "$T/a/control-captures.tar.gz"
check "A: 15 rows (3 configurations x 5 modes)" \
  test "$(grep -c '^| [abpci] | \(l2\|cupti\|events\) |' "$S")" -eq 15
check "A: the truth agrees with every mode's construction" bash -c "! grep -q DISAGREES '$S'"
py() { python3 -c "import json,sys; d=json.load(open('$T/a/control-results.json')); $1" 2> /dev/null; }
check "A: modes a and i overlapped, b p c serialised (truth)" py "
v = {m: d['truth'][m]['verdict'] for m in 'abpci'}
sys.exit(0 if v == dict(a='overlapped', b='serialised', p='serialised', c='serialised', i='overlapped') else 1)"
check "A: the workload's own timing events serialise mode a under the switch" py "
t = d['truth']['a']; sys.exit(0 if t['t_both_timing_events_us'] > 0.85 * t['serial_us'] else 1)"
row() { py "r = [r for r in d['rows'] if r['config'] == '$1' and r['mode'] == '$2'][0]; $3"; }
check "A: events on a: does not survive the control, judged right" \
  row events a "sys.exit(0 if r['mark'] == 'does-not-survive' and r['right'] is True else 1)"
check "A: cupti on a: holds, judged right" \
  row cupti a "sys.exit(0 if r['mark'] == 'holds' and r['right'] is True else 1)"
check "A: the true serialisation of b is not flagged" py "
sys.exit(0 if all(r['mark'] == 'holds' for r in d['rows'] if r['mode'] == 'b' and r['config'] != 'l2') else 1)"
check "A: level 2 makes no overlap claim" \
  row l2 a "sys.exit(0 if r['mark'] == 'not-tested' and r['right'] is None else 1)"
check "A: no mark is wrong" grep -q "wrong: 0$" "$S"
if ((fails)); then
  cat "$S" 2> /dev/null || true
  tail -n 30 "$T/a/control.log" 2> /dev/null || true
fi

# ---- B: the build fails ----------------------------------------------------------------------------------------
run_script "$T/b" FAKE_NVCC_FAIL=1
check "B: a failed build is a script error (exit 1, got $SRC_RC)" test "$SRC_RC" -eq 1
check "B: the summary says it stopped early" grep -q "stopped early" "$T/b/control-summary.md"

if ((fails)); then
  echo "test_control_fake: FAIL ($fails)"
  exit 1
fi
echo "test_control_fake: PASS"
