//! Writes a synthetic capture for scanner benchmarks (see `benches/support/synth.rs` for its shape).
//!
//!     cargo run --release -p causeway-scanner --example synth_capture -- DIR ENTRIES [THREADS] [CLOCK]
//!
//! CLOCK is `tsc` (the default: what the shim writes on an x86 host with an invariant TSC) or
//! `monotonic` (what it writes elsewhere, or with `CAUSEWAY_CLOCK=monotonic`).

#[path = "../benches/support/synth.rs"]
mod synth;

use causeway_ring::layout::ClockKind;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: synth_capture DIR ENTRIES [THREADS] [tsc|monotonic]");
        std::process::exit(2);
    }
    let dir = std::path::PathBuf::from(&args[1]);
    let Ok(n) = args[2].parse::<u64>() else {
        eprintln!("synth_capture: ENTRIES must be a number, not {:?}", args[2]);
        std::process::exit(2);
    };
    let threads = match args.get(3).map(|t| t.parse::<u32>()) {
        None => 4,
        Some(Ok(t)) if t > 0 => t,
        Some(_) => {
            eprintln!("synth_capture: THREADS must be a positive number");
            std::process::exit(2);
        }
    };
    let clock = match args.get(4).map(String::as_str) {
        None | Some("tsc") => ClockKind::Tsc,
        Some("monotonic") => ClockKind::Monotonic,
        Some(c) => {
            eprintln!("synth_capture: CLOCK must be tsc or monotonic, not {c:?}");
            std::process::exit(2);
        }
    };
    let (path, written, ops) = synth::write(&dir, n, threads, clock);
    println!("{written} entries ({ops} ops) in {}", path.display());
}
