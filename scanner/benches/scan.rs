//! Scanner throughput benchmarks (divan): decoding a ring, nesting its calls (the host half of
//! association), device association with the whole report, and — what `why` and the exports build
//! beyond the report — the timeline model and, on it, the causal graph (alone, and from the capture);
//! on a synthetic 1 M-entry level-3 capture (`support/synth.rs`), with the `causeway` binary's
//! allocator. Each reports entries per second.
//!
//!     cargo bench -p causeway-scanner --bench scan
//!     CAUSEWAY_BENCH_ENTRIES=10000000 cargo bench -p causeway-scanner --bench scan -- full_report graph_from_capture
//!
//! The 10 M-entry end-to-end figure of `causeway report` is `bench/scan.sh`.

#[path = "support/synth.rs"]
mod synth;

use causeway_ring::layout::ClockKind;
use causeway_scanner::analysis::causal::graph::Graph;
use causeway_scanner::facts::model::Timeline;
use causeway_scanner::read::capture::{Capture, Ring};
use causeway_scanner::read::decode::decode;
use causeway_scanner::read::pair::Nesting;
use causeway_scanner::Report;
use divan::counter::ItemsCount;
use divan::Bencher;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The `causeway` binary's allocator (large tables on huge pages), so that each figure is what the
/// command pays.
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOC: causeway_scanner::util::hugealloc::HugeAlloc =
    causeway_scanner::util::hugealloc::HugeAlloc;

/// Entries in the synthetic capture: 1 M, or `CAUSEWAY_BENCH_ENTRIES`.
fn entries() -> u64 {
    std::env::var("CAUSEWAY_BENCH_ENTRIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

/// The capture's folder and entry count, written once per bench process.
static CAP: OnceLock<(PathBuf, u64)> = OnceLock::new();

fn capture() -> &'static (PathBuf, u64) {
    CAP.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("causeway-bench-scan-{}", std::process::id()));
        let (_, written, _) = synth::write(&dir, entries(), 4, ClockKind::Tsc);
        (dir, written)
    })
}

/// Opens the synthetic capture and gives its rings to `f`, with a bencher that counts its entries.
fn on_rings(b: Bencher, f: impl FnOnce(Bencher, &[Ring])) {
    let (dir, n) = capture();
    let cap = Capture::open(dir).expect("synthetic capture opens");
    let rings = cap.rings().expect("synthetic ring parses");
    f(b.counter(ItemsCount::new(*n)), &rings);
}

#[divan::bench(sample_count = 10)]
fn decode_ring(b: Bencher) {
    on_rings(b, |b, rings| b.bench(|| decode(&rings[0].view).live));
}

#[divan::bench(sample_count = 10)]
fn nest_calls(b: Bencher) {
    on_rings(b, |b, rings| {
        let d = decode(&rings[0].view);
        b.bench(|| Nesting::of(d.entries(), synth::class_of));
    });
}

#[divan::bench(sample_count = 10)]
fn full_report(b: Bencher) {
    on_rings(b, |b, rings| {
        b.bench(|| Report::build("bench", rings).processes.len())
    });
}

#[divan::bench(sample_count = 10)]
fn timeline(b: Bencher) {
    on_rings(b, |b, rings| {
        b.bench(|| Timeline::build(rings).processes.len())
    });
}

/// The graph alone, on a timeline built once (`why` and the exports build both).
#[divan::bench(sample_count = 10)]
fn causal_graph(b: Bencher) {
    on_rings(b, |b, rings| {
        let t = Timeline::build(rings);
        b.bench(|| Graph::build(&t.processes[0]).edges.len());
    });
}

/// The causal graph from the capture: its timeline, then the graph on it (issue 23's figure, against
/// `full_report`).
#[divan::bench(sample_count = 10)]
fn graph_from_capture(b: Bencher) {
    on_rings(b, |b, rings| {
        b.bench(|| {
            let t = Timeline::build(rings);
            let edges = Graph::build(&t.processes[0]).edges.len();
            (t, edges)
        })
    });
}

fn main() {
    divan::main();
    if let Some((dir, _)) = CAP.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}
