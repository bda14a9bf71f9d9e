"""causeway captures from Python.

    import causeway
    cap = causeway.open("cw-20261129-120000-4242")      # a capture directory or one .cwring file
    calls = cap.calls().to_pandas()                      # or .to_arrow(), .to_dicts()
    steps = cap.steps().to_arrow()
    report = cap.report()                                # what `causeway report --json` prints

Two engines read a capture and give the same rows:

* ``"native"``: the Rust scanner (the compiled ``causeway._native`` extension), run on all cores with
  the GIL released;
* ``"python"``: a pure-Python reader (``causeway._pyreader``) written from ``docs/format.md``,
  for where the extension cannot be built or imported. ``open`` picks it by itself, with a
  ``RuntimeWarning``, when the extension is not importable.

The tables are those of ``causeway export --format parquet`` (``docs/parquet.md``): ``processes``,
``calls``, ``device_intervals``, ``ranges``, ``marks``, ``steps``. A capture that cannot be read
raises ``causeway.CaptureError`` with the scanner's message, whichever engine reads it.

Work tokens, for a program traced under the shim (no-ops elsewhere): ``causeway.token(hi, lo,
generation)`` (a context manager: begin/end on this thread), ``causeway.handoff(token, to)`` and
``causeway.accept(token)``; see ``causeway._tokens``.
"""

import json as _json
import os as _os
import warnings as _warnings

from ._errors import CaptureError
from ._tables import SCHEMAS, TABLES, Table, _Stream
from ._tokens import Token, accept, begin, end, handoff, token, tokens_enabled

try:
    from . import _native
except ImportError as _e:  # no compiled extension here: the pure-Python engine only
    _native = None
    _native_error = _e
else:
    _native_error = None

__all__ = [
    "open",
    "Capture",
    "Table",
    "CaptureError",
    "ENGINES",
    "native_available",
    "TABLES",
    "SCHEMAS",
    "Token",
    "token",
    "begin",
    "end",
    "handoff",
    "accept",
    "tokens_enabled",
]

ENGINES = ("native", "python")


def native_available():
    """Whether the compiled engine can be used here."""
    return _native is not None


