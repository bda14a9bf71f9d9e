"""The pure-Python engine: a reader of causeway captures written from ``docs/format.md`` (the bytes)
and ``docs/parquet.md`` (the tables), with ``struct`` and ``os.pread`` only — no compiled code.

It gives the same rows as the compiled engine (the Rust scanner) for the tables of
``causeway export --format parquet`` and raises ``CaptureError`` with the same messages for files it
cannot read. Where the scanner's result depends on an arithmetic detail the format leaves open
(integer tick conversion, float rounding, binary search over unsorted data), this module does what
the scanner does, and ``docs/format.md`` / ``docs/parquet.md`` say so.

Layout of this module: opening and validation (``open_capture``, ``_parse``), slot decoding
(``_decode``), the timeline model per ring (``_process``, ``_device_spans``, ``_Anchors``), the steps
view (``_steps``), and ``PyCapture``, the object ``causeway.open(..., engine="python")`` wraps.
"""

import errno as _errno
import gc
import math
import os
import stat as _stat
import struct
from itertools import accumulate
from operator import itemgetter

from ._errors import CaptureError

MASK64 = (1 << 64) - 1
U64_MAX = MASK64
I64_MAX = (1 << 63) - 1

MAGIC = b"CAUSEWAY"
VERSION = 2
HEADER_SIZE = 4096
ENTRY_SIZE = 64
RING_SUFFIX = ".cwring"
# The largest capacity and string area a reader accepts: anything bigger is corruption.
MAX_CAPACITY = 1 << 36
MAX_STRINGS = 1 << 32
EXE_MAX, HOST_MAX, NOTICE_MAX = 1024, 64, 256
COUNTER_NAMES = (
    "proc_unmatched",
    "names_missed",
    "real_missing",
    "nvtx_missed",
    "end_lost",
    "lapped",
    "device_dropped",
    "device_untimed",
)
STR_KINDS = {1: "api", 2: "kernel", 3: "text", 4: "thread"}

# Entry kinds (format.md, "Entries").
K_CALL, K_PUSH, K_POP, K_START, K_END, K_MARK = 1, 2, 3, 4, 5, 6
K_DEVICE, K_ANCHOR = 12, 13
# Entry flag bits.
F_PER_THREAD, F_HOST_CLOCK, F_VIA_CUPTI, F_ANCHORED = 1, 2, 4, 8
# A device interval timed by the runtime's own event profiling (layout::entry_flags::PROFILED).
F_PROFILED = 64
NO_CALL = U64_MAX
NO_ELAPSED = U64_MAX
# The stream handle the CUDA runtime uses for the per-thread default stream (cudaStreamPerThread).
PER_THREAD_STREAM = 2

CLASS_NAMES = (
    "other", "launch", "copy", "memset", "sync", "event_record", "event_sync", "stream_wait",
    "graph_launch", "graph", "alloc", "free", "module", "stream", "capture", "host_func", "event",
    "query", "lookup", "prefetch", "mem_op", "stream_op", "ctx_event_record", "ctx_event_wait",
    "name",
)  # fmt: skip
# `a2 & 0xff` of a name-class call naming a stream (`layout::named::STREAM`).
NAMED_STREAM = 3
# Classes whose calls take a stream in a0 (the `stream` column).
STREAMED = {"launch", "copy", "memset", "sync", "event_record", "stream_wait", "graph_launch",
            "capture", "host_func", "prefetch", "mem_op", "stream_op"}  # fmt: skip
LAYER_NAMES = {1: "runtime", 2: "driver", 3: "nvtx", 5: "level_zero", 6: "unified_runtime"}  # anything else: "loader"
COPY_KINDS = {0: "unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD",
              7: "DtoA", 8: "DtoD", 9: "HtoH", 10: "PtoP"}  # fmt: skip
DEVICE_KINDS = {1: "kernel", 2: "memcpy", 3: "memset", 4: "graph"}
GRAPH_ROW = "[graph launch]"
UNKNOWN_KERNEL_ROW = "[unknown kernel]"
EVENT_RESOLUTION_NS = 500.0
ASSUMED_DRIFT = 100e-6
LAUNCH_CLASSES = ("launch", "copy", "memset", "graph_launch", "prefetch", "mem_op", "stream_op")
SYNC_CLASSES = ("sync", "event_sync")

# One 64-byte entry: stamp, t_begin, t_end, tid, api, kind, flags, result, depth, reserved, a0-a2.
_ENTRY = struct.Struct("<QQQIHBBiHxxQQQ")
assert _ENTRY.size == ENTRY_SIZE
# Entries are kept as the tuples `_ENTRY` unpacks (the stamp first; the reserved field skipped). Of a
# live entry the stamp is ((seq + 1) << 2) | state: seq = (stamp >> 2) − 1, done = stamp & 2.
STAMP, TB, TE, TID, API, KIND, FLAGS, RESULT, DEPTH, A0, A1, A2 = range(12)


# ---- errors ------------------------------------------------------------------------------------------


def _error(path, problem):
    return CaptureError(f"{path}: {problem}", path, problem)


def _io_problem(e):
    """An OSError as the scanner words it: the C library's text without the errno tail."""
    if e.errno == _errno.ENOENT:
        return "no such file or directory"
    if e.errno in (_errno.EACCES, _errno.EPERM):
        return "permission denied"
    if e.errno is not None:
        return os.strerror(e.errno)
    return str(e)


