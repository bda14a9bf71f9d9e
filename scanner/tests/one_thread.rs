//! The streamed `edges` table with a global rayon pool of one thread. Its consumer waits for the
//! causal graph's walk on one of the pool's workers, and the walk's own parallel parts run on the
//! same pool: waiting there must not stop the walk (a blocking wait on the only worker never
//! returns). So must the whole export, whose walk also waits for the steps table. Alone in its
//! test binary, so that it can size the global pool.

mod common;
#[path = "../benches/support/synth.rs"]
mod synth;

use causeway_ring::layout::ClockKind;
use causeway_scanner::analysis::causal::graph::Graph;
use causeway_scanner::export::parquet::{edges, write_dir};
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

    // The whole export on the same pool: its walk waits for the steps table, made by the model's
    // tables on the pool's only worker while the `edges` table waits for the walk.
    let out = dir.path().join("pq");
    std::fs::create_dir(&out).unwrap();
    let path = dir.path().to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    let to = out.clone();
    std::thread::spawn(move || {
        let cap = Capture::open(&path).expect("the synthetic capture");
        let rings = cap.rings().expect("its rings");
        let t = Timeline::build(&rings);
        let written = write_dir(&t, &TokenSource::of(&rings), &to).map(|(bytes, _)| bytes);
        let _ = tx.send(written.is_ok_and(|b| b > 0));
    });
    let written = rx.recv_timeout(Duration::from_secs(120)).expect(
        "the Parquet tables within 2 minutes on one thread (a walk that waits for the steps hangs)",
    );
    assert!(written);
    for t in (causeway_scanner::export::parquet::TABLES.iter())
        .chain(&causeway_scanner::export::parquet::GRAPH_TABLES)
    {
        assert!(out.join(format!("{t}.parquet")).is_file(), "{t}");
    }
}
