"""Helpers to rewrite a synthetic ring (scanner/examples/synth_capture.rs) in place.
Offsets: docs/format.md. Header: capacity 24, strings_offset 32, strings_size 40, entries_offset 48,
head 80, strings_used 96. Entry (64 B): stamp 0, t_begin 8, t_end 16, tid 24, api 28, kind 30,
flags 31, result 32, depth 36, node 38, a0 40, a1 48, a2 56."""
import struct

CALL, PUSH, POP, DEV = 1, 2, 3, 12
# synth_capture's API ids
LAUNCH_RT, LAUNCH_DRV, SYNC, NVTX = 1, 2, 3, 4
# classes
CL = dict(launch=1, copy=2, memset=3, sync=4, event_record=5, event_sync=6, stream_wait=7,
          stream=13, capture=14, event=16, ctx_event_record=22)


class Ring:
    def __init__(self, path):
        self.d = bytearray(open(path, "rb").read())
        d = self.d
        (self.cap,) = struct.unpack_from("<Q", d, 24)
        (self.soff,) = struct.unpack_from("<Q", d, 32)
        (self.ssize,) = struct.unpack_from("<Q", d, 40)
        (self.eoff,) = struct.unpack_from("<Q", d, 48)
        (self.head,) = struct.unpack_from("<Q", d, 80)
        (self.sused,) = struct.unpack_from("<Q", d, 96)
        self.n = min(self.cap, self.head)

    def add_string(self, kind, key, text, aux=0):
        b = text.encode()
        size = (24 + len(b) + 7) // 8 * 8
        assert self.sused + size <= self.ssize, "string area full"
        o = self.soff + self.sused
        struct.pack_into("<IIQII", self.d, o, size, kind, key, len(b), aux)
        self.d[o + 24:o + 24 + len(b)] = b
        self.sused += size
        struct.pack_into("<Q", self.d, 96, self.sused)

    def add_api(self, api_id, name, cls, layer=1, level=2):
        self.add_string(1, api_id, name, CL[cls] | layer << 8 | level << 16)

    def off(self, i):
        return self.eoff + 64 * i

    def get(self, i):
        o = self.off(i)
        stamp, tb, te, tid, api, kind, flags, res, depth, node, a0, a1, a2 = struct.unpack_from(
            "<QQQIHBBiHHQQQ", self.d, o)
        return dict(stamp=stamp, t_begin=tb, t_end=te, tid=tid, api=api, kind=kind, flags=flags,
                    result=res, depth=depth, node=node, a0=a0, a1=a1, a2=a2)

    def set(self, i, **f):
        e = self.get(i)
        e.update(f)
        struct.pack_into("<QQQIHBBiHHQQQ", self.d, self.off(i), e["stamp"], e["t_begin"], e["t_end"],
                         e["tid"], e["api"], e["kind"], e["flags"], e["result"], e["depth"],
                         e["node"], e["a0"], e["a1"], e["a2"])

    def fast(self, i):
        """(api, kind, depth, tid) without a dict."""
        o = self.off(i)
        api, kind = struct.unpack_from("<HB", self.d, o + 28)
        (depth,) = struct.unpack_from("<H", self.d, o + 36)
        (tid,) = struct.unpack_from("<I", self.d, o + 24)
        return api, kind, depth, tid

    def outer_launches(self):
        """Indices of the depth-0 runtime launches, in order."""
        return [i for i in range(self.n) if self.fast(i)[:3] == (LAUNCH_RT, CALL, 0)]

    def save(self, path):
        import os
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        open(path, "wb").write(self.d)


def grow_strings(r, new_size):
    """Rebuilds ring `r` with a string area of `new_size` bytes (entries moved after it)."""
    new_size = (new_size + 7) // 8 * 8
    d = r.d
    out = bytearray(d[:4096]) + d[r.soff:r.soff + r.sused] + bytes(new_size - r.sused) + \
        d[r.eoff:r.eoff + 64 * r.cap]
    struct.pack_into("<QQ", out, 40, new_size, 4096 + new_size)
    r.d = out
    r.ssize, r.eoff = new_size, 4096 + new_size
