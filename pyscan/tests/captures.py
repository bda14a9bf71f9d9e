"""The captures pyscan's tests read with both engines.

Three sources:

* ``generated(dir)``: a ring written by the real writer (``scanner/examples/synth_capture``, a
  level-3 training loop) and byte-level variants of it made here from ``docs/format.md``: the TSC
  clock with anchors (including a torn anchor 1, anchors too close, a zero tick rate), the overwrite
  policy, torn and open slots, a torn string record, dropped entries, events-backend device
  intervals converted through anchor chains, invalid UTF-8 in names, a multi-process directory,
  random bodies behind valid headers, and every kind of bad file the reader refuses.
* ``CAUSEWAY_KEEP_TEST_CAPTURES`` (default ``ci/build/test-captures``): every ring the scanner's Rust
  tests wrote, as the tests left it (``scanner/tests/common`` copies them there when the variable is
  set; ``ci/test.sh`` sets it for ``cargo test``).
* ``target/itests``: the captures of the end-to-end tests (the C test doubles under the shim).

``all_captures`` lists capture directories and, separately, each ring file in them.
"""

import os
import random
import shutil
import struct
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Header offsets (docs/format.md, "Header").
VERSION, HEADER_SIZE, ENTRY_SIZE, POLICY, CAPACITY = 8, 12, 16, 20, 24
STRINGS_OFFSET, STRINGS_SIZE, ENTRIES_OFFSET = 32, 40, 48
PID, LEVEL, CLOCK, BACKEND = 56, 64, 68, 76
HEAD, DROPPED, STRINGS_USED = 80, 88, 96
ANCHOR0, ANCHOR1_SEQ, ANCHOR1, TICKS_PER_SEC = 112, 136, 144, 168
EXE_LEN = 176
ENTRY = struct.Struct("<QQQIHBBiHHQQQ")


def synth_binary():
    """The synth_capture example, built if needed."""
    exe = os.environ.get("CAUSEWAY_SYNTH")
    if exe:
        return exe
    for profile in ("debug", "release"):
        p = os.path.join(ROOT, "target", profile, "examples", "synth_capture")
        if os.path.exists(p):
            return p
    subprocess.run(
        ["cargo", "build", "-q", "-p", "causeway-scanner", "--example", "synth_capture"],
        cwd=ROOT,
        check=True,
    )
    return os.path.join(ROOT, "target", "debug", "examples", "synth_capture")


def synth(dir, entries, threads=4):
    """Writes a synthetic capture into ``dir``; returns the ring's path."""
    os.makedirs(dir, exist_ok=True)
    # Monotonic ticks: the base the TSC variants below are made from by rewriting its header.
    subprocess.run(
        [synth_binary(), dir, str(entries), str(threads), "monotonic"], check=True, capture_output=True
    )
    return os.path.join(dir, "bench-4242-0-0.cwring")


