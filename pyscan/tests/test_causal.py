"""The causal graph from Python: ``cap.edges()`` (the Parquet export's ``edges`` table) and
``cap.why(...)``, which must say what ``causeway why --json`` says, with either engine."""

import json
import subprocess

import pytest

import causeway

EVIDENCE = {"explicit", "observed", "inferred", "missing"}


@pytest.mark.parametrize("engine", ["native", "python"])
def test_edges_are_typed_and_carry_their_evidence(synth_dir, engine):
    cap = causeway.open(synth_dir, engine=engine)
    e = cap.edges()
    assert e.num_rows > 0
    assert set(e.column("evidence").to_pylist()) <= EVIDENCE
    kinds = set(e.column("kind").to_pylist())
    # The synthetic capture has calls in order and timed launches: these edges must be there.
    assert {"issue", "program_order"} <= kinds, kinds
    # An issue edge leads from a call to a device interval that names it.
    import pyarrow.compute as pc

    rows = e.filter(pc.equal(e.column("kind"), "issue"))
    assert set(rows.column("from_node").to_pylist()) == {"call"}
    assert set(rows.column("to_node").to_pylist()) == {"device"}
    assert rows.column("from_seq").to_pylist() == rows.column("to_seq").to_pylist()


@pytest.mark.parametrize("engine", ["native", "python"])
def test_why_is_the_clis(synth_dir, cli, engine):
    cap = causeway.open(synth_dir, engine=engine)
    got = cap.why(step="slowest")
    r = subprocess.run(
        [cli, "why", "--json", "--step", "slowest", synth_dir], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert got == json.loads(r.stdout)
    assert got["cause"] in {"host", "dependency", "device", "unknown"}
    with pytest.raises(ValueError):
        cap.why()
    with pytest.raises(ValueError):
        cap.why(step=1, kernel="k")
