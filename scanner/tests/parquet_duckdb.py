#!/usr/bin/env python3
"""`causeway export --format parquet` read back by DuckDB (`read_parquet`), checked against
`causeway report --json` on the same capture: per API the call count, open calls, errors and total host
time; the total call count; per NVTX range name the closed and open counts; the device interval count.

usage: parquet_duckdb.py [CAUSEWAY [CAPTURE]]
  CAUSEWAY  the CLI (default target/debug/causeway)
  CAPTURE   a capture directory or ring (default: the H200 capture shipped in demo/)

Without the `duckdb` module the test is skipped (exit 0, a SKIP line) unless CAUSEWAY_REQUIRE_DUCKDB=1,
when it fails (ci/test.sh installs duckdb and sets it). Any mismatch fails (exit 1).
"""

import json
import os
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    try:
        import duckdb
    except ImportError as e:
        msg = f"parquet_duckdb: the duckdb Python module is not importable ({e}); pip install duckdb"
        if os.environ.get("CAUSEWAY_REQUIRE_DUCKDB") == "1":
            print(f"FAIL: {msg}", file=sys.stderr)
            return 1
        print(f"SKIP: {msg}")
        return 0

    cw = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/debug/causeway")
    with tempfile.TemporaryDirectory(prefix="cw-pq-") as tmp:
        if len(sys.argv) > 2:
            cap = sys.argv[2]
        else:
            with tarfile.open(os.path.join(ROOT, "demo/h200-torch-level3.tar.gz")) as t:
                t.extractall(tmp)
            cap = next(
                os.path.join(tmp, d) for d in sorted(os.listdir(tmp)) if d.startswith("cw-")
            )
        out = os.path.join(tmp, "pq")
        subprocess.run([cw, "export", "--format", "parquet", "-o", out, cap], check=True)
        report = json.loads(
            subprocess.run([cw, "report", "--json", cap], check=True, capture_output=True).stdout
        )
        return check(duckdb.connect(), out, report)


def check(db, out, report):
    def q(sql):
        sql = sql.replace("TABLE(", f"read_parquet('{out}/").replace(".pq)", ".parquet')")
        return db.execute(sql).fetchall()

    failures = []

    def expect(what, got, want):
        if got != want:
            failures.append(f"{what}: parquet {got!r} != report {want!r}")

    # Per API (name, layer): COUNT and SUM over calls.parquet equal the report's apis table.
    rows = q(
        """SELECT api, layer, COUNT(*) AS calls,
                  COUNT(*) FILTER (WHERE end_ns IS NULL) AS open,
                  COUNT(*) FILTER (WHERE end_ns IS NOT NULL AND result <> 0) AS errors,
                  COALESCE(SUM(end_ns - begin_ns) FILTER (WHERE end_ns IS NOT NULL), 0) AS total_ns
           FROM TABLE(calls.pq) GROUP BY api, layer ORDER BY api, layer"""
    )
    got = {(r[0], r[1]): tuple(int(x) for x in r[2:]) for r in rows}
    want = {
        (a["name"], a["layer"]): (a["calls"], a["open"], a["errors"], a["total_ns"])
        for a in report["apis"]
    }
    expect("APIs", sorted(got), sorted(want))
    for k in sorted(set(got) & set(want)):
        expect(f"{k[0]} ({k[1]}) calls/open/errors/total_ns", got[k], want[k])

    (total,) = q("SELECT COUNT(*) FROM TABLE(calls.pq)")[0]
    expect("total calls", total, report["totals"]["calls"])
    (launches,) = q("SELECT COUNT(*) FROM TABLE(calls.pq) WHERE class = 'launch'")[0]
    expect(
        "launch-class calls",
        launches,
        sum(a["calls"] for a in report["apis"] if a["class"] == "launch"),
    )

    # The same processes.
    procs = {int(r[0]) for r in q("SELECT pid FROM TABLE(processes.pq)")}
    expect("pids", procs, {p["pid"] for p in report["processes"]})

    # NVTX ranges by (name, domain): closed count and open count.
    rows = q(
        """SELECT name, domain, COUNT(end_ns), COUNT(*) FILTER (WHERE end_ns IS NULL)
           FROM TABLE(ranges.pq) GROUP BY name, domain"""
    )
    ranges = {(r[0], r[1]): (int(r[2]), int(r[3])) for r in rows}
    expect(
        "NVTX ranges (closed, open)",
        ranges,
        {(r["name"], r["domain"]): (r["count"], r["open"]) for r in report["ranges"]},
    )

    # Device intervals: placed ones in the table plus the unplaced count = the report's intervals.
    (spans,) = q("SELECT COUNT(*) FROM TABLE(device_intervals.pq)")[0]
    (unplaced,) = q("SELECT SUM(unplaced_device) FROM TABLE(processes.pq)")[0]
    expect("device intervals", spans + int(unplaced or 0), report["device"]["intervals"])
    (tied,) = q(
        """SELECT COUNT(*) FROM TABLE(device_intervals.pq) d
           JOIN TABLE(calls.pq) c ON c.pid = d.pid AND c.seq = d.call_seq"""
    )[0]
    expect("device intervals tied to a call", tied, report["device"]["associated"])

    if failures:
        for f in failures:
            print(f"FAIL: {f}", file=sys.stderr)
        return 1
    print(
        f"parquet_duckdb: ok: {total} calls of {len(want)} APIs, {len(ranges)} NVTX range names, "
        f"{spans} device intervals agree with causeway report --json"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
