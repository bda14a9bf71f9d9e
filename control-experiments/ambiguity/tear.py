#!/usr/bin/env python3
"""tear.py: deliberate record loss for the ambiguity benchmark. Copies a capture and tears, in the
copy, every call entry made inside the NVTX ranges the truth file names with {"tear": LABEL} (the
outermost call and the calls nested in it), as a writer killed mid-entry would leave them: the
slot's stamp says "being written" (docs/format.md), so a reader counts the entry torn.

    tear.py TRUTH.jsonl GRAPH.json CAPTURE_DIR OUT_DIR

GRAPH.json is `causeway export --format graph` of CAPTURE_DIR (its calls give the sequence numbers).
Prints how many entries it tore.
"""
import json
import shutil
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evaluate import labelled_calls  # noqa: E402


def main(truth, graph, cap, out):
    labels = {json.loads(l)["tear"] for l in open(truth) if '"tear"' in l}
    doc = json.load(open(graph))
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(cap, out)
    torn = 0
    for p in doc["processes"]:
        seqs = [c["seq"] for i, c in labelled_calls(p, nested=True) if c["_label"] in labels]
        if not seqs:
            continue
        ring = out / (p["ring"] + ".cwring")
        with open(ring, "r+b") as f:
            head = f.read(64)
            capacity, = struct.unpack_from("<Q", head, 24)
            entries, = struct.unpack_from("<Q", head, 48)
            for s in seqs:
                at = entries + (s % capacity) * 64
                f.seek(at)
                stamp, = struct.unpack("<Q", f.read(8))
                if stamp >> 2 != s + 1:
                    continue
                f.seek(at)
                f.write(struct.pack("<Q", (s + 1) << 2))  # state 0: being written
                torn += 1
    print(f"tore {torn} entries of {len(labels)} ranges")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
