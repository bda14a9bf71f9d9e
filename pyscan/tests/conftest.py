"""Shared fixtures: the captures every test module reads (see captures.py) and the CLI."""

import atexit
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import captures  # noqa: E402

_generated = None


def generated_cases():
    """(path, expected error) of the generated captures, made once per session."""
    global _generated
    if _generated is None:
        out = tempfile.mkdtemp(prefix="cw-pyscan-")
        atexit.register(shutil.rmtree, out, True)
        _generated = captures.generated(out)
    return _generated


def all_capture_paths():
    """Every capture directory and every ring file the engines are compared on."""
    paths = []
    for path, _ in generated_cases():
        paths.append(path)
        if os.path.isdir(path):
            paths.extend(captures.rings_in(path))
    for d in captures.kept_dirs():
        paths.append(d)
        paths.extend(captures.rings_in(d))
    return paths


def _cli():
    exe = os.environ.get("CAUSEWAY_BIN") or os.path.join(captures.ROOT, "target", "debug", "causeway")
    return exe if os.path.exists(exe) else None


@pytest.fixture(scope="session")
def cli():
    """The `causeway` CLI; the tests that compare with it are skipped without one."""
    exe = _cli()
    if exe is None:
        pytest.skip("no causeway CLI (cargo build, or set CAUSEWAY_BIN)")
    return exe


@pytest.fixture(scope="session")
def synth_dir():
    """The generated synthetic level-3 capture (steps, device intervals)."""
    return generated_cases()[0][0]


@pytest.fixture(scope="session")
def demo_capture(tmp_path_factory):
    """The H200 torch capture shipped in demo/ (level 3, CUPTI)."""
    import tarfile

    tar = os.path.join(captures.ROOT, "demo", "h200-torch-level3.tar.gz")
    if not os.path.exists(tar):
        pytest.skip("demo capture not in this checkout")
    out = tmp_path_factory.mktemp("demo")
    with tarfile.open(tar) as t:
        t.extractall(out)
    return next(str(out / d) for d in sorted(os.listdir(out)) if d.startswith("cw-"))


def pytest_generate_tests(metafunc):
    if "capture_path" in metafunc.fixturenames:
        paths = all_capture_paths()
        root = captures.ROOT
        ids = [os.path.relpath(p, root) if p.startswith(root) else p.split("cw-pyscan-", 1)[-1] for p in paths]
        metafunc.parametrize("capture_path", paths, ids=ids)
    if "bad_case" in metafunc.fixturenames:
        cases = [c for c in generated_cases() if c[1] is not None]
        metafunc.parametrize("bad_case", cases, ids=[os.path.basename(c[0]) for c in cases])
