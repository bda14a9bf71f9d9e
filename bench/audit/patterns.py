"""Rewrites a synthetic ring (synth_capture DIR N 4) into one adversarial-but-valid pattern.

    python3 bench/audit/patterns.py MODE SRC.cwring DST_DIR/NAME.cwring

Modes (each op of synth_capture = outer runtime launch i, its driver launch i+1, its interval i+2):
  pending     odd launches each on a stream of their own (never synced), even launches become
              cudaStreamSynchronize(0x5000)                              -> waits.rs pending.retain
  frontier    groups of 4 launches: launch on X_k; cudaEventRecord(E_k, X_k);
              cudaStreamWaitEvent(S, E_k); cudaEventRecord(F_k, S); synth's syncs moved to 0x6000
  frontier_s  same, synth's syncs (on S = 0x5000, every 64 ops) kept
  frontier_d  as frontier, each F_k destroyed after its record (cudaEventDestroy)
  streams_launch  every other outer launch on the legacy stream, the others each on a stream of
              its own                                        -> graph.rs legacy-stream edges
  streams_sync    the same, the others each a cudaStreamSynchronize on a stream never launched on
  ctxevent    groups of 4: launch own stream; cuCtxRecordEvent(E); launch own stream;
              cudaEventSynchronize(E)
  handoff     every 16 ops: op 16k (tid 100) -> token handoff (token k, to 101);
              op 16k+1 (tid 101) -> token accept; op 16k+5 (tid 101) -> token end
  handoffq    one token: first half of the ops that are 0 mod 4 hand it off to 999; the ops that are
              1 mod 4 in the second half accept it (no handoff addressed to them)
  longspan    the first device interval ends at the capture's last tick (a persistent kernel)
  openfirst   the first launch of thread 101 never returns (open call)
  openrange   the first pushed range is never popped (its pop becomes a mark)
  unordered   Level Zero style: the first launch becomes zeCommandListCreateImmediate of 0x5000
              without IN_ORDER (flags bit 31 UNORDERED); every other launch (all on 0x5000) becomes
              zeCommandListAppendSignalEvent(0x5000, E_k) (distinct events); synth's syncs moved to
              0x6000 (the program waits on events, never on the list)
  unordered_r same with one event handle reused by every signal
  nest        synth's P push/pop pairs become P pushes then P pops (one chain of P nested "step"
              ranges, all closed; read with --range step)
  names       every launch its own kernel (a C++ template symbol, kind-2 record) and every device
              interval its own text name: as many distinct kernel names as launches
  rnames      every pushed range its own message (as many distinct NVTX names as ranges)
"""
import sys
sys.path.insert(0, __import__("os").path.dirname(__file__))
from ringlib import *

mode, src, dst = sys.argv[1:4]
r = Ring(src)
L = r.outer_launches()


def to_call(i, api, a0=0, a1=0, a2=0):
    """Makes outer launch i (and its driver child i+1) calls of `api` with these args."""
    r.set(i, api=api, a0=a0, a1=a1, a2=a2)
    r.set(i + 1, api=api, a0=a0, a1=a1, a2=a2)


def syncs():
    return [i for i in range(r.n) if r.fast(i)[:3] == (SYNC, CALL, 0)]


if mode == "pending":
    for n, i in enumerate(L):
        if n % 2 == 0:
            to_call(i, LAUNCH_RT, a0=0x100000 + n, a1=r.get(i)["a1"], a2=1)
            r.set(i + 1, api=LAUNCH_DRV)
        else:
            to_call(i, SYNC, a0=0x5000)
elif mode in ("streams_launch", "streams_sync"):
    # Every other outer launch to the legacy stream; the ones between each on a stream of its own,
    # as a launch (streams_launch) or a cudaStreamSynchronize never launched on (streams_sync). Only
    # the outer call changes (the driver child keeps its stream).
    for n, i in enumerate(L, 1):
        if n % 2 == 0:
            r.set(i, a0=0)
        elif mode == "streams_sync":
            r.set(i, api=SYNC, a0=0x100000 + n)
        else:
            r.set(i, a0=0x100000 + n)
