//! Steps: `causeway report --steps`. A step is one NVTX range (a training iteration, a request); per
//! step this view says where its wall time went on the host and on the device, and across steps how the
//! figures are distributed. It reads only the timeline model (`crate::model`).
//!
//! **Which ranges are steps.** With `--range NAME` (and optionally `--domain DOMAIN`): every closed range
//! of that name (in that domain), at any nesting level. Without it: the *outermost repeating range* — among
//! closed ranges at level 0 (no enclosing range of the same thread and domain; start/end ranges are level
//! 0), the (name, domain) seen most often, at least twice; ties go to the one whose first occurrence began
//! earliest. `--domain` alone restricts that choice to one domain. The choice, its count and the runner-up
//! are in `selection`. Ranges never closed are counted (`open`) and are not steps. Each process of a
//! capture is looked at on its own.
//!
//! **Per step** (times in ns on the host clock; a step is the half-open window [begin, end) of its range
//! on its thread `tid`):
//! - `wall_ns` = end − begin.
//! - `launch_ns`: the length of the union of the step thread's outermost (depth 0) calls of class
//!   `launch`, `copy`, `memset` or `graph_launch`, clipped to the window (`launch_calls`: how many
//!   overlapped it). A synchronous copy counts here, not in `sync_ns`.
//! - `sync_ns`: the same for classes `sync` and `event_sync` (stream, context, device and event syncs).
//! - `other_ns` = wall − launch − sync: the thread's time outside those calls (depth-0 calls of one thread
//!   never overlap, so the three add up to the wall time).
//! - `regions`: NVTX ranges of the step's thread (any domain, closed) lying inside the window, by (name,
//!   domain): `ns` is the length of the union of their intervals, `count` how many, `depth` 1 for a range
//!   no other sub-range of the step encloses, 2 for one inside such a range, … (the smallest depth of its
//!   occurrences). Depth-1 regions do not overlap when ranges are properly nested, so their times add up
//!   to at most the wall; `outside_regions_ns` = wall − the union of all sub-ranges.
//! - `device` (absent when the process has no device span on the host clock, e.g. below level 3): every
//!   device span of the process (any stream, whoever issued it) overlapping the window, clipped to it.
//!   `busy_ns` = |∪ all spans| (kernels, copies, memsets, graph launches); `idle_ns` = wall − busy (the
//!   bubbles); `copy_ns` = |C| with C = ∪ memcpy spans; `compute_ns` = |K| with K = ∪ kernel spans;
//!   `overlap_ns` = |C ∩ K|; `copy_compute_overlap` = |C ∩ K| / min(|C|, |K|), the share of the smaller
//!   of the two that ran concurrently with the other (0: serialized, 1: fully hidden), `null` when |C| or
//!   |K| is 0. Memsets count in busy only; a `graph` span (the events backend's one interval per graph
//!   launch) counts in busy only, because its kernels and copies are not seen. `spans`: how many spans
//!   overlapped the window; `bound_ns`: the largest `bound_ns` among them.
//!
//! **Uncertainty.** Each span's begin and end may each be off by ±bound (0 for CUPTI, whose timestamps
//! are on the host clock; the events backend converts device times through anchors). The step windows
//! and host figures are exact host readings. Rule used: when the spans of a step are off by a common
//! amount (the dominant error: neighbouring spans are converted through the same anchors) every device
//! figure (busy, idle, copy, compute, overlap_ns) is off by at most 2·bound_ns — only what moves across
//! the window's two edges changes; if each span edge erred independently the worst case would be
//! 2·bound_ns per span (`spans` says how many). The summary gives the largest bound of all steps.
//!
//! **Across steps** (`summary`): min, median, p99, max (nearest rank, as the rest of the report) and
//! total of each figure; `copy_compute_overlap` over the steps where it is defined. `slowest`: indices
//! of the `SLOWEST` longest steps by wall time, longest first (ties: earlier step first).
//!
//! **Distribution of step wall times** (`distribution`), numbers and not a verdict: a histogram of
//! `BINS` equal bins from min to max (bin i is [edges[i], edges[i+1]) with edges[i] = min +
//! ⌈i·(max − min)/BINS⌉, the last bin closed at max; all steps in bin 0 when min = max); `modes`: the
//! histogram's peaks that pass this rule — a peak is a run of adjacent bins with equal count c > 0 whose
//! neighbours (a missing neighbour counts as 0) are both lower; walking outward from it on each side
//! until a bin higher than c, the lowest count passed is that side's dip (a side that reaches the end of
//! the histogram without meeting a higher bin has no dip); the peak is a mode when it holds enough
//! steps — c ≥ max(2, ⌈n/20⌉) (5% of the steps, and never a lone step unless n = 1) — and every dip it
//! has is at most c/2 (a peak with no dip on either side, such as the highest, needs only the count);
//! `p99_over_p50` = p99 / p50 of wall time (`null` when p50 is 0).

use crate::facts::model::{DeviceSpan, ProcessTimeline, Range};
use crate::util::fastmap::HashMap;
use crate::util::intervals::{
    clip, intersect, intersection, measure, overlap_ratio, union, Measured,
};
use crate::util::rank::nearest_rank;
use crate::util::reach::{End, RangeMax, Reach};
use causeway_ring::layout::DeviceKind;
use causeway_ring::Class;
use rayon::prelude::*;
use serde::Serialize;

/// How many of the slowest steps are listed.
pub const SLOWEST: usize = 5;
/// Bins of the step-time histogram.
pub const BINS: usize = 10;

