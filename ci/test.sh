#!/usr/bin/env bash
# The test command (README: "Run the tests"). Installs what the tests need when it is missing, builds the
# shim, the CLI and the C test doubles, then runs every test: formatting, clippy, the Rust test suites
# (unit, scanner, end-to-end through the doubles and the real PyPI cudart) and a bounded fuzz run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# A full debug build with incremental caches took 12 GB of target/ and ran CI's disk out of space: build
# without incremental caches and with line tables only (what backtraces need).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
echo "ci/test.sh: $(df -h --output=avail "$root" | tail -1 | tr -d ' ') free on the build's disk"

# --- dependencies -----------------------------------------------------------------------------------------
deps="$root/ci/build/deps"
mkdir -p "$deps"
if [ ! -f "$deps/.cuda-wheels-2" ]; then
  # Headers for the NVTX test program and the CUPTI double's ABI check, and the real cudart for the
  # no-driver test.
  python3 -m pip install --quiet --disable-pip-version-check --upgrade --target "$deps/py" \
    "nvidia-cuda-runtime==13.0.96" "nvidia-nvtx==13.0.85" "nvidia-cuda-cupti==13.0.85"
  touch "$deps/.cuda-wheels-2"
fi
if [ ! -f "$deps/.duckdb-2.0.1" ]; then
  # DuckDB reads `causeway export --format parquet` back in scanner/tests/parquet_duckdb.py.
  python3 -m pip install --quiet --disable-pip-version-check --upgrade --target "$deps/py" "duckdb==2.0.1"
  touch "$deps/.duckdb-2.0.1"
fi
if [ ! -f "$deps/.pyscan-1" ]; then
  # The Python module's tests (pyscan/tests): maturin builds the wheel, pytest runs them, pyarrow and
  # pandas are what to_arrow()/to_pandas() return.
  python3 -m pip install --quiet --disable-pip-version-check --upgrade --target "$deps/py" \
    "maturin==1.15.0" "pytest==9.0.3" "pyarrow==25.0.1" "pandas==2.3.3"
  touch "$deps/.pyscan-1"
fi
if ! command -v chromium >/dev/null; then
  # The HTML report's browser test renders pages in headless Chromium (Debian's package). A failed
  # install stops the tests here, with why (a held dpkg lock is waited for, up to 5 minutes).
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt="apt-get -o DPkg::Lock::Timeout=300 -qq"
    if ! { $apt update && $apt install -y chromium; } || ! command -v chromium >/dev/null; then
      echo "ci/test.sh: installing chromium with apt-get failed (see above); the HTML browser test needs it" >&2
      exit 1
    fi
  else
    echo "ci/test.sh: chromium is missing and cannot be installed here (needs apt-get as root)" >&2
    exit 1
  fi
