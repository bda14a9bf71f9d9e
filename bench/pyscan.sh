#!/usr/bin/env bash
# pyscan.sh: rows per second of `causeway.open` with each engine (native = the Rust scanner through the
# pyo3 extension, python = the pure-Python reader) on a synthetic level-3 capture of N entries
# (scanner/examples/synth_capture.rs), RUNS runs each; see bench/pyscan.py for what is timed.
#     bash bench/pyscan.sh [ENTRIES=1000000] [RUNS=5]
# Builds the release wheel with maturin (pip install maturin) and installs it, with pyarrow, into a
# scratch directory; needs pyarrow importable or installable.
set -euo pipefail
N=${1:-1000000}
RUNS=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=$(mktemp -d "${TMPDIR:-/tmp}/causeway-pyscan.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cargo build --release -q -p causeway-scanner --example synth_capture
maturin build --release -q -m pyscan/Cargo.toml -o "$dir/wheels" >/dev/null
python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$dir/py" "$dir"/wheels/*.whl
target/release/examples/synth_capture "$dir/cap" "$N" 4
echo "cpus: $(nproc); $(uname -r); $(python3 --version)"
PYTHONPATH="$dir/py${PYTHONPATH:+:$PYTHONPATH}" python3 bench/pyscan.py "$dir/cap" "$RUNS"
