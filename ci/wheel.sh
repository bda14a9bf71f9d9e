#!/usr/bin/env bash
# Builds the Python wheel users install in seconds (README "Python"): the release profile, stripped
# (the extension is ~3.5 MB instead of ~70 MB with the release profile's debug info), stable ABI (one wheel
# for every CPython >= 3.8). Writes target/wheels/causeway-VERSION-cp38-abi3-manylinux_*.whl; the
# manylinux tag follows the glibc of the machine that builds it. CI (ci/test.sh) runs this and then
# checks the wheel: size, a clean install, and the same report as the CLI's on the demo capture.
#     bash ci/wheel.sh [MATURIN]
set -euo pipefail
cd "$(dirname "$0")/.."
maturin=${1:-maturin}
command -v "$maturin" > /dev/null || { echo "ci/wheel.sh: needs maturin (pip install maturin) and cargo" >&2; exit 2; }
rm -rf target/wheels
"$maturin" build --quiet --release --strip -m pyscan/Cargo.toml -o target/wheels
ls target/wheels/causeway-*.whl