# ---- opening and validation ----------------------------------------------------------------------------


def _list_rings(d):
    try:
        names = os.listdir(d)
    except OSError as e:
        raise _error(d, _io_problem(e)) from None
    out = [n for n in names if n.endswith(RING_SUFFIX)]
    if not out:
        raise _error(d, f"no causeway rings (*{RING_SUFFIX}) in {d}")
    out.sort(key=lambda n: os.fsencode(n))
    return [os.path.join(d, n) for n in out]


class _File:
    """A ring file read with ``pread``: ``f[a:b]`` reads those bytes. Not a memory map, so a file
    truncated while it is read cannot end the interpreter with SIGBUS: bytes past the new end read as
    zeros (torn slots) and ``changed`` is set, and the capture is refused as the scanner refuses it.
    ``data`` lists the byte ranges that hold data (``SEEK_DATA``/``SEEK_HOLE``; ``None``: all of it):
    the holes of a sparse file are skipped, not read."""

    def __init__(self, fd, size, data):
        self.fd, self.size, self.data, self.changed = fd, size, data, False

    def __len__(self):
        return self.size

    def __getitem__(self, s):
        start, stop = max(0, s.start or 0), min(self.size, self.size if s.stop is None else s.stop)
        if stop <= start:
            return b""
        b = os.pread(self.fd, stop - start, start)
        if len(b) < stop - start:
            self.changed = True
            b += bytes(stop - start - len(b))
        return b

    def present(self, lo, hi):
        """Whether any byte of [lo, hi) holds data."""
        if self.data is None:
            return True
        return any(b < hi and e > lo for b, e in self.data)

    def close(self):
        os.close(self.fd)


def _data_ranges(fd, size):
    out, at = [], 0
    try:
        while at < size:
            try:
                d = os.lseek(fd, at, os.SEEK_DATA)
            except OSError as e:
                if e.errno == _errno.ENXIO:
                    break
                return None
            h = os.lseek(fd, d, os.SEEK_HOLE)
            out.append((d, min(h, size)))
            at = h
            if len(out) > 1 << 16:
                return None
    except (OSError, AttributeError):
        return None
    return None if out == [(0, size)] else out


