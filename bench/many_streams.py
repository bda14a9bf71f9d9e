"""many_streams.py: rewrites a synthetic ring (scanner/examples/synth_capture.rs) into the worst case for
the causal graph's walk over streams: every other outermost launch goes to the legacy stream, and the
launches between go each to a stream of its own (mode `launch`), or become a cudaStreamSynchronize on
a stream of its own that is never launched on (mode `sync`). Before 4e1e9ef the walk visited every
stream ever seen on each legacy launch, and the `launch` mode's edges grew as launches x streams.

    python3 bench/many_streams.py launch|sync SRC.cwring DST_DIR/NAME.cwring

Offsets are docs/format.md's (header: capacity 24, entries offset 48, head 80; entry: api 28, kind 30,
depth 36, a0 40); API ids 1 (cudaLaunchKernel) and 3 (cudaStreamSynchronize) are synth_capture's.
"""
import os
import struct
import sys

LAUNCH, SYNC, CALL_KIND = 1, 3, 1

mode, src, dst = sys.argv[1:4]
if mode not in ("launch", "sync"):
    sys.exit("mode: launch or sync")
d = bytearray(open(src, "rb").read())
(cap,) = struct.unpack_from("<Q", d, 24)
(eoff,) = struct.unpack_from("<Q", d, 48)
(head,) = struct.unpack_from("<Q", d, 80)
n = own = legacy = 0
for i in range(min(cap, head)):
    o = eoff + 64 * i
    api, kind = struct.unpack_from("<HB", d, o + 28)
    (depth,) = struct.unpack_from("<H", d, o + 36)
    if kind != CALL_KIND or depth != 0 or api != LAUNCH:
        continue
    n += 1
    if n % 2:
        if mode == "sync":
            struct.pack_into("<H", d, o + 28, SYNC)
        struct.pack_into("<Q", d, o + 40, 0x100000 + n)
        own += 1
    else:
        struct.pack_into("<Q", d, o + 40, 0)
        legacy += 1
os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
open(dst, "wb").write(d)
print(f"{mode}: {own} calls on streams of their own, {legacy} legacy launches")
