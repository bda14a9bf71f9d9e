#!/usr/bin/env bash
# Bounded run of the ring-reader fuzz target: fuzz/run.sh [SECONDS] (default 30).
#
# Works on a stable toolchain: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its -Z sanitizer flags to stable
# rustc (address sanitizer, release build with debug assertions and overflow checks). The corpus starts
# from the small valid rings in fuzz/seeds/ (written by `CAUSEWAY_WRITE_SEEDS=fuzz/seeds cargo test -p
# causeway-ring --test seeds`); new inputs go to fuzz/corpus/reader, crashes to fuzz/artifacts/reader.
set -euo pipefail
secs="${1:-30}"
cd "$(dirname "$0")"
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
mkdir -p corpus/reader
RUSTC_BOOTSTRAP=1 cargo fuzz run reader corpus/reader seeds -- \
  -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
