//! The human form of a report: a few aligned plain-text tables. Kept apart from `report` so the model
//! stays free of presentation choices (widths, units, truncation).

use crate::report::Report;
use std::fmt::Write;

/// Longest name shown in a table cell; kernel names are often long mangled C++ symbols.
const NAME_MAX: usize = 72;

#[derive(Clone, Copy)]
enum Align {
    Left,
    Right,
}

struct Table {
    heads: Vec<(&'static str, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(heads: &[(&'static str, Align)]) -> Table {
        Table {
            heads: heads.to_vec(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn write(&self, out: &mut String) {
        let width = |i: usize| {
            self.rows
                .iter()
                .map(|r| r[i].chars().count())
                .chain([self.heads[i].0.len()])
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.heads.len()).map(width).collect();
        let line = |cells: Vec<&str>, out: &mut String| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                let pad = widths[i].saturating_sub(c.chars().count());
                match self.heads[i].1 {
                    Align::Left => {
                        s.push_str(c);
                        s.push_str(&" ".repeat(pad));
                    }
                    Align::Right => {
                        s.push_str(&" ".repeat(pad));
                        s.push_str(c);
                    }
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(self.heads.iter().map(|h| h.0).collect(), out);
        for r in &self.rows {
            line(r.iter().map(String::as_str).collect(), out);
        }
    }
}

/// A duration for people: ns, us, ms or s with three significant-ish digits.
pub fn fmt_ns(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.2} us", f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", f / 1e6)
    } else {
        format!("{:.2} s", f / 1e9)
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() <= NAME_MAX {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(NAME_MAX - 1).collect();
        c.push('…');
        c
    }
}

fn domain(d: &Option<String>) -> String {
    d.as_deref().unwrap_or("(default)").to_string()
}

/// The report as text for a terminal (warnings are not included: the CLI prints them on stderr).
pub fn render(r: &Report) -> String {
    use Align::*;
    let mut out = String::new();
    let t = &r.totals;
    let _ = writeln!(
        out,
        "capture {}: {} process{}, {} entries, {} calls, {} kernel launches",
        r.capture,
        r.processes.len(),
        if r.processes.len() == 1 { "" } else { "es" },
        t.entries,
        t.calls,
        t.launches
    );
    if t.graph_launches > 0 || t.captured_launches > 0 {
        // Only when graphs are in play: otherwise launches are simply launch calls.
        let direct: u64 = r.kernels.iter().map(|k| k.direct).sum();
        let via_graph: u64 = r.kernels.iter().map(|k| k.via_graph).sum();
        let _ = write!(
            out,
            "  launches are kernel executions: {direct} direct + {via_graph} as nodes of {} graph launch{}",
            t.graph_launches,
            if t.graph_launches == 1 { "" } else { "es" }
        );
        if t.graph_launches_unresolved > 0 {
            let _ = write!(
                out,
                " ({} of them with unknown kernels, not counted)",
                t.graph_launches_unresolved
            );
        }
        let _ = writeln!(
            out,
            "; {} launch{} captured into graphs ran nothing",
            t.captured_launches,
            if t.captured_launches == 1 { "" } else { "es" }
        );
    }

    out.push_str("\nPROCESSES\n");
    let mut p = Table::new(&[
        ("pid", Right),
        ("ppid", Right),
        ("level", Right),
        ("policy", Left),
        ("threads", Right),
        ("entries", Right),
        ("dropped", Right),
        ("torn", Right),
        ("open", Right),
        ("overwritten", Right),
        ("state", Left),
        ("exe", Left),
    ]);
    for pr in &r.processes {
        let mut state = Vec::new();
        if pr.disabled {
            state.push("disabled");
        }
        if pr.closed {
            state.push("closed");
        }
        if pr.forked {
            state.push("forked");
        }
        p.row(vec![
            pr.pid.to_string(),
            pr.ppid.to_string(),
            pr.level.to_string(),
            pr.policy.clone(),
            pr.threads.to_string(),
            pr.entries.to_string(),
            pr.dropped.to_string(),
            pr.torn.to_string(),
            pr.open.to_string(),
            pr.overwritten.to_string(),
            if state.is_empty() {
                "-".into()
            } else {
                state.join(",")
            },
            clip(&pr.exe),
        ]);
    }
    p.write(&mut out);

    if !r.apis.is_empty() {
        out.push_str("\nAPIS (by total host time)\n");
        let mut a = Table::new(&[
            ("api", Left),
            ("layer", Left),
            ("class", Left),
            ("calls", Right),
            ("errors", Right),
            ("open", Right),
            ("total", Right),
            ("p50", Right),
            ("p99", Right),
            ("max", Right),
            ("error codes", Left),
        ]);
        for s in &r.apis {
            // "35×6" = six calls returned code 35.
            let codes: Vec<String> = s
                .error_codes
                .iter()
                .map(|(c, n)| format!("{c}×{n}"))
                .collect();
            a.row(vec![
                clip(&s.name),
                s.layer.clone(),
                s.class.clone(),
                s.calls.to_string(),
                s.errors.to_string(),
                s.open.to_string(),
                fmt_ns(s.total_ns),
                fmt_ns(s.p50_ns),
                fmt_ns(s.p99_ns),
                fmt_ns(s.max_ns),
                codes.join(" "),
            ]);
        }
        a.write(&mut out);
    }

    if !r.kernels.is_empty() {
        // launches = direct + graph: executions, as a profiler counts them; captured launches added
        // graph nodes and executed nothing.
        out.push_str("\nKERNELS (by launches)\n");
        let mut k = Table::new(&[
            ("launches", Right),
            ("direct", Right),
            ("graph", Right),
            ("captured", Right),
            ("failed", Right),
            ("open", Right),
            ("kernel", Left),
        ]);
        for s in &r.kernels {
            k.row(vec![
                s.launches.to_string(),
                s.direct.to_string(),
                s.via_graph.to_string(),
                s.captured.to_string(),
                s.failed.to_string(),
                s.open.to_string(),
                clip(&s.name),
            ]);
        }
        k.write(&mut out);
    }

    if !r.ranges.is_empty() {
        out.push_str("\nNVTX RANGES (by total time)\n");
        let mut g = Table::new(&[
            ("range", Left),
            ("domain", Left),
            ("count", Right),
            ("open", Right),
            ("total", Right),
            ("max", Right),
        ]);
        for s in &r.ranges {
            g.row(vec![
                clip(&s.name),
                domain(&s.domain),
                s.count.to_string(),
                s.open.to_string(),
                fmt_ns(s.total_ns),
                fmt_ns(s.max_ns),
            ]);
        }
        g.write(&mut out);
    }

    if !r.marks.is_empty() {
        out.push_str("\nNVTX MARKS\n");
        let mut m = Table::new(&[("mark", Left), ("domain", Left), ("count", Right)]);
        for s in &r.marks {
            m.row(vec![clip(&s.name), domain(&s.domain), s.count.to_string()]);
        }
        m.write(&mut out);
    }

    if !r.unmatched_lookups.is_empty() {
        out.push_str("
UNTRACED DRIVER ENTRY POINTS (cuGetProcAddress answers no hook matched; their calls are not in the capture)
");
        let mut u = Table::new(&[("symbol", Left), ("lookups", Right)]);
        for s in &r.unmatched_lookups {
            u.row(vec![clip(&s.name), s.count.to_string()]);
        }
        u.write(&mut out);
    }
    out
}
