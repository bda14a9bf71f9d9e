"""Both engines on every capture: the same rows, the same errors, never a crash."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

import causeway

pytestmark = pytest.mark.skipif(
    not causeway.native_available(), reason="the compiled extension is not importable"
)


def read(path, engine):
    """Everything an engine gives for ``path``: ("ok", data) or ("error", type, message)."""
    try:
        cap = causeway.open(path, engine=engine)
    except causeway.CaptureError as e:
        return ("error", type(e).__name__, str(e), e.path, e.problem)
    data = {
        "processes": cap.processes,
        "threads": cap.threads,
        "strings": cap.strings,
        "skipped": cap.skipped,
    }
    for name in causeway.TABLES:
        rows = cap.table(name).to_dicts()
        if name == "ranges":
            # Ranges that tie on (begin, tid, level) are in hash order in the scanner: compare as a
            # multiset (no other table has such ties).
            rows = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
        data[name] = rows
    return ("ok", data)


def test_same_results(capture_path):
    native = read(capture_path, "native")
    python = read(capture_path, "python")
    if native[0] == "error" or python[0] == "error":
        assert python == native
        return
    for key in native[1]:
        a, b = native[1][key], python[1][key]
        assert len(b) == len(a), f"{key}: {len(a)} native rows, {len(b)} python rows"
        for i, (x, y) in enumerate(zip(a, b)):
            assert y == x, f"{key} row {i} differs"


def test_bad_files_give_the_scanners_message(bad_case):
    path, message = bad_case
    for engine in causeway.ENGINES:
        with pytest.raises(causeway.CaptureError) as e:
            causeway.open(path, engine=engine)
        assert str(e.value) == message, engine
        assert e.value.path and message == f"{e.value.path}: {e.value.problem}"


def test_bad_files_match_the_cli(bad_case, cli):
    """The message is the one `causeway report` prints (exit 2, one line)."""
    path, message = bad_case
    r = subprocess.run([cli, "report", path], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == f"causeway: error: {message}"


def test_schemas_are_the_parquet_export(synth_dir):
    cap = causeway.open(synth_dir, engine="native")
    for name in causeway.TABLES:
        assert cap.table(name).schema == causeway.SCHEMAS[name], name
    assert cap._b.table_names() == causeway.TABLES


def test_generated_captures_have_rows(synth_dir):
    """The comparison above is not vacuous: the synthetic capture has calls, device intervals on the
    host clock and steps; the anchored variant places intervals through anchors (with bounds) and
    leaves some unplaced."""
    cap = causeway.open(synth_dir)
    assert len(cap.calls()) > 1000
    assert len(cap.device_intervals()) > 500
    assert len(cap.steps()) > 10
    anchored = os.path.join(os.path.dirname(synth_dir), "anchored")
    for engine in causeway.ENGINES:
        a = causeway.open(anchored, engine=engine)
        rows = a.device_intervals().to_dicts()
        assert rows and all(r["bound_ns"] >= 500 for r in rows)
        assert {r["kind"] for r in rows} >= {"kernel", "graph"}
        assert 0 < a.processes[0]["unplaced_device"] < 1000
        assert a.steps().to_dicts()[0]["device_spans"] is not None


def test_process_thread_and_string_fields(synth_dir):
    cap = causeway.open(synth_dir)
    (p,) = cap.processes
    assert p["pid"] == 4242 and p["level"] == 3 and p["policy"] == "drop" and p["clock"] == "monotonic"
    assert p["exe"] == "/synthetic/train" and p["host"] == "bench"
    assert set(p["counters"]) >= {"device_dropped", "lapped"}
    assert [t["tid"] for t in cap.threads] == [100, 101, 102, 103]
    assert {"kind": "api", "key": 1, "text": "cudaLaunchKernel"}.items() <= cap.strings[0].items()


def test_missing_path_is_a_capture_error(tmp_path):
    for engine in causeway.ENGINES:
        with pytest.raises(causeway.CaptureError, match="no such file or directory"):
            causeway.open(tmp_path / "nothing", engine=engine)
    with pytest.raises(ValueError):
        causeway.open(tmp_path, engine="fortran")


def test_a_path_with_nul_is_a_capture_error_in_both_engines(tmp_path):
    msgs = set()
    for engine in causeway.ENGINES:
        with pytest.raises(causeway.CaptureError) as e:
            causeway.open(str(tmp_path) + "/a\x00b", engine=engine)
        msgs.add(str(e.value))
    assert len(msgs) == 1, msgs


def test_report_is_the_cli_json(synth_dir, cli):
    for engine in causeway.ENGINES:
        got = causeway.open(synth_dir, engine=engine).report()
        want = json.loads(subprocess.run([cli, "report", "--json", synth_dir], capture_output=True, check=True).stdout)
        assert got == want


def test_native_scan_releases_the_gil(tmp_path):
    """While one thread opens a large capture natively, another runs Python code all along."""
    import captures

    ring = captures.synth(str(tmp_path / "big"), 400_000)
    done = threading.Event()
    box = {}

    def work():
        box["t0"] = time.perf_counter()
        box["cap"] = causeway.open(ring, engine="native")
        box["t1"] = time.perf_counter()
        done.set()

    ticks = []
    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        ticks.append(time.perf_counter())
        time.sleep(0.0005)
    t.join()
    inside = [x for x in ticks if box["t0"] < x < box["t1"]]
    took = box["t1"] - box["t0"]
    # Holding the GIL for the scan would leave at most a few ticks (one per 5 ms switch interval at
    # best); released, the sleeping loop ticks about every 0.5 ms throughout.
    assert took > 0.05, "capture too small to tell"
    assert len(inside) >= took / 0.005, f"{len(inside)} ticks in {took:.3f} s"
    assert len(box["cap"].calls()) > 100_000


def test_fallback_when_the_extension_is_not_importable(synth_dir):
    """Without `causeway._native`, open() warns and reads with the pure-Python engine."""
    code = r"""