fi
# Level Zero: the loader and headers (Debian's libze1, libze-dev): shim/gen/hookgen.py generates the
# Level Zero hook table from the headers and the loader's exports.
if [ ! -f /usr/include/level_zero/ze_api.h ] || [ ! -e /usr/lib/x86_64-linux-gnu/libze_loader.so.1 ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt="apt-get -o DPkg::Lock::Timeout=300 -qq"
    { $apt update && $apt install -y libze1 libze-dev; } ||
      { echo "ci/test.sh: installing libze1 libze-dev with apt-get failed (see above)" >&2; exit 1; }
  else
    echo "ci/test.sh: the Level Zero loader and headers are missing (apt-get install libze1 libze-dev as root)" >&2
    exit 1
  fi
fi
# Unified Runtime: the real UR loader from PyPI and PoCL, a CPU OpenCL driver (itests/tests/intel.rs).
sh ci/ur/install.sh > /dev/null
export CAUSEWAY_REQUIRE_UR=1
export CAUSEWAY_REAL_CUDART="$deps/py/nvidia/cu13/lib/libcudart.so.13"
export NVTX_INC="$deps/py/nvidia/cu13/include"
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt

# --- build --------------------------------------------------------------------------------------------
make -s -C ci NVTX_INC="$NVTX_INC"
make -s -C ci ur
make -s -C ci ze
make -s -C ci ze-check > "$root/ci/build/ze-check.log"
make -s -C ci check REAL_CUDART="$CAUSEWAY_REAL_CUDART" NVTX_INC="$NVTX_INC" CUPTI_INC="$NVTX_INC" CUDA_INC="$NVTX_INC"
cargo build --workspace --quiet

# --- checks and tests ---------------------------------------------------------------------------------
# The hook tables, CUPTI callback ids and docs/interception.md are what shim/gen/hookgen.py writes from
# the pinned CUDA headers and shim/gen/overrides.txt.
python3 shim/gen/hookgen.py --check
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# The same for aarch64 Linux, checked only (nothing is linked or run for it): the paths built only off
# x86-64 (the timestamp counter, prefetch hints, C types of other widths) must compile and lint clean.
rustup target list --installed 2>/dev/null | grep -q '^aarch64-unknown-linux-gnu$' ||
  rustup target add aarch64-unknown-linux-gnu
CARGO_TARGET_DIR="$root/target/aarch64-check" \
  cargo clippy --workspace --all-targets --quiet --target aarch64-unknown-linux-gnu -- -D warnings
# The scanner tests copy every ring they write to CAUSEWAY_KEEP_TEST_CAPTURES, and the end-to-end tests keep
# theirs in target/itests: pyscan's tests below read all of them with both engines.
rm -rf "$root/ci/build/test-captures" "$root/target/itests"
export CAUSEWAY_KEEP_TEST_CAPTURES="$root/ci/build/test-captures"
cargo test --workspace 2>&1 | tee "$root/ci/build/cargo-test.log"
fuzz/run.sh "${CAUSEWAY_FUZZ_SECONDS:-30}"
# The GPU proof scripts' own tests, on the CPU (fake nvcc, torch, CUPTI library and CLI): a script that
# can only run on the H200 must not break unnoticed.
export CUPTI_INC="$NVTX_INC" CUDA_INC="$NVTX_INC" CUPTI_LIBDIR="$deps/py/nvidia/cu13/lib"
python3 control-experiments/device/test_compare_counts.py
python3 control-experiments/device/test_level3_check.py
python3 control-experiments/device/test_timed.py
bash control-experiments/device/test_spine_fake.sh > "$root/ci/build/test_spine_fake.log"
bash control-experiments/device/test_level3_fake.sh > "$root/ci/build/test_level3_fake.log"
bash control-experiments/device/test_backends_fake.sh > "$root/ci/build/test_backends_fake.log"
bash control-experiments/device/test_costs_fake.sh > "$root/ci/build/test_costs_fake.log"
bash control-experiments/device/test_control_fake.sh > "$root/ci/build/test_control_fake.log"
bash control-experiments/device/test_distortion_fake.sh > "$root/ci/build/test_distortion_fake.log"
# The ambiguity benchmark on the doubles (issue 24): the causal graph and `causeway why` scored against
# the workload's own ground truth; fails when precision < 0.99, recall < 0.95 or a chain through a lost
# record is called complete. The evaluator's own scoring is tested first, on a hand-made graph.
python3 control-experiments/ambiguity/test_evaluate.py
CW="$root/target/debug/causeway" OUT="$root/ci/build/ambiguity" \
  bash control-experiments/ambiguity/run.sh --doubles > "$root/ci/build/ambiguity.log" ||
  { tail -n 40 "$root/ci/build/ambiguity.log" >&2; exit 1; }
tail -n 1 "$root/ci/build/ambiguity.log"
# The Parquet export queried with DuckDB's read_parquet must agree with `causeway report --json`.
CAUSEWAY_REQUIRE_DUCKDB=1 PYTHONPATH="$deps/py" python3 scanner/tests/parquet_duckdb.py "$root/target/debug/causeway"
# pyscan: the wheel `pip install ./pyscan` builds (here the dev profile, which reuses the workspace build
# above: ~30 s, where a release build took 8 min 50 s here), installed into a scratch directory; pytest compares the
# pure-Python engine with the Rust one on every capture above, checks pandas/pyarrow round trips and
# DuckDB totals against `causeway report --json`.
rm -rf "$root/ci/build/wheels" "$root/ci/build/pyscan-py"
PYTHONPATH="$deps/py" "$deps/py/bin/maturin" build --quiet --profile dev -m pyscan/Cargo.toml -o "$root/ci/build/wheels"
python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$root/ci/build/pyscan-py" \
  "$root"/ci/build/wheels/*.whl
CAUSEWAY_BIN="$root/target/debug/causeway" PYTHONPATH="$root/ci/build/pyscan-py:$deps/py" \
  python3 -m pytest -q -p no:cacheprovider pyscan/tests 2>&1 | tee "$root/ci/build/pytest.log"
# `causeway html` pages rendered by headless Chromium (.ci/run installs chromium).
CAUSEWAY_REQUIRE_CHROMIUM=1 python3 scanner/tests/html_browser.py "$root/target/debug/causeway" > "$root/ci/build/html-browser.log"

# The main job on the shipped capture must keep working.
bash demo/run.sh > "$root/ci/build/demo-report.txt"
grep -q "KERNELS" "$root/ci/build/demo-report.txt"
# The wheel users install (release, stripped; reuses the release build demo/run.sh made): it installs in
# seconds, is small and reads the demo capture to the CLI's report.
PYTHONPATH="$deps/py" bash ci/wheel.sh "$deps/py/bin/maturin"
PYTHONPATH="$deps/py" python3 ci/check_wheel.py "$root"/target/wheels/causeway-*.whl "$root/target/release/causeway" \
  "$(ls -d "$root"/target/demo/cw-*)"

# One closing line for CI: the cargo test and pytest totals (the fuzz run's statistics come last otherwise).
awk '/^test result:/ { p += $4; f += $6 }
     FILENAME ~ /pytest/ && / in [0-9.]+s/ { for (i = 1; i < NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$root/ci/build/cargo-test.log" "$root/ci/build/pytest.log"
