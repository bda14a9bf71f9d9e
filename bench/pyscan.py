#!/usr/bin/env python3
"""pyscan throughput: rows per second of each engine of `causeway.open` on one capture.

    python3 bench/pyscan.py CAPTURE [RUNS=5]

Per run and engine, in a fresh process (no warm caches of a previous open): the time to open the
capture (read, validate, decode, model, steps) and to hand over the `calls`, `device_intervals` and
`steps` tables, either as Python lists (`Table.columns()`, mode `lists`) or as pyarrow tables
(`to_arrow()`, mode `arrow`: Arrow IPC from the native engine, `pyarrow.array` over the lists for
the python one; pyarrow is imported before the clock starts). Rows = rows of those three tables.
Prints one line per run and min / median / max per engine and mode.
"""

import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
import causeway
path, engine, how = sys.argv[1], sys.argv[2], sys.argv[3]
if how == "arrow":
    import pyarrow  # noqa: F401 - its import time (~0.3 s) is not the engine's
t0 = time.perf_counter()
cap = causeway.open(path, engine=engine)
t1 = time.perf_counter()
rows = 0
for name in ("calls", "device_intervals", "steps"):
    t = cap.table(name)
    if how == "arrow":
        rows += t.to_arrow().num_rows
    else:
        rows += len(next(iter(t.columns().values())))
t2 = time.perf_counter()
print(json.dumps({"open_s": t1 - t0, "tables_s": t2 - t1, "rows": rows}))
"""


def main():
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    modes = [("native", "lists"), ("native", "arrow"), ("python", "lists"), ("python", "arrow")]
    results = {m: [] for m in modes}
    for i in range(runs):
        for m in modes:
            out = subprocess.run([sys.executable, "-c", CHILD, path, *m], check=True, capture_output=True, text=True)
            r = json.loads(out.stdout)
            total = r["open_s"] + r["tables_s"]
            results[m].append((total, r))
            print(
                f"run {i + 1} {m[0]:6} {m[1]:5}: open {r['open_s']:.3f} s + tables {r['tables_s']:.3f} s "
                f"= {total:.3f} s, {r['rows']} rows, {r['rows'] / total / 1e6:.3f} M rows/s",
                flush=True,
            )
    print()
    for m, rs in results.items():
        ts = sorted(t for t, _ in rs)
        rows = rs[0][1]["rows"]
        med = statistics.median(ts)
        print(
            f"{m[0]:6} {m[1]:5}: seconds min/median/max {ts[0]:.3f} / {med:.3f} / {ts[-1]:.3f}; "
            f"M rows/s max/median/min {rows / ts[0] / 1e6:.3f} / {rows / med / 1e6:.3f} / {rows / ts[-1] / 1e6:.3f}"
        )


if __name__ == "__main__":
    main()
