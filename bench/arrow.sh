#!/usr/bin/env bash
# arrow.sh: what the Python module's Arrow tables cost against the report (issue 21's "Arrow for
# Python" export) — `causeway report --json` and, in a fresh Python process, `causeway.open(CAP,
# engine="native")` then `to_arrow()` of every table of `causeway.TABLES` (arm `python to_arrow`),
# then `edges()`, the causal graph's edges (arm `+ edges`: the tables and the edges, as the Parquet
# export writes them), on one synthetic level-3 capture of N entries, arms interleaved round by round,
# RUNS rounds. The Python arms' times are measured inside the process (interpreter start and the
# imports of causeway and pyarrow, ~0.3 s, left out, as `bench/pyscan.py` does); their peak RSS is the
# whole process's (after the edges).
# Prints per arm min / median / max seconds, the ratio of medians to the report's, peak RSS (MB).
#     bash bench/arrow.sh [ENTRIES=1000000] [RUNS=5]
# Environment: CW, SYNTH (as bench/tools.sh), PY (a PYTHONPATH holding causeway and pyarrow; default:
# the release wheel built here with maturin and installed with pyarrow into a scratch directory).
set -euo pipefail
N=${1:-1000000}
RUNS=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# CW, SYNTH
# shellcheck source=bench/tools.sh
source bench/tools.sh
dir=$(mktemp -d "${TMPDIR:-/tmp}/causeway-arrow.XXXXXX")
trap 'rm -rf "$dir"' EXIT
if [[ -z ${PY:-} ]]; then
  maturin build --release -q -m pyscan/Cargo.toml -o "$dir/wheels" > /dev/null
  python3 -m pip install --quiet --disable-pip-version-check --target "$dir/py" "$dir"/wheels/*.whl pyarrow
  PY=$dir/py
fi
"$SYNTH" "$dir/cap" "$N" 4 tsc > /dev/null
echo "entries: $N; cpus: $(nproc); $(uname -r); $(python3 --version); runs: $RUNS"
child='
import resource, sys, time
import pyarrow  # noqa: F401 - imported before the clock starts
import causeway
t0 = time.perf_counter()
cap = causeway.open(sys.argv[1], engine="native")
rows = sum(cap.table(n).to_arrow().num_rows for n in causeway.TABLES)
t1 = time.perf_counter()
rows += cap.edges().num_rows
t2 = time.perf_counter()
print(f"{t1 - t0:.4f} {t2 - t0:.4f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} {rows}")
'
rep_t="" rep_m="" py_t="" pe_t="" py_m=""
for _ in $(seq "$RUNS"); do
  timed "$dir/time" "$CW" report --json "$dir/cap"
  read -r e m _ < "$dir/time"
  rep_t+="$e " rep_m+="$m "
  read -r e ee m _ < <(PYTHONPATH=$PY python3 -c "$child" "$dir/cap")
  py_t+="$e " pe_t+="$ee " py_m+="$m "
done
python3 - "$rep_t" "$rep_m" "$py_t" "$pe_t" "$py_m" << 'PY'
import statistics as st, sys
f = lambda s: [float(x) for x in s.split()]
rt, rm, pt, et, pm = map(f, sys.argv[1:])
base = st.median(rt)
print("arm                 s: min median    max   /report   RSS MB: min  median     max")
for name, ts, ms in (("report --json", rt, rm), ("python to_arrow", pt, pm), ("+ edges", et, pm)):
    print(f"{name:16} {min(ts):6.3f} {st.median(ts):6.3f} {max(ts):6.3f}   {st.median(ts) / base:5.1f}x"
          f"   {min(ms) / 1024:7.0f} {st.median(ms) / 1024:7.0f} {max(ms) / 1024:7.0f}")
PY
