#!/usr/bin/env bash
# make_all.sh: writes every pattern capture of the scaling audit (patterns.py) under DIR (default
# /tmp/causeway-audit), one per size in SIZES (entries), from synth_capture's rings; then e.g.
#   bench/audit/run.sh handoff-1000000 /tmp/causeway-audit/handoff-1000000 why --step slowest
# Needs: cargo build --release -p causeway-cli -p causeway-scanner --example synth_capture
set -euo pipefail
cd "$(dirname "$0")/../.."
S=${SYNTH:-target/release/examples/synth_capture}
D=${DIR:-/tmp/causeway-audit}
for n in ${SIZES:-30000 60000 100000 300000 1000000}; do
  [ -e "$D/base-$n" ] || "$S" "$D/base-$n" "$n" 4 > /dev/null
  for m in pending streams_launch streams_sync frontier frontier_s frontier_d ctxevent handoff handoffq longspan openfirst unordered unordered_r nest names; do
    python3 bench/audit/patterns.py "$m" "$D/base-$n/bench-4242-0-0.cwring" "$D/$m-$n/bench-4242-0-0.cwring" > /dev/null
  done
done
