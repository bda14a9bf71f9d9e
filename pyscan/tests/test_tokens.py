"""Work tokens from Python (causeway.token / handoff / accept): a small program hands a token from
one thread to another, run bare (the helpers find no shim and do nothing) and under LD_PRELOAD of
the shim (the capture's report counts the token's spans and the paired handoff)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import causeway

PROGRAM = textwrap.dedent(
    """
    import threading, causeway
    tok = causeway.token(0x1111, 0x2222, 3)
    ready, handed = threading.Event(), threading.Event()
    tid_b = []

    def b():
        tid_b.append(threading.get_native_id())
        ready.set()
        handed.wait()
        with causeway.accept(tok):
            pass

    t = threading.Thread(target=b)
    t.start()
    ready.wait()
    with tok:
        causeway.handoff(tok, to=tid_b[0])
    handed.set()
    t.join()
    # A second token, begun and never ended: an open span.
    causeway.begin((0, 7, 1))
    print("enabled=%d tid_a=%d tid_b=%d" % (causeway.tokens_enabled(), threading.get_native_id(), tid_b[0]))
    """
)


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAUSEWAY_") and k != "LD_PRELOAD"}
    # The child imports the same causeway package this test imported.
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(causeway.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([pkg_root] + [p for p in sys.path if p])
    return env


def _run(env):
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return dict(kv.split("=") for kv in out.stdout.split())


def test_helpers_do_nothing_without_the_shim():
    got = _run(_env())
    assert got["enabled"] == "0"


def test_helpers_check_their_arguments():
    with pytest.raises(ValueError):
        causeway.token(1 << 64, 0)
    with pytest.raises(ValueError):
        causeway.token(0, -1)
    with pytest.raises(ValueError):
        causeway.token(0, 0, 1 << 32)
    with pytest.raises(ValueError):
        causeway.handoff((0, 0, 0), to=-1)
    assert causeway.token(1, 2, 3) == (1, 2, 3)


def test_tokens_recorded_under_the_shim(cli, tmp_path):
    shim = os.environ.get("CAUSEWAY_SHIM") or os.path.join(os.path.dirname(cli), "libcauseway.so")
    if not os.path.exists(shim):
        pytest.skip("no libcauseway.so next to the CLI (cargo build, or set CAUSEWAY_SHIM)")
    env = _env()
    env.update(LD_PRELOAD=shim, CAUSEWAY_OUT=str(tmp_path), CAUSEWAY_LEVEL="1", CAUSEWAY_RING_MB="16")
    got = _run(env)
    assert got["enabled"] == "1"
    r = subprocess.run([cli, "report", "--json", str(tmp_path)], capture_output=True, text=True, check=True)
    procs = [p for p in json.loads(r.stdout)["processes"] if p.get("tokens")]
    assert len(procs) == 1, r.stdout
    assert procs[0]["unknown_kind"] == 0
    assert procs[0]["tokens"] == {
        "tokens": 2,
        "spans": 3,
        "open_spans": 1,
        "handoffs": 1,
        "accepted": 1,
        "unmatched_ends": 0,
        "unmatched_accepts": 0,
        "nvtx_without_token": 0,
    }
    # Both engines still read the capture (the pure-Python one skips the token entries).
    for engine in causeway.ENGINES:
        if engine == "native" and not causeway.native_available():
            continue
        cap = causeway.open(str(tmp_path), engine=engine)
        assert len(cap.processes) >= 1
