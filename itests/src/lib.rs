//! Helpers for the end-to-end tests: where the built shim, CLI and C test programs are, running a program
//! bare and under the shim, and reading a capture back through `causeway report --json`.
//!
//! The tests need `cargo build --workspace` (for `libcauseway.so` and `causeway`) and `make -C ci` (for
//! the doubles) first; `ci/test.sh` does both. A missing artefact fails the test with a message saying so.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"))
}

fn must_exist(p: PathBuf, how: &str) -> PathBuf {
    assert!(p.exists(), "{} is missing: {how}", p.display());
    p
}

pub fn shim() -> PathBuf {
    must_exist(
        target_dir().join("debug/libcauseway.so"),
        "run `cargo build --workspace` (ci/test.sh does)",
    )
}

pub fn cli() -> PathBuf {
    must_exist(
        target_dir().join("debug/causeway"),
        "run `cargo build --workspace` (ci/test.sh does)",
    )
}

pub fn ci_build() -> PathBuf {
    repo().join("ci/build")
}

pub fn prog(name: &str) -> PathBuf {
    must_exist(ci_build().join(name), "run `make -C ci` (ci/test.sh does)")
}

/// A fresh empty directory under the target dir (kept after the test for inspection).
pub fn scratch(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = target_dir().join("itests").join(format!(
        "{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// A command for one of the C programs with the doubles on the library path.
pub fn command(name: &str, args: &[&str]) -> Command {
    let mut c = Command::new(prog(name));
    c.args(args)
        .env("LD_LIBRARY_PATH", ci_build())
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::null());
    for (k, _) in std::env::vars() {
        if k.starts_with("CAUSEWAY_") || k == "NVTX_INJECTION64_PATH" {
            c.env_remove(k);
        }
    }
    c
}

/// Runs `c` bare.
pub fn bare(mut c: Command) -> Output {
    c.output().expect("spawn")
}

/// Runs `c` with the shim preloaded at `level`, writing into a fresh capture directory. Rings are
/// 16 MiB (262 144 entries, enough for every test program) unless `extra` says otherwise: kept
/// captures of the default 64 MiB, reserved on disk, would fill a CI disk.
pub fn traced(mut c: Command, level: u8, extra: &[(&str, &str)]) -> (Output, PathBuf) {
    let dir = scratch("cap");
    c.env("LD_PRELOAD", shim())
        .env("CAUSEWAY_OUT", &dir)
        .env("CAUSEWAY_LEVEL", level.to_string())
        .env("CAUSEWAY_RING_MB", "16");
    for (k, v) in extra {
        c.env(k, v);
    }
    (c.output().expect("spawn"), dir)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `causeway report --json` on a capture, parsed.
pub fn report(capture: &Path) -> Value {
    let o = Command::new(cli())
        .arg("report")
        .arg("--json")
        .arg(capture)
        .output()
        .expect("spawn causeway");
    assert!(o.status.success(), "causeway report failed: {}", stderr(&o));
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("report is not JSON ({e}): {}", stdout(&o)))
}

/// `causeway export --format graph` of a capture (the causal graph as JSON), written beside it.
pub fn graph_export(capture: &Path) -> Value {
    let g = capture.with_extension("graph.json");
    let o = Command::new(cli())
        .args(["export", "--format", "graph", "--force", "-o"])
        .arg(&g)
        .arg(capture)
        .output()
        .expect("spawn causeway");
    assert!(o.status.success(), "causeway export failed: {}", stderr(&o));
    serde_json::from_slice(&std::fs::read(&g).expect("the graph export"))
        .unwrap_or_else(|e| panic!("the graph export is not JSON ({e})"))
}

/// Calls of API `name` in a report (0 if absent).
pub fn calls(r: &Value, name: &str) -> u64 {
    field(r, "apis", name, "calls")
}

pub fn errors(r: &Value, name: &str) -> u64 {
    field(r, "apis", name, "errors")
}

/// Launches of kernel `name` in a report (0 if absent).
pub fn launches(r: &Value, name: &str) -> u64 {
    field(r, "kernels", name, "launches")
}

fn field(r: &Value, table: &str, name: &str, key: &str) -> u64 {
    r[table]
        .as_array()
        .unwrap_or_else(|| panic!("report has no `{table}` array: {r}"))
        .iter()
        .find(|row| row["name"] == name)
        .map(|row| {
            row[key]
                .as_u64()
                .unwrap_or_else(|| panic!("{table}.{name}.{key} is not a count: {row}"))
        })
        .unwrap_or(0)
}

/// Sum of a per-process field over all processes.
pub fn process_sum(r: &Value, key: &str) -> u64 {
    r["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .map(|p| p[key].as_u64().unwrap_or(0))
        .sum()
}

/// The "name=count" lines a double printed after `--- <title> counters`, as a sorted list.
pub fn counters(out: &str) -> Vec<String> {
    let start = out.find("--- driver counters").unwrap_or(out.len());
    out[start..]
        .lines()
        .filter(|l| l.contains('=') && !l.starts_with("---"))
        .map(str::to_owned)
        .collect()
}

pub fn counter(out: &str, name: &str) -> u64 {
    let prefix = format!("{name}=");
    counters(out)
        .iter()
        .find_map(|l| {
            l.strip_prefix(&prefix)
                .map(|v| v.trim().parse().unwrap_or(0))
        })
        .unwrap_or(0)
}
