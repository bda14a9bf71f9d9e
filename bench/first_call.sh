#!/usr/bin/env bash
# first_call.sh: a process's first recorded call, apart from the per-call figures (issue 26). The first
# recorded call reserves the ring's blocks and pre-faults its pages; this times it (ci/build/first_call:
# cuInit under the shim at level 4, minus cuInit bare) against what the kernel charges for the same
# work in C (bench/populate.c: posix_fallocate + MADV_POPULATE_WRITE of a fresh file of the entry
# area's size in the same directory), round by round, the order alternating. Prints min / median /
# max ms per ring size and the shim ÷ kernel ratio of medians.
#     bash bench/first_call.sh [DIR=/tmp] [ROUNDS=7] [MIB...=64 512]
# Environment: SHIM (a built libcauseway.so; default: cargo build --release here).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp}
rounds=${2:-7}
shift $(($# < 2 ? $# : 2))
sizes=("$@")
((${#sizes[@]})) || sizes=(64 512)
if [[ -z ${SHIM:-} ]]; then
  cargo build --release -q -p causeway-shim
  SHIM=$PWD/target/release/libcauseway.so
fi
shim=$(realpath "$SHIM")
make -s -C ci build/first_call NVTX_INC="${NVTX_INC:-/usr/local/cuda/include}"
work=$(mktemp -d "$dir/causeway-first-call.XXXXXX")
trap 'rm -rf "$work"' EXIT
gcc -O2 -o "$work/populate" bench/populate.c
export LD_LIBRARY_PATH=$PWD/ci/build
echo "dir: $dir ($(df -T "$dir" | awk 'NR == 2 {print $2}')); kernel $(uname -r); rounds: $rounds"
for mib in "${sizes[@]}"; do
  for r in $(seq "$rounds"); do
    shim_run() {
      mkdir -p "$work/cap"
      LD_PRELOAD=$shim CAUSEWAY_OUT=$work/cap CAUSEWAY_LEVEL=4 CAUSEWAY_RING_MB=$mib ci/build/first_call 1000 |
        sed -n 's/^init_ns=//p'
      rm -rf "$work/cap"
    }
    kernel_run() { "$work/populate" "$work" "$mib" | awk '$1 == "fallocate+populate" {print $2 * 1e6}'; }
    bare=$(ci/build/first_call 1000 | sed -n 's/^init_ns=//p')
    if ((r % 2)); then s=$(shim_run); k=$(kernel_run); else k=$(kernel_run); s=$(shim_run); fi
    echo "$mib $bare $s $k"
  done
done | python3 -c '
import sys, statistics as st
rows = {}
for line in sys.stdin:
    mib, bare, shim, kern = line.split()
    rows.setdefault(mib, []).append((float(bare) / 1e6, (float(shim) - float(bare)) / 1e6, float(kern) / 1e6))
print("ring MiB   first recorded call, ms added (min median max)   kernel: fallocate+populate, ms   shim / kernel")
for mib, rs in rows.items():
    s = [r[1] for r in rs]; k = [r[2] for r in rs]
    f = lambda v: f"{min(v):8.2f} {st.median(v):8.2f} {max(v):8.2f}"
    print(f"{mib:>8}   {f(s)}                      {f(k)}          {st.median(s) / st.median(k):5.2f}")
'