class Ring:
    """A ring file's bytes, edited in place by header offset or slot."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.b = bytearray(f.read())

    def u32(self, off, v=None):
        if v is None:
            return struct.unpack_from("<I", self.b, off)[0]
        struct.pack_into("<I", self.b, off, v)

    def u64(self, off, v=None):
        if v is None:
            return struct.unpack_from("<Q", self.b, off)[0]
        struct.pack_into("<Q", self.b, off, v & (1 << 64) - 1)

    @property
    def capacity(self):
        return self.u64(CAPACITY)

    def slot(self, seq):
        return self.u64(ENTRIES_OFFSET) + (seq & (self.capacity - 1)) * 64

    def entry(self, seq):
        return list(ENTRY.unpack_from(self.b, self.slot(seq)))

    def put(self, seq, fields):
        ENTRY.pack_into(self.b, self.slot(seq), *fields)

    def append(self, t_begin, t_end, kind, api=0, flags=0, tid=0, depth=0, a=(0, 0, 0)):
        """Commits a complete entry at the next sequence number, as the writer would."""
        seq = self.u64(HEAD)
        self.put(seq, [((seq + 1) << 2) | 3, t_begin, t_end, tid, api, kind, flags, 0, depth, 0, *a])
        self.u64(HEAD, seq + 1)
        return seq

    def strings(self):
        """(offset in the file, size) of each committed string record."""
        out, pos = [], 0
        base, used = self.u64(STRINGS_OFFSET), self.u64(STRINGS_USED)
        while pos < used:
            size = self.u32(base + pos)
            if size == 0:
                break
            out.append((base + pos, size))
            pos += size
        return out

    def write(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(self.b)


def _tsc(r, ticks0=50_000, mono0=5_000_000_000, ticks1=50_000 + 7_300_000, mono1=5_000_000_000 + 2_900_001):
    r.u32(CLOCK, 2)
    r.u64(TICKS_PER_SEC, 2_517_000_123)
    r.u64(ANCHOR0, ticks0)
    r.u64(ANCHOR0 + 8, mono0)
    r.u64(ANCHOR0 + 16, 1_700_000_000_000_000_000)
    r.u64(ANCHOR1_SEQ, 4)
    r.u64(ANCHOR1, ticks1)
    r.u64(ANCHOR1 + 8, mono1)
    r.u64(ANCHOR1 + 16, 1_700_000_000_002_900_001)


def _anchored(r, rnd):
    """Turns the ring's device intervals into events-backend intervals (flag ANCHORED, signed device
    offsets from an anchor) and appends anchor entries in chains over two devices."""
    r.u32(BACKEND, 2)
    head = r.u64(HEAD)
    devices = [s for s in range(head) if r.entry(s)[5] == 12]
    # Anchors: ids 1..12, devices 0 and 1; gaps known except where a chain restarts; one wide anchor.
    t = 200_000
    for aid in range(1, 13):
        dev = aid % 2
        width = 3_000_000 if aid == 7 else rnd.randrange(50, 5_000)
        gap = (1 << 64) - 1 if aid in (1, 2, 9) else rnd.randrange(190_000_000, 210_000_000)
        r.append(t, t + width, 13, a=(aid, dev, gap))
        t += (200_000_000 if gap == (1 << 64) - 1 else gap) + rnd.randrange(-20_000, 20_000)
    # One whose end precedes its begin (not an anchor).
    r.append(t + 10, t, 13, a=(13, 0, 5))
    # Device 2: host times run backwards along a known chain, so no pair measures a rate (assumed
    # 1 ± 100 ppm, and no anchor is re-centred).
    for aid, back, width in ((14, 0, 900), (15, 90_000, 20), (16, 180_000, 100_000)):
        r.append(t + 400_000 - back, t + 400_000 - back + width, 13, a=(aid, 2, (1 << 64) - 1 if aid == 14 else 200_000_000))
    for i, s in enumerate(devices):
        e = r.entry(s)
        o0 = rnd.randrange(-3_000_000, 400_000_000)
        o1 = o0 + rnd.randrange(-50, 2_000_000) if i % 17 == 0 else o0 + rnd.randrange(0, 2_000_000)
        aid = rnd.choice([1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 99])
        e[1], e[2] = o0 & (1 << 64) - 1, o1 & (1 << 64) - 1
        e[6] = 8  # ANCHORED
        e[11] = 0 if e[4] == 1 else e[11]
        if i % 23 == 0:
            e[4] = 4  # a whole graph launch
        if i % 29 == 0:
            e[4] = 9  # a kind this reader does not know
        e[12] = (aid << 32) | 7
        r.put(s, e)


def generated(out):
    """Writes the generated captures under ``out``; returns (capture path, expected error or None)."""
    rnd = random.Random(20261129)
    base = synth(os.path.join(out, "base"), 3000)
    cases = [(os.path.dirname(base), None)]

    def variant(name, edit, expect=None, fname="bench-4242-0-0.cwring"):
        r = Ring(base)
        edit(r)
        path = os.path.join(out, name, fname)
        r.write(path)
        cases.append((os.path.dirname(path), expect))
        return path

    variant("tsc", _tsc)
    # Anchors closer than 100 µs: the measured start-up rate is used.
    variant("tsc-close", lambda r: _tsc(r, ticks1=50_100, mono1=5_000_000_040))
    # Anchor 1 being rewritten (odd sequence word): anchor 0 and the start-up rate.
    variant("tsc-torn-anchor1", lambda r: (_tsc(r), r.u64(ANCHOR1_SEQ, 5)))
    # No usable rate at all: every time is anchor 0's.
    variant("tsc-no-rate", lambda r: (_tsc(r, ticks1=50_100, mono1=5_000_000_040), r.u64(TICKS_PER_SEC, 0)))

    def overwrite(r):
        r.u32(POLICY, 2)
        r.u64(HEAD, r.u64(HEAD) + r.capacity // 3)

    variant("overwrite", overwrite)

    def torn(r):
        head = r.u64(HEAD)
        for s in rnd.sample(range(head), 60):
            e = r.entry(s)
            e[0] = [((s + 1) << 2), ((s + 9) << 2) | 3, 0, ((s + 1) << 2) | 1, 2][s % 5]
            r.put(s, e)

    variant("torn", torn)

    def strings_torn(r):
        recs = r.strings()
        off, _ = recs[len(recs) // 2]
        r.u32(off, 0)

    variant("strings-torn", strings_torn)

    def dropped(r):
        r.u64(DROPPED, 12345)
        r.u64(HEAD, r.capacity + 12345)

    variant("dropped", dropped)
    variant("anchored", lambda r: _anchored(r, rnd))
    variant("anchored-tsc", lambda r: (_tsc(r), _anchored(r, rnd)))

    def bad_utf8(r):
        payloads = [b"k\xff\xfe\xe2\x82", b"\xf0\x9f\x98", b"\xc0\xafx\xed\xa0\x80y", b"\xe2\x82\xac\x80\xbf"]
        for (off, size), p in zip(r.strings()[4:], payloads * 8):
            n = min(len(p), size - 24)
            r.b[off + 24 : off + 24 + n] = p[:n]
            r.u32(off + 16, n)

    variant("bad-utf8", bad_utf8)

    # Several processes in one directory.
    multi = os.path.join(out, "multi")
    for i, edit in enumerate([lambda r: None, _tsc, lambda r: _anchored(r, rnd)]):
        r = Ring(base)
        edit(r)
        r.u32(PID, 5000 + i)
        r.write(os.path.join(multi, f"host-{5000 + i}-0-0.cwring"))
    cases.append((multi, None))

    # Valid headers over random bodies: any outcome, but the same from both engines.
    good = Ring(base).b
    strings_end = 4096 + Ring(base).u64(STRINGS_SIZE)
    for seed in range(8):
        b = bytearray(good)
        start = strings_end if seed % 2 else 4096
        b[start:] = random.Random(seed).randbytes(len(b) - start)
        r = Ring.__new__(Ring)
        r.b = b
        if seed % 3 == 0:
            r.u64(HEAD, (1 << 64) - 1 - seed)
        if seed % 4 == 1:
            r.u32(POLICY, 2)
        path = os.path.join(out, f"random-{seed}", "r.cwring")
        r.write(path)
        cases.append((os.path.dirname(path), None))

    # Files the reader refuses, with the scanner's words for each.
    def bad(name, data, problem):
        path = os.path.join(out, "bad", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        cases.append((path, f"{path}: {problem}"))

    g = Ring(base)
    size = len(g.b)

    def edited(off, v, width=4):
        r = Ring(base)
        (r.u32 if width == 4 else r.u64)(off, v)
        return bytes(r.b)

    bad("empty.cwring", b"", "empty file (0 bytes): the ring was never created completely")
    bad("short.cwring", bytes(g.b[:100]), "truncated: 100 bytes, a ring header alone is 4096")
    bad("short-junk.cwring", b"not a ring", "not a causeway ring (no CAUSEWAY magic)")
    bad("cut.cwring", bytes(g.b[:-1]), f"truncated: {size - 1} bytes, the header describes {size}")
    bad("zero-magic.cwring", bytes(8) + bytes(g.b[8:]), "header never completed (the writer died while creating the ring)")
    bad("magic.cwring", b"CAUSEWAX" + bytes(g.b[8:]), "not a causeway ring (no CAUSEWAY magic)")
    bad("v1.cwring", edited(VERSION, 1), "unsupported format version 1 (this reader reads version 2)")
    bad("hsize.cwring", edited(HEADER_SIZE, 4095), "corrupt header: header size 4095 / entry size 64 (expected 4096 / 64)")
    bad("esize.cwring", edited(ENTRY_SIZE, 32), "corrupt header: header size 4096 / entry size 32 (expected 4096 / 64)")
    bad("policy.cwring", edited(POLICY, 3), "corrupt header: unknown policy 3")
    bad("clock.cwring", edited(CLOCK, 0), "corrupt header: unknown clock 0")
    bad("cap.cwring", edited(CAPACITY, 3000, 8), "corrupt header: capacity 3000 is not a power of two in 1..=2^36")
    bad("cap0.cwring", edited(CAPACITY, 0, 8), "corrupt header: capacity 0 is not a power of two in 1..=2^36")
    ss = g.u64(STRINGS_SIZE)
    bad("soff.cwring", edited(STRINGS_OFFSET, 4104, 8), f"corrupt header: string area at 4104+{ss}, entries at {4096 + ss}")
    bad("ssize.cwring", edited(STRINGS_SIZE, ss + 4, 8), f"corrupt header: string area at 4096+{ss + 4}, entries at {4096 + ss}")
    bad("big-cap.cwring", edited(CAPACITY, 1 << 30, 8), f"truncated: {size} bytes, the header describes {4096 + ss + (1 << 36)}")
    bad("level.cwring", edited(LEVEL, 5), "corrupt header: capture level 5 is not 1..=4")
    bad("exe.cwring", edited(EXE_LEN, 2000), "corrupt header: executable or host name longer than its field")
    bad("used.cwring", edited(STRINGS_USED, ss + 8, 8), f"corrupt header: {ss + 8} string bytes used of {ss}")
    off0 = g.strings()[0][0]
    bad("rec-size.cwring", edited(off0, 12), "corrupt string record at offset 0 of the string area (size 12, length 16)")
    bad("rec-kind.cwring", edited(off0 + 4, 9), "corrupt string record at offset 0: unknown kind 9")

    # Directories: a ring that cannot be read is left out (a process killed while it made its ring
    # leaves one), the others read; a directory of nothing readable is the first bad file's error,
    # one that cannot be opened before one that cannot be parsed.
    d = os.path.join(out, "dir-bad")
    os.makedirs(d)
    shutil.copy(base, os.path.join(d, "a.cwring"))
    with open(os.path.join(d, "b.cwring"), "wb") as f:
        f.write(g.b[:5000])
    with open(os.path.join(d, "c.cwring"), "wb") as f:
        f.write(bytes(8) + bytes(g.b[8:]))
    open(os.path.join(d, "d.cwring"), "wb").close()
    cases.append((d, None))
    d = os.path.join(out, "dir-sub")
    os.makedirs(os.path.join(d, "c.cwring"))
    shutil.copy(base, os.path.join(d, "a.cwring"))
    cases.append((d, None))
    d = os.path.join(out, "dir-all-bad")
    os.makedirs(d)
    with open(os.path.join(d, "a.cwring"), "wb") as f:
        f.write(g.b[:5000])
    with open(os.path.join(d, "b.cwring"), "wb") as f:
        f.write(bytes(8) + bytes(g.b[8:]))
    cases.append((d, f"{d}/a.cwring: truncated: 5000 bytes, the header describes {size}"))
    d = os.path.join(out, "dir-all-bad-open")
    os.makedirs(d)
    with open(os.path.join(d, "a.cwring"), "wb") as f:
        f.write(g.b[:5000])
    os.mkfifo(os.path.join(d, "z.cwring"))
    cases.append(
        (d, f"{d}/z.cwring: not a regular file (a capture is a directory of *.cwring files or one such file)")
    )
    d = os.path.join(out, "dir-none")
    os.makedirs(d)
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not a ring")
    cases.append((d, f"{d}: no causeway rings (*.cwring) in {d}"))
    # A FIFO named like a ring: refused at once, not waited on (issue 20).
    d = os.path.join(out, "dir-fifo")
    os.makedirs(d)
    os.mkfifo(os.path.join(d, "x.cwring"))
    cases.append(
        (d, f"{d}/x.cwring: not a regular file (a capture is a directory of *.cwring files or one such file)")
    )
    # A sparse ring whose header claims 2^30 reserved slots (64 GiB of holes): read in bounded memory,
    # nothing committed (issue 20).
    r = Ring(base)
    cap = 1 << 30
    r.u64(CAPACITY, cap)
    r.u64(HEAD, cap)
    entries_at = 4096 + r.u64(STRINGS_SIZE)
    path = os.path.join(out, "sparse", "s.cwring")
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as f:
        f.write(bytes(r.b[:entries_at]))
        f.truncate(entries_at + cap * 64)
    cases.append((os.path.dirname(path), None))
    missing = os.path.join(out, "no-such-capture")
    cases.append((missing, f"{missing}: no such file or directory"))
    return cases


def kept_dirs():
    """Capture directories the Rust tests left (scanner tests' copies and the itests' scratch dirs)."""
    out = []
    keep = os.environ.get("CAUSEWAY_KEEP_TEST_CAPTURES") or os.path.join(ROOT, "ci", "build", "test-captures")
    for top in (keep, os.path.join(ROOT, "target", "itests")):
        if os.path.isdir(top):
            out.extend(os.path.join(top, d) for d in sorted(os.listdir(top)) if os.path.isdir(os.path.join(top, d)))
    return out


def rings_in(d):
    """Every ring file (or directory named like one) under ``d``."""
    out = []
    for dirpath, dirnames, filenames in os.walk(d):
        for n in sorted(dirnames + filenames):
            if n.endswith(".cwring"):
                out.append(os.path.join(dirpath, n))
    return out