elif mode in ("frontier", "frontier_s", "frontier_d"):
    r.add_api(5, "cudaEventRecord", "event_record")
    r.add_api(6, "cudaStreamWaitEvent", "stream_wait")
    r.add_api(11, "cudaEventDestroy", "event")
    S = 0x5000
    # frontier_d: a fifth call destroys F_k once recorded (a program making an event per step).
    group = 5 if mode == "frontier_d" else 4
    for n, i in enumerate(L):
        k, m = divmod(n, group)
        X, E, F = 0x100000 + k, 0x200000 + k, 0x300000 + k
        if m == 0:
            to_call(i, LAUNCH_RT, a0=X, a1=r.get(i)["a1"], a2=1)
            r.set(i + 1, api=LAUNCH_DRV)
        elif m == 1:
            to_call(i, 5, a0=X, a1=E)
        elif m == 2:
            to_call(i, 6, a0=S, a1=E)
        elif m == 3:
            to_call(i, 5, a0=S, a1=F)
        else:
            to_call(i, 11, a1=F)
    if mode != "frontier_s":
        for i in syncs():
            r.set(i, a0=0x6000)
elif mode == "ctxevent":
    r.add_api(7, "cuCtxRecordEvent", "ctx_event_record", layer=2)
    r.add_api(8, "cudaEventSynchronize", "event_sync")
    E = 0xE000
    for n, i in enumerate(L):
        m = n % 4
        if m in (0, 2):
            to_call(i, LAUNCH_RT, a0=0x100000 + n, a1=r.get(i)["a1"], a2=1)
            r.set(i + 1, api=LAUNCH_DRV)
        elif m == 1:
            to_call(i, 7, a0=0xC0C0, a1=E)
        else:
            to_call(i, 8, a1=E)
elif mode == "handoff":
    for n, i in enumerate(L):
        k, m = divmod(n, 16)
        if m not in (0, 1, 5):
            continue
        kind = {0: 17, 1: 18, 5: 16}[m]
        e = r.get(i)
        r.set(i, kind=kind, api=0, a0=0, a1=k + 1, a2=101 if m == 0 else 0, result=0,
              t_end=e["t_begin"])
elif mode == "handoffq":
    half = len(L) // 2
    for n, i in enumerate(L):
        e = r.get(i)
        if n < half and n % 4 == 0:
            r.set(i, kind=17, api=0, a0=0, a1=1, a2=999, result=0, t_end=e["t_begin"])
        elif n >= half and n % 4 == 1:
            r.set(i, kind=18, api=0, a0=0, a1=1, a2=0, result=0, t_end=e["t_begin"])
elif mode == "longspan":
    last = max(r.get(i)["t_end"] for i in range(r.n - 50, r.n))
    first = next(i for i in range(r.n) if r.fast(i)[1] == DEV)
    r.set(first, t_end=last)
elif mode == "openfirst":
    i = next(i for i in L if r.fast(i)[3] == 101)
    e = r.get(i)
    r.set(i, stamp=(e["stamp"] & ~3) | 1, t_end=0, result=0)
elif mode == "openrange":
    p = next(i for i in range(r.n) if r.fast(i)[1] == POP)
    r.set(p, kind=6)
elif mode in ("unordered", "unordered_r"):
    r.add_api(9, "zeCommandListCreateImmediate", "stream", layer=5)
    r.add_api(10, "zeCommandListAppendSignalEvent", "event_record", layer=5)
    to_call(L[0], 9, a0=0, a1=0x5000, a2=1 << 31)
    for n, i in enumerate(L[1:], 1):
        if n % 2 == 0:
            to_call(i, 10, a0=0x5000, a1=0x200000 + (n if mode == "unordered" else 0))
    for i in syncs():
        r.set(i, a0=0x6000)
elif mode == "nest":
    rs = [i for i in range(r.n) if r.fast(i)[1] in (PUSH, POP)]
    half = len(rs) // 2
    for n, i in enumerate(rs):
        r.set(i, kind=PUSH if n < half else POP, a0=1 if n < half else 0)
elif mode == "names":
    grow_strings(r, r.sused + 200 * len(L) + 4096)
    for n, i in enumerate(L):
        sym = f"_ZN5model6layers{len(str(n)) + 6}kernel{n}ILi128ELi64EEEvPfS2_i"
        r.add_string(2, 0x100000 + n, sym)
        r.add_string(3, 0x100000 + n, sym)
        r.set(i, a1=0x100000 + n)
        r.set(i + 1, a1=0x100000 + n)
        assert r.fast(i + 2)[1] == DEV
        r.set(i + 2, a1=0x100000 + n)
elif mode == "rnames":
    pushes = [i for i in range(r.n) if r.fast(i)[1] == PUSH]
    grow_strings(r, r.sused + 64 * len(pushes) + 4096)
    for n, i in enumerate(pushes):
        r.add_string(3, 0x100000 + n, f"request {n}")
        r.set(i, a0=0x100000 + n)
else:
    sys.exit("unknown mode " + mode)
r.save(dst)
print(mode, "done:", len(L), "launches")
