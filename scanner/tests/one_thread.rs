//! The streamed `edges` table with a global rayon pool of one thread. Its consumer waits for the
//! causal graph's walk on one of the pool's workers, and the walk's own parallel parts run on the
//! same pool: waiting there must not stop the walk (a blocking wait on the only worker never
//! returns). Alone in its test binary, so that it can size the global pool.

mod common;
#[path = "../benches/support/synth.rs"]
mod synth;

use causeway_ring::layout::ClockKind;
use causeway_scanner::analysis::causal::graph::Graph;
use causeway_scanner::export::parquet::edges;
use causeway_scanner::export::TokenSource;
use causeway_scanner::facts::model::Timeline;
use causeway_scanner::read::capture::Capture;
use std::time::Duration;

#[test]
fn the_edges_table_is_made_on_a_pool_of_one_thread() {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global()
        .expect("this test binary's global pool, sized first");
    let dir = common::TempDir::new("one-thread");
    synth::write(dir.path(), 400_000, 4, ClockKind::Tsc);
    let (tx, rx) = std::sync::mpsc::channel();
    let path = dir.path().to_path_buf();
    std::thread::spawn(move || {
        let cap = Capture::open(&path).expect("the synthetic capture");
        let rings = cap.rings().expect("its rings");
        let t = Timeline::build(&rings);
        let want = Graph::edges_with(&t.processes[0], None).0.len();
        // On the pool's only worker, as the Parquet export writes its tables.
        let (got, ()) = rayon::join(
            || {
                let bs = edges(&t, &TokenSource::of(&rings)).expect("no huge names");
                bs.iter().map(|b| b.num_rows()).sum::<usize>()
            },
            || (),
        );
        let _ = tx.send((got, want));
    });
    let (got, want) = rx.recv_timeout(Duration::from_secs(120)).expect(
        "the edges table within 2 minutes on one thread (a wait that stops the walk hangs)",
    );
    assert!(
        want > 2 * (128 << 10),
        "{want} edges: too few runs of 128 Ki"
    );
    assert_eq!(got, want);
}
