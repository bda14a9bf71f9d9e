#!/usr/bin/env bash
# tables_cost.sh BEFORE AFTER: what a change to the shim (issue 22: the generated hook tables, 1 090
# hooks instead of 203) costs the traced program. BEFORE and AFTER are folders holding a release
# `causeway` and `libcauseway.so`. Alternating BEFORE, AFTER, BEFORE, … (PAIRS times each):
#   1. the hot path: bench/hotpath.sh (ns added per cuStreamQuery on the driver double, level 4
#      recorded, level 2 hooked but not recorded; ROUNDS rounds of 1e6 calls each);
#   2. start-up without CUDA: bench/short_processes.sh (`causeway record --level 2 -- sh -c 'N x
#      /bin/true'`, ms added per process);
#   3. start-up with a ring: ci/build/hotpath making one recorded call per process (the ring is
#      created and every API name interned), N processes under LD_PRELOAD at level 4, ms per process.
# Prints each measurement's lines; summarise with the min / median / max across pairs.
#     bash bench/tables_cost.sh /path/before /path/after
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(realpath "$1")
after=$(realpath "$2")
PAIRS=${PAIRS:-3}
ROUNDS=${ROUNDS:-5}
N=${N:-200}
make -s -C ci build/hotpath
scratch=$(mktemp -d "${TMPDIR:-/tmp}/cw-tables.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
ring_startup() { # dir → ms per process
  local t0 t1
  t0=$(date +%s.%N)
  for _ in $(seq "$N"); do
    LD_LIBRARY_PATH=ci/build LD_PRELOAD="$1/libcauseway.so" CAUSEWAY_OUT="$scratch" CAUSEWAY_LEVEL=4 \
      CAUSEWAY_RING_MB=4 ci/build/hotpath 1 1 > /dev/null
  done
  t1=$(date +%s.%N)
  rm -f "$scratch"/*.cwring
  echo "($t1 - $t0) * 1000 / $N" | bc -l
}
bare_startup() {
  local t0 t1
  t0=$(date +%s.%N)
  for _ in $(seq "$N"); do LD_LIBRARY_PATH=ci/build ci/build/hotpath 1 1 > /dev/null; done
  t1=$(date +%s.%N)
  echo "($t1 - $t0) * 1000 / $N" | bc -l
}
for p in $(seq "$PAIRS"); do
  for arm in before after; do
    dir=$before
    [ $arm = after ] && dir=$after
    hp=$(SHIM="$dir/libcauseway.so" bash bench/hotpath.sh "$ROUNDS" 1000000 | grep '^added by')
    l4=$(echo "$hp" | sed -nE 's/^added by level4: min -?[0-9.]+ +median ([0-9.]+).*/\1/p')
    l2=$(echo "$hp" | sed -nE 's/^added by level2: min -?[0-9.]+ +median ([0-9.]+).*/\1/p')
    # "added per process (ms): min / median / max": the median.
    sp=$(N=$N ROUNDS=3 bash bench/short_processes.sh "$dir/causeway" | sed -nE 's|.*added per process \(ms\): [0-9.]+ / ([0-9.]+) / .*|\1|p')
    b=$(bare_startup)
    r=$(ring_startup "$dir")
    printf 'pair %s %-6s hot-path-added-ns: level4 %s level2 %s | record--true-added-ms/process: %s | one-call-process-ms: bare %.3f traced %.3f added %.3f\n' \
      "$p" "$arm" "$l4" "$l2" "${sp:-?}" "$b" "$r" "$(echo "$r - $b" | bc -l)"
  done
done
