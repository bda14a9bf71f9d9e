"""many_rings.py SRC.cwring DST_DIR COUNT [distinct-exe]: COUNT copies of a small synthetic ring (its
string area shrunk to 8 KiB) as one capture directory, each with its own pid (header offset 56) and
file name; with `distinct-exe`, each process also has its own executable path (header 176/180)."""
import os, struct, sys
src, dst, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
distinct = len(sys.argv) > 4
d = open(src, "rb").read()
cap, soff, ssize, eoff = struct.unpack_from("<QQQQ", d, 24)
(used,) = struct.unpack_from("<Q", d, 96)
new_ss = max(8192, (used + 7) // 8 * 8)
hdr = bytearray(d[:4096])
struct.pack_into("<QQ", hdr, 40, new_ss, 4096 + new_ss)
body = d[soff:soff + used] + bytes(new_ss - used) + d[eoff:eoff + 64 * cap]
os.makedirs(dst, exist_ok=True)
for k in range(count):
    struct.pack_into("<I", hdr, 56, 10000 + k)
    if distinct:
        exe = f"/synthetic/prog{k}".encode()
        struct.pack_into("<I", hdr, 176, len(exe))
        hdr[180:180 + 1024] = exe + bytes(1024 - len(exe))
    open(os.path.join(dst, f"bench-{10000 + k}-0-0.cwring"), "wb").write(bytes(hdr) + body)
print(count, "rings of", 4096 + len(body), "bytes")
