"""DuckDB over `to_arrow()`: the same totals as `causeway report --json` (the checks of
scanner/tests/parquet_duckdb.py, on the Python tables instead of the Parquet files)."""

import json
import os
import subprocess

import pytest

import causeway

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

ENGINES = [e for e in causeway.ENGINES if e == "python" or causeway.native_available()]


@pytest.fixture(scope="module", params=["synth", "demo", "multi"])
def capture(request, synth_dir):
    if request.param == "demo":
        return request.getfixturevalue("demo_capture")
    if request.param == "multi":
        return os.path.join(os.path.dirname(synth_dir), "multi")
    return synth_dir


@pytest.mark.parametrize("engine", ENGINES)
def test_duckdb_totals_equal_the_report(capture, engine, cli):
    report = json.loads(subprocess.run([cli, "report", "--json", capture], capture_output=True, check=True).stdout)
    cap = causeway.open(capture, engine=engine)
    db = duckdb.connect()
    for name in causeway.TABLES:
        db.register(name, cap.table(name).to_arrow())

    def q(sql):
        return db.execute(sql).fetchall()

    rows = q(
        """SELECT api, layer, COUNT(*),
                  COUNT(*) FILTER (WHERE end_ns IS NULL),
                  COUNT(*) FILTER (WHERE end_ns IS NOT NULL AND result <> 0),
                  COALESCE(SUM(end_ns - begin_ns) FILTER (WHERE end_ns IS NOT NULL), 0)
           FROM calls GROUP BY api, layer"""
    )
    got = {(r[0], r[1]): tuple(int(x) for x in r[2:]) for r in rows}
    want = {(a["name"], a["layer"]): (a["calls"], a["open"], a["errors"], a["total_ns"]) for a in report["apis"]}
    assert got == want
    assert q("SELECT COUNT(*) FROM calls")[0][0] == report["totals"]["calls"]
    assert {r[0] for r in q("SELECT pid FROM processes")} == {p["pid"] for p in report["processes"]}
    ranges = {
        (r[0], r[1]): (int(r[2]), int(r[3]))
        for r in q("SELECT name, domain, COUNT(end_ns), COUNT(*) FILTER (WHERE end_ns IS NULL) FROM ranges GROUP BY ALL")
    }
    assert ranges == {(r["name"], r["domain"]): (r["count"], r["open"]) for r in report["ranges"]}
    spans = q("SELECT COUNT(*) FROM device_intervals")[0][0]
    unplaced = q("SELECT COALESCE(SUM(unplaced_device), 0) FROM processes")[0][0]
    assert spans + int(unplaced) == report["device"]["intervals"]
    tied = q("SELECT COUNT(*) FROM device_intervals d JOIN calls c ON c.pid = d.pid AND c.seq = d.call_seq")[0][0]
    if unplaced == 0:
        assert tied == report["device"]["associated"]
    else:  # an unplaced interval may be tied to its call too
        assert report["device"]["associated"] - int(unplaced) <= tied <= report["device"]["associated"]
    # Device time per kernel name on the host clock equals the report's kernel totals where every
    # interval of the name was placed and timed.
    if report["device"]["clock"]["conversion"] == "cupti-timestamp-callback" and report["device"]["untimed"] == 0:
        per = dict(q("SELECT name, SUM(end_ns - begin_ns) FROM device_intervals WHERE kind = 'kernel' GROUP BY name"))
        for k in report["device"]["kernels"]:
            assert int(per.get(k["name"], 0)) == k["total_ns"], k["name"]
    assert len(got) > 0 and (report["totals"]["calls"] > 0)
