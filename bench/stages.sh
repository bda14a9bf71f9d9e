#!/usr/bin/env bash
# stages.sh: where each export's time, CPU and memory go, stage by stage (CAUSEWAY_STAGES: the time
# since the start, the process's CPU time, resident memory and the peak within each stage), on a
# synthetic level-3 capture of N entries, RUNS times per format. CPU / wall between two stages is
# how many CPUs that stage kept busy.
#     bash bench/stages.sh [N=1000000] [RUNS=2] [FORMATS="parquet perfetto chrome"]
# CW and SYNTH name carried binaries (bench/tools.sh); otherwise both are built here.
set -euo pipefail
N=${1:-1000000}
RUNS=${2:-2}
FORMATS=${FORMATS:-parquet perfetto chrome}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=bench/tools.sh
source bench/tools.sh
dir=$(mktemp -d "${TMPDIR:-/tmp}/stages.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$SYNTH" "$dir/cap" "$N" 4 tsc > /dev/null
echo "entries: $N; $(nproc) CPUs; $(date -u +%FT%TZ)"
for f in $FORMATS; do
  for r in $(seq "$RUNS"); do
    echo "== $f, run $r"
    rm -rf "$dir/out"
    CAUSEWAY_STAGES=1 "$CW" export --format "$f" -o "$dir/out" "$dir/cap" 2>&1 >/dev/null |
      sed -n 's/^causeway: stage //p'
  done
done