/// Call classes counted as blocking in a sync (calls counted as launching work are those whose
/// class `issues_work`).
pub const SYNC_CLASSES: [Class; 2] = [Class::Sync, Class::EventSync];

/// What `--steps` was asked for.
#[derive(Debug, Clone, Default)]
pub struct StepOptions {
    /// `--range NAME`: the steps are the ranges of that name.
    pub range: Option<String>,
    /// `--domain DOMAIN`: only ranges of that NVTX domain.
    pub domain: Option<String>,
}

/// The steps of one process.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessSteps {
    pub pid: u32,
    pub exe: String,
    /// Which ranges are the steps, and why; `None` when no range qualifies (see `notes`).
    pub selection: Option<Selection>,
    /// Whether device figures are given: the process has device spans on the host clock.
    pub device_timed: bool,
    /// Device-timing backend (`none`, `cupti`, `events`).
    pub backend: String,
    /// Ranges of the selected name that were never closed (not steps).
    pub open: u64,
    /// In time order.
    pub steps: Vec<Step>,
    /// `None` without steps.
    pub summary: Option<Summary>,
    /// Sub-ranges over all steps, by depth then median time (largest first).
    pub regions: Vec<RegionSummary>,
    /// Indices into `steps` of the slowest steps by wall time, slowest first.
    pub slowest: Vec<usize>,
    /// Why each of the slowest steps took as long as it did (`causeway why --step`), in `slowest`'s
    /// order; filled by the views (`analysis::views`), empty elsewhere.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StepCause>,
    /// `None` without steps.
    pub distribution: Option<Distribution>,
    /// One line each: what limits these numbers (lost entries, unplaced device work, the backend).
    pub notes: Vec<String>,
}

