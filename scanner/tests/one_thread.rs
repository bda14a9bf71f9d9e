//! The streamed `edges` table with a global rayon pool of one thread. Its consumer waits for the
//! causal graph's walk on one of the pool's workers, and the walk's own parallel parts run on the
//! same pool: waiting there must not stop the walk (a blocking wait on the only worker never
//! returns). Alone in its test binary, so that it can size the global pool.

use causeway_ring::layout::DeviceKind;
use causeway_ring::{Class, Layer};
use causeway_scanner::analysis::causal::graph::Graph;
use causeway_scanner::export::parquet::edges;
use causeway_scanner::export::TokenSource;
use causeway_scanner::facts::model::{Call, DeviceSpan, ProcessTimeline, StreamId, Timeline};
use causeway_scanner::read::intern;
use std::time::Duration;

/// `n` launches on two streams, a kernel for every third: about two edges a call, several of the
/// table's runs of 128 Ki edges.
fn process(n: u64) -> ProcessTimeline {
    let calls = (0..n)
        .map(|i| Call {
            seq: i,
            tid: 100,
            api: intern("cudaLaunchKernel"),
            layer: Some(Layer::Runtime),
            class: Some(Class::Launch),
            begin_ns: 10 * i,
            end_ns: Some(10 * i + 5).into(),
            depth: 0,
            result: 0,
            kernel: None,
            a0: 0x5000 + i % 2,
            a1: 0,
            flags: 0,
        })
        .collect();
    let device = (0..n)
        .step_by(3)
        .map(|i| DeviceSpan {
            graph_node: None,
            kind: DeviceKind::Kernel,
            name: intern("k"),
            begin_ns: 10 * i + 7,
            end_ns: 10 * i + 9,
            bound_ns: 0,
            stream: StreamId::Handle(0x5000 + i % 2).into(),
            call: Some(i).into(),
            bytes: 0,
            queued_ns: None.into(),
            submitted_ns: None.into(),
        })
        .collect();
    ProcessTimeline {
        threads: vec![100],
        calls,
        device,
        backend: "cupti".into(),
        ..ProcessTimeline::empty(1)
    }
}

#[test]
fn the_edges_table_is_made_on_a_pool_of_one_thread() {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global()
        .expect("this test binary's global pool, sized first");
    let t = Timeline {
        processes: vec![process(200_000)],
    };
    let want = Graph::edges_with(&t.processes[0], None).0.len();
    assert!(want > 3 * (128 << 10), "{want} edges: too few runs");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // On the pool's only worker, as the Parquet export's tables are written.
        let (rows, ()) = rayon::join(
            || {
                let bs = edges(&t, &TokenSource::none());
                bs.iter().map(|b| b.num_rows()).sum::<usize>()
            },
            || (),
        );
        let _ = tx.send(rows);
    });
    let rows = rx.recv_timeout(Duration::from_secs(120)).expect(
        "the edges table within 2 minutes on one thread (a wait that stops the walk hangs)",
    );
    assert_eq!(rows, want);
}
