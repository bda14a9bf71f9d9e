#!/usr/bin/env bash
# arrow.sh (device machine): the Python module's Arrow tables against the report on the device
# machine's CPU (issue 21's "Arrow for Python" export): bench/arrow.sh at 1 M and 10 M entries with
# the release wheel in .carry/wheels-after (and, when .carry/wheels-before holds an older one, with it
# too: a before/after pair, each against the report of its own rounds). Needs pyarrow importable by
# the machine's python3 (nothing can be installed there); says so and stops otherwise.
#     OUT=$OUT bash control-experiments/device/arrow.sh
# Carried (.carry/): causeway, synth_capture, wheels-after/*.whl, optionally wheels-before/*.whl
# (`maturin build --release -m pyscan/Cargo.toml`). RUNS1 (default 5), RUNS10 (default 3).
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the logs}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
C=$REPO/.carry
export CW=$C/causeway SYNTH=$C/synth_capture
{
  echo "date: $(date -u +%FT%TZ)"
  lscpu | grep -E '^(Model name|CPU\(s\))'
  if ! python3 -c 'import pyarrow; print("pyarrow", pyarrow.__version__)'; then
    echo "arrow.sh: this machine's python3 has no pyarrow: nothing measured"
    exit 0
  fi
  for side in after before; do
    whl=$(ls "$C/wheels-$side"/*.whl 2> /dev/null | head -n 1)
    [[ -n $whl ]] || continue
    py=$(mktemp -d "${TMPDIR:-/tmp}/causeway-py-$side.XXXXXX")
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --no-index --target "$py" "$whl"
    for n in 1000000 10000000; do
      runs=${RUNS1:-5}
      [[ $n == 10000000 ]] && runs=${RUNS10:-3}
      echo "== $side ($(basename "$whl")): bash bench/arrow.sh $n $runs"
      PY=$py bash "$REPO/bench/arrow.sh" "$n" "$runs"
    done
    rm -rf "$py"
  done
} 2>&1 | tee "$OUT/arrow.txt"
