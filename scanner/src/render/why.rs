//! `causeway why` as text: the answer (target, late against its baseline, cause, completeness,
//! phases) first, then the critical chain, one link per line.

use crate::analysis::causal::why::Why;
use std::fmt::Write;

/// `causeway why` as text: the answer first, then the chain, one link per line.
pub fn render(w: &Why) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "why: {} (process {})", w.target, w.pid);
    match w.late_ns {
        Some(l) => {
            let _ = writeln!(out, "late: {} ({})", signed_duration(l), w.baseline);
        }
        None => {
            let _ = writeln!(
                out,
                "late: unknown ({})",
                if w.baseline.is_empty() {
                    "no baseline"
                } else {
                    &w.baseline
                }
            );
        }
    }
    let _ = writeln!(out, "cause: {}: {}", w.cause, w.detail);
    let _ = writeln!(
        out,
        "complete: {}{}",
        if w.complete { "yes" } else { "no" },
        if w.complete {
            ""
        } else {
            " (a record the chain needs is not in the capture)"
        }
    );
    let ph = &w.phases;
    let t = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let _ = writeln!(
        out,
        "phases (host ns): issue {}  queued {}  submitted {}  start {}  end {}",
        t(ph.issue_ns),
        t(ph.queued_ns),
        t(ph.submitted_ns),
        t(ph.start_ns),
        t(ph.end_ns)
    );
    if w.chain.is_empty() {
        let _ = writeln!(out, "chain: none (no predecessor in the capture)");
    } else {
        let _ = writeln!(
            out,
            "chain (the target first, each line what the one above waited for):"
        );
        for (k, l) in w.chain.iter().enumerate() {
            let conf = l.confidence.map_or(String::new(), |c| format!(" {c:.2}"));
            let _ = writeln!(
                out,
                "  {:>2}. {:<14} {:<9}{conf} delay {:>10}  {}",
                k + 1,
                l.edge,
                l.evidence,
                signed_duration(l.delay_ns),
                l.what
            );
        }
    }
    let _ = writeln!(
        out,
        "scope: {} (chains end at the process without work tokens)",
        w.scope
    );
    out
}

/// A signed duration for `why` (delays can be negative: work that started before its release).
fn signed_duration(ns: i64) -> String {
    let a = ns.unsigned_abs();
    let s = if a >= 1_000_000_000 {
        format!("{:.2} s", a as f64 / 1e9)
    } else if a >= 1_000_000 {
        format!("{:.2} ms", a as f64 / 1e6)
    } else if a >= 1_000 {
        format!("{:.2} us", a as f64 / 1e3)
    } else {
        format!("{a} ns")
    };
    if ns < 0 {
        format!("-{s}")
    } else {
        s
    }
}
