#!/usr/bin/env bash
# exports.sh: what each export costs against the report it summarises — `causeway report --json` and
# `causeway export --format chrome|perfetto|parquet` on one synthetic level-3 capture of N entries
# (scanner/examples/synth_capture.rs), arms interleaved round by round, RUNS rounds. Prints per arm
# min / median / max wall seconds and peak RSS (MB), the ratio of medians to the report's, and the
# output's size (bytes per entry). With BASE set to another causeway binary, its exports named in
# BASE_ARMS (default: perfetto) run as arms of their own (`perfetto-base`, …: before/after pairs in
# one run).
#     bash bench/exports.sh [ENTRIES=1000000] [RUNS=7]
# Environment: CW (causeway binary; default built here), SYNTH (synth_capture; default built here),
# BASE, OUT (scratch directory for the capture and outputs; default a fresh one under TMPDIR).
set -euo pipefail
N=${1:-1000000}
RUNS=${2:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# CW, SYNTH
# shellcheck source=bench/tools.sh
source bench/tools.sh
dir=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/causeway-exports.XXXXXX")}
mkdir -p "$dir"
trap 'rm -rf "$dir"/cap "$dir"/out.* "$dir"/time*' EXIT
"$SYNTH" "$dir/cap" "$N" 4 tsc > /dev/null
echo "entries: $N; cpus: $(nproc); $(uname -r); runs: $RUNS"
arms=(report chrome perfetto parquet)
if [[ -n ${BASE:-} ]]; then
  for f in ${BASE_ARMS:-perfetto}; do arms+=("$f-base"); done
fi
declare -A t rss
for r in $(seq "$RUNS"); do
  for a in "${arms[@]}"; do
    case $a in
      report) cmd=("$CW" report --json "$dir/cap") ;;
      *-base) cmd=("$BASE" export --format "${a%-base}" --force -o "$dir/out.$a" "$dir/cap") ;;
      *) cmd=("$CW" export --format "$a" --force -o "$dir/out.$a" "$dir/cap") ;;
    esac
    timed "$dir/time" "${cmd[@]}" || exit 1
    read -r e m _ < "$dir/time"
    t[$a]+="$e "
    rss[$a]+="$m "
  done
done
size() { if [[ -d $1 ]]; then du -sb "$1" | cut -f1; else stat -c %s "$1"; fi; }
rows=()
for a in chrome perfetto parquet chrome-base perfetto-base parquet-base; do
  [[ -n ${t[$a]:-} ]] && rows+=("$a" "${t[$a]}" "${rss[$a]}" "$(size "$dir/out.$a")")
done
python3 - "$N" "${t[report]}" "${rss[report]}" "${rows[@]}" << 'PY'
import statistics as st, sys
a = sys.argv[1:]
n = int(a[0])
f = lambda s: [float(x) for x in s.split()]
rep_t, rep_m = f(a[1]), f(a[2])
base = st.median(rep_t)
def row(name, ts, ms, size=None):
    r = f"{st.median(ts) / base:5.1f}x"
    sz = f"{size / n:7.1f}" if size else "      -"
    print(f"{name:13} {min(ts):6.3f} {st.median(ts):6.3f} {max(ts):6.3f}   {r}   "
          f"{min(ms) / 1024:7.0f} {st.median(ms) / 1024:7.0f} {max(ms) / 1024:7.0f}   {sz}")
print("arm           wall s: min median    max   /report   RSS MB: min  median     max   bytes/entry")
row("report", rep_t, rep_m)
for i in range(3, len(a), 4):
    row(a[i], f(a[i + 1]), f(a[i + 2]), int(a[i + 3]))
PY
