#!/usr/bin/env bash
# The main job. Builds causeway, then reports (summary, steps, gaps) and writes into target/demo-out/ the
# HTML report, the Perfetto and Chrome timelines and the Parquet tables:
#   demo/run.sh CAPTURE          on CAPTURE (a capture directory or one .cwring file);
#   demo/run.sh                  on a machine with an NVIDIA GPU and PyTorch, records the PyTorch spine
#                                workload (control-experiments/workloads/torch_spine.py) at level 4 and
#                                reports on it; anywhere else reports on the small real H200 capture
#                                shipped here (demo/h200-torch-level3.tar.gz: cuBLAS GEMMs, elementwise
#                                kernels, a Triton kernel, a CUDA graph replayed, a pinned copy, NVTX steps).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x target/release/causeway ] || [ ! -f target/release/libcauseway.so ]; then
  echo "causeway demo: building causeway (release). The first build compiles about 120 crates: roughly" \
    "10 minutes on 2 cores, 2 on 16; later runs take seconds." >&2
fi
cargo build --release -p causeway-cli -p causeway-shim
cw=target/release/causeway
cap=${1:-}
if [ -z "$cap" ] && nvidia-smi -L > /dev/null 2>&1 && python3 -c 'import torch; assert torch.cuda.is_available()' 2> /dev/null; then
  echo "causeway demo: GPU found; recording the PyTorch spine workload" >&2
  mkdir -p target/demo-live
  "$cw" record --level 4 --out target/demo-live -- python3 control-experiments/workloads/torch_spine.py --steps 5 2> target/demo-live/record.err ||
    { cat target/demo-live/record.err >&2; exit 1; }
  cap=$(sed -n 's/^causeway: capture written to //p' target/demo-live/record.err | tail -n 1)
fi
if [ -z "$cap" ]; then
  echo "causeway demo: no GPU here; reporting on the H200 capture shipped in demo/" >&2
  rm -rf target/demo && mkdir -p target/demo
  tar xzf demo/h200-torch-level3.tar.gz -C target/demo
  cap=$(ls -d target/demo/cw-*)
fi
"$cw" report "$cap"
# The step and gap views, and the capture as timelines for ui.perfetto.dev / chrome://tracing.
echo
"$cw" report --steps --gaps "$cap"
mkdir -p target/demo-out
"$cw" export --format perfetto --force -o target/demo-out/trace.pftrace "$cap"
"$cw" export --format chrome --force -o target/demo-out/trace.json "$cap"
"$cw" export --format parquet --force -o target/demo-out/parquet "$cap"
"$cw" html --force -o target/demo-out/report.html "$cap"
echo "causeway demo: in target/demo-out/: report.html (open in a browser), trace.pftrace and trace.json (ui.perfetto.dev), parquet/ (DuckDB, pandas)" >&2