def _map(path):
    """Opens one ring file for reading: the checks `RingFile::open` makes, with its messages. Opened
    without blocking: a FIFO named like a ring would hang a plain open."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as e:
        raise _error(path, _io_problem(e)) from None
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            raise _error(
                path,
                "not a regular file (a capture is a directory of *.cwring files or one such file)",
            )
        if st.st_size == 0:
            raise _error(path, "empty file (0 bytes): the ring was never created completely")
        return _File(fd, st.st_size, _data_ranges(fd, st.st_size))
    except BaseException:
        os.close(fd)
        raise


def _u32(b, off):
    return int.from_bytes(b[off : off + 4], "little") if off + 4 <= len(b) else 0


def _u64(b, off):
    return int.from_bytes(b[off : off + 8], "little") if off + 8 <= len(b) else 0


def _text(b):
    return bytes(b).decode("utf-8", "replace")


class _Header:
    pass


def _rate(a0, a1):
    """Ticks per second between two anchors; 0 when they are less than 100 µs apart."""
    dt = max(0, a1[1] - a0[1])
    dticks = max(0, a1[0] - a0[0])
    if dt < 100_000:
        return 0
    return (dticks * 1_000_000_000 // dt) & MASK64


def _parse(path, mm):
    """Validates one ring (the checks of the format, in the scanner's order and words) and returns
    (header, string records, strings_torn)."""

    def bad(problem):
        return _error(path, problem)

    n = len(mm)
    if n < HEADER_SIZE:
        if n >= 8 and mm[:8] != MAGIC:
            raise bad("not a causeway ring (no CAUSEWAY magic)")
        raise bad(f"truncated: {n} bytes, a ring header alone is {HEADER_SIZE}")
    b = mm[:HEADER_SIZE]
    if b[:8] != MAGIC:
        if b[:8] == bytes(8):
            raise bad("header never completed (the writer died while creating the ring)")
        raise bad("not a causeway ring (no CAUSEWAY magic)")
    version = _u32(b, 8)
    if version != VERSION:
        raise bad(f"unsupported format version {version} (this reader reads version {VERSION})")
    if _u32(b, 12) != HEADER_SIZE or _u32(b, 16) != ENTRY_SIZE:
        raise bad(
            f"corrupt header: header size {_u32(b, 12)} / entry size {_u32(b, 16)} "
            f"(expected {HEADER_SIZE} / {ENTRY_SIZE})"
        )
    policy = _u32(b, 20)
    if policy not in (1, 2):
        raise bad(f"corrupt header: unknown policy {policy}")
    clock = _u32(b, 68)
    if clock not in (1, 2):
        raise bad(f"corrupt header: unknown clock {clock}")
    capacity = _u64(b, 24)
    if capacity == 0 or capacity & (capacity - 1) or capacity > MAX_CAPACITY:
        raise bad(f"corrupt header: capacity {capacity} is not a power of two in 1..=2^36")
    so, ss, eo = _u64(b, 32), _u64(b, 40), _u64(b, 48)
    if so != HEADER_SIZE or ss & 7 or ss > MAX_STRINGS or eo != so + ss:
        raise bad(f"corrupt header: string area at {so}+{ss}, entries at {eo}")
    need = HEADER_SIZE + ss + capacity * ENTRY_SIZE
    if n < need:
        raise bad(f"truncated: {n} bytes, the header describes {need}")
    level = _u32(b, 64)
    if not 1 <= level <= 4:
        raise bad(f"corrupt header: capture level {level} is not 1..=4")
    exe_len, host_len = _u32(b, 176), _u32(b, 1204)
    if exe_len > EXE_MAX or host_len > HOST_MAX:
        raise bad("corrupt header: executable or host name longer than its field")
    notice_len = _u32(b, 1272)
    notice = _text(b[1276 : 1276 + notice_len]) if 0 < notice_len <= NOTICE_MAX else None
    strings_used = _u64(b, 96)
    if strings_used > ss:
        raise bad(f"corrupt header: {strings_used} string bytes used of {ss}")

    h = _Header()
    h.path = path
    base = os.path.basename(path)
    h.ring = base[: -len(RING_SUFFIX)] if base.endswith(RING_SUFFIX) else base
    h.policy = "drop" if policy == 1 else "overwrite"
    h.clock = "monotonic" if clock == 1 else "tsc"
    h.capacity, h.strings_offset, h.strings_size, h.entries_offset = capacity, so, ss, eo
    h.pid, h.ppid, h.level = _u32(b, 56), _u32(b, 60), level
    h.flags, h.backend = _u32(b, 72), _u32(b, 76)
    h.sample_every = _u32(b, 1532)
    h.head, h.dropped, h.strings_used = _u64(b, 80), _u64(b, 88), strings_used
    h.strings_dropped = _u32(b, 108)

    def anchor(off):
        return (_u64(b, off), _u64(b, off + 8), _u64(b, off + 16))

    h.anchor0 = anchor(112)
    # An odd sequence word: the writer died while refreshing anchor 1; fall back to anchor 0.
    h.anchor1 = anchor(112) if _u64(b, 136) & 1 else anchor(144)
    h.ticks_per_sec = _u64(b, 168)
    h.rate = _rate(h.anchor0, h.anchor1) or h.ticks_per_sec
    h.exe = _text(b[180 : 180 + exe_len])
    h.host = _text(b[1208 : 1208 + host_len])
    h.notice = notice
    h.counters = {name: _u64(b, 1536 + 8 * i) for i, name in enumerate(COUNTER_NAMES)}

    strings, torn = _parse_strings(path, mm[so : so + strings_used])
    # Entries committed past the head word (a damaged header) are read, as the scanner reads them.
    seq, h.head_behind = h.head, 0
    while seq - h.head < capacity and seq < (1 << 61):
        off = eo + (seq & (capacity - 1)) * ENTRY_SIZE
        if _u64(mm[off : off + 8], 0) | 2 != ((seq + 1) << 2) | 3:
            break
        seq += 1
    h.head_behind, h.head = seq - h.head, seq
    if getattr(mm, "changed", False):
        raise bad(
            "truncated while it was being read (another process cut it short): read a copy, or the "
            "capture once nothing writes to it"
        )
    return h, strings, torn


def _parse_strings(path, area):
    out = []
    pos = 0
    end = len(area)
    while pos < end:
        size = _u32(area, pos)
        if size == 0:
            return out, True
        length = _u32(area, pos + 16)
        if size < 24 or size & 7 or pos + size > end or 24 + length > size:
            raise _error(
                path,
                f"corrupt string record at offset {pos} of the string area "
                f"(size {size}, length {length})",
            )
        kind = _u32(area, pos + 4)
        if kind not in STR_KINDS:
            raise _error(path, f"corrupt string record at offset {pos}: unknown kind {kind}")
        out.append(
            (kind, _u64(area, pos + 8), _u32(area, pos + 20), _text(area[pos + 24 : pos + 24 + length]))
        )
        pos += size
    return out, False


# ---- clocks --------------------------------------------------------------------------------------------


def _ticks_to_ns(h):
    """The function converting ring ticks to CLOCK_MONOTONIC ns (integer arithmetic, truncating
    toward zero, clamped at 0)."""
    if h.clock == "monotonic":
        return lambda t: t
    a_ticks, a_mono = h.anchor0[0], h.anchor0[1]
    rate = h.rate
    if rate == 0:
        return lambda t: a_mono

    def conv(t):
        num = (t - a_ticks) * 1_000_000_000
        q = abs(num) // rate
        v = a_mono + (q if num >= 0 else -q)
        return v & MASK64 if v > 0 else 0

    return conv


def _window(h):
    if h.policy == "drop":
        return 0, min(h.head, h.capacity)
    return max(0, h.head - h.capacity), h.head


# ---- slots ---------------------------------------------------------------------------------------------


def _decode(h, mm):
    """The committed entries of the live window, in sequence order (tuples as `_ENTRY` unpacks them,
    with `t_end` and `result` 0 for an open call). Read chunk by chunk: memory follows the committed
    entries, not what the header claims, and chunks wholly in holes of a sparse file are not read."""
    first, end = _window(h)
    n = end - first
    if n <= 0:
        return []
    cap = h.capacity
    base = h.entries_offset
    out = []
    seq = first
    while seq < end:
        s0 = seq & (cap - 1)
        k = min(_CHUNK, end - seq, cap - s0)
        lo, hi = base + s0 * ENTRY_SIZE, base + (s0 + k) * ENTRY_SIZE
        if mm.present(lo, hi):
            raw = mm[lo:hi]
            # Slot i holds sequence number seq + i when its stamp is ((seq + i + 1) << 2) | 1 (open)
            # or | 3 (complete): exactly when stamp | 2 == ((seq + i + 1) << 2) | 3.
            want = ((seq + 1) << 2) | 3
            got = [t for i, t in enumerate(_ENTRY.iter_unpack(raw)) if t[0] | 2 == want + (i << 2)]
            if got:
                # A slot whose bytes changed while they were copied (a live process) counts as
                # torn, as the scanner's re-read of the stamp after each copy does.
                again = mm[lo:hi]
                if again != raw:
                    got = [
                        e
                        for e in got
                        if again[((e[STAMP] >> 2) - 1 - seq) * ENTRY_SIZE :][:8]
                        == raw[((e[STAMP] >> 2) - 1 - seq) * ENTRY_SIZE :][:8]
                    ]
                out.extend(t if t[0] & 2 else t[:2] + (0,) + t[3:7] + (0,) + t[8:] for t in got)
        seq += k
    if mm.changed:
        raise _error(
            h.path,
            "truncated while it was being read (another process cut it short): read a copy, or the "
            "capture once nothing writes to it",
        )
    return out


_CHUNK = 1 << 16


# ---- names ---------------------------------------------------------------------------------------------


def _cxa_demangle():
    """The C++ runtime's demangler (``__cxa_demangle`` of libstdc++), or None where it cannot be
    loaded: then kernel names are shown as the program named them. The Rust scanner uses the same
    function (``scanner/src/names.rs``), so both engines print the same names."""
    try:
        import ctypes

        lib = ctypes.CDLL("libstdc++.so.6")
        f = lib.__cxa_demangle
        f.restype = ctypes.c_void_p
        f.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free = ctypes.CDLL(None).free
        free.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return None

    def demangle(sym):
        status = ctypes.c_int(0)
        p = f(sym.encode("utf-8", "surrogateescape"), None, None, ctypes.byref(status))
        if status.value != 0 or not p:
            return sym
        try:
            return ctypes.string_at(p).decode("utf-8", "replace")
        finally:
            free(p)

    return demangle


_DEMANGLE = _cxa_demangle()
DEMANGLE_MAX = 16 << 10


def demangle(sym):
    """A kernel symbol as people read it (``scanner/src/names.rs``: an Itanium ``_Z`` symbol
    demangled, anything else as it is)."""
    if _DEMANGLE is None or not sym.startswith("_Z") or len(sym) > DEMANGLE_MAX:
        return sym
    return _DEMANGLE(sym) or sym


class _Names:
    def __init__(self, strings):
        self.apis = {}
        self.kernels = {}
        self.symbols = {}
        self.texts = {}
        self.kernel_texts = {}
        for kind, key, aux, text in strings:
            # First record wins: the writer interns each key once, so a repeat is corruption.
            if kind == 1:
                if key <= 0xFFFF and key not in self.apis:
                    layer = LAYER_NAMES.get((aux >> 8) & 0xFF, "loader")
                    c = aux & 0xFF
                    cls = CLASS_NAMES[c] if c < len(CLASS_NAMES) else "other"
                    self.apis[key] = (text, layer, cls)
            elif kind == 2:
                if key not in self.kernels:
                    shown = demangle(text)
                    if shown != text:
                        self.symbols.setdefault(shown, text)
                    self.kernels[key] = shown
            elif kind == 3:
                if key not in self.texts:
                    self.texts[key] = text
                    shown = demangle(text)
                    if shown != text:
                        self.symbols.setdefault(shown, text)
                        self.kernel_texts[key] = shown

    def text(self, i):
        if i == 0:
            return "<unnamed>"
        t = self.texts.get(i)
        return t if t is not None else f"<string {i}>"

    def kernel_text(self, i):
        """A text naming a kernel (CUPTI's records), demangled as kernel names are."""
        k = self.kernel_texts.get(i)
        return k if k is not None else self.text(i)

    def domain(self, i):
        return None if i == 0 else self.text(i)


# ---- rounding as Rust does it --------------------------------------------------------------------------


def _fmax(a, b):
    """f64::max: a NaN operand loses."""
    if a != a:
        return b
    if b != b:
        return a
    return a if a >= b else b


def _as_u64(x):
    """`f64 as u64`: truncates toward zero, saturates, NaN → 0."""
    if x != x or x <= 0.0:
        return 0
    if x >= 18446744073709551616.0:
        return U64_MAX
    return int(x)


def _round(x):
    """f64::round (halves away from zero), for x ≥ 0."""
    if math.isinf(x) or x != x:
        return x
    f = math.floor(x)
    return float(f + 1) if x - f >= 0.5 else float(f)


def _ceil(x):
    if math.isinf(x) or x != x:
        return x
    return float(math.ceil(x))


def _i64(v):
    """u64 → i64 as the export stores times: values past i64::MAX become i64::MAX."""
    return v if v <= I64_MAX else I64_MAX


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _partition_point(seq, pred):
    """`slice::partition_point` exactly as Rust's standard library computes it, so that the result
    is the same even where `pred` does not partition `seq` (overlapping calls in a corrupt ring)."""
    size = len(seq)
    if size == 0:
        return 0
    base = 0
    while size > 1:
        half = size // 2
        mid = base + half
        if pred(seq[mid]):  # Less: go right
            base = mid
        size -= half
    return base + (1 if pred(seq[base]) else 0)


# ---- device clock: the events backend's anchors ---------------------------------------------------------


class _Conv:
    __slots__ = ("mid", "hw", "rate", "rate_err", "measured")

    def __init__(self, mid, hw, rate, rate_err, measured):
        self.mid, self.hw, self.rate, self.rate_err, self.measured = mid, hw, rate, rate_err, measured

    def convert(self, offset):
        o = float(offset)
        return self.mid + o * self.rate, self.hw + abs(o) * self.rate_err + EVENT_RESOLUTION_NS


def _best_pair(chain):
    """(rate, error) from the best-conditioned pair of a chain of (id, device, mid, hw, d)."""

    def rate_of(i, j):
        a, b = chain[i], chain[j]
        e = b[4] - a[4]
        if e <= 0.0:
            return None
        rate = (b[2] - a[2]) / e
        err = (a[3] + b[3]) / e
        return (rate, err) if math.isfinite(rate) and rate > 0.0 else None

    n = len(chain)
    if n < 2:
        return None

    def narrowest(r):
        best = None
        for x in r:
            if best is None or chain[x][3] < chain[best][3]:
                best = x
        return best

    cands = [c for c in (rate_of(j - 1, j) for j in range(1, n)) if c is not None]
    i, j = narrowest(range(0, n // 2)), narrowest(range(n // 2, n))
    if i is not None and j is not None:
        c = rate_of(i, j)
        if c is not None:
            cands.append(c)
    best = None
    for c in cands:
        if best is None or c[1] < best[1]:
            best = c
    return best


def _anchors(ns, entries):
    """Anchor id → _Conv, from a ring's device anchors (format.md, "Converting an anchored time")."""
    raw = []
    for e in entries:
        if e[KIND] == K_ANCHOR and e[STAMP] & 2 and e[TE] >= e[TB]:
            t0, t1 = float(ns(e[TB])), float(ns(e[TE]))
            elapsed = None if e[A2] == NO_ELAPSED else _signed(e[A2])
            raw.append((e[A0], e[A1], (t0 + t1) / 2.0, (t1 - t0) / 2.0, elapsed))
    raw.sort(key=lambda a: a[0])
    chains = []
    open_ = {}
    for aid, dev, mid, hw, elapsed in raw:
        c = open_.get(dev)
        if c is not None and elapsed is not None and elapsed > 0:
            d = chains[c][-1][4] + float(elapsed)
            chains[c].append((aid, dev, mid, hw, d))
        else:
            open_[dev] = len(chains)
            chains.append([(aid, dev, mid, hw, 0.0)])
    by_id = {}
    for chain in chains:
        best = _best_pair(chain)
        if best is not None:
            rate, rate_err, measured = best[0], best[1], True
        else:
            rate, rate_err, measured = 1.0, ASSUMED_DRIFT, False
        narrow = None
        for x in chain:
            if narrow is None or x[3] < narrow[3]:
                narrow = x
        for aid, _dev, mid, hw, d in chain:
            via = narrow[3] + abs(d - narrow[4]) * rate_err
            if measured and via < hw:
                mid = narrow[2] + (d - narrow[4]) * rate
                hw = via
            by_id[aid] = _Conv(mid, hw, rate, rate_err, measured)
    return by_id


# ---- the timeline model, per ring ------------------------------------------------------------------------


def _stream_label(kind, v, stream_names=None):
    if kind == "handle":
        label = "stream 0 (legacy default)" if v == 0 else f"stream {v:#x}"
        name = stream_names.get(v) if stream_names else None
        return label if name is None else f"{name} ({label})"
    if kind == "thread":
        return f"per-thread default stream of {v}"
    return f"device stream {v}"


def _device_spans(h, ns, entries, names):
    anchors = _anchors(ns, entries)
    # The issuing call: the live entry with sequence number a0 (sequence numbers are unique), if it
    # is a call of a class that issues device work (`facts::device::issuer`).
    apis_get = names.apis.get
    issuing = set(LAUNCH_CLASSES)

    def issues_work(e):
        a = apis_get(e[4])
        return a is not None and a[2] in issuing

    calls = {(e[STAMP] >> 2) - 1: e for e in entries if e[KIND] == K_CALL and issues_work(e)}
    calls_get = calls.get
    kernels_get = names.kernels.get
    text = names.text
    kinds_get = DEVICE_KINDS.get
    monotonic = h.clock == "monotonic"
    out = []
    append = out.append
    unplaced = 0
    for e in entries:
        if e[5] != K_DEVICE or not e[0] & 2:
            continue
        stamp, tb, te, _tid, api, _k, flags, _r, depth, a0, a1, a2 = e
        call = calls_get(a0) if a0 != NO_CALL else None
        if flags & F_ANCHORED:
            o0, o1 = _signed(tb), _signed(te)
            c = anchors.get(a2 >> 32)
            if c is None or o1 < o0:
                unplaced += 1
                continue
            s_ns, s_b = c.convert(o0)
            t_ns, t_b = c.convert(o1)
            b = _as_u64(_round(_fmax(s_ns, 0.0)))
            en = _as_u64(_round(_fmax(t_ns, 0.0)))
            bound = _as_u64(_ceil(_fmax(s_b, t_b)))
        elif flags & F_HOST_CLOCK and tb != 0 and te >= tb:
            if monotonic:
                b, en = tb, te
            else:
                b, en = ns(tb), ns(te)
            bound = 0
        else:
            unplaced += 1
            continue
        kind = kinds_get(api)
        if kind is None:
            unplaced += 1
            continue
        nbytes = 0
        if kind == "kernel":
            if flags & F_PROFILED:
                # The runtime's own profiling (Unified Runtime, Level Zero) names it by its handle.
                k = kernels_get(a1)
                name = k if k is not None else UNKNOWN_KERNEL_ROW
            elif flags & F_ANCHORED:
                k = kernels_get(call[A1]) if call is not None else None
                name = k if k is not None else UNKNOWN_KERNEL_ROW
            else:
                name = names.kernel_text(a1)
        elif kind == "memcpy":
            name = COPY_KINDS.get(depth) or f"kind {depth}"
            nbytes = a1
        elif kind == "memset":
            name, nbytes = "memset", a1
        else:
            name = GRAPH_ROW
        # A call recorded through CUPTI's callback carries no arguments: use the backend's stream.
        if call is not None and not call[FLAGS] & F_VIA_CUPTI:
            ca0 = call[A0]
            if ca0 == PER_THREAD_STREAM or (ca0 == 0 and call[FLAGS] & F_PER_THREAD):
                stream = ("thread", call[TID])
            else:
                stream = ("handle", ca0)
        else:
            stream = ("backend", a2 & 0xFFFFFFFF)
        append((b, en, bound, kind, name, stream, None if call is None else (call[0] >> 2) - 1, nbytes))
    out.sort(key=itemgetter(0, 1))
    return out, unplaced


def _process(h, strings, entries):
    """One ring's timeline: what `model::ProcessTimeline` holds."""
    names = _Names(strings)
    ns = _ticks_to_ns(h)
    apis = names.apis
    ranges = []
    marks = []
    threads = set()
    pushed = {}
    started = {}

    def rng(o, end, level):
        return (o[TID], names.text(o[A0]), names.domain(o[A1]), ns(o[TB]), None if end is None else ns(end), level)

    # Calls (most entries), in one comprehension: per API id its name, layer, class, whether the
    # class takes a stream and whether it is a launch.
    infos = {}
    for api in {e[API] for e in entries if e[KIND] == K_CALL}:
        a = apis.get(api)
        if a is None:
            a = (f"<api {api}>", "unknown", None)
        infos[api] = a + (a[2] in STREAMED, a[2] == "launch")
    kern = names.kernels.get
    monotonic = h.clock == "monotonic"
    calls = [
        (
            (e[0] >> 2) - 1, e[3], i[0], i[1], i[2],
            e[1] if monotonic else ns(e[1]),
            (e[2] if monotonic else ns(e[2])) if e[0] & 2 else None,
            e[8], e[7], e[9] if i[3] else None, kern(e[10]) if i[4] else None,
        )
        for e in entries
        if e[5] == K_CALL
        for i in (infos[e[4]],)
    ]  # fmt: skip
    threads.update(c[1] for c in calls)
    # Streams the program named through NVTX (name-class calls), the later name winning.
    stream_names = {}
    named = {api for api, i in infos.items() if i[2] == "name"}
    if named:
        for e in entries:
            if e[KIND] == K_CALL and e[API] in named and e[A1] != 0 and e[A2] & 0xFF == NAMED_STREAM:
                stream_names[e[A0]] = names.text(e[A1])
    for e in entries:
        k = e[KIND]
        if k == K_CALL or k > K_MARK:
            continue
        if k == K_PUSH:
            threads.add(e[TID])
            stack = pushed.setdefault((e[TID], e[A1]), [])
            stack.append((e, len(stack)))
        elif k == K_POP:
            stack = pushed.get((e[TID], e[A1]))
            if stack:
                o, level = stack.pop()
                ranges.append(rng(o, e[TB], level))
        elif k == K_START:
            started[e[A2]] = e
        elif k == K_END:
            o = started.pop(e[A2], None)
            if o is not None:
                ranges.append(rng(o, e[TB], 0))
        elif k == K_MARK:
            marks.append((e[TID], names.text(e[A0]), names.domain(e[A1]), ns(e[TB])))
    for stack in pushed.values():
        for o, level in stack:
            ranges.append(rng(o, None, level))
    for o in started.values():
        ranges.append(rng(o, None, 0))
    ranges.sort(key=lambda r: (r[3], r[0], r[5]))
    device, unplaced = _device_spans(h, ns, entries, names)
    backend = {0: "none", 1: "cupti", 2: "events", 3: "unified_runtime", 4: "level_zero"}.get(
        h.backend, f"unknown({h.backend})"
    )
    return {
        "threads": sorted(threads),
        "calls": calls,
        "ranges": ranges,
        "marks": marks,
        "device": device,
        "unplaced": unplaced,
        "backend": backend,
        "symbols": names.symbols,
        "stream_names": stream_names,
    }


# ---- steps (the default selection of `report --steps`) -----------------------------------------------------


def _union(v):
    v = sorted(x for x in v if x[1] > x[0])
    out = []
    for b, e in v:
        if out and b <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([b, e])
    return out


def _measure(u):
    return sum(e - b for b, e in u)


def _intersection(a, b):
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _clipped_in(v, lo, hi):
    i = _partition_point(v, lambda x: x[1] <= lo)
    n = len(v)
    parts = []
    while i < n:
        b, e = v[i]
        if not b < hi:
            break
        if e > lo:
            parts.append((b if b > lo else lo, e if e < hi else hi))
        i += 1
    return _measure(_union(parts)), len(parts)


def _range_key(name, domain):
    return (name, (0, "") if domain is None else (1, domain))


def _steps(p):
    """Step rows of one process: (index, tid, name, domain, begin, end, wall, launch_ns,
    launch_calls, sync_ns, sync_calls, other_ns, device figures or None)."""
    ranges = p["ranges"]

    def closed(r):
        return r[4] is not None and r[4] >= r[3]

    counts = {}
    for r in ranges:
        if r[5] == 0 and closed(r):
            key = (r[1], r[2])
            c = counts.get(key)
            if c is None:
                counts[key] = [1, r[3]]
            else:
                c[0] += 1
                c[1] = min(c[1], r[3])
    if not counts:
        return []
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[1][1], _range_key(*kv[0])))
    (name, domain), (count, _) = ranked[0]
    if count < 2:
        return []
    chosen = [r for r in ranges if r[1] == name and r[2] == domain and r[5] == 0 and closed(r)]
    chosen.sort(key=lambda r: (r[3], r[0]))

    launch_classes, sync_classes = set(LAUNCH_CLASSES), set(SYNC_CLASSES)
    threads = {}
    for c in p["calls"]:
        if c[7] != 0:
            continue
        cls = c[4]
        if cls in launch_classes:
            which = 0
        elif cls in sync_classes:
            which = 1
        else:
            continue
        t = threads.get(c[1])
        if t is None:
            t = threads[c[1]] = ([], [])
        b, e = c[5], c[6]
        if e is None:
            e = U64_MAX
        t[which].append((b, e if e > b else b))
    for t in threads.values():
        t[0].sort()
        t[1].sort()

    spans = p["device"]
    timed = bool(spans)
    max_end = list(accumulate((s[1] for s in spans), max, initial=0))[1:]
    none = ([], [])
    out = []
    for index, r in enumerate(chosen):
        lo, hi = r[3], r[4]
        t = threads.get(r[0], none)
        launch_ns, launch_calls = _clipped_in(t[0], lo, hi)
        sync_ns, sync_calls = _clipped_in(t[1], lo, hi)
        wall = hi - lo
        other = max(0, wall - ((launch_ns + sync_ns) & MASK64))
        dev = None
        if timed:
            frm = _partition_point(max_end, lambda e: e < lo)
            to = _partition_point(spans, lambda s: s[0] < hi)
            alls, copy, kern = [], [], []
            n = bound = 0
            for s in spans[frm : max(to, frm)]:
                sb, se = s[0], s[1]
                if not (se > lo or (se == lo and sb == lo and lo < hi)):
                    continue
                n += 1
                if s[2] > bound:
                    bound = s[2]
                c = (sb if sb > lo else lo, se if se < hi else hi)
                alls.append(c)
                if s[3] == "memcpy":
                    copy.append(c)
                elif s[3] == "kernel":
                    kern.append(c)
            alls, copy, kern = _union(alls), _union(copy), _union(kern)
            busy = _measure(alls)
            cn, kn = _measure(copy), _measure(kern)
            dev = (n, busy, max(0, wall - busy), cn, kn, _intersection(copy, kern), bound)
        out.append(
            (index, r[0], name, domain, lo, hi, wall, launch_ns, launch_calls, sync_ns, sync_calls, other, dev)
        )
    return out


# ---- the capture -----------------------------------------------------------------------------------------


def open_capture(path):
    """Opens a capture directory or ring file: validates every ring, decodes and models it."""
    return PyCapture(path)


class no_gc:
    """Pauses the cyclic garbage collector: the millions of row tuples built here hold no cycles,
    and collections triggered by their allocation would rescan all of them again and again."""

    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was:
            gc.enable()
        return False


class PyCapture:
    """The pure-Python engine's capture; ``causeway.Capture`` wraps it (or the compiled one)."""

    def __init__(self, path):
        with no_gc():
            self._open(path)

    def _open(self, path):
        p = os.fspath(path)
        if isinstance(p, bytes):
            p = os.fsdecode(p)
        self.path = p
        if "\x00" in p:
            # What the scanner (Rust's std::fs) says; os.stat would raise ValueError instead.
            raise _error(p, "file name contained an unexpected NUL byte")
        try:
            st = os.stat(p)
        except OSError as e:
            raise _error(p, _io_problem(e)) from None
        self._skipped = []
        if _stat.S_ISDIR(st.st_mode):
            paths, maps, parsed = self._readable(_list_rings(p))
        else:
            paths, maps = [p], [_map(p)]
            try:
                parsed = [(p, *_parse(p, maps[0]))]
            except BaseException:
                maps[0].close()
                raise
        try:
            self._procs = []
            for (q, h, strings, torn), mm in zip(parsed, maps):
                entries = _decode(h, mm)
                self._procs.append((h, strings, torn, _process(h, strings, entries)))
        finally:
            for mm in maps:
                mm.close()
        self._tables = self._build_tables()

    def _readable(self, paths):
        """The rings of a capture directory that can be read, as the scanner's ``Capture::open`` and
        ``rings`` take them: one that cannot be opened or parsed is left out (``skipped``), unless
        none can, when the first that could not be opened, else the first that could not be
        parsed, is the capture's error."""
        opened, unopened = [], []
        good, maps, parsed, unparsed = [], [], [], []
        try:
            for q in paths:
                try:
                    opened.append((q, _map(q)))
                except CaptureError as e:
                    unopened.append(e)
            for q, mm in opened:
                try:
                    parsed.append((q, *_parse(q, mm)))
                    good.append(q)
                    maps.append(mm)
                except CaptureError as e:
                    # A ring cut while it is read fails the capture, as in the scanner (its guard).
                    if mm.changed:
                        raise
                    unparsed.append((e, mm))
        except BaseException:
            for _, mm in opened:
                mm.close()
            raise
        for _, mm in unparsed:
            mm.close()
        unparsed = [e for e, _ in unparsed]
        if not good:
            raise (unopened + unparsed)[0]
        self._skipped = [(e.path, e.problem) for e in unopened + unparsed]
        return good, maps, parsed

    def skipped(self):
        """(path, problem) of each ring of a capture directory left out because it cannot be read."""
        return list(self._skipped)

    # -- what the compiled engine's NativeCapture offers, in the same shapes --

    def processes(self):
        out = []
        for h, _strings, torn, p in self._procs:
            first, _ = _window(h)
            out.append(
                {
                    "path": h.path,
                    "ring": h.ring,
                    "pid": h.pid,
                    "ppid": h.ppid,
                    "exe": h.exe,
                    "host": h.host,
                    "level": h.level,
                    "policy": h.policy,
                    "clock": h.clock,
                    "backend": p["backend"],
                    "flags": h.flags,
                    "capacity": h.capacity,
                    "head": h.head,
                    "dropped": h.dropped,
                    "overwritten": first if h.policy == "overwrite" else 0,
                    "strings_dropped": h.strings_dropped,
                    "strings_torn": torn,
                    "notice": h.notice,
                    "sample_every": h.sample_every,
                    "counters": dict(h.counters),
                    "unplaced_device": p["unplaced"],
                }
            )
        return out

    def threads(self):
        return [(h.pid, t) for h, _s, _t, p in self._procs for t in p["threads"]]

    def strings(self):
        return [(h.pid, STR_KINDS[k], key, aux, text) for h, s, _t, _p in self._procs for k, key, aux, text in s]

    def table_names(self):
        return list(self._tables)

    def schema(self, name):
        from ._tables import SCHEMAS

        if name not in self._tables:
            raise KeyError(f"no table {name!r}")
        return list(SCHEMAS[name])

    def num_rows(self, name):
        cols = self._tables[name]
        return len(cols[0]) if cols else 0

    def columns(self, name):
        if name not in self._tables:
            raise KeyError(f"no table {name!r}")
        return [list(c) for c in self._tables[name]]

    def _build_tables(self):
        from ._tables import SCHEMAS

        tables = {name: [[] for _ in cols] for name, cols in SCHEMAS.items()}

        def add(name, columns):
            for have, more in zip(tables[name], columns):
                have.extend(more)

        def cols(rows, width):
            return [list(map(itemgetter(i), rows)) for i in range(width)]

        def clamp(col):
            return [v if v is None or v <= I64_MAX else I64_MAX for v in col]

        for h, _s, _t, p in self._procs:
            labels = {}
            stream_names = p["stream_names"]

            def label(s, labels=labels, stream_names=stream_names):
                v = labels.get(s)
                if v is None:
                    v = labels[s] = _stream_label(*s, stream_names)
                return v

            pid, ring = h.pid, h.ring
            sym = p["symbols"]
            add("processes", [[ring], [pid], [h.ppid], [h.exe], [h.host], [p["backend"]], [p["unplaced"]]])
            c = cols(p["calls"], 11)
            n = len(p["calls"])
            add(
                "calls",
                [[ring] * n, [pid] * n]
                + c[:5]
                + [clamp(c[5]), clamp(c[6])]
                + c[7:]
                + [[None if k is None else sym.get(k, k) for k in c[10]]],
            )
            d = cols(p["device"], 8)
            add(
                "device_intervals",
                [
                    [ring] * len(p["device"]),
                    [pid] * len(p["device"]),
                    d[3],
                    d[4],
                    [sym.get(x, x) for x in d[4]],
                    clamp(d[0]),
                    clamp(d[1]),
                    clamp(d[2]),
                    [label(x) for x in d[5]],
                    [x[1] if x[0] == "handle" else None for x in d[5]],
                    d[6],
                    d[7],
                ],
            )
            r = cols(p["ranges"], 6)
            add("ranges", [[ring] * len(p["ranges"]), [pid] * len(p["ranges"])] + r[:3] + [clamp(r[3]), clamp(r[4]), r[5]])
            m = cols(p["marks"], 4)
            add("marks", [[ring] * len(p["marks"]), [pid] * len(p["marks"])] + m[:3] + [clamp(m[3])])
            steps = []
            for st in _steps(p):
                dev = st[12]
                d = (None,) * 7 if dev is None else (dev[0],) + tuple(_i64(v) for v in dev[1:])
                steps.append(
                    (ring, pid, st[0], st[1], st[2], st[3], _i64(st[4]), _i64(st[5]), _i64(st[6]), _i64(st[7]), st[8],
                     _i64(st[9]), st[10], _i64(st[11])) + d
                )  # fmt: skip
            add("steps", cols(steps, len(SCHEMAS["steps"])))
        return tables
