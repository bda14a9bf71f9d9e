//! Hot-path cost per intercepted call, end to end through LD_PRELOAD: `ci/build/pressure` (threads
//! calling `cuStreamQuery` on the driver double) bare and under the release shim, per level (2: hooked,
//! not recorded; 4: recorded), per policy (drop, overwrite), on 1 and 16 threads; arms interleaved
//! round by round, each shim arm paired with the bare run of its round. Prints min/median/max of the
//! added nanoseconds per call (per thread: threads × wall ÷ calls) and the shim's drops.
//!
//!     make -C ci && cargo build --release -p causeway-shim -p causeway-cli
//!     cargo bench -p causeway-itests --bench hotpath       # CAUSEWAY_BENCH_ROUNDS=7 for more rounds
//!
//! CAUSEWAY_SHIM, CAUSEWAY_CLI and CAUSEWAY_ROOT (the repository, for ci/build) point a carried
//! binary at other paths.
//!
//! A custom harness (not divan) because every measurement is a separate process: the shim's state is
//! per process and decided by its environment.

use std::path::{Path, PathBuf};
use std::process::Command;

const CALLS: u64 = 1_000_000;

struct Arm {
    name: String,
    level: Option<u8>,
    policy: &'static str,
    threads: u64,
}

/// The repository (for ci/build): $CAUSEWAY_ROOT, else where this crate was built (the bench binary
/// can be carried to another machine, e.g. one with a GPU but no cargo).
fn root() -> PathBuf {
    std::env::var_os("CAUSEWAY_ROOT").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
        PathBuf::from,
    )
}

/// A built artifact: $VAR, else target/release/NAME.
fn artifact(var: &str, name: &str) -> PathBuf {
    std::env::var_os(var).map_or_else(|| root().join("target/release").join(name), PathBuf::from)
}

/// Nanoseconds per call per thread of one run, and the capture's dropped count (shim arms).
fn run(arm: &Arm, shim: &Path, out: &Path) -> Result<(f64, u64), String> {
    let prog = root().join("ci/build/pressure");
    let mut cmd = Command::new(&prog);
    cmd.arg(arm.threads.to_string())
        .arg((CALLS / arm.threads).to_string())
        .env("LD_LIBRARY_PATH", root().join("ci/build"));
    let cap = out.join(&arm.name);
    if let Some(level) = arm.level {
        std::fs::create_dir_all(&cap).map_err(|e| e.to_string())?;
        cmd.env("LD_PRELOAD", shim)
            .env("CAUSEWAY_OUT", &cap)
            .env("CAUSEWAY_LEVEL", level.to_string())
            .env("CAUSEWAY_RING_MB", "256")
            .env("CAUSEWAY_POLICY", arm.policy);
    }
    let o = cmd
        .output()
        .map_err(|e| format!("{}: {e}", prog.display()))?;
    let text = String::from_utf8_lossy(&o.stdout);
    if !o.status.success() {
        return Err(format!(
            "{} failed: {}",
            arm.name,
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let field = |k: &str| -> Option<f64> {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .and_then(|v| v.parse().ok())
    };
    let (Some(calls), Some(secs)) = (field("calls="), field("seconds=")) else {
        return Err(format!("{}: no result line in {text:?}", arm.name));
    };
    let ns = arm.threads as f64 * secs * 1e9 / calls;
    let mut dropped = 0;
    if arm.level.is_some() {
        let cli = artifact("CAUSEWAY_CLI", "causeway");
        let r = Command::new(&cli)
            .args(["report", "--json"])
            .arg(&cap)
            .output()
            .map_err(|e| format!("{}: {e}", cli.display()))?;
        let v: serde_json::Value =
            serde_json::from_slice(&r.stdout).map_err(|e| format!("report --json: {e}"))?;
        dropped = v["processes"].as_array().map_or(0, |p| {
            p.iter().map(|p| p["dropped"].as_u64().unwrap_or(0)).sum()
        });
        let _ = std::fs::remove_dir_all(&cap);
    }
    Ok((ns, dropped))
}

fn mmm(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would pass nothing: run only for bench.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let shim = artifact("CAUSEWAY_SHIM", "libcauseway.so");
    let cli = artifact("CAUSEWAY_CLI", "causeway");
    let prog = root().join("ci/build/pressure");
    if !shim.exists() || !prog.exists() || !cli.exists() {
        eprintln!(
            "hotpath bench: needs {}, {} and {}: run `make -C ci` and \
             `cargo build --release -p causeway-shim -p causeway-cli` first \
             (or set CAUSEWAY_SHIM, CAUSEWAY_CLI, CAUSEWAY_ROOT)",
            shim.display(),
            prog.display(),
            cli.display()
        );
        std::process::exit(2);
    }
    let rounds: usize = std::env::var("CAUSEWAY_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(5);
    let out = std::env::temp_dir().join(format!("causeway-bench-hotpath-{}", std::process::id()));
    let mut arms = Vec::new();
    for threads in [1, 16] {
        arms.push(Arm {
            name: format!("bare t={threads}"),
            level: None,
            policy: "drop",
            threads,
        });
        for (level, policy) in [(2, "drop"), (4, "drop"), (4, "overwrite")] {
            arms.push(Arm {
                name: format!("level {level} {policy} t={threads}"),
                level: Some(level),
                policy,
                threads,
            });
        }
    }
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); arms.len()];
    let mut drops = vec![0u64; arms.len()];
    for r in 0..rounds {
        // Rotate the order each round so drift hits every arm alike.
        for k in 0..arms.len() {
            let i = (k + r) % arms.len();
            match run(&arms[i], &shim, &out) {
                Ok((v, d)) => {
                    ns[i].push(v);
                    drops[i] += d;
                }
                Err(e) => {
                    eprintln!("hotpath bench: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    println!(
        "hotpath: {CALLS} cuStreamQuery calls per run on the driver double, {rounds} rounds; ns per call per thread"
    );
    println!(
        "{:<26} {:>24} {:>30} {:>8}",
        "arm", "min / median / max", "added vs bare (paired)", "dropped"
    );
    for (i, a) in arms.iter().enumerate() {
        let (lo, md, hi) = mmm(ns[i].clone());
        let bare = arms
            .iter()
            .position(|b| b.level.is_none() && b.threads == a.threads);
        let added = match bare {
            Some(b) if b != i => {
                let (alo, amd, ahi) = mmm(ns[i].iter().zip(&ns[b]).map(|(x, y)| x - y).collect());
                format!("{alo:.1} / {amd:.1} / {ahi:.1}")
            }
            _ => "-".into(),
        };
        println!(
            "{:<26} {:>24} {:>30} {:>8}",
            a.name,
            format!("{lo:.1} / {md:.1} / {hi:.1}"),
            added,
            drops[i]
        );
    }
}