class Capture:
    """An opened capture. Everything is read when it is opened; the object holds the results.

    Attributes: ``path``, ``engine`` (``"native"`` or ``"python"``), ``processes`` (one dict per
    process: header fields, counters, ``unplaced_device``), ``threads`` (one dict per thread that made
    calls or pushed NVTX ranges: ``pid``, ``tid``, ``name`` or ``None``), ``strings`` (every record of
    the rings' string areas: ``pid``, ``kind``, ``key``, ``aux``, ``text``), ``skipped`` (one dict,
    ``path`` and ``problem``, per ring of a capture directory left out because it cannot be read —
    a process killed while it created its ring leaves such a file; each is also a ``UserWarning``
    when the capture is opened).
    """

    def __init__(self, backend, engine):
        self._b = backend
        self.engine = engine
        self.path = backend.path
        self.skipped = [{"path": p, "problem": why} for p, why in backend.skipped()]
        for s in self.skipped:
            _warnings.warn(
                f"causeway: {s['path']}: {s['problem']}: this ring is left out; "
                "the capture's other rings are read",
                UserWarning,
                stacklevel=3,
            )
        self.processes = backend.processes()
        self.strings = [
            {"pid": pid, "kind": kind, "key": key, "aux": aux, "text": text}
            for pid, kind, key, aux, text in backend.strings()
        ]
        thread_names = {}
        for s in self.strings:
            if s["kind"] == "thread":
                thread_names.setdefault((s["pid"], s["key"]), s["text"])
        self.threads = [
            {"pid": pid, "tid": tid, "name": thread_names.get((pid, tid))}
            for pid, tid in backend.threads()
        ]
        self._tables = {}

    def __repr__(self):
        return f"<causeway capture {self.path!r}: {len(self.processes)} process(es), engine {self.engine}>"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        """Releases the engine's data (the native engine keeps the rings mapped for ``report``)."""
        self._b = None
        self._tables = {}

    def _backend(self):
        if self._b is None:
            raise ValueError("capture is closed")
        return self._b

    def table(self, name):
        """The table ``name`` (one of ``causeway.TABLES``)."""
        if name not in SCHEMAS:
            raise KeyError(f"no table {name!r} (tables: {', '.join(TABLES)})")
        t = self._tables.get(name)
        if t is None:
            t = self._tables[name] = Table(self._backend(), name)
        return t

    def calls(self):
        """Hooked CUDA runtime/driver calls, one row per call entry."""
        return self.table("calls")

    def device_intervals(self):
        """Device intervals placed on the host clock (level 3)."""
        return self.table("device_intervals")

    def steps(self):
        """Steps of the steps view (the default selection of ``causeway report --steps``)."""
        return self.table("steps")

    def ranges(self):
        """NVTX ranges."""
        return self.table("ranges")

    def marks(self):
        """NVTX marks."""
        return self.table("marks")

    def process_table(self):
        """The ``processes`` table of the export (fewer fields than ``processes``)."""
        return self.table("processes")

    def _native_backend(self, what):
        b = self._backend()
        if hasattr(b, "edges_ipc"):
            return b
        if _native is None:
            raise NotImplementedError(
                f"{what} needs the compiled extension (causeway._native), which is not importable "
                f"here: {_native_error}"
            )
        return _native.open(self.path)

    def edges(self):
        """The causal graph's typed dependencies (the Parquet export's ``edges`` table: kind,
        evidence, confidence and both ends) as a ``pyarrow.Table``. Computed by the Rust scanner:
        with the pure-Python engine it needs the compiled extension all the same."""
        import pyarrow as pa

        b = self._native_backend("edges()")
        if hasattr(pa.RecordBatchReader, "from_stream"):
            # Without a copy, through the Arrow PyCapsule interface (pyarrow >= 15), as the tables.
            stream = _Stream(lambda _: b.edges_stream(), "edges")
            return pa.RecordBatchReader.from_stream(stream).read_all()
        return pa.ipc.open_stream(b.edges_ipc()).read_all()

    def why(self, step=None, range=None, kernel=None, call=None):  # noqa: A002 - the CLI's names
        """``causeway why --json`` as a dict: exactly one of ``step`` (an index or ``"slowest"``,
        with ``range``), ``kernel`` (``NAME`` or ``NAME#K``) or ``call`` (``"PID:SEQ"``)."""
        b = self._native_backend("why()")
        return _json.loads(
            b.why_json(
                step=None if step is None else str(step), range=range, kernel=kernel, call=call
            )
        )

    def report(self):
        """``causeway report --json`` of this capture, as a dict. Computed by the Rust scanner: with
        the pure-Python engine it needs the compiled extension all the same."""
        b = self._backend()
        if hasattr(b, "report_json"):
            return _json.loads(b.report_json())
        if _native is None:
            raise NotImplementedError(
                "report() needs the compiled extension (causeway._native), which is not importable "
                f"here: {_native_error}"
            )
        return _json.loads(_native.open(self.path).report_json())


def open(path, engine="auto"):  # noqa: A001 - the package's entry point, like io.open
    """Opens the capture at ``path``: a capture directory (every ``*.cwring`` in it) or one ring file.

    ``engine``: ``"auto"`` (the compiled engine where importable, else the pure-Python one with a
    ``RuntimeWarning``), ``"native"`` or ``"python"``. Raises ``CaptureError`` for a capture that
    cannot be read.
    """
    p = _os.fspath(path)
    if isinstance(p, bytes):
        p = _os.fsdecode(p)
    if engine == "auto":
        if _native is None:
            _warnings.warn(
                "causeway: the compiled extension is not importable "
                f"({_native_error}); using the pure-Python reader (slower)",
                RuntimeWarning,
                stacklevel=2,
            )
            engine = "python"
        else:
            engine = "native"
    if engine == "native":
        if _native is None:
            raise ImportError(f"causeway: the native engine is not importable: {_native_error}")
        return Capture(_native.open(p), "native")
    if engine == "python":
        from . import _pyreader

        return Capture(_pyreader.open_capture(p), "python")
    raise ValueError(f"engine must be 'auto', 'native' or 'python', not {engine!r}")
