#!/usr/bin/env bash
# chrome_write.sh (device machine): what bounds the Chrome export's time on this machine (issue 21), in
# one call:
#   1. write_probe.sh: the disk and /dev/shm alone, 2.5 GB by one write(2) stream against several
#      threads' pwrite(2) and copies into a shared mapping (grown by ftruncate, or reserved by
#      fallocate first): whether anything but one stream could write the file faster;
#   2. export_probe.sh at 10 M and 1 M entries: the report, Chrome (this build: flow events v2),
#      Chrome from .carry/causeway-base (the build before them, if carried), Chrome to /dev/shm,
#      Perfetto, and dd of the Chrome file's bytes.
#     OUT=$OUT bash control-experiments/device/chrome_write.sh [RUNS=5]
# Carried (.carry/): causeway, synth_capture, optionally causeway-base.
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the logs}
RUNS=${1:-5}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
C=$REPO/.carry
variants=none
arms="report chrome"
if [[ -x $C/causeway-base ]]; then variants=base; arms+=" chrome-base"; fi
arms+=" chrome-shm perfetto dd"
# export_probe.sh wants each named variant carried; "none" is a stand-in no arm uses.
[[ $variants == none ]] && ln -sf causeway "$C/causeway-none"
OUT=$OUT bash "$REPO/control-experiments/device/write_probe.sh" 2500000000 2 > /dev/null
tail -n +4 "$OUT/write_probe.txt" | python3 -c '
import sys, statistics as st, collections
d = collections.defaultdict(list)
for l in sys.stdin:
    w, m, t, _, ws, ss, ts, gb = l.split()
    d[(w, m, t)].append((float(ws), float(ss), float(ts)))
print("where mode   thr  write_s  sync_s  total_s (medians)")
for (w, m, t), xs in d.items():
    print(f"{w:5} {m:6} {t:>3}   {st.median(x[0] for x in xs):7.3f} {st.median(x[1] for x in xs):7.3f} {st.median(x[2] for x in xs):8.3f}")
' | tee "$OUT/write_probe-summary.txt"
for n in 10000000 1000000; do
  VARIANTS=$variants ARMS=$arms FRESH=1 OUT=$OUT bash "$REPO/control-experiments/device/export_probe.sh" "$n" "$RUNS" |
    sed -n '/^arm /,/^raw/p'
done
