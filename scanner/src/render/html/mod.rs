//! `causeway html`: one self-contained HTML page for a capture — no network (inline CSS and vanilla JS,
//! no fonts, scripts or images from elsewhere), the data embedded as one JSON object in a
//! `<script type="application/json" id="causeway-data">` block.
//!
//! The page shows, from the same model as `report`, `report --steps --gaps`:
//! * a header: the capture, its processes (level, backend, entries, dropped, torn, overwritten), the
//!   device clock conversion and its bound, and the device intervals dropped, not tied to a call,
//!   untimed or without a host time;
//! * per step (the steps of `report --steps`, `--range` as there) the wall time with min/median/p99/max
//!   lines, the host budget (launch / sync / other) and, with device spans, device busy vs idle;
//! * a histogram of the gaps between device spans of all streams (log₂ bins) with p50/p99/p99.9;
//! * the top kernels by device time (the report's device section), else by launches;
//! * a zoomable timeline of one step (or, without steps, of the whole capture): a lane per host thread
//!   (NVTX ranges and calls) and per device stream (spans).
//!
//! One process is charted: the one with the most steps, else the one with the most device spans, calls
//! and ranges. The timeline embeds at most `MAX_ITEMS` items: the slowest step's first, then the other
//! steps' in order, whole steps only (a step left out says so in the page), then the rest in time
//! order; without steps the first `MAX_ITEMS` in time order. The items left out are counted.
//!
//! Every string from the capture (kernel and NVTX names, paths) reaches the page only inside the JSON
//! block, with `<`, `>` and `&` written as `\u003c`, `\u003e`, `\u0026`, so no name can close the script
//! element; the script sets text with `textContent` only.

use crate::analysis::gaps::permille;
use crate::analysis::report::Report;
use crate::analysis::steps::{process_steps, ProcessSteps, StepOptions};
use crate::facts::model::{ProcessTimeline, StreamId, Timeline};
use crate::read::capture::Capture;
use crate::util::output::{check_output, write_output, OutputError as ExportError};
use crate::util::reach::{End, Reach};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;

/// Most timeline items (calls, ranges, device spans) embedded in the page.
pub const MAX_ITEMS: usize = 50_000;
/// Rows of the top-kernels table.
pub const TOP_KERNELS: usize = 25;

const TEMPLATE: &str = include_str!("page.html");
const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

/// What the page is built with.
#[derive(Debug, Clone, Default)]
pub struct HtmlOptions {
    /// `--range NAME`: the steps are the ranges of that name.
    pub range: Option<String>,
}

/// What `write_file` wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HtmlSummary {
    pub bytes: u64,
    pub processes: usize,
    /// The charted process's steps.
    pub steps: usize,
    /// Timeline items embedded, and left out (over `MAX_ITEMS`).
    pub items: usize,
    pub items_left_out: u64,
}

// ---- the embedded data -------------------------------------------------------------------------------

