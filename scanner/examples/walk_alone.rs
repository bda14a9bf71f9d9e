//! Times the causal graph's streamed walk alone (what feeds the Parquet export's `edges` table),
//! with its edges counted and dropped: how fast the walk is when nothing waits on it.
//!     cargo build --release -p causeway-scanner --example walk_alone
//!     target/release/examples/walk_alone CAPTURE [ROUNDS=3]
use causeway_scanner::analysis::causal::graph::Graph;
use causeway_scanner::analysis::causal::why::TokenSource;
use causeway_scanner::export::parquet::GROUP_ROWS;
use causeway_scanner::facts::model::Timeline;
use causeway_scanner::read::capture::Capture;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(path), rounds) = (args.next(), args.next()) else {
        eprintln!("usage: walk_alone CAPTURE [ROUNDS=3]");
        return ExitCode::from(2);
    };
    let Ok(rounds) = rounds.map_or(Ok(3), |r| r.parse::<usize>()) else {
        eprintln!("walk_alone: ROUNDS is a number");
        return ExitCode::from(2);
    };
    let cap = match Capture::open(std::path::Path::new(&path)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("walk_alone: {e}");
            return ExitCode::from(2);
        }
    };
    let rings = match cap.rings() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("walk_alone: {e}");
            return ExitCode::from(2);
        }
    };
    let t = Timeline::build(&rings);
    let tokens = TokenSource::of(&rings);
    tokens.read_all_and_release(&cap);
    for _ in 0..rounds {
        let t0 = std::time::Instant::now();
        let mut edges = 0usize;
        for (k, p) in t.processes.iter().enumerate() {
            let mut take = |run: Vec<_>, _absent: Vec<String>| edges += run.len();
            // The Parquet export's runs: a row group of edges at a time.
            Graph::edges_streamed(p, tokens.get(k), GROUP_ROWS, &mut take);
        }
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        println!("walk: {ms:.1} ms, {edges} edges");
    }
    ExitCode::SUCCESS
}
