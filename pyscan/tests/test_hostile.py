"""The pure-Python engine on files that change or lie (issue 20): a ring truncated while it is read
does not end the interpreter (no memory map: ``pread``), and a sparse ring is read in bounded memory."""

import os
import resource
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import captures  # noqa: E402

from causeway import _pyreader  # noqa: E402
import causeway  # noqa: E402


def _a_ring(tmp_path):
    for path, expected in captures.generated(str(tmp_path / "gen")):
        if expected is None and os.path.isdir(path):
            rings = captures.rings_in(path)
            if rings and os.path.getsize(rings[0]) > 1 << 16 and "sparse" not in path:
                return rings[0]
    pytest.skip("no generated ring")


def test_a_ring_truncated_while_read_is_an_error_not_a_crash(tmp_path):
    ring = _a_ring(tmp_path)
    f = _pyreader._map(ring)
    try:
        size = len(f)
        with open(ring, "r+b") as w:
            w.truncate(4096)
        tail = f[size - 4096 : size]
        assert tail == bytes(4096)
        assert f.changed
    finally:
        f.close()
    with pytest.raises(causeway.CaptureError) as e:
        causeway.open(ring, engine="python")
    assert "truncated" in str(e.value)


def test_a_sparse_ring_is_read_in_bounded_memory(tmp_path):
    sparse = [p for p, _ in captures.generated(str(tmp_path / "gen")) if p.endswith("sparse")]
    assert sparse
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cap = causeway.open(sparse[0], engine="python")
    assert cap.processes[0]["entries"] == 0 if "entries" in cap.processes[0] else True
    assert cap.table("calls").to_dicts() == []
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grew < 256 * 1024, f"RSS grew {grew} KiB reading a sparse ring"
