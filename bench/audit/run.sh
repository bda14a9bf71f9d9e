#!/usr/bin/env bash
# run.sh LABEL CAPTURE CMD...: runs `causeway CMD... CAPTURE` under an 8 GB address-space limit and a
# timeout (T, default 120 s); an OUT among the words is replaced by a scratch path. Prints
# "LABEL | CMD | seconds peak-RSS-KB rc=N". B: the causeway binary (default target/release/causeway).
set -uo pipefail
label=$1; cap=$2; shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-$root/target/release/causeway}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/causeway-audit-run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
args=(); for a in "$@"; do [ "$a" = OUT ] && a=$scratch/out; args+=("$a"); done
res=$( (ulimit -v 8000000; /usr/bin/time -f "%e %M" timeout "${T:-120}" "$B" "${args[@]}" "$cap" > /dev/null 2> "$scratch/err"; echo "rc=$?" >> "$scratch/err") 2>&1; tail -2 "$scratch/err" | tr '\n' ' ')
echo "$label | $* | $res"
