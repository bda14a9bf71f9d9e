"""pyarrow and pandas round trips, and agreement with `causeway export --format parquet`."""

import os
import subprocess

import pytest

import causeway

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
pq = pytest.importorskip("pyarrow.parquet")

ENGINES = [e for e in causeway.ENGINES if e == "python" or causeway.native_available()]


@pytest.fixture(scope="module", params=["synth", "anchored", "demo"])
def capture(request, synth_dir):
    if request.param == "demo":
        return request.getfixturevalue("demo_capture")
    if request.param == "anchored":
        return os.path.join(os.path.dirname(synth_dir), "anchored")
    return synth_dir


@pytest.mark.parametrize("engine", ENGINES)
def test_arrow_has_the_schema_and_the_rows(capture, engine):
    cap = causeway.open(capture, engine=engine)
    for name in causeway.TABLES:
        t = cap.table(name)
        a = t.to_arrow()
        assert a.schema.equals(causeway._tables.arrow_schema(name)), name
        assert a.num_rows == len(t)
        assert a.to_pylist() == t.to_dicts(), name


def test_engines_give_equal_arrow_tables(capture):
    if not causeway.native_available():
        pytest.skip("the compiled extension is not importable")
    n = causeway.open(capture, engine="native")
    p = causeway.open(capture, engine="python")
    for name in ("calls", "device_intervals", "steps", "processes", "marks"):
        assert n.table(name).to_arrow().equals(p.table(name).to_arrow()), name


def test_native_tables_come_through_the_capsule_unchanged(capture):
    """The native engine hands its batches (the tables, the causal graph's edges) to pyarrow through
    the Arrow PyCapsule interface: the same table as its IPC bytes; a capsule never read is freed
    without harm."""
    if not causeway.native_available():
        pytest.skip("the compiled extension is not importable")
    if not hasattr(pa.RecordBatchReader, "from_stream"):
        pytest.skip("this pyarrow takes no PyCapsule streams (before 15)")
    b = causeway.open(capture, engine="native")._b
    for name in causeway.TABLES:
        via_ipc = pa.ipc.open_stream(b.ipc(name)).read_all()
        via_capsule = pa.RecordBatchReader.from_stream(causeway._tables._Stream(b.arrow_stream, name))
        assert via_capsule.read_all().equals(via_ipc), name
        capsule = b.arrow_stream(name)
        assert type(capsule).__name__ == "PyCapsule"
        del capsule
    edges = pa.RecordBatchReader.from_stream(causeway._tables._Stream(lambda _: b.edges_stream(), "edges"))
    assert edges.read_all().equals(pa.ipc.open_stream(b.edges_ipc()).read_all())


@pytest.mark.parametrize("engine", ENGINES)
def test_pandas_round_trip(capture, engine):
    cap = causeway.open(capture, engine=engine)
    for name in causeway.TABLES:
        t = cap.table(name)
        df = t.to_pandas()
        assert list(df.columns) == t.column_names
        assert len(df) == len(t)
        # Nullable integer dtypes: 64-bit handles and NULLs survive, and back to Arrow is lossless.
        back = pa.Table.from_pandas(df, schema=causeway._tables.arrow_schema(name), preserve_index=False)
        assert back.equals(t.to_arrow()), name
    calls = cap.calls().to_pandas()
    if len(calls):
        assert str(calls["seq"].dtype) == "UInt64"
        assert calls["end_ns"].isna().sum() == sum(r["end_ns"] is None for r in cap.calls().to_dicts())


@pytest.mark.parametrize("engine", ENGINES)
def test_tables_equal_the_parquet_export(capture, engine, cli, tmp_path):
    out = tmp_path / "pq"
    subprocess.run([cli, "export", "--format", "parquet", "-o", str(out), capture], check=True, capture_output=True)
    cap = causeway.open(capture, engine=engine)
    for name in causeway.TABLES:
        want = pq.read_table(out / f"{name}.parquet")
        got = cap.table(name).to_arrow()
        if name == "ranges":
            keys = [(c, "ascending") for c in want.column_names]
            want, got = want.sort_by(keys), got.sort_by(keys)
        assert got.equals(want), name
        # And through a Parquet file written by pyarrow.
        pq.write_table(got, tmp_path / f"{name}.parquet")
        assert pq.read_table(tmp_path / f"{name}.parquet").equals(got)