/// A slow step's cause, in brief (the full answer: `causeway why --step N`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StepCause {
    pub index: usize,
    /// `host`, `dependency`, `device` or `unknown`.
    pub cause: &'static str,
    pub detail: String,
    pub complete: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Selection {
    pub name: String,
    /// `None`: NVTX's default domain — or, with `--range` and no `--domain`, a name found in several
    /// domains, all of which count (`reason` says which).
    pub domain: Option<String>,
    /// `range-option` (named by --range) or `most-repeated-level-0`.
    pub rule: &'static str,
    /// Closed ranges selected (= steps).
    pub count: u64,
    /// For the default rule: the next most repeated level-0 range, if any.
    pub runner_up: Option<Candidate>,
    /// The choice in words.
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Candidate {
    pub name: String,
    pub domain: Option<String>,
    /// Closed level-0 ranges of this name.
    pub count: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Step {
    /// Position in time order (0-based).
    pub index: usize,
    pub tid: u32,
    pub begin_ns: u64,
    pub end_ns: u64,
    pub wall_ns: u64,
    /// Host time in launch/copy/memset/graph-launch calls (depth 0, the step's thread, clipped).
    pub launch_ns: u64,
    pub launch_calls: u64,
    /// Host time blocked in sync and event-sync calls (depth 0, the step's thread, clipped).
    pub sync_ns: u64,
    pub sync_calls: u64,
    /// wall − launch − sync.
    pub other_ns: u64,
    /// NVTX sub-ranges of the step's thread inside the step, by depth then time (largest first).
    pub regions: Vec<Region>,
    /// wall − |∪ sub-ranges|.
    pub outside_regions_ns: u64,
    /// `None` when the process has no device spans on the host clock.
    pub device: Option<StepDevice>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Region {
    pub name: String,
    pub domain: Option<String>,
    /// 1: directly inside the step (no other sub-range encloses it).
    pub depth: u32,
    pub count: u64,
    /// Length of the union of its intervals.
    pub ns: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StepDevice {
    /// Device spans overlapping the step.
    pub spans: u64,
    pub busy_ns: u64,
    /// wall − busy: the bubbles.
    pub idle_ns: u64,
    /// |∪ memcpy spans|.
    pub copy_ns: u64,
    /// |∪ kernel spans|.
    pub compute_ns: u64,
    /// |copy ∩ compute|.
    pub overlap_ns: u64,
    /// overlap / min(copy, compute); `None` when either is 0.
    pub copy_compute_overlap: Option<f64>,
    /// Largest bound of the spans involved (ns, either way, per span edge).
    pub bound_ns: u64,
}

/// A figure over the steps (nearest-rank percentiles).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Stats {
    pub min: u64,
    pub median: u64,
    pub p99: u64,
    pub max: u64,
    pub total: u64,
}

impl Stats {
    pub fn of(values: impl IntoIterator<Item = u64>) -> Stats {
        let mut v: Vec<u64> = values.into_iter().collect();
        v.sort_unstable();
        Stats {
            min: v.first().copied().unwrap_or(0),
            median: nearest_rank(&v, 50).unwrap_or(0),
            p99: nearest_rank(&v, 99).unwrap_or(0),
            max: v.last().copied().unwrap_or(0),
            total: crate::util::rank::total(&v),
        }
    }
}

/// A ratio over the steps where it is defined.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct RatioStats {
    /// Steps with a value.
    pub steps: u64,
    pub min: f64,
    pub median: f64,
    pub p99: f64,
    pub max: f64,
}

impl RatioStats {
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<RatioStats> {
        let mut v: Vec<f64> = values.into_iter().collect();
        v.sort_by(f64::total_cmp);
        Some(RatioStats {
            steps: v.len() as u64,
            min: *v.first()?,
            median: nearest_rank(&v, 50)?,
            p99: nearest_rank(&v, 99)?,
            max: *v.last()?,
        })
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub steps: u64,
    pub wall_ns: Stats,
    pub launch_ns: Stats,
    pub sync_ns: Stats,
    pub other_ns: Stats,
    pub outside_regions_ns: Stats,
    /// `None` when the process has no device spans on the host clock.
    pub device: Option<DeviceSummary>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DeviceSummary {
    pub busy_ns: Stats,
    pub idle_ns: Stats,
    pub copy_ns: Stats,
    pub compute_ns: Stats,
    pub overlap_ns: Stats,
    /// Over the steps where it is defined; `None` when it is defined for none.
    pub copy_compute_overlap: Option<RatioStats>,
    /// The largest span bound of any step: each device figure above may be off by 2× this (see the
    /// module documentation).
    pub bound_ns: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RegionSummary {
    pub name: String,
    pub domain: Option<String>,
    /// Smallest depth seen.
    pub depth: u32,
    /// Steps that contain it.
    pub steps: u64,
    /// Per-step time over all steps, 0 where absent.
    pub ns: Stats,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Distribution {
    pub min_ns: u64,
    pub max_ns: u64,
    /// `BINS + 1` edges; bin i is [edges[i], edges[i+1]), the last closed.
    pub edges_ns: Vec<u64>,
    /// `BINS` counts.
    pub counts: Vec<u64>,
    /// Peaks passing the rule in the module documentation.
    pub modes: u64,
    /// The first bin of each mode's run, in order.
    pub mode_bins: Vec<usize>,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p99_over_p50: Option<f64>,
}

// ---- selection ---------------------------------------------------------------------------------------

/// A range's (name, domain).
type Key<'a> = (&'a str, Option<&'a str>);

fn closed(r: &Range) -> Option<u64> {
    r.end_ns.filter(|&e| e >= r.begin_ns)
}

/// Picks the step ranges of a process: (selection, indices into `p.ranges` of the closed ones, open count).
pub fn select(
    p: &ProcessTimeline,
    o: &StepOptions,
) -> Result<(Selection, Vec<usize>, u64), String> {
    let in_domain = |r: &Range| o.domain.is_none() || r.domain.as_deref() == o.domain.as_deref();
    let dom = |d: Option<&str>| match d {
        Some(d) => format!("domain \"{d}\""),
        None => "the default domain".to_string(),
    };
    let (name, domain, rule, runner_up, reason) = if let Some(name) = &o.range {
        let found: Vec<&Range> = p
            .ranges
            .iter()
            .filter(|r| *r.name == **name && in_domain(r))
            .collect();
        let Some(first) = found.first() else {
            return Err(match &o.domain {
                Some(d) => format!("no NVTX range \"{name}\" in domain \"{d}\""),
                None => format!("no NVTX range \"{name}\""),
            });
        };
        // Without --domain, a name used in several domains takes them all (`domain` is then `None`).
        let one = o.domain.is_some() || found.iter().all(|r| r.domain == first.domain);
        let domain = if one {
            first.domain.map(|d| d.to_string())
        } else {
            None
        };
        let where_ = if one {
            dom(domain.as_deref())
        } else {
            "every domain".to_string()
        };
        (
            name.clone(),
            domain,
            "range-option",
            None,
            format!("ranges named \"{name}\" in {where_}, at any level (--range)"),
        )
    } else {
        // (name, domain) → (closed level-0 count, first begin).
        let mut counts: HashMap<Key, (u64, u64)> = HashMap::default();
        for r in p
            .ranges
            .iter()
            .filter(|r| r.level == 0 && closed(r).is_some() && in_domain(r))
        {
            let c = counts
                .entry((r.name.as_str(), r.domain.map(|d| d.as_str())))
                .or_insert((0, r.begin_ns));
            c.0 += 1;
            c.1 = c.1.min(r.begin_ns);
        }
        let mut ranked: Vec<(Key, (u64, u64))> = counts.into_iter().collect();
        // Most occurrences first; ties: earliest first occurrence, then name for determinism.
        ranked.sort_by(|a, b| {
            b.1 .0
                .cmp(&a.1 .0)
                .then(a.1 .1.cmp(&b.1 .1))
                .then(a.0.cmp(&b.0))
        });
        let Some(&((name, domain), (count, _))) = ranked.first().filter(|r| r.1 .0 >= 2) else {
            return Err(match ranked.first() {
                None => "no closed NVTX range at level 0 (use --range NAME)".into(),
                Some(_) => "no NVTX range at level 0 repeats (use --range NAME)".into(),
            });
        };
        let runner_up = ranked.get(1).map(|&((n, d), (c, _))| Candidate {
            name: n.to_string(),
            domain: d.map(str::to_string),
            count: c,
        });
        let next = match &runner_up {
            Some(c) => format!(
                "; next: \"{}\" in {}, {} time{}",
                c.name,
                dom(c.domain.as_deref()),
                c.count,
                if c.count == 1 { "" } else { "s" }
            ),
            None => String::new(),
        };
        let tie = match &runner_up {
            Some(c) if c.count == count => ", tie broken by the earliest first occurrence",
            _ => "",
        };
        (
            name.to_string(),
            domain.map(str::to_string),
            "most-repeated-level-0",
            runner_up,
            format!(
                "the outermost (level-0) range seen most often: \"{name}\" in {}, {count} times{tie}{next}",
                dom(domain)
            ),
        )
    };
    let matches = |r: &Range| {
        *r.name == *name
            && match rule {
                "range-option" => in_domain(r),
                _ => r.domain.as_deref() == domain.as_deref() && r.level == 0,
            }
    };
    let mut chosen = Vec::new();
    let mut open = 0;
    for (i, r) in p.ranges.iter().enumerate().filter(|(_, r)| matches(r)) {
        if closed(r).is_some() {
            chosen.push(i);
        } else {
            open += 1;
        }
    }
    chosen.sort_by_key(|&i| (p.ranges[i].begin_ns, p.ranges[i].tid));
    let sel = Selection {
        name,
        domain,
        rule,
        count: chosen.len() as u64,
        runner_up,
        reason,
    };
    Ok((sel, chosen, open))
}

// ---- per step ----------------------------------------------------------------------------------------

/// Depth-0 calls of one thread in classes of interest, sorted by begin; ends are `u64::MAX` while open.
struct ThreadCalls {
    launch: Calls,
    sync: Calls,
}

/// One thread's calls of one kind, sorted by begin. A window with few of them is measured from them
/// (`clipped_in`); one with many (more than `DIRECT`) by running totals (`Measured`, made the first
/// time one is asked for) when the calls are disjoint, as depth-0 calls of one thread are (a damaged
/// capture's are scanned as before).
struct Calls {
    v: Vec<(u64, u64)>,
    measured: std::sync::OnceLock<Option<Measured>>,
}

impl Calls {
    fn new(v: Vec<(u64, u64)>) -> Calls {
        Calls {
            v,
            measured: std::sync::OnceLock::new(),
        }
    }

    /// The length of the union of the calls' parts in [lo, hi), and how many calls overlap it.
    fn clipped_in(&self, lo: u64, hi: u64) -> (u64, u64) {
        // Disjoint and sorted by begin, so ends are sorted too.
        let from = self.v.partition_point(|&(_, e)| e <= lo);
        let to = self.v.partition_point(|&(b, _)| b < hi);
        if to.saturating_sub(from) > DIRECT {
            let m = (self.measured).get_or_init(|| Measured::new(self.v.clone()).ok());
            if let Some(m) = m {
                return m.within(lo, hi);
            }
        }
        clipped_in(&self.v[from..], lo, hi)
    }
}

/// Intervals of `v` (sorted by begin, disjoint, the first ending after `lo`) overlapping [lo, hi),
/// clipped: (union length, count).
fn clipped_in(v: &[(u64, u64)], lo: u64, hi: u64) -> (u64, u64) {
    let parts: Vec<(u64, u64)> = v
        .iter()
        .take_while(|&&(b, _)| b < hi)
        .filter(|&&(_, e)| e > lo)
        .map(|&(b, e)| clip(b, e, lo, hi))
        .collect();
    let n = parts.len() as u64;
    (measure(&union(parts)), n)
}

/// A span's end, read where it is by the spans' index (a copy was 8 bytes a span).
impl End for DeviceSpan {
    fn end(&self) -> u64 {
        self.end_ns
    }
}

/// Device spans sorted by begin, indexed by their ends for window queries (`util::reach`), and
/// (made on first use) the unions a step's device figures measure.
pub struct SpanIndex<'a> {
    spans: &'a [DeviceSpan],
    reach: Reach<&'a [DeviceSpan]>,
    unions: std::sync::OnceLock<Unions>,
    /// Every span's end, sorted (`running_at`): made only for windows with many spans running.
    ends: std::sync::OnceLock<Vec<u64>>,
}

/// The union of all device spans, of the copies, of the kernels, and the copies' and kernels'
/// intersection; the spans' bounds by index; whether every span ends at or after its begin.
struct Unions {
    all: Measured,
    copy: Measured,
    kernel: Measured,
    overlap: Measured,
    bounds: RangeMax,
    ordered: bool,
}

impl<'a> SpanIndex<'a> {
    /// `spans` must be sorted by begin (the model sorts them).
    pub fn new(spans: &'a [DeviceSpan]) -> SpanIndex<'a> {
        let reach = Reach::new(spans);
        SpanIndex {
            spans,
            reach,
            unions: std::sync::OnceLock::new(),
            ends: std::sync::OnceLock::new(),
        }
    }

    /// Spans with begin < hi and end > lo (a zero-length span inside the window counts too), in
    /// begin order.
    pub fn overlapping(&self, lo: u64, hi: u64) -> impl Iterator<Item = &'a DeviceSpan> + '_ {
        let to = self.spans.partition_point(|s| s.begin_ns < hi);
        (self.reach.reaching(lo, to))
            .map(|i| &self.spans[i])
            .filter(move |s| s.end_ns > lo || (s.end_ns == lo && s.begin_ns == lo && lo < hi))
    }

    fn unions(&self) -> &Unions {
        self.unions.get_or_init(|| {
            let of = |kind: Option<DeviceKind>| {
                (self.spans.iter())
                    .filter(|s| kind.is_none_or(|k| s.kind == k))
                    .map(|s| (s.begin_ns, s.end_ns))
                    .collect::<Vec<_>>()
            };
            let copy = union(of(Some(DeviceKind::Memcpy)));
            let kernel = union(of(Some(DeviceKind::Kernel)));
            let overlap = intersect(&copy, &kernel);
            // Merged already: measured as they are.
            let merged = |v| Measured::new(v).expect("a union and an intersection are merged");
            Unions {
                all: Measured::of_union(of(None)),
                overlap: merged(overlap),
                copy: merged(copy),
                kernel: merged(kernel),
                bounds: RangeMax::new(self.spans.iter().map(|s| s.bound_ns).collect()),
                ordered: self.spans.iter().all(|s| s.begin_ns <= s.end_ns),
            }
        })
    }

    /// How many spans `overlapping` lists, and their largest bound. Every span that begins inside
    /// the window overlaps it (it ends at or after it begins; one of no length at `lo` counts by
    /// `overlapping`'s rule), so only the spans begun before `lo` are visited, and of those only
    /// the ones that reach it (`Reach`). Spans that end before they begin (a damaged capture) are
    /// all visited.
    fn count_and_bound(&self, lo: u64, hi: u64) -> (u64, u64) {
        let u = self.unions();
        if !u.ordered || hi < lo {
            let mut n = 0;
            let mut bound = 0;
            for s in self.overlapping(lo, hi) {
                n += 1;
                bound = bound.max(s.bound_ns);
            }
            return (n, bound);
        }
        let from = self.spans.partition_point(|s| s.begin_ns < lo);
        let to = self.spans.partition_point(|s| s.begin_ns < hi);
        let mut n = (to - from) as u64;
        let mut bound = u.bounds.max(from, to);
        // The spans begun before `lo` still running at it: counted from the sorted ends once they
        // are many (each window visiting them all was quadratic where spans all overlap), and
        // visited for the bound only until the largest bound any of them could have is found.
        let cap = u.bounds.max(0, from);
        let mut running = self
            .reach
            .reaching(lo, from)
            .filter(|&i| self.spans[i].end_ns > lo);
        let mut counted = 0u64;
        for i in running.by_ref().take(DIRECT) {
            counted += 1;
            bound = bound.max(self.spans[i].bound_ns);
        }
        match running.next() {
            None => n += counted,
            Some(i) => {
                bound = bound.max(self.spans[i].bound_ns);
                n += self.running_at(lo, from);
                if bound < cap {
                    for i in running {
                        bound = bound.max(self.spans[i].bound_ns);
                        if bound >= cap {
                            break;
                        }
                    }
                }
            }
        }
        (n, bound)
    }

    /// How many spans begun before `lo` (indices `..from`) end after it, every span's begin at or
    /// before its end (`Unions::ordered`): those before `from` less those that end by `lo`, which
    /// are every span ending by `lo` but the zero-length ones at `lo` itself (begun at `lo`: not
    /// before `from`), found in the sorted ends (made the first time: 8 bytes a span) and, the
    /// spans sorted by (begin, end), first among those begun at `lo`.
    fn running_at(&self, lo: u64, from: usize) -> u64 {
        let ends = self.ends.get_or_init(|| {
            let mut e: Vec<u64> = self.spans.iter().map(|s| s.end_ns).collect();
            e.sort_unstable();
            e
        });
        let ended = ends.partition_point(|&e| e <= lo);
        let at_lo = self.spans[from..].partition_point(|s| s.begin_ns == lo && s.end_ns <= lo);
        (from + at_lo - ended) as u64
    }
}

/// Calls per chunk of the per-thread pass of `process_steps`.
const CALLS_CHUNK: usize = 1 << 16;

/// Windows with at most this many spans (calls) begun inside them are measured from their own
/// spans (calls); larger ones from merged lists with running totals (`Unions`, `Calls`), made the
/// first time one is asked for. Making those is a pass over every span (call) of the process: more
/// than the short steps of most captures cost in all (`why` at 10 M entries on the H200 machine:
/// 0.69 -> 1.01 s when every window used them).
const DIRECT: usize = 1 << 12;

/// The device figures of one window. A window with many spans (a step as long as the run, nested
/// steps of one name) is measured without visiting them: clipping every span to the window and
/// merging commutes with merging them all once and measuring the merged lists' part in the
/// window (`Measured`, O(log n)), and only the spans still running at its start are visited for
/// the count and the largest bound.
///
/// A window with few spans begun inside it but many still running at its start (spans that all
/// overlap: a hostile or broken ring's) is measured the second way too (`direct_window` gives up):
/// visiting the running ones made every window cost all of them.
pub fn device_window(idx: &SpanIndex, lo: u64, hi: u64) -> StepDevice {
    let from = idx.spans.partition_point(|s| s.begin_ns < lo);
    let to = idx.spans.partition_point(|s| s.begin_ns < hi);
    let direct = (to.saturating_sub(from) <= DIRECT)
        .then(|| direct_window(idx, lo, hi, (to - from + DIRECT) as u64))
        .flatten();
    let (spans, bound, busy, c, k, ov) = match direct {
        Some(d) => d,
        None => {
            let (spans, bound) = idx.count_and_bound(lo, hi);
            let u = idx.unions();
            let (c, k) = (u.copy.within(lo, hi).0, u.kernel.within(lo, hi).0);
            let (busy, ov) = (u.all.within(lo, hi).0, u.overlap.within(lo, hi).0);
            (spans, bound, busy, c, k, ov)
        }
    };
    StepDevice {
        spans,
        busy_ns: busy,
        idle_ns: (hi - lo).saturating_sub(busy),
        copy_ns: c,
        compute_ns: k,
        overlap_ns: ov,
        copy_compute_overlap: overlap_ratio(ov, c, k),
        bound_ns: bound,
    }
}

/// `device_window`'s figures (spans, bound, busy, copy, compute, overlap) from the window's own
/// spans, clipped and merged; `None` once more than `most` of them are visited (more than `DIRECT`
/// begun before it still running: it is measured from the merged lists then).
fn direct_window(
    idx: &SpanIndex,
    lo: u64,
    hi: u64,
    most: u64,
) -> Option<(u64, u64, u64, u64, u64, u64)> {
    let (mut all, mut copy, mut kern) = (Vec::new(), Vec::new(), Vec::new());
    let mut spans = 0u64;
    let mut bound = 0u64;
    for s in idx.overlapping(lo, hi) {
        spans += 1;
        if spans > most {
            return None;
        }
        bound = bound.max(s.bound_ns);
        let c = clip(s.begin_ns, s.end_ns, lo, hi);
        all.push(c);
        match s.kind {
            DeviceKind::Memcpy => copy.push(c),
            DeviceKind::Kernel => kern.push(c),
            _ => {}
        }
    }
    let (all, copy, kern) = (union(all), union(copy), union(kern));
    let ov = intersection(&copy, &kern);
    Some((
        spans,
        bound,
        measure(&all),
        measure(&copy),
        measure(&kern),
        ov,
    ))
}

/// Per sub-range name: (smallest depth, count, intervals).
type RegionAcc = (u32, u64, Vec<(u64, u64)>);

/// A thread's closed ranges (indices into `p.ranges`, sorted by begin) and, to find those that end
/// by a time among them without visiting the others, a `Reach` over `u64::MAX - end`: ranges that
/// overlap without nesting (an inference server's start/end range per request) made every step
/// visit every range begun inside it, quadratic in the ranges.
struct ThreadRanges {
    ranges: Vec<usize>,
    ends_by: Reach<Vec<u64>>,
}

impl ThreadRanges {
    fn new(p: &ProcessTimeline, ranges: Vec<usize>) -> ThreadRanges {
        let flipped = (ranges.iter())
            .map(|&i| u64::MAX - closed(&p.ranges[i]).unwrap_or(u64::MAX))
            .collect();
        ThreadRanges {
            ranges,
            ends_by: Reach::new(flipped),
        }
    }
}

/// Sub-ranges of the step `step` (an index into `p.ranges`) given the thread's closed ranges.
fn regions(p: &ProcessTimeline, thread: &ThreadRanges, step: usize) -> (Vec<Region>, u64) {
    let s = &p.ranges[step];
    let (lo, hi) = (s.begin_ns, closed(s).unwrap_or(s.begin_ns));
    let all = &thread.ranges;
    let from = all.partition_point(|&i| p.ranges[i].begin_ns < lo);
    let to = all.partition_point(|&i| p.ranges[i].begin_ns <= hi);
    // Those begun in the step that end by its end, in thread order.
    let mut inside: Vec<(u64, u64, usize)> = (thread.ends_by)
        .reaching_in(u64::MAX - hi, from, to)
        .map(|k| all[k])
        .filter(|&i| i != step)
        .filter_map(|i| {
            let r = &p.ranges[i];
            // A sub-range with the step's own interval counts when it comes later (nested deeper).
            closed(r)
                .filter(|&e| e <= hi && ((r.begin_ns, e) != (lo, hi) || i > step))
                .map(|e| (r.begin_ns, e, i))
        })
        .collect();
    // Enclosing ranges first: by begin, then longest, then index.
    inside.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    // The open sub-ranges, and per entry whether the ends up to it never grow (properly nested
    // ranges): then the enclosing ones (all begun at or before `b`) are a prefix found by binary
    // search; otherwise counted one by one. (Counting them all for every sub-range was cubic in a
    // chain of nested ranges of the step's own name.)
    let mut stack: Vec<(u64, u64)> = Vec::new();
    let mut nested: Vec<bool> = Vec::new();
    let mut by_key: HashMap<Key, RegionAcc> = HashMap::default();
    for &(b, e, i) in &inside {
        while stack.last().is_some_and(|t| t.1 <= b && t.1 < e) {
            stack.pop();
            nested.pop();
        }
        let enclosing = if nested.last().is_none_or(|&n| n) {
            stack.partition_point(|t| t.1 >= e)
        } else {
            stack.iter().filter(|t| t.0 <= b && t.1 >= e).count()
        };
        let depth = 1 + enclosing as u32;
        let still = nested.last().is_none_or(|&n| n) && stack.last().is_none_or(|t| t.1 >= e);
        stack.push((b, e));
        nested.push(still);
        let r = &p.ranges[i];
        let acc = by_key
            .entry((r.name.as_str(), r.domain.map(|d| d.as_str())))
            .or_insert((depth, 0, Vec::new()));
        acc.0 = acc.0.min(depth);
        acc.1 += 1;
        acc.2.push((b, e));
    }
    let covered = measure(&union(inside.iter().map(|&(b, e, _)| (b, e)).collect()));
    let mut out: Vec<Region> = by_key
        .into_iter()
        .map(|((name, domain), (depth, count, iv))| Region {
            name: name.to_string(),
            domain: domain.map(str::to_string),
            depth,
            count,
            ns: measure(&union(iv)),
        })
        .collect();
    out.sort_by(|a, b| {
        a.depth
            .cmp(&b.depth)
            .then(b.ns.cmp(&a.ns))
            .then(a.name.cmp(&b.name))
    });
    (out, (hi - lo).saturating_sub(covered))
}

/// The steps view of one process.
pub fn process_steps(p: &ProcessTimeline, o: &StepOptions) -> ProcessSteps {
    let device_timed = !p.device.is_empty();
    let mut notes = Vec::new();
    if p.calls.is_empty() {
        notes.push(
            "no CUDA calls recorded (level 1 records NVTX only): launch and sync times are 0"
                .into(),
        );
    }
    if !device_timed {
        notes.push(
            "no device intervals on the host clock: device figures need a level-3 capture".into(),
        );
    }
    if p.unplaced_device > 0 {
        notes.push(format!(
            "{} device interval{} without a host time left out: device figures are lower bounds",
            p.unplaced_device,
            if p.unplaced_device == 1 { "" } else { "s" }
        ));
    }
    if device_timed && p.backend == "events" {
        notes.push(
            "events backend: a span runs from its start event to its end event on the stream, \
             so it may include time the stream waited (busy and compute are upper bounds); a graph \
             launch is one span, counted in busy only"
                .into(),
        );
    }
    let mut out = ProcessSteps {
        pid: p.pid,
        exe: p.exe.clone(),
        selection: None,
        device_timed,
        backend: p.backend.clone(),
        open: 0,
        steps: Vec::new(),
        summary: None,
        regions: Vec::new(),
        slowest: Vec::new(),
        causes: Vec::new(),
        distribution: None,
        notes,
    };
    let (sel, chosen, open) = match select(p, o) {
        Ok(s) => s,
        Err(why) => {
            out.notes.insert(0, format!("no steps: {why}"));
            return out;
        }
    };
    out.open = open;
    if open > 0 {
        out.notes.push(format!(
            "{open} \"{}\" range{} never closed: not counted as steps",
            sel.name,
            if open == 1 { "" } else { "s" }
        ));
    }
    out.selection = Some(sel);

    // Per thread: depth-0 launch and sync calls, and closed ranges, sorted by begin. The calls are
    // read on every thread, a chunk each, and joined in call order: the pass reads every call (at
    // 10 M entries 370 MB, 90 ms on one thread).
    type Lists = HashMap<u32, [Vec<(u64, u64)>; 2]>;
    let parts: Vec<Lists> = (p.calls.par_chunks(CALLS_CHUNK))
        .map(|calls| {
            let mut by_thread = Lists::default();
            for c in calls.iter().filter(|c| c.depth == 0) {
                let iv = (
                    c.begin_ns,
                    c.end_ns.get().unwrap_or(u64::MAX).max(c.begin_ns),
                );
                let t = by_thread.entry(c.tid).or_default();
                match c.class {
                    Some(k) if k.issues_work() => t[0].push(iv),
                    Some(k) if SYNC_CLASSES.contains(&k) => t[1].push(iv),
                    _ => {}
                }
            }
            by_thread
        })
        .collect();
    let mut lengths: HashMap<u32, [usize; 2]> = HashMap::default();
    for (&tid, [launch, sync]) in parts.iter().flatten() {
        let n = lengths.entry(tid).or_default();
        n[0] += launch.len();
        n[1] += sync.len();
    }
    let mut by_thread: Lists = (lengths.into_iter())
        .map(|(tid, n)| (tid, n.map(Vec::with_capacity)))
        .collect();
    for part in parts {
        for (tid, lists) in part {
            let t = by_thread.entry(tid).or_default();
            for (all, one) in t.iter_mut().zip(lists) {
                all.extend(one);
            }
        }
    }
    let threads: HashMap<u32, ThreadCalls> = (by_thread.into_iter())
        .map(|(tid, [mut launch, mut sync])| {
            launch.sort_unstable();
            sync.sort_unstable();
            let (launch, sync) = (Calls::new(launch), Calls::new(sync));
            (tid, ThreadCalls { launch, sync })
        })
        .collect();
    let mut thread_ranges: HashMap<u32, Vec<usize>> = HashMap::default();
    for (i, r) in p.ranges.iter().enumerate() {
        if closed(r).is_some() {
            thread_ranges.entry(r.tid).or_default().push(i);
        }
    }
    for v in thread_ranges.values_mut() {
        v.sort_by_key(|&i| (p.ranges[i].begin_ns, i));
    }
    let thread_ranges: HashMap<u32, ThreadRanges> = (thread_ranges.into_iter())
        .map(|(tid, v)| (tid, ThreadRanges::new(p, v)))
        .collect();
    let no_ranges = ThreadRanges::new(p, Vec::new());
    let idx = SpanIndex::new(&p.device);
    let none = ThreadCalls {
        launch: Calls::new(Vec::new()),
        sync: Calls::new(Vec::new()),
    };
    // Each step on its own: on every thread, in step order.
    let steps = chosen.par_iter().enumerate().map(|(index, &ri)| {
        let r = &p.ranges[ri];
        let (lo, hi) = (r.begin_ns, closed(r).unwrap_or(r.begin_ns));
        let t = threads.get(&r.tid).unwrap_or(&none);
        let (launch_ns, launch_calls) = t.launch.clipped_in(lo, hi);
        let (sync_ns, sync_calls) = t.sync.clipped_in(lo, hi);
        let (regions, outside) = regions(p, thread_ranges.get(&r.tid).unwrap_or(&no_ranges), ri);
        Step {
            index,
            tid: r.tid,
            begin_ns: lo,
            end_ns: hi,
            wall_ns: hi - lo,
            launch_ns,
            launch_calls,
            sync_ns,
            sync_calls,
            other_ns: (hi - lo).saturating_sub(launch_ns + sync_ns),
            regions,
            outside_regions_ns: outside,
            device: device_timed.then(|| device_window(&idx, lo, hi)),
        }
    });
    out.steps.par_extend(steps);
    if out.steps.is_empty() {
        out.notes
            .insert(0, "no steps: every selected range is open".into());
        return out;
    }
    out.summary = Some(summary(&out.steps, device_timed));
    out.regions = region_summary(&out.steps);
    out.slowest = slowest(&out.steps, SLOWEST);
    out.distribution = Some(distribution(
        &out.steps.iter().map(|s| s.wall_ns).collect::<Vec<_>>(),
    ));
    out
}

fn summary(steps: &[Step], device_timed: bool) -> Summary {
    let st = |f: fn(&Step) -> u64| Stats::of(steps.iter().map(f));
    let dev = |f: fn(&StepDevice) -> u64| {
        Stats::of(steps.iter().filter_map(|s| s.device.as_ref()).map(f))
    };
    Summary {
        steps: steps.len() as u64,
        wall_ns: st(|s| s.wall_ns),
        launch_ns: st(|s| s.launch_ns),
        sync_ns: st(|s| s.sync_ns),
        other_ns: st(|s| s.other_ns),
        outside_regions_ns: st(|s| s.outside_regions_ns),
        device: device_timed.then(|| DeviceSummary {
            busy_ns: dev(|d| d.busy_ns),
            idle_ns: dev(|d| d.idle_ns),
            copy_ns: dev(|d| d.copy_ns),
            compute_ns: dev(|d| d.compute_ns),
            overlap_ns: dev(|d| d.overlap_ns),
            copy_compute_overlap: RatioStats::of(
                steps
                    .iter()
                    .filter_map(|s| s.device.as_ref()?.copy_compute_overlap),
            ),
            bound_ns: steps
                .iter()
                .filter_map(|s| s.device.as_ref())
                .map(|d| d.bound_ns)
                .max()
                .unwrap_or(0),
        }),
    }
}

fn region_summary(steps: &[Step]) -> Vec<RegionSummary> {
    let mut keys: HashMap<(String, Option<String>), (u32, Vec<u64>)> = HashMap::default();
    for (i, s) in steps.iter().enumerate() {
        for r in &s.regions {
            let acc = keys
                .entry((r.name.clone(), r.domain.clone()))
                .or_insert_with(|| (r.depth, vec![0; steps.len()]));
            acc.0 = acc.0.min(r.depth);
            acc.1[i] = r.ns;
        }
    }
    let mut out: Vec<RegionSummary> = keys
        .into_iter()
        .map(|((name, domain), (depth, per_step))| RegionSummary {
            name,
            domain,
            depth,
            steps: per_step.iter().filter(|&&v| v > 0).count() as u64,
            ns: Stats::of(per_step),
        })
        .collect();
    out.sort_by(|a, b| {
        a.depth
            .cmp(&b.depth)
            .then(b.ns.median.cmp(&a.ns.median))
            .then(b.ns.total.cmp(&a.ns.total))
            .then(a.name.cmp(&b.name))
    });
    out
}

/// Indices of the `n` longest steps, longest first; ties: earlier first.
pub fn slowest(steps: &[Step], n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..steps.len()).collect();
    v.sort_by(|&a, &b| steps[b].wall_ns.cmp(&steps[a].wall_ns).then(a.cmp(&b)));
    v.truncate(n);
    v
}

/// The histogram, modes and tail ratio of `walls` (see the module documentation).
pub fn distribution(walls: &[u64]) -> Distribution {
    let mut v = walls.to_vec();
    v.sort_unstable();
    let (min, max) = (
        v.first().copied().unwrap_or(0),
        v.last().copied().unwrap_or(0),
    );
    let range = (max - min) as u128;
    let edges: Vec<u64> = (0..=BINS as u128)
        .map(|i| min + (range * i).div_ceil(BINS as u128) as u64)
        .collect();
    let mut counts = vec![0u64; BINS];
    for &x in &v {
        // All in bin 0 when every step took the same time.
        let bin = ((x - min) as u128 * BINS as u128)
            .checked_div(range)
            .map_or(0, |b| b.min(BINS as u128 - 1) as usize);
        counts[bin] += 1;
    }
    let mode_bins = modes(&counts, v.len() as u64);
    let p50 = nearest_rank(&v, 50).unwrap_or(0);
    let p99 = nearest_rank(&v, 99).unwrap_or(0);
    Distribution {
        min_ns: min,
        max_ns: max,
        edges_ns: edges,
        counts,
        modes: mode_bins.len() as u64,
        mode_bins,
        p50_ns: p50,
        p99_ns: p99,
        p99_over_p50: (p50 > 0).then(|| p99 as f64 / p50 as f64),
    }
}

/// The first bin of each mode of a histogram of `n` values (rule in the module documentation).
pub fn modes(counts: &[u64], n: u64) -> Vec<usize> {
    let min_count = n.div_ceil(20).max(2).min(n.max(1));
    let at = |i: isize| -> u64 {
        if i < 0 || i as usize >= counts.len() {
            0
        } else {
            counts[i as usize]
        }
    };
    let mut out = Vec::new();
    let mut i = 0usize;
    while i < counts.len() {
        let c = counts[i];
        let mut j = i;
        while j + 1 < counts.len() && counts[j + 1] == c {
            j += 1;
        }
        let is_peak = c > 0 && at(i as isize - 1) < c && at(j as isize + 1) < c;
        if is_peak && c >= min_count {
            // Walk outward until a higher bin: the lowest count passed is the side's dip.
            let dip = |mut k: isize, step: isize| -> Option<u64> {
                let mut low = u64::MAX;
                while k >= 0 && (k as usize) < counts.len() {
                    let ck = counts[k as usize];
                    if ck > c {
                        return Some(low);
                    }
                    low = low.min(ck);
                    k += step;
                }
                None
            };
            let dips = [dip(i as isize - 1, -1), dip(j as isize + 1, 1)];
            let worst = dips.iter().flatten().max();
            if worst.is_none_or(|&d| 2 * d <= c) {
                out.push(i);
            }
        }
        i = j + 1;
    }
    out
}
