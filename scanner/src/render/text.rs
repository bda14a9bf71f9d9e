//! The human form of a report: a few aligned plain-text tables. Kept apart from `report` so the model
//! stays free of presentation choices (widths, units, truncation).

use crate::analysis::report::Report;
use crate::analysis::report::{
    CONVERSION_ANCHORS, CONVERSION_CALLBACK, CONVERSION_MIXED, CONVERSION_NONE,
};
use std::fmt::Write;

/// Longest name shown in a table cell; kernel names are often long mangled C++ symbols.
const NAME_MAX: usize = 72;

/// How a table column aligns.
#[derive(Clone, Copy)]
pub enum Align {
    Left,
    Right,
}

/// A text table: cells escaped, columns sized to their widest cell.
pub struct Table {
    heads: Vec<(&'static str, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(heads: &[(&'static str, Align)]) -> Table {
        Table {
            heads: heads.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Cells are escaped here (`escape_cell`): they hold names and texts from the traced program.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(
            cells
                .into_iter()
                .map(|c| match escape_cell(&c) {
                    std::borrow::Cow::Borrowed(_) => c,
                    std::borrow::Cow::Owned(e) => e,
                })
                .collect(),
        );
    }

    pub fn write(&self, out: &mut String) {
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

pub use crate::util::escape::{escape, escape_cell};

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

/// A signed duration (a latency that may be negative) for people.
pub fn fmt_signed_ns(ns: i64) -> String {
    let s = fmt_ns(ns.unsigned_abs());
    if ns < 0 {
        format!("-{s}")
    } else {
        s
    }
}

/// A byte count for people: B, KiB, MiB or GiB.
pub fn fmt_bytes(b: u64) -> String {
    let f = b as f64;
    if b < 1 << 10 {
        format!("{b} B")
    } else if b < 1 << 20 {
        format!("{:.2} KiB", f / 1024.0)
    } else if b < 1 << 30 {
        format!("{:.2} MiB", f / (1024.0 * 1024.0))
    } else {
        format!("{:.2} GiB", f / (1024.0 * 1024.0 * 1024.0))
    }
}

fn opt_ns(v: Option<i64>) -> String {
    v.map_or_else(|| "-".into(), fmt_signed_ns)
}

/// Shortened names for one table column, never merging two rows: each name clipped to `NAME_MAX`;
/// names whose clipped forms collide show their start, then the part where they differ from the
/// others of their group (two kernel templates that share 200 characters differ somewhere inside),
/// and, if even those collide, are shown whole.
pub(crate) fn clip_distinct<'a>(
    names: impl Iterator<Item = &'a str>,
) -> impl Fn(&str) -> String + 'a {
    use std::collections::{HashMap, HashSet};
    let names: Vec<&str> = {
        let mut v: Vec<&str> = names.collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    // The names whose shortened form `f` gives to another name too.
    let clashing = |f: &dyn Fn(&str) -> String, among: &[&'a str]| -> HashSet<&'a str> {
        let mut seen: HashMap<String, Vec<&'a str>> = HashMap::new();
        for &n in among {
            seen.entry(f(n)).or_default().push(n);
        }
        seen.into_values()
            .filter(|v| v.len() > 1)
            .flatten()
            .collect()
    };
    let clash = clashing(&|n: &str| clip(n), &names);
    // For each clashing name: where its group (same clipped form) stops sharing a prefix.
    let mut differs: HashMap<&'a str, usize> = HashMap::new();
    let mut groups: HashMap<String, Vec<&'a str>> = HashMap::new();
    for &n in names.iter().filter(|n| clash.contains(*n)) {
        groups.entry(clip(n)).or_default().push(n);
    }
    for g in groups.values() {
        let chars: Vec<Vec<char>> = g.iter().map(|n| n.chars().collect()).collect();
        let common = (0..)
            .take_while(|&i| {
                chars[0]
                    .get(i)
                    .is_some_and(|c| chars.iter().all(|x| x.get(i) == Some(c)))
            })
            .count();
        for &n in g {
            differs.insert(n, common);
        }
    }
    const HEAD: usize = 24;
    let window = move |n: &str, at: usize| -> String {
        let c: Vec<char> = n.chars().collect();
        if c.len() <= NAME_MAX {
            return n.to_string();
        }
        let from = at.saturating_sub(8).max(HEAD);
        let room = NAME_MAX - HEAD - 1;
        let mut out: String = c[..HEAD].iter().collect();
        out.push('…');
        if c.len() - from <= room {
            out.extend(&c[from..]);
        } else {
            out.extend(&c[from..from + room - 1]);
            out.push('…');
        }
        out
    };
    let shown = |n: &str| window(n, differs.get(n).copied().unwrap_or(0));
    let clashing_names: Vec<&'a str> = names
        .iter()
        .copied()
        .filter(|n| clash.contains(n))
        .collect();
    let whole = clashing(&shown, &clashing_names);
    let differs2 = differs.clone();
    move |n: &str| {
        if whole.contains(n) {
            n.to_string()
        } else if clash.contains(n) {
            window(n, differs2.get(n).copied().unwrap_or(0))
        } else {
            clip(n)
        }
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

/// Executables by base name with their counts, most frequent first: `dash ×4, cc1 ×2, file`.
pub(crate) fn exes_summary<'a>(exes: impl Iterator<Item = &'a str>) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for e in exes {
        let base = e.rsplit('/').next().unwrap_or(e).to_string();
        match counts.iter_mut().find(|c| c.0 == base) {
            Some(c) => c.1 += 1,
            None => counts.push((base, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    counts
        .iter()
        .map(|(e, n)| {
            if *n > 1 {
                format!("{e} ×{n}")
            } else {
                e.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
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

    if t.list_executes > 0 {
        let _ = writeln!(
            out,
            "  Level Zero / Unified Runtime: {} command-list execute{} (or command-buffer enqueues) ran \
             work whose launches are counted once, when appended, however often it ran",
            t.list_executes,
            if t.list_executes == 1 { "" } else { "s" }
        );
    }

    out.push_str("\nPROCESSES\n");
    // Device columns only when some process was recorded with device timing (level 3).
    let device_cols = r
        .processes
        .iter()
        .any(|p| p.backend != "none" || p.device_intervals > 0);
    let mut heads = vec![
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
    ];
    if device_cols {
        heads.extend([
            ("backend", Left),
            ("device", Right),
            ("unassoc", Right),
            ("dev-dropped", Right),
            ("unconv", Right),
        ]);
    }
    heads.extend([("state", Left), ("exe", Left)]);
    let mut p = Table::new(&heads);
    // Processes that recorded nothing are folded into one line after the table (JSON has each).
    let shown: Vec<&crate::analysis::report::Process> = if r.processes.len() > 1 {
        r.processes.iter().filter(|p| !p.recorded_nothing).collect()
    } else {
        r.processes.iter().collect()
    };
    let folded: Vec<&str> = r
        .processes
        .iter()
        .filter(|p| r.processes.len() > 1 && p.recorded_nothing)
        .map(|p| p.exe.as_str())
        .collect();
    for pr in shown {
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
        let mut cells = vec![
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
        ];
        if device_cols {
            cells.extend([
                pr.backend.clone(),
                pr.device_intervals.to_string(),
                pr.unassociated.total.to_string(),
                pr.device_dropped.to_string(),
                pr.unconverted.to_string(),
            ]);
        }
        cells.extend([
            if state.is_empty() {
                "-".into()
            } else {
                state.join(",")
            },
            clip(&pr.exe),
        ]);
        p.row(cells);
    }
    p.write(&mut out);
    if !folded.is_empty() {
        let _ = writeln!(
            out,
            "+ {} process{} that recorded nothing (no call, range or device work): {}",
            folded.len(),
            if folded.len() == 1 { "" } else { "es" },
            exes_summary(folded.iter().copied())
        );
    }

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
        // With device intervals, `device` = executions observed on the device, next to the executions
        // requested.
        let observed = r.kernels.iter().any(|k| k.device_count.is_some());
        out.push_str("\nKERNELS (by launches)\n");
        let mut heads = vec![
            ("launches", Right),
            ("direct", Right),
            ("graph", Right),
            ("captured", Right),
            ("failed", Right),
            ("open", Right),
        ];
        if observed {
            heads.push(("device", Right));
        }
        heads.push(("kernel", Left));
        let mut k = Table::new(&heads);
        let kname = clip_distinct(r.kernels.iter().map(|s| s.name.as_str()));
        for s in &r.kernels {
            let mut cells = vec![
                s.launches.to_string(),
                s.direct.to_string(),
                s.via_graph.to_string(),
                s.captured.to_string(),
                s.failed.to_string(),
                s.open.to_string(),
            ];
            if observed {
                cells.push(s.device_count.unwrap_or(0).to_string());
            }
            cells.push(kname(&s.name));
            k.row(cells);
        }
        k.write(&mut out);
        if observed {
            out.push_str(
                "(launches = executions requested; device = executions observed on the device)\n",
            );
        }
    }

    if r.device.intervals > 0 || device_cols {
        device(r, &mut out);
    }

    if !r.waits.is_empty() {
        waits(r, &mut out);
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
        let rname = clip_distinct(r.ranges.iter().map(|s| s.name.as_str()));
        for s in &r.ranges {
            g.row(vec![
                rname(&s.name),
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

    if !r.nvtx_names.is_empty() {
        out.push_str("\nNVTX NAMES (what the program named through NVTX)\n");
        let mut n = Table::new(&[
            ("pid", Right),
            ("what", Left),
            ("handle", Right),
            ("domain", Left),
            ("name", Left),
        ]);
        for x in &r.nvtx_names {
            // Pointers (streams, events, contexts) in hex; ordinals, categories and threads in decimal.
            let handle = match x.kind {
                "stream" | "event" | "context" | "other" => format!("{:#x}", x.handle),
                _ => x.handle.to_string(),
            };
            // Only categories and resources belong to a domain.
            let dom = match x.kind {
                "category" | "other" => domain(&x.domain),
                _ => x.domain.clone().unwrap_or_else(|| "-".into()),
            };
            n.row(vec![
                x.pid.to_string(),
                x.kind.into(),
                handle,
                dom,
                clip(&x.name),
            ]);
        }
        n.write(&mut out);
    }

    if !r.unmatched_lookups.is_empty() {
        out.push_str(
            "\nUNTRACED ENTRY POINTS (looked up through cuGetProcAddress or dlsym; no hook stands in for \
             them, so their calls are not in the capture)\n",
        );
        let mut u = Table::new(&[("pid", Right), ("symbol", Left), ("lookups", Right)]);
        for p in &r.processes {
            for s in &p.untraced {
                u.row(vec![p.pid.to_string(), clip(&s.name), s.count.to_string()]);
            }
        }
        u.write(&mut out);
    }
    out
}

/// The level-3 section: how device times relate to the host clock, then device time per kernel and per
/// copy kind, each with its spread.
fn device(r: &Report, out: &mut String) {
    use Align::*;
    let d = &r.device;
    let c = &d.clock;
    out.push_str("\nDEVICE (level 3: when the work ran on the device)\n");
    let _ = writeln!(out, "{}", clock_line(r));
    let _ = writeln!(out, "{}", causality_line(r));
    let u = &d.unassociated;
    let _ = writeln!(
        out,
        "intervals: {} ({} tied to their call; {} unassociated: {} no call, {} call not in capture, {} wrong class); {} dropped by the backend",
        d.intervals, d.associated, u.total, u.no_call, u.call_not_in_capture, u.wrong_class, d.dropped
    );
    if d.sample_every > 1 && d.step_sampled {
        let _ = writeln!(
            out,
            "sampled: one in {} steps (outermost NVTX ranges) was timed, every call in it (--sample); intervals count the timed calls only",
            d.sample_every
        );
    } else if d.sample_every > 1 {
        let _ = writeln!(
            out,
            "sampled: one in {} device-work calls per thread was timed (--sample; the program pushed no NVTX range); intervals count the timed calls only",
            d.sample_every
        );
    }
    if d.not_timed > 0 {
        let _ = writeln!(
            out,
            "{} device operations the backend could not time (no interval; counter device_untimed)",
            d.not_timed
        );
    }
    if d.untimed > 0 {
        let _ = writeln!(
            out,
            "{} intervals the backend could not time are counted, without device time or latency",
            d.untimed
        );
    }
    if d.unknown_kind > 0 {
        let _ = writeln!(
            out,
            "{} intervals of a device kind this scanner does not know are not tabulated",
            d.unknown_kind
        );
    }
    if !d.kernels.is_empty() {
        let _ = writeln!(
            out,
            "\nDEVICE KERNELS (by total device time; start = launch→start latency, device start − issuing call's begin{})",
            if c.converted == 0 { "; not measurable: unconverted clock" } else { "" }
        );
        let mut k = Table::new(&[
            ("count", Right),
            ("total", Right),
            ("p50", Right),
            ("p99", Right),
            ("max", Right),
            ("start p50", Right),
            ("start p99", Right),
            ("kernel", Left),
        ]);
        let kname = clip_distinct(d.kernels.iter().map(|s| s.name.as_str()));
        for s in &d.kernels {
            k.row(vec![
                s.count.to_string(),
                fmt_ns(s.total_ns),
                fmt_ns(s.p50_ns),
                fmt_ns(s.p99_ns),
                fmt_ns(s.max_ns),
                opt_ns(s.latency_p50_ns),
                opt_ns(s.latency_p99_ns),
                kname(&s.name),
            ]);
        }
        k.write(out);
    }
    if !d.copies.is_empty() {
        out.push_str("\nDEVICE COPIES AND MEMSETS (by total device time)\n");
        let mut t = Table::new(&[
            ("kind", Left),
            ("count", Right),
            ("bytes", Right),
            ("total", Right),
            ("p50", Right),
            ("p99", Right),
            ("max", Right),
        ]);
        for s in &d.copies {
            t.row(vec![
                s.kind.clone(),
                s.count.to_string(),
                fmt_bytes(s.bytes),
                fmt_ns(s.total_ns),
                fmt_ns(s.p50_ns),
                fmt_ns(s.p99_ns),
                fmt_ns(s.max_ns),
            ]);
        }
        t.write(out);
    }
}

/// How device times were put on the host clock.
pub fn clock_line(r: &Report) -> String {
    let c = &r.device.clock;
    match c.conversion.as_str() {
        CONVERSION_CALLBACK => format!(
            "clock: all {} device intervals put on the host clock by CUPTI's timestamp callback ({CONVERSION_CALLBACK})",
            c.converted
        ),
        CONVERSION_NONE => format!(
            "clock: {CONVERSION_NONE}: the {} device intervals are in the backend's own clock (no timestamp callback); durations only, no start times or latencies",
            c.unconverted
        ),
        CONVERSION_ANCHORS => format!(
            "clock: all {} device intervals converted from device time through {} anchors ({CONVERSION_ANCHORS}); {}",
            c.anchored,
            c.anchors,
            bound_text(c)
        ),
        CONVERSION_MIXED => format!(
            "clock: {CONVERSION_MIXED}: {} device intervals put on the host clock by CUPTI's timestamp callback ({CONVERSION_CALLBACK}), {} through anchors ({CONVERSION_ANCHORS}), {} {CONVERSION_NONE} (durations only)",
            c.converted - c.anchored,
            c.anchored,
            c.unconverted
        ),
        _ => "clock: no device intervals".to_string(),
    }
}

/// The stated error of anchored conversions: "bound ±p50 (max ±max)", the anchors' half-widths and
/// the device clock's drift.
fn bound_text(c: &crate::analysis::report::DeviceClock) -> String {
    let (Some(p50), Some(max)) = (c.bound_ns_p50, c.bound_ns_max) else {
        return "no bound (no interval converted)".into();
    };
    let mut s = format!("bound ±{} median, ±{} max", fmt_ns(p50), fmt_ns(max));
    if let (Some(lo), Some(hi)) = (c.anchor_half_width_ns_min, c.anchor_half_width_ns_max) {
        let _ = write!(s, " (anchor ±{}..±{}", fmt_ns(lo), fmt_ns(hi));
        match c.drift_ppb_median {
            Some(ppb) => {
                let _ = write!(
                    s,
                    ", device clock drift {:+.3} ppm measured)",
                    ppb as f64 / 1000.0
                );
            }
            None => s.push_str(", drift not measured: 100 ppm assumed)"),
        }
    }
    if c.drift_assumed > 0 {
        let _ = write!(s, "; {} intervals with assumed drift", c.drift_assumed);
    }
    s
}

/// The causality check: the measured lower bound on the clock conversion's error.
pub fn causality_line(r: &Report) -> String {
    let c = &r.device.clock;
    if let Some(min) = c.min_call_end_to_device_end_ns {
        let mut s = format!(
            "causality: {} of {} intervals end before their call returned (the backend's end event is recorded after it); min call end→device end {}",
            c.end_before_call_end,
            c.end_checked,
            fmt_signed_ns(min)
        );
        if min < 0 {
            let _ = write!(
                s,
                ": the clock conversion is off by at least {}",
                fmt_ns(min.unsigned_abs())
            );
        }
        return s;
    }
    match c.min_launch_to_start_ns {
        None => "causality: not checked (no device interval both tied to its call and on the host clock)"
            .to_string(),
        Some(min) => {
            let mut s = format!(
                "causality: {} of {} intervals start before their call; min launch→start {}",
                c.before_call,
                c.checked,
                fmt_signed_ns(min)
            );
            if min < 0 {
                let _ = write!(
                    s,
                    ": the clock conversion is off by at least {}",
                    fmt_ns(min.unsigned_abs())
                );
            }
            s
        }
    }
}

/// Host waits: per sync API, how long the host blocked and for what device work; then the longest
/// individual waits with the kernels they waited for.
fn waits(r: &Report, out: &mut String) {
    use Align::*;
    out.push_str("\nHOST WAITS (by total blocked time; waited = last device end − sync begin, tail = sync end − last device end)\n");
    let mut t = Table::new(&[
        ("wait", Left),
        ("count", Right),
        ("empty", Right),
        ("blocked", Right),
        ("p50", Right),
        ("p99", Right),
        ("items", Right),
        ("dev-timed", Right),
        ("waited p50", Right),
        ("tail p50", Right),
    ]);
    for w in &r.waits {
        t.row(vec![
            clip(&w.name),
            w.count.to_string(),
            w.empty.to_string(),
            fmt_ns(w.blocked_total_ns),
            fmt_ns(w.blocked_p50_ns),
            fmt_ns(w.blocked_p99_ns),
            w.work_items.to_string(),
            w.with_device_times.to_string(),
            w.waited_p50_ns.map_or_else(|| "-".into(), fmt_ns),
            opt_ns(w.tail_p50_ns),
        ]);
    }
    t.write(out);
    if r.longest_waits.is_empty() {
        return;
    }
    out.push_str("\nLONGEST WAITS\n");
    let mut l = Table::new(&[
        ("blocked", Right),
        ("items", Right),
        ("waited", Right),
        ("tail", Right),
        ("pid", Right),
        ("tid", Right),
        ("wait", Left),
        ("kernels", Left),
    ]);
    for w in &r.longest_waits {
        l.row(vec![
            fmt_ns(w.blocked_ns),
            w.work_items.to_string(),
            w.waited_on_device_ns.map_or_else(|| "-".into(), fmt_ns),
            opt_ns(w.tail_ns),
            w.pid.to_string(),
            w.tid.to_string(),
            clip(&w.name),
            if w.kernels.is_empty() {
                "-".into()
            } else {
                clip(&w.kernels.join(", "))
            },
        ]);
    }
    l.write(out);
}

// ---- steps and gaps (`causeway report --steps`, `--gaps`) ------------------------------------------

/// The `--steps` / `--gaps` views as text.
pub fn render_views(v: &crate::analysis::views::Views) -> String {
    let mut out = format!("capture {}\n", v.capture);
    // Processes with nothing to show (a shell, a compiler) are named on one line per reason; the JSON
    // form has each of them in full.
    let steps = v.steps.as_deref().unwrap_or_default();
    let gaps = v.gaps.as_deref().unwrap_or_default();
    let many = steps.len().max(gaps.len()) > 1;
    let mut quiet: Vec<(String, Vec<String>)> = Vec::new();
    let mut hush = |why: String, _pid: u32, exe: &str| match quiet.iter_mut().find(|q| q.0 == why) {
        Some(q) => q.1.push(exe.to_string()),
        None => quiet.push((why, vec![exe.to_string()])),
    };
    for p in steps {
        if many && p.selection.is_none() {
            let why = p.notes.first().cloned().unwrap_or_default();
            hush(why, p.pid, &p.exe);
        } else {
            out.push('\n');
            out.push_str(&render_steps(p));
        }
    }
    for p in gaps {
        if many && !p.device_timed {
            hush(
                "no launch gaps: no device spans on the host clock".into(),
                p.pid,
                &p.exe,
            );
        } else {
            out.push('\n');
            out.push_str(&render_gaps(p));
        }
    }
    if !quiet.is_empty() {
        out.push('\n');
    }
    for (why, who) in quiet {
        let _ = writeln!(
            out,
            "{why}: {} process{}: {}",
            who.len(),
            if who.len() == 1 { "" } else { "es" },
            exes_summary(who.iter().map(String::as_str))
        );
    }
    out
}

fn ratio(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |r| format!("{r:.2}"))
}

fn range_name(name: &str, d: &Option<String>) -> String {
    match d {
        Some(d) => format!("\"{}\" (domain {})", clip(name), clip(d)),
        None => format!("\"{}\"", clip(name)),
    }
}

/// One process's steps: the selection, the figures across steps, regions, the slowest steps and the
/// shape of the step-time distribution.
pub fn render_steps(p: &crate::analysis::steps::ProcessSteps) -> String {
    use crate::analysis::steps::Stats;
    use Align::*;
    let mut out = String::new();
    let _ = writeln!(out, "STEPS  process {} ({})", p.pid, p.exe);
    let Some(sel) = &p.selection else {
        for n in &p.notes {
            let _ = writeln!(out, "  {n}");
        }
        return out;
    };
    let _ = writeln!(
        out,
        "  {} step{}: {}",
        p.steps.len(),
        if p.steps.len() == 1 { "" } else { "s" },
        sel.reason
    );
    let Some(s) = &p.summary else {
        for n in &p.notes {
            let _ = writeln!(out, "  {n}");
        }
        return out;
    };
    if let Some(d) = &s.device {
        let _ = writeln!(
            out,
            "  device ({}): unions of device spans clipped to each step; each span edge within ±{} (each figure within ±{} when the spans share their error)",
            p.backend,
            fmt_ns(d.bound_ns),
            fmt_ns(2 * d.bound_ns)
        );
    }
    for n in &p.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    out.push('\n');
    let mut t = Table::new(&[
        ("per step", Left),
        ("min", Right),
        ("median", Right),
        ("p99", Right),
        ("max", Right),
        ("total", Right),
    ]);
    let row = |t: &mut Table, name: &str, st: &Stats| {
        t.row(vec![
            name.to_string(),
            fmt_ns(st.min),
            fmt_ns(st.median),
            fmt_ns(st.p99),
            fmt_ns(st.max),
            fmt_ns(st.total),
        ])
    };
    row(&mut t, "wall", &s.wall_ns);
    row(&mut t, "host in launch calls", &s.launch_ns);
    row(&mut t, "host in syncs", &s.sync_ns);
    row(&mut t, "host other", &s.other_ns);
    if let Some(d) = &s.device {
        row(&mut t, "device busy", &d.busy_ns);
        row(&mut t, "device idle", &d.idle_ns);
        row(&mut t, "copy (memcpy)", &d.copy_ns);
        row(&mut t, "compute (kernels)", &d.compute_ns);
        row(&mut t, "copy ∩ compute", &d.overlap_ns);
        match &d.copy_compute_overlap {
            Some(r) => t.row(vec![
                format!("copy/compute overlap ({} steps)", r.steps),
                format!("{:.2}", r.min),
                format!("{:.2}", r.median),
                format!("{:.2}", r.p99),
                format!("{:.2}", r.max),
                "-".into(),
            ]),
            None => t.row(vec![
                "copy/compute overlap".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]),
        }
    }
    t.write(&mut out);
    if s.device.is_some() {
        out.push_str(
            "  (overlap = |copy ∩ compute| / min(|copy|, |compute|); idle = wall − busy)\n",
        );
    }

    const REGIONS_SHOWN: usize = 20;
    if !p.regions.is_empty() {
        out.push_str(
            "\nREGIONS (NVTX sub-ranges on the step's thread; per-step time, 0 where absent)\n",
        );
        let mut t = Table::new(&[
            ("region", Left),
            ("depth", Right),
            ("steps", Right),
            ("min", Right),
            ("median", Right),
            ("p99", Right),
            ("max", Right),
        ]);
        for r in p.regions.iter().take(REGIONS_SHOWN) {
            t.row(vec![
                range_name(&r.name, &r.domain),
                r.depth.to_string(),
                r.steps.to_string(),
                fmt_ns(r.ns.min),
                fmt_ns(r.ns.median),
                fmt_ns(r.ns.p99),
                fmt_ns(r.ns.max),
            ]);
        }
        t.row(vec![
            "(outside any sub-range)".into(),
            "-".into(),
            "-".into(),
            fmt_ns(s.outside_regions_ns.min),
            fmt_ns(s.outside_regions_ns.median),
            fmt_ns(s.outside_regions_ns.p99),
            fmt_ns(s.outside_regions_ns.max),
        ]);
        t.write(&mut out);
        if p.regions.len() > REGIONS_SHOWN {
            let _ = writeln!(
                out,
                "  … {} more in --json",
                p.regions.len() - REGIONS_SHOWN
            );
        }
    }

    let origin = p.steps.first().map_or(0, |s| s.begin_ns);
    out.push_str("\nSLOWEST STEPS (begin: from the first step's begin)\n");
    let mut heads = vec![
        ("step", Right),
        ("tid", Right),
        ("begin", Right),
        ("wall", Right),
        ("launch", Right),
        ("sync", Right),
        ("other", Right),
    ];
    if s.device.is_some() {
        heads.extend([
            ("busy", Right),
            ("idle", Right),
            ("copy", Right),
            ("compute", Right),
            ("overlap", Right),
        ]);
    }
    heads.push(("largest region", Left));
    let mut t = Table::new(&heads);
    for &i in &p.slowest {
        let st = &p.steps[i];
        let mut cells = vec![
            st.index.to_string(),
            st.tid.to_string(),
            format!("+{}", fmt_ns(st.begin_ns - origin)),
            fmt_ns(st.wall_ns),
            fmt_ns(st.launch_ns),
            fmt_ns(st.sync_ns),
            fmt_ns(st.other_ns),
        ];
        if let Some(d) = &st.device {
            cells.extend([
                fmt_ns(d.busy_ns),
                fmt_ns(d.idle_ns),
                fmt_ns(d.copy_ns),
                fmt_ns(d.compute_ns),
                ratio(d.copy_compute_overlap),
            ]);
        } else if s.device.is_some() {
            cells.extend(std::iter::repeat_n("-".to_string(), 5));
        }
        cells.push(
            st.regions
                .iter()
                .filter(|r| r.depth == 1)
                .max_by_key(|r| r.ns)
                .map_or_else(
                    || "-".into(),
                    |r| format!("{} {}", clip(&r.name), fmt_ns(r.ns)),
                ),
        );
        t.row(cells);
    }
    t.write(&mut out);
    if !p.causes.is_empty() {
        out.push_str("why (causeway why --step N for the chain):\n");
        for c in &p.causes {
            let _ = writeln!(
                out,
                "  step {}: {}{}: {}",
                c.index,
                c.cause,
                if c.complete { "" } else { " (incomplete)" },
                c.detail
            );
        }
    }

    if let Some(d) = &p.distribution {
        out.push_str("\nSTEP TIME DISTRIBUTION (wall; equal bins from min to max)\n");
        let mut t = Table::new(&[("from", Right), ("to", Right), ("steps", Right), ("", Left)]);
        let most = d.counts.iter().copied().max().unwrap_or(0).max(1);
        for (i, &c) in d.counts.iter().enumerate() {
            let bar = "#".repeat(((c * 40).div_ceil(most)) as usize);
            let mark = if d.mode_bins.contains(&i) {
                " <- mode"
            } else {
                ""
            };
            t.row(vec![
                fmt_ns(d.edges_ns[i]),
                fmt_ns(d.edges_ns[i + 1]),
                c.to_string(),
                format!("{bar}{mark}"),
            ]);
        }
        t.write(&mut out);
        let _ = writeln!(
            out,
            "  modes: {} (peaks holding >= 5% of the steps and >= 2, separated from any higher peak by a dip to <= half their height); p50 {}, p99 {}, p99/p50 {}",
            d.modes,
            fmt_ns(d.p50_ns),
            fmt_ns(d.p99_ns),
            ratio(d.p99_over_p50)
        );
    }
    out
}

/// One process's launch gaps: per track, then the largest gaps with the host activity in them.
pub fn render_gaps(p: &crate::analysis::gaps::ProcessGaps) -> String {
    use Align::*;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "LAUNCH GAPS  process {} ({}), backend {}: gap = next span's begin − latest end of earlier spans on the track",
        p.pid, p.exe, p.backend
    );
    for n in &p.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    if !p.device_timed {
        return out;
    }
    let mut t = Table::new(&[
        ("track", Left),
        ("spans", Right),
        ("gaps", Right),
        ("p50", Right),
        ("p99", Right),
        ("p99.9", Right),
        ("max", Right),
        ("total", Right),
        ("overlaps", Right),
        ("overlap", Right),
        ("bound", Right),
    ]);
    for k in &p.tracks {
        t.row(vec![
            clip(&k.track),
            k.spans.to_string(),
            k.gaps.count.to_string(),
            fmt_ns(k.gaps.p50_ns),
            fmt_ns(k.gaps.p99_ns),
            fmt_ns(k.gaps.p999_ns),
            fmt_ns(k.gaps.max_ns),
            fmt_ns(k.gaps.total_ns),
            k.overlaps.to_string(),
            fmt_ns(k.overlap_ns),
            format!("±{}", fmt_ns(k.bound_ns)),
        ]);
    }
    t.write(&mut out);
    if p.largest.is_empty() {
        return out;
    }
    let origin = p.first_span_ns;
    out.push_str(
        "\nLARGEST GAPS (no stream of the process running; at: from the first device span)\n",
    );
    for (i, g) in p.largest.iter().enumerate() {
        let _ = writeln!(
            out,
            "#{} {} (±{}) at +{}: after {} ({}, {}), before {} ({}, {})",
            i + 1,
            fmt_ns(g.gap_ns),
            fmt_ns(g.bound_ns),
            fmt_ns(g.begin_ns.saturating_sub(origin)),
            clip(&g.before.name),
            g.before.kind,
            g.before.stream,
            clip(&g.after.name),
            g.after.kind,
            g.after.stream
        );
        let _ = writeln!(
            out,
            "   host inside CUDA calls for {} of it; {} call{}, {} NVTX range{} overlap it",
            fmt_ns(g.host_in_calls_ns),
            g.calls_total,
            if g.calls_total == 1 { "" } else { "s" },
            g.ranges_total,
            if g.ranges_total == 1 { "" } else { "s" }
        );
        if !g.calls.is_empty() || !g.ranges.is_empty() {
            let mut t = Table::new(&[
                ("   host", Left),
                ("tid", Right),
                ("duration", Right),
                ("in gap", Right),
            ]);
            for c in &g.calls {
                t.row(vec![
                    format!("   {}", clip(&c.api)),
                    c.tid.to_string(),
                    c.duration_ns.map_or_else(|| "open".into(), fmt_ns),
                    fmt_ns(c.in_gap_ns),
                ]);
            }
            for r in &g.ranges {
                t.row(vec![
                    format!("   range {}", range_name(&r.name, &r.domain)),
                    r.tid.to_string(),
                    r.end_ns
                        .map_or_else(|| "open".into(), |e| fmt_ns(e.saturating_sub(r.begin_ns))),
                    fmt_ns(r.in_gap_ns),
                ]);
            }
            t.write(&mut out);
        }
    }
    out
}

// ---- compare ------------------------------------------------------------------------------------------

/// A difference B − A with its sign always shown.
fn signed_diff(v: i64, unit: &str) -> String {
    let sign = if v < 0 { "-" } else { "+" };
    format!("{sign}{}", figure_value(v.unsigned_abs() as i64, unit))
}

/// A compared figure's value: a duration, or a ratio kept in millionths.
fn figure_value(v: i64, unit: &str) -> String {
    if unit == "millionths" {
        format!("{:.3}", v as f64 / 1e6)
    } else {
        fmt_signed_ns(v)
    }
}

fn opt_u(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), fmt_ns)
}

fn opt_diff(v: Option<i64>) -> String {
    v.map_or_else(|| "-".into(), |d| signed_diff(d, "ns"))
}

fn side_line(tag: &str, s: &crate::analysis::compare::SideInfo) -> String {
    let levels: Vec<String> = s.levels.iter().map(u32::to_string).collect();
    let bound = match (s.clock_bound_ns_p50, s.clock_bound_ns_max) {
        (Some(p), Some(m)) => format!(", bound ±{} median, ±{} max", fmt_ns(p), fmt_ns(m)),
        _ => String::new(),
    };
    let ranges = if s.step_ranges.is_empty() {
        String::new()
    } else {
        format!(" ({})", s.step_ranges.join(", "))
    };
    format!(
        "{tag}: {}\n   {} process(es); backend {}; level {}; clock {}{bound}; {} step(s){ranges}\n",
        s.capture,
        s.processes,
        s.backends.join(","),
        levels.join(","),
        s.clock_conversion,
        s.steps
    )
}

/// `causeway compare` as text: both sides, warnings, then steps, kernels and APIs tables.
pub fn render_compare(c: &crate::analysis::compare::Comparison) -> String {
    use crate::analysis::compare::{SPREAD_HI, SPREAD_LO};
    use Align::*;
    let mut out = String::new();
    out.push_str(&side_line("A", &c.a));
    out.push_str(&side_line("B", &c.b));
    for w in &c.warnings {
        let _ = writeln!(out, "warning: {w}");
    }

    let _ = writeln!(
        out,
        "\nSTEPS (rule {}; differences are B - A; spread: nearest-rank p{SPREAD_LO}..p{SPREAD_HI} of \
         all A x B pairwise differences)",
        c.steps.rule
    );
    if c.a.steps == 0 || c.b.steps == 0 {
        for (tag, s) in [("A", &c.a), ("B", &c.b)] {
            if s.steps == 0 {
                let _ = writeln!(out, "{tag} has no steps");
            }
        }
    }
    let mut t = Table::new(&[
        ("figure", Left),
        ("n A", Right),
        ("min A", Right),
        ("median A", Right),
        ("max A", Right),
        ("n B", Right),
        ("min B", Right),
        ("median B", Right),
        ("max B", Right),
        ("median B-A", Right),
        ("spread", Right),
    ]);
    for f in &c.steps.figures {
        if f.a.is_none() && f.b.is_none() {
            continue;
        }
        let side = |s: &Option<crate::analysis::compare::SideStats>| -> [String; 4] {
            match s {
                Some(s) => [
                    s.n.to_string(),
                    figure_value(s.min, f.unit),
                    figure_value(s.median, f.unit),
                    figure_value(s.max, f.unit),
                ],
                None => ["0".into(), "-".into(), "-".into(), "-".into()],
            }
        };
        let mut row = vec![f.figure.to_string()];
        row.extend(side(&f.a));
        row.extend(side(&f.b));
        row.push(
            f.median_diff
                .map_or_else(|| "-".into(), |d| signed_diff(d, f.unit)),
        );
        row.push(f.spread.map_or_else(
            || "-".into(),
            |s| {
                format!(
                    "{}..{}",
                    signed_diff(s.p5, f.unit),
                    signed_diff(s.p95, f.unit)
                )
            },
        ));
        t.row(row);
    }
    if !t.rows.is_empty() {
        t.write(&mut out);
    }

    let _ = writeln!(
        out,
        "\nKERNELS ({}; sorted by |total B-A|{})",
        if c.kernels.source == "device" {
            "device time per kernel name"
        } else {
            "executions requested (launches); no device intervals on both sides"
        },
        if c.kernels.source == "device" {
            ""
        } else {
            ", here |count B-A|"
        }
    );
    if c.kernels.rows.is_empty() {
        out.push_str("(no kernels on either side)\n");
    } else {
        let mut t = Table::new(&[
            ("kernel", Left),
            ("in", Left),
            ("count A", Right),
            ("count B", Right),
            ("B-A", Right),
            ("p50 A", Right),
            ("p50 B", Right),
            ("p50 B-A", Right),
            ("total A", Right),
            ("total B", Right),
            ("total B-A", Right),
        ]);
        let kname = clip_distinct(c.kernels.rows.iter().map(|k| k.name.as_str()));
        for k in &c.kernels.rows {
            t.row(vec![
                kname(&k.name),
                k.present.to_string(),
                k.count_a.to_string(),
                k.count_b.to_string(),
                format!("{:+}", k.count_diff),
                opt_u(k.p50_ns_a),
                opt_u(k.p50_ns_b),
                opt_diff(k.p50_diff),
                opt_u(k.total_ns_a),
                opt_u(k.total_ns_b),
                opt_diff(k.total_diff),
            ]);
        }
        t.write(&mut out);
    }

    out.push_str("\nAPIS (host time of completed calls; sorted by |p50 B-A|)\n");
    if c.apis.is_empty() {
        out.push_str("(no API calls on either side)\n");
    } else {
        let mut t = Table::new(&[
            ("api", Left),
            ("in", Left),
            ("calls A", Right),
            ("calls B", Right),
            ("B-A", Right),
            ("p50 A", Right),
            ("p50 B", Right),
            ("p50 B-A", Right),
        ]);
        for a in &c.apis {
            t.row(vec![
                clip(&a.name),
                a.present.to_string(),
                a.calls_a.to_string(),
                a.calls_b.to_string(),
                format!("{:+}", a.calls_diff),
                opt_u(a.p50_ns_a),
                opt_u(a.p50_ns_b),
                opt_diff(a.p50_diff),
            ]);
        }
        t.write(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_never_merges_two_names() {
        let long = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<";
        let names: Vec<String> = ["float>>", "double>>", "int>>", "long>>"]
            .iter()
            .map(|t| format!("{long}{t}(int, at::detail::Array<char*, 1>)"))
            .chain(["short".to_string()])
            .collect();
        let shown: Vec<String> = {
            let f = clip_distinct(names.iter().map(String::as_str));
            names.iter().map(|n| f(n)).collect()
        };
        let distinct: std::collections::HashSet<&String> = shown.iter().collect();
        assert_eq!(distinct.len(), names.len(), "{shown:#?}");
        assert_eq!(shown[4], "short");
        // These differ in the middle: each shows its start and the part where it differs.
        assert!(
            shown[0].starts_with("void at::native::vector"),
            "{}",
            shown[0]
        );
        assert!(shown[0].contains("float>>"), "{}", shown[0]);
        assert!(
            shown.iter().all(|s| s.chars().count() <= NAME_MAX),
            "{shown:#?}"
        );
        // Names that differ at the end keep start and end within the width.
        let tails: Vec<String> = ["float", "double"]
            .iter()
            .map(|t| format!("{long}{}<{t}>", "z".repeat(40)))
            .collect();
        let f = clip_distinct(tails.iter().map(String::as_str));
        let (x, y) = (f(&tails[0]), f(&tails[1]));
        assert!(
            x != y && x.chars().count() <= NAME_MAX && x.ends_with("<float>"),
            "{x}"
        );
        // Names that differ where they are shown differ in what is shown.
        let a = format!("{}A{}", "x".repeat(80), "y".repeat(80));
        let b = format!("{}B{}", "x".repeat(80), "y".repeat(80));
        let f = clip_distinct([a.as_str(), b.as_str()].into_iter());
        assert_ne!(f(&a), f(&b));
        assert!(f(&a).chars().count() <= NAME_MAX);
    }

    #[test]
    fn terminal_controls_from_the_program_are_escaped() {
        assert_eq!(
            escape("plain kernel<float>(int)"),
            "plain kernel<float>(int)"
        );
        assert_eq!(
            escape("step\u{1b}[2J\u{1b}]0;owned\u{7}"),
            "step\\x1b[2J\\x1b]0;owned\\x07"
        );
        assert_eq!(escape("a\tb\rc\u{9b}d\u{7f}"), "a\\x09b\\x0dc\\x9bd\\x7f");
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u{202e}fed");
        // Line feeds are the output's own structure; in a cell they are the program's.
        assert_eq!(escape("one\ntwo"), "one\ntwo");
        assert_eq!(escape_cell("one\ntwo"), "one\\x0atwo");
    }
}