import importlib.abc, sys, warnings
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "causeway._native":
            raise ImportError("blocked for the test")
sys.meta_path.insert(0, Block())
import causeway
assert not causeway.native_available()
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    cap = causeway.open(sys.argv[1])
assert cap.engine == "python", cap.engine
assert any(issubclass(x.category, RuntimeWarning) and "pure-Python" in str(x.message) for x in w), w
assert len(cap.calls().to_dicts()) > 1000
try:
    causeway.open(sys.argv[1], engine="native")
except ImportError:
    pass
else:
    raise AssertionError("native engine without the extension")
try:
    cap.report()
except NotImplementedError:
    pass
else:
    raise AssertionError("report() without the extension")
print("fallback ok")
"""
    r = subprocess.run([sys.executable, "-c", code, synth_dir], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "fallback ok" in r.stdout


def test_a_directory_with_bad_rings_reads_the_others(tmp_path):
    """A ring that cannot be read (here: empty, as a process killed while it made its ring leaves it;
    header never completed; cut short) is left out with a warning; the good ring is read."""
    import captures

    good = captures.synth(str(tmp_path / "src"), 2000)
    d = tmp_path / "cap"
    d.mkdir()
    data = open(good, "rb").read()
    (d / "a.cwring").write_bytes(b"")
    (d / "b.cwring").write_bytes(data)
    (d / "c.cwring").write_bytes(bytes(8) + data[8:])
    (d / "d.cwring").write_bytes(data[:5000])
    expected = [
        {"path": str(d / "a.cwring"), "problem": "empty file (0 bytes): the ring was never created completely"},
        {"path": str(d / "c.cwring"), "problem": "header never completed (the writer died while creating the ring)"},
        {"path": str(d / "d.cwring"), "problem": f"truncated: 5000 bytes, the header describes {len(data)}"},
    ]
    for engine in causeway.ENGINES:
        with pytest.warns(UserWarning) as w:
            cap = causeway.open(str(d), engine=engine)
        assert cap.skipped == expected, engine
        assert [p["path"] for p in cap.processes] == [str(d / "b.cwring")], engine
        assert len(cap.calls().to_dicts()) > 0, engine
        said = [str(x.message) for x in w]
        assert said == [f"causeway: {e['path']}: {e['problem']}: this ring is left out; the capture's other rings are read" for e in expected], engine