/// The JSON object the page reads.
#[derive(Debug, Clone, Serialize)]
pub struct Page {
    pub capture: String,
    pub version: &'static str,
    pub processes: Vec<ProcessInfo>,
    pub clock: ClockInfo,
    pub device: DeviceInfo,
    pub warnings: Vec<String>,
    /// The charted process (`None`: the capture has no process with anything to chart).
    pub pid: Option<u32>,
    pub steps: StepsInfo,
    pub gaps: GapsInfo,
    pub kernels: KernelsInfo,
    pub timeline: TimelineInfo,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcessInfo {
    pub pid: u32,
    pub ppid: u32,
    pub exe: String,
    pub host: String,
    pub level: u32,
    pub backend: String,
    pub entries: u64,
    pub dropped: u64,
    pub torn: u64,
    pub overwritten: u64,
    pub open: u64,
    pub device_dropped: u64,
    /// Device intervals without a host time (not drawn).
    pub unplaced_device: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClockInfo {
    /// `cupti-timestamp-callback`, `event-anchors`, `unconverted`, `mixed`, or `none`.
    pub conversion: String,
    pub bound_ns_p50: Option<u64>,
    pub bound_ns_max: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceInfo {
    pub intervals: u64,
    pub associated: u64,
    pub unassociated: u64,
    pub untimed: u64,
    pub not_timed: u64,
    pub dropped: u64,
    pub unconverted: u64,
    /// Entries the rings dropped (full ring), over all processes.
    pub entries_dropped: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepsInfo {
    /// How the steps were chosen (`None`: no steps).
    pub selection: Option<String>,
    pub device_timed: bool,
    pub notes: Vec<String>,
    pub steps: Vec<StepRow>,
    /// min, median, p99, max of wall time (`None` without steps).
    pub wall: Option<[u64; 4]>,
    /// The largest span bound of any step (each device figure may be off by 2× this).
    pub bound_ns: u64,
    /// Index into `steps` of the slowest step.
    pub slowest: Option<usize>,
    /// Why the slowest steps took as long as they did (`causeway why --step N`), slowest first.
    pub causes: Vec<crate::analysis::steps::StepCause>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepRow {
    pub index: usize,
    pub tid: u32,
    pub begin_ns: u64,
    pub end_ns: u64,
    pub wall_ns: u64,
    pub launch_ns: u64,
    pub sync_ns: u64,
    pub other_ns: u64,
    pub busy_ns: Option<u64>,
    pub idle_ns: Option<u64>,
    pub bound_ns: u64,
    /// Whether the step's timeline items are embedded.
    pub embedded: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct GapsInfo {
    pub spans: u64,
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// Spans that began before the work before them ended (concurrency; not gaps).
    pub overlaps: u64,
    /// The largest span bound: every gap is within 2× this.
    pub bound_ns: u64,
    /// Gaps of exactly 0 (back-to-back work).
    pub zero: u64,
    /// Bin k holds gaps in [2^k, 2^(k+1)) ns: (k, count), k ascending, empty bins left out.
    pub bins: Vec<(u32, u64)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KernelsInfo {
    /// `device` (device time per kernel name) or `launches` (no device intervals: launch counts).
    pub source: &'static str,
    pub rows: Vec<KernelRow>,
    /// Names not shown (beyond `TOP_KERNELS`).
    pub more: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct KernelRow {
    pub name: String,
    pub count: u64,
    pub total_ns: Option<u64>,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimelineInfo {
    /// Times of items are ns after this host time.
    pub t0_ns: u64,
    /// The whole capture's extent, relative to `t0_ns` (the window without steps).
    pub end_ns: u64,
    pub lanes: Vec<Lane>,
    /// Interned names; items refer to them by index.
    pub names: Vec<String>,
    /// `[lane, row, begin, end, name, kind, bound_ns, open]`, begin/end relative to `t0_ns`; kind 0
    /// call, 1 NVTX range, 2 kernel, 3 memcpy, 4 memset, 5 graph; open 1 = never ended (drawn to the
    /// extent's end).
    pub items: Vec<[u64; 8]>,
    /// Items of the charted process not embedded.
    pub left_out: u64,
    /// Items of the charted process in all.
    pub total: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Lane {
    pub label: String,
    /// `thread` or `stream`.
    pub kind: &'static str,
    pub rows: u64,
}

// ---- building --------------------------------------------------------------------------------------

/// The charted process: the most steps, else the most to draw.
fn chosen(t: &Timeline, steps: &[ProcessSteps]) -> Option<usize> {
    let size = |p: &ProcessTimeline| p.device.len() + p.calls.len() + p.ranges.len();
    (0..t.processes.len())
        .filter(|&i| size(&t.processes[i]) > 0)
        .max_by_key(|&i| (steps[i].steps.len(), size(&t.processes[i]), usize::MAX - i))
}

/// One item before lanes are numbered: (lane key, row, begin, end, name, kind, bound, open).
type Raw = (LaneKey, u64, u64, u64, ItemName, u64, u64, bool);

/// An item's label, made into text once per distinct label (`page`): the model's names, not a copy
/// per item (a hostile ring's 300 KB kernel name in 2 000 launches held 1.2 GB before the page's
/// name table took it once).
#[derive(Clone, Copy)]
enum ItemName {
    Plain(&'static str),
    /// A launch: `api → kernel`.
    Launch(&'static str, &'static str),
}

impl ItemName {
    /// Equal for labels of the same texts (the model's interned names: one copy per text, nearly
    /// always).
    fn key(self) -> (usize, usize) {
        match self {
            ItemName::Plain(n) => (n.as_ptr() as usize, usize::MAX),
            ItemName::Launch(a, k) => (a.as_ptr() as usize, k.as_ptr() as usize),
        }
    }

    fn text(self) -> String {
        match self {
            ItemName::Plain(n) => n.to_string(),
            ItemName::Launch(a, k) => format!("{a} \u{2192} {k}"),
        }
    }
}

/// A slice's end, for the index of the slices that reach into a step (`Reach`).
impl End for Raw {
    fn end(&self) -> u64 {
        self.3
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum LaneKey {
    Thread(u32),
    Stream(StreamId),
}

fn kind_code(kind: &str) -> u64 {
    match kind {
        "kernel" => 2,
        "memcpy" => 3,
        "memset" => 4,
        _ => 5,
    }
}

/// Every drawable item of `p`, sorted by begin, with rows: on a thread, NVTX ranges at their level
/// (ranges of other domains that interleave share a row), calls below the deepest range at their depth;
/// on a stream, overlapping spans on further rows (first row free).
fn raw_items(p: &ProcessTimeline, last: u64) -> Vec<Raw> {
    let mut out: Vec<Raw> = Vec::new();
    let mut range_rows: HashMap<u32, u64> = HashMap::new();
    for r in &p.ranges {
        let e = range_rows.entry(r.tid).or_default();
        *e = (*e).max(r.level as u64 + 1);
    }
    for r in &p.ranges {
        out.push((
            LaneKey::Thread(r.tid),
            r.level as u64,
            r.begin_ns,
            r.end_ns.unwrap_or(last).max(r.begin_ns),
            ItemName::Plain(r.name.as_str()),
            1,
            0,
            r.end_ns.is_none(),
        ));
    }
    for c in &p.calls {
        let name = match c.kernel {
            Some(k) => ItemName::Launch(c.api.as_str(), k.as_str()),
            None => ItemName::Plain(c.api.as_str()),
        };
        out.push((
            LaneKey::Thread(c.tid),
            range_rows.get(&c.tid).copied().unwrap_or(0) + c.depth as u64,
            c.begin_ns,
            c.end_ns.get().unwrap_or(last).max(c.begin_ns),
            name,
            0,
            0,
            c.end_ns.is_none(),
        ));
    }
    // Device spans are sorted by (begin, end): greedy rows per stream, each span on the first row
    // whose last span ended by its begin (found in O(log rows): a scan of the rows was quadratic in
    // spans that all overlap).
    let mut rows: HashMap<StreamId, crate::util::lanes::LaneTops> = HashMap::new();
    for s in &p.device {
        let ends = rows.entry(s.stream.get()).or_default();
        let row = match ends.first_at_most(s.begin_ns) {
            Some(i) => i,
            None => ends.push(0),
        };
        ends.set(row, s.end_ns);
        out.push((
            LaneKey::Stream(s.stream.get()),
            row as u64,
            s.begin_ns,
            s.end_ns,
            ItemName::Plain(s.name.as_str()),
            kind_code(s.kind.name()),
            s.bound_ns,
            false,
        ));
    }
    out.sort_by_key(|a| (a.2, a.3, a.0, a.1));
    out
}

/// The gaps of all streams, as `crate::gaps` defines them: (gaps, overlaps).
fn all_stream_gaps(p: &ProcessTimeline) -> (Vec<u64>, u64) {
    let mut gaps = Vec::new();
    let mut overlaps = 0;
    let Some(first) = p.device.first() else {
        return (gaps, 0);
    };
    let mut reach = first.end_ns;
    for s in &p.device[1..] {
        if s.begin_ns >= reach {
            gaps.push(s.begin_ns - reach);
        } else {
            overlaps += 1;
        }
        reach = reach.max(s.end_ns);
    }
    (gaps, overlaps)
}

fn gaps_info(p: Option<&ProcessTimeline>) -> GapsInfo {
    let (mut v, overlaps) = p.map(all_stream_gaps).unwrap_or_default();
    v.sort_unstable();
    let mut bins: BTreeMap<u32, u64> = BTreeMap::new();
    for &g in v.iter().filter(|&&g| g > 0) {
        *bins.entry(63 - g.leading_zeros()).or_default() += 1;
    }
    GapsInfo {
        spans: p.map_or(0, |p| p.device.len() as u64),
        count: v.len() as u64,
        p50_ns: permille(&v, 500),
        p99_ns: permille(&v, 990),
        p999_ns: permille(&v, 999),
        max_ns: v.last().copied().unwrap_or(0),
        overlaps,
        bound_ns: p.map_or(0, |p| {
            p.device.iter().map(|s| s.bound_ns).max().unwrap_or(0)
        }),
        zero: v.iter().take_while(|&&g| g == 0).count() as u64,
        bins: bins.into_iter().collect(),
    }
}

fn kernels_info(r: &Report) -> KernelsInfo {
    let (source, mut rows): (&'static str, Vec<KernelRow>) = if !r.device.kernels.is_empty() {
        let rows = r
            .device
            .kernels
            .iter()
            .map(|k| KernelRow {
                name: k.name.clone(),
                count: k.count,
                total_ns: Some(k.total_ns),
                p50_ns: Some(k.p50_ns),
                p99_ns: Some(k.p99_ns),
            })
            .collect();
        ("device", rows)
    } else {
        let mut rows: Vec<KernelRow> = r
            .kernels
            .iter()
            .map(|k| KernelRow {
                name: k.name.clone(),
                count: k.launches,
                total_ns: None,
                p50_ns: None,
                p99_ns: None,
            })
            .collect();
        rows.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
        ("launches", rows)
    };
    let more = rows.len().saturating_sub(TOP_KERNELS);
    rows.truncate(TOP_KERNELS);
    KernelsInfo { source, rows, more }
}

/// Builds the page's data from a report and a timeline of the same rings.
pub fn page(capture: &str, r: &Report, t: &Timeline, o: &HtmlOptions) -> Page {
    let so = StepOptions {
        range: o.range.clone(),
        domain: None,
    };
    let all_steps: Vec<ProcessSteps> = t.processes.iter().map(|p| process_steps(p, &so)).collect();
    let which = chosen(t, &all_steps);
    let p = which.map(|i| &t.processes[i]);
    let ps = which.map(|i| &all_steps[i]);

    let processes = t
        .processes
        .iter()
        .map(|p| {
            let rp = r.processes.iter().find(|x| x.pid == p.pid);
            ProcessInfo {
                pid: p.pid,
                ppid: p.ppid,
                exe: p.exe.clone(),
                host: p.host.clone(),
                level: rp.map_or(0, |x| x.level),
                backend: p.backend.clone(),
                entries: rp.map_or(0, |x| x.entries),
                dropped: rp.map_or(0, |x| x.dropped),
                torn: rp.map_or(0, |x| x.torn),
                overwritten: rp.map_or(0, |x| x.overwritten),
                open: rp.map_or(0, |x| x.open),
                device_dropped: rp.map_or(0, |x| x.device_dropped),
                unplaced_device: p.unplaced_device,
            }
        })
        .collect();
    let c = &r.device.clock;
    let clock = ClockInfo {
        conversion: if r.device.intervals == 0 {
            "none".into()
        } else {
            c.conversion.clone()
        },
        bound_ns_p50: c.bound_ns_p50,
        bound_ns_max: c.bound_ns_max,
    };
    let device = DeviceInfo {
        intervals: r.device.intervals,
        associated: r.device.associated,
        unassociated: r.device.unassociated.total,
        untimed: r.device.untimed,
        not_timed: r.device.not_timed,
        dropped: r.device.dropped,
        unconverted: r.device.unconverted,
        entries_dropped: r.totals.dropped,
    };

    // Steps.
    let mut steps = StepsInfo {
        selection: ps.and_then(|s| s.selection.as_ref().map(|x| x.reason.clone())),
        device_timed: ps.is_some_and(|s| s.device_timed),
        notes: ps.map(|s| s.notes.clone()).unwrap_or_default(),
        steps: ps
            .map(|s| {
                s.steps
                    .iter()
                    .map(|st| StepRow {
                        index: st.index,
                        tid: st.tid,
                        begin_ns: st.begin_ns,
                        end_ns: st.end_ns,
                        wall_ns: st.wall_ns,
                        launch_ns: st.launch_ns,
                        sync_ns: st.sync_ns,
                        other_ns: st.other_ns,
                        busy_ns: st.device.as_ref().map(|d| d.busy_ns),
                        idle_ns: st.device.as_ref().map(|d| d.idle_ns),
                        bound_ns: st.device.as_ref().map_or(0, |d| d.bound_ns),
                        embedded: false,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        wall: ps.and_then(|s| s.summary.as_ref()).map(|s| {
            [
                s.wall_ns.min,
                s.wall_ns.median,
                s.wall_ns.p99,
                s.wall_ns.max,
            ]
        }),
        bound_ns: ps
            .and_then(|s| s.summary.as_ref())
            .and_then(|s| s.device.as_ref())
            .map_or(0, |d| d.bound_ns),
        slowest: ps.and_then(|s| s.slowest.first().copied()),
        causes: match (p, ps) {
            (Some(p), Some(ps)) => crate::analysis::causal::why::step_causes(p, ps),
            _ => Vec::new(),
        },
    };

    // Timeline.
    let (lo, hi) = p.map(ProcessTimeline::extent).unwrap_or((0, 0));
    let raw = p.map(|p| raw_items(p, hi)).unwrap_or_default();
    let total = raw.len() as u64;
    let mut keep = vec![false; raw.len()];
    let mut kept = 0usize;
    if steps.steps.is_empty() {
        for k in keep.iter_mut().take(MAX_ITEMS) {
            *k = true;
            kept += 1;
        }
    } else {
        // Slowest step first, then the others in order; whole steps only (the first one at most
        // MAX_ITEMS of its items).
        let mut order: Vec<usize> = steps.slowest.into_iter().collect();
        order.extend((0..steps.steps.len()).filter(|&i| Some(i) != steps.slowest));
        // Items are sorted by begin; `Reach` finds those that reach into a window.
        let reach = Reach::new(&raw[..]);
        let mut first = true;
        for i in order {
            let b = steps.steps[i].begin_ns;
            let e = steps.steps[i].end_ns.max(b + 1);
            let to = raw.partition_point(|r| r.2 < e);
            let inside: Vec<usize> = reach.reaching(b, to).collect();
            let new = inside.iter().filter(|&&j| !keep[j]).count();
            if first || kept + new <= MAX_ITEMS {
                for &j in &inside {
                    if !keep[j] && kept < MAX_ITEMS {
                        keep[j] = true;
                        kept += 1;
                    }
                }
                steps.steps[i].embedded = true;
            }
            first = false;
            if kept >= MAX_ITEMS {
                break;
            }
        }
        // Room left: the items outside the steps, in time order.
        for k in keep.iter_mut().filter(|k| !**k) {
            if kept >= MAX_ITEMS {
                break;
            }
            *k = true;
            kept += 1;
        }
    }
    let mut lanes_of: BTreeMap<LaneKey, u64> = BTreeMap::new();
    for r in &raw {
        let e = lanes_of.entry(r.0).or_default();
        *e = (*e).max(r.1 + 1);
    }
    let lane_index: HashMap<LaneKey, u64> =
        lanes_of.keys().zip(0..).map(|(k, i)| (*k, i)).collect();
    let lanes = lanes_of
        .iter()
        .map(|(k, rows)| match k {
            LaneKey::Thread(tid) => Lane {
                label: format!("thread {tid}"),
                kind: "thread",
                rows: *rows,
            },
            LaneKey::Stream(s) => Lane {
                label: p.map_or_else(|| s.label(), |p| p.stream_label(s)),
                kind: "stream",
                rows: *rows,
            },
        })
        .collect();
    let mut names: Vec<String> = Vec::new();
    // By the label's texts' addresses, then (once per address) by the text itself: one entry per
    // distinct text, as the page's table always had.
    let mut name_ix: HashMap<(usize, usize), u64> = HashMap::new();
    let mut text_ix: HashMap<String, u64> = HashMap::new();
    let mut items = Vec::with_capacity(kept);
    for (r, _) in raw.into_iter().zip(&keep).filter(|(_, &k)| k) {
        let n = *name_ix.entry(r.4.key()).or_insert_with(|| {
            let text = r.4.text();
            *text_ix.entry(text.clone()).or_insert_with(|| {
                names.push(text);
                names.len() as u64 - 1
            })
        });
        items.push([
            lane_index[&r.0],
            r.1,
            r.2 - lo,
            r.3 - lo,
            n,
            r.5,
            r.6,
            r.7 as u64,
        ]);
    }
    let steps_rel: Vec<StepRow> = steps
        .steps
        .into_iter()
        .map(|mut s| {
            s.begin_ns -= lo.min(s.begin_ns);
            s.end_ns -= lo.min(s.end_ns);
            s
        })
        .collect();
    steps.steps = steps_rel;
    let timeline = TimelineInfo {
        t0_ns: lo,
        end_ns: hi - lo,
        lanes,
        names,
        left_out: total - items.len() as u64,
        items,
        total,
    };
    Page {
        capture: capture.to_string(),
        version: env!("CARGO_PKG_VERSION"),
        processes,
        clock,
        device,
        warnings: r.warnings.clone(),
        pid: p.map(|p| p.pid),
        steps,
        gaps: gaps_info(p),
        kernels: kernels_info(r),
        timeline,
    }
}

/// JSON safe inside a `<script>` element: `<`, `>`, `&` (which serde_json leaves as they are, and
/// which occur only inside strings) become `\u003c`, `\u003e`, `\u0026`; so do U+2028 and U+2029.
pub fn script_json(v: &impl Serialize) -> serde_json::Result<String> {
    let s = serde_json::to_string(v)?;
    let mut out = String::with_capacity(s.len() + 64);
    for ch in s.chars() {
        match ch {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// The whole page for `page`.
pub fn render(page: &Page) -> serde_json::Result<String> {
    let data = script_json(page)?;
    Ok(TEMPLATE
        .replacen("/*CAUSEWAY_CSS*/", CSS, 1)
        .replacen("/*CAUSEWAY_JS*/", JS, 1)
        .replacen("\"CAUSEWAY_DATA\"", &data, 1))
}

// ---- the file ----------------------------------------------------------------------------------------

/// Opens the capture, and writes its page to `output`: an existing file is replaced only with `force`;
/// the file appears complete or not at all (written beside it, then renamed). Refuses to write over a
/// ring of the capture.
pub fn write_file(
    capture: &Path,
    output: &Path,
    force: bool,
    o: &HtmlOptions,
) -> Result<HtmlSummary, ExportError> {
    check_output(output, force)?;
    let cap = Capture::open(capture)?;
    cap.refuse_as_output(output)?;
    let rings = cap.rings()?;
    let label = capture.display().to_string();
    let (mut report, timeline) = Report::build_with_timeline(&label, &rings);
    report.warnings.splice(0..0, cap.skipped_warnings());
    // The page reads the report and the model, not the mapped entries.
    cap.release_pages();
    let so = crate::analysis::steps::StepOptions {
        range: o.range.clone(),
        domain: None,
    };
    crate::analysis::views::named_range_exists(&timeline, &so)
        .map_err(|e| ExportError(format!("{}: {e}", capture.display())))?;
    let pg = page(&label, &report, &timeline, o);
    crate::util::drop::drop_later(timeline);
    let text = render(&pg)
        .map_err(|e| ExportError(format!("{}: cannot serialize: {e}", capture.display())))?;

    let cannot =
        |e: std::io::Error| ExportError(format!("{}: cannot write: {e}", output.display()));
    write_output(output, force, "report.html", |w| {
        w.write_all(text.as_bytes()).map_err(cannot)
    })?;
    Ok(HtmlSummary {
        bytes: text.len() as u64,
        processes: pg.processes.len(),
        steps: pg.steps.steps.len(),
        items: pg.timeline.items.len(),
        items_left_out: pg.timeline.left_out,
    })
}
