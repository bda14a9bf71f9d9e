#!/usr/bin/env bash
# Records the corpus's captures of the C test programs (corpus/README.md) through the CUDA test doubles
# and packs each as corpus/NAME.tar.gz holding one capture directory NAME/. Run from anywhere:
#
#   make -s -C ci NVTX_INC=...            # the doubles and the programs (ci/README-doubles.md)
#   cargo build --workspace               # causeway and libcauseway.so (debug)
#   bash corpus/make-captures.sh [NAME...]
#
# Re-recording changes every timing in the captures, so every expected output: do it only to add or
# replace a capture, then bless (corpus/README.md). The damaged rings are made from these captures by
# `cargo test -p causeway-scanner --test corpus_gen -- --ignored` (scanner/tests/corpus_gen.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
cw="${CARGO_TARGET_DIR:-$root/target}/debug/causeway"
[ -x "$cw" ] || { echo "no $cw: run cargo build --workspace" >&2; exit 1; }
[ -x ci/build/steps_prog ] || { echo "no ci/build: run make -C ci" >&2; exit 1; }
for v in $(env | sed -n 's/^\(CAUSEWAY_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset LD_PRELOAD NVTX_INJECTION64_PATH
export LD_LIBRARY_PATH="$root/ci/build"
cupti="$root/ci/build/libcupti.so.13"
work=$(mktemp -d /tmp/causeway-corpus.XXXXXX)
trap 'rm -rf "$work"' EXIT

# record NAME [record options] -- CMD...: a capture directory $work/stage/NAME.
record() {
  local name=$1
  shift
  mkdir -p "$work/$name" "$work/stage"
  # The program's own exit code is not the recorder's failure (multi ends in `exitcode 3`).
  "$cw" record --ring-mb 1 --out "$work/$name" "$@" > "$work/$name.stdout" 2> "$work/$name.stderr" || true
  grep -q '^causeway: capture written to ' "$work/$name.stderr" || { cat "$work/$name.stderr" >&2; exit 1; }
  mv "$work/$name"/cw-* "$work/stage/$name"
}

# pack NAME: corpus/NAME.tar.gz, reproducible for the same files.
pack() {
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/stage" -cf - "$1" |
    gzip -9n > "corpus/$1.tar.gz"
  echo "corpus/$1.tar.gz: $(stat -c %s "corpus/$1.tar.gz") bytes" >&2
}

names=("$@")
sel() { [ ${#names[@]} -eq 0 ] || [[ " ${names[*]} " == *" $1 "* ]]; }

# The training-loop program (an NVTX "warmup" range, then 4 "step" ranges of h2d copy / kernels on two
# streams / syncs, step 2 slow; 20 ms host-only "dataload" ranges between steps) at every level and with
# both device-timing backends.
if sel steps-l1; then record steps-l1 --level 1 -- ci/build/steps_prog 4; pack steps-l1; fi
if sel steps-l2; then record steps-l2 --level 2 -- ci/build/steps_prog 4; pack steps-l2; fi
if sel steps-l3-cupti; then
  record steps-l3-cupti --level 3 --backend cupti --cupti "$cupti" -- ci/build/steps_prog 4
  pack steps-l3-cupti
fi
if sel steps-l3-events; then
  record steps-l3-events --level 3 --backend events --sample 1 -- ci/build/steps_prog 4
  pack steps-l3-events
fi
if sel steps-l4; then
  record steps-l4 --level 4 --backend cupti --cupti "$cupti" -- ci/build/steps_prog 4
  pack steps-l4
fi

# Several processes under one shell (which records nothing): two non-blocking streams with an event
# wait and a captured graph (multistream), captured graphs with a memset node (graph_prog), a graph
# built by hand with a child graph (graph_tree), 3 threads with a stream each (mt_launch), NVTX
# domains, marks and start/end ranges (nvtx_prog), a fork child (forker) and a program exiting 3 with
# work still queued (exitcode).
if sel multi-l3; then
  record multi-l3 --level 3 --backend cupti --cupti "$cupti" -- sh -c \
    'ci/build/multistream 3; ci/build/graph_prog 2; ci/build/graph_tree 2; ci/build/mt_launch 3 10;
     ci/build/nvtx_prog; ci/build/forker 3; ci/build/exitcode 3'
  pack multi-l3
fi

# The doubles' self test at level 4: every kind of call, many of them failing with real error codes
# (400, 900, 500 from cuGetProcAddress, 1, 9, 98, ...), graphs, per-thread streams, a second thread.
if sel errors-l4; then
  record errors-l4 --level 4 --backend cupti --cupti "$cupti" -- ci/build/semantics
  pack errors-l4
fi

# A process killed (SIGKILL) while blocked in cudaStreamSynchronize on a kernel that never ends: the
# ring is never closed and the sync is an open call.
if sel hang-killed; then
  mkdir -p "$work/hang-killed" "$work/stage"
  "$cw" record --ring-mb 1 --level 2 --out "$work/hang-killed" -- ci/build/hang \
    > "$work/hang.stdout" 2> "$work/hang.stderr" &
  rec=$!
  for _ in $(seq 100); do grep -q syncing "$work/hang.stdout" && break; sleep 0.1; done
  child=$(pgrep -P "$rec")
  sleep 0.2
  kill -KILL "$child"
  wait "$rec" || true
  mv "$work/hang-killed"/cw-* "$work/stage/hang-killed"
  pack hang-killed
fi
