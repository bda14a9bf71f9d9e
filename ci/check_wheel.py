"""Checks the wheel ci/wheel.sh built, as a user would get it: it installs into an empty directory in
seconds, its extension is stripped and small, and it reads the demo capture to the same report as
`causeway report --json`.

    python3 ci/check_wheel.py WHEEL CAUSEWAY_CLI CAPTURE
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

# The extension is ~3.5 MB stripped and ~70 MB with debug info; 16 MB leaves room for growth and still
# fails if stripping is lost.
MAX_EXTENSION_BYTES = 16 << 20
# A clean install unpacks one wheel: about a second here. 60 s fails only if it compiles.
MAX_INSTALL_SECONDS = 60


def elf_sections(path):
    """Section names of an ELF file, as binutils' readelf lists them."""
    out = subprocess.run(["readelf", "-SW", path], check=True, capture_output=True, text=True).stdout
    return re.findall(r"^\s*\[\s*\d+\]\s+(\S*)", out, re.M)


def main():
    wheel, cli, cap = (os.path.abspath(a) for a in sys.argv[1:4])
    failures = []
    with tempfile.TemporaryDirectory(prefix="cw-wheel-") as tmp:
        t0 = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
             "--no-compile", "--target", tmp, wheel],
            check=True,
            env=dict(os.environ, PIP_ROOT_USER_ACTION="ignore"),
        )
        took = time.monotonic() - t0
        if took > MAX_INSTALL_SECONDS:
            failures.append(f"install took {took:.1f} s (> {MAX_INSTALL_SECONDS} s)")
        ext = [f for f in os.listdir(os.path.join(tmp, "causeway")) if f.startswith("_native")]
        if len(ext) != 1:
            failures.append(f"expected one compiled extension in the wheel, found {ext}")
        else:
            path = os.path.join(tmp, "causeway", ext[0])
            size = os.path.getsize(path)
            if size > MAX_EXTENSION_BYTES:
                failures.append(f"{ext[0]} is {size} bytes (> {MAX_EXTENSION_BYTES}): not stripped?")
            debug = [n for n in elf_sections(path) if n.startswith(".debug")]
            if debug:
                failures.append(f"{ext[0]} carries debug sections {debug}")
        # Import in a fresh interpreter that sees only the installed wheel (no checkout on the path).
        code = (
            "import json, sys, causeway\n"
            "assert causeway.native_available(), 'extension not importable'\n"
            "cap = causeway.open(sys.argv[1], engine='native')\n"
            "print(json.dumps(cap.report()))\n"
        )
        env = dict(os.environ, PYTHONPATH=tmp)
        got = subprocess.run([sys.executable, "-c", code, cap], capture_output=True, env=env, cwd=tmp, text=True)
        want = subprocess.run([cli, "report", "--json", cap], check=True, capture_output=True)
        if got.returncode != 0:
            failures.append(f"reading the capture with the installed wheel failed:\n{got.stderr}")
        elif json.loads(got.stdout) != json.loads(want.stdout):
            failures.append("the wheel's report differs from `causeway report --json`")
        print(f"wheel {os.path.basename(wheel)}: {os.path.getsize(wheel)} bytes, installed in {took:.2f} s")
    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
