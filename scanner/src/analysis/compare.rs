//! Compare: `causeway compare [--range NAME] A B`. Two captures side by side — per step figure, per
//! kernel name and per API name — as numbers only: A's figures, B's figures, the difference B − A and,
//! for step figures, the spread of that difference. It never says which side is better.
//!
//! **Sides.** Each side is a capture directory or ring file, summarized as `causeway report` does
//! (`crate::report`) and split into steps as `causeway report --steps` does (`crate::steps`), with the
//! same selection rule on both sides: `--range NAME` when given, else each process's outermost
//! repeating range. The steps of all processes of a side are pooled.
//!
//! **Step figures** (`steps.figures`): `wall_ns`, `launch_ns`, `sync_ns`, `other_ns` and, for steps with
//! device figures, `device.busy_ns`, `device.idle_ns`, `device.copy_ns`, `device.compute_ns`,
//! `device.overlap_ns` and `device.copy_compute_overlap` (the ratio, compared in millionths, rounded to
//! the nearest; unit `millionths`). Per side: `n` (steps where the figure is defined) and nearest-rank
//! min, median, max. `median_diff` = median(B) − median(A). `spread`: the nearest-rank p5 and p95 of
//! the n_A·n_B pairwise differences {b_j − a_i} over all pairs of an A step and a B step (computed
//! exactly, without listing the pairs: the k-th smallest difference is found by bisection on the value
//! with a linear count of pairs at or below it). For A = {1000, 1100, 1200} and B = {1500, 1600, 1700}:
//! median_diff = 500 and the nine differences 300, 400, 400, 500, 500, 500, 600, 600, 700 give the
//! spread [300, 700]. A figure with no values on a side has that side `null`, and no difference.
//!
//! **Kernels** (`kernels`): `source` is `device` when both sides have device kernel rows
//! (`report.device.kernels`, level 3): count, p50 and total device time per name; else `launches`
//! (`report.kernels[].launches`: executions requested; p50 and totals are then `null`). Every name seen
//! on either side is a row; `present` is `both`, `a-only` or `b-only`. Differences are B − A (a side
//! without the name counts 0 for count and total, and has no p50). Sorted by |total_diff| (launches:
//! |count_diff|), largest first, then by name.
//!
//! **APIs** (`apis`): calls and p50 host time per API name, A, B and B − A; sorted by |p50_diff|,
//! largest first, then by name.
//!
//! **Header** (`a`, `b`): per side the capture, its processes' backends and levels, the device clock
//! conversion and its bound (the report's `device.clock`), and which ranges are the steps.
//! `warnings`: when backends or levels differ (the figures are then not like for like), when the step
//! ranges differ, when a side has no steps.

use crate::analysis::report::Report;
use crate::analysis::steps::{ProcessSteps, StepOptions};
use crate::analysis::views::{ViewOptions, Views};
use crate::util::rank::nearest_rank;
use crate::CaptureError;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The percentiles of the pairwise differences given as the spread.
pub const SPREAD_LO: u64 = 5;
pub const SPREAD_HI: u64 = 95;

/// What `compare` was asked for.
#[derive(Debug, Clone, Default)]
pub struct CompareOptions {
    /// `--range NAME`: the steps are the ranges of that name, on both sides.
    pub range: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: SideInfo,
    pub b: SideInfo,
    /// One line each: what makes the two sides not like for like, or a side without steps.
    pub warnings: Vec<String>,
    pub steps: StepsComparison,
    pub kernels: KernelsComparison,
    pub apis: Vec<ApiRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SideInfo {
    pub capture: String,
    pub processes: usize,
    /// Distinct device-timing backends of its processes, sorted.
    pub backends: Vec<String>,
    /// Distinct capture levels of its processes, sorted.
    pub levels: Vec<u32>,
    /// `report.device.clock.conversion`.
    pub clock_conversion: String,
    pub clock_bound_ns_p50: Option<u64>,
    pub clock_bound_ns_max: Option<u64>,
    /// Steps pooled over its processes.
    pub steps: u64,
    /// The selected step ranges, as `name` or `name@domain`, distinct and sorted.
    pub step_ranges: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepsComparison {
    /// `range-option` or `most-repeated-level-0`.
    pub rule: &'static str,
    pub figures: Vec<FigureRow>,
}

/// One side of a figure: nearest-rank over the steps where it is defined.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct SideStats {
    pub n: u64,
    pub min: i64,
    pub median: i64,
    pub max: i64,
}

/// Nearest-rank p5 and p95 of all pairwise differences b − a.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Spread {
    pub p5: i64,
    pub p95: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FigureRow {
    pub figure: &'static str,
    /// `ns` or `millionths`.
    pub unit: &'static str,
    pub a: Option<SideStats>,
    pub b: Option<SideStats>,
    /// median(B) − median(A); `None` when a side has no values.
    pub median_diff: Option<i64>,
    pub spread: Option<Spread>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KernelsComparison {
    /// `device` or `launches`.
    pub source: &'static str,
    pub rows: Vec<KernelRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KernelRow {
    pub name: String,
    /// `both`, `a-only`, `b-only`.
    pub present: &'static str,
    pub count_a: u64,
    pub count_b: u64,
    pub count_diff: i64,
    pub p50_ns_a: Option<u64>,
    pub p50_ns_b: Option<u64>,
    pub p50_diff: Option<i64>,
    pub total_ns_a: Option<u64>,
    pub total_ns_b: Option<u64>,
    pub total_diff: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ApiRow {
    pub name: String,
    pub present: &'static str,
    pub calls_a: u64,
    pub calls_b: u64,
    pub calls_diff: i64,
    pub p50_ns_a: Option<u64>,
    pub p50_ns_b: Option<u64>,
    pub p50_diff: Option<i64>,
}

// ---- pairwise differences ----------------------------------------------------------------------------

/// How many pairs (i, j) have b[j] − a[i] ≤ x; `a` and `b` sorted ascending.
fn pairs_at_or_below(a: &[i64], b: &[i64], x: i64) -> u64 {
    // For a[i] ascending, the threshold a[i] + x ascends: one pointer into b walks forward only.
    let (mut j, mut n) = (0usize, 0u64);
    for &ai in a {
        let t = ai as i128 + x as i128;
        while j < b.len() && (b[j] as i128) <= t {
            j += 1;
        }
        n += j as u64;
    }
    n
}

/// The nearest-rank percentile `p` of the multiset {b_j − a_i} over all pairs; `None` when either
/// side is empty. `a` and `b` sorted ascending.
pub fn pairwise_percentile(a: &[i64], b: &[i64], p: u64) -> Option<i64> {
    let (fa, la, fb, lb) = (*a.first()?, *a.last()?, *b.first()?, *b.last()?);
    let total = a.len() as u64 * b.len() as u64;
    let k = (p * total).div_ceil(100).clamp(1, total);
    // The smallest x with at least k pairs at or below it.
    let (mut lo, mut hi) = (fb.saturating_sub(la), lb.saturating_sub(fa));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pairs_at_or_below(a, b, mid) >= k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

fn side_stats(sorted: &[i64]) -> Option<SideStats> {
    Some(SideStats {
        n: sorted.len() as u64,
        min: *sorted.first()?,
        median: nearest_rank(sorted, 50)?,
        max: *sorted.last()?,
    })
}

/// A figure's row from both sides' values (any order).
pub fn figure_row(
    figure: &'static str,
    unit: &'static str,
    mut a: Vec<i64>,
    mut b: Vec<i64>,
) -> FigureRow {
    a.sort_unstable();
    b.sort_unstable();
    let (sa, sb) = (side_stats(&a), side_stats(&b));
    let median_diff = match (sa, sb) {
        (Some(x), Some(y)) => Some(y.median.saturating_sub(x.median)),
        _ => None,
    };
    let spread = match (
        pairwise_percentile(&a, &b, SPREAD_LO),
        pairwise_percentile(&a, &b, SPREAD_HI),
    ) {
        (Some(p5), Some(p95)) => Some(Spread { p5, p95 }),
        _ => None,
    };
    FigureRow {
        figure,
        unit,
        a: sa,
        b: sb,
        median_diff,
        spread,
    }
}

// ---- building ----------------------------------------------------------------------------------------

fn ns(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn diff(a: u64, b: u64) -> i64 {
    ns(b).saturating_sub(ns(a))
}

fn opt_diff(a: Option<u64>, b: Option<u64>) -> Option<i64> {
    Some(diff(a?, b?))
}

fn present(a: bool, b: bool) -> &'static str {
    match (a, b) {
        (true, true) => "both",
        (true, false) => "a-only",
        _ => "b-only",
    }
}

type Extract = fn(&crate::analysis::steps::Step) -> Option<i64>;

/// The step figures compared, in output order.
const FIGURES: [(&str, &str, Extract); 10] = [
    ("wall_ns", "ns", |s| Some(ns(s.wall_ns))),
    ("launch_ns", "ns", |s| Some(ns(s.launch_ns))),
    ("sync_ns", "ns", |s| Some(ns(s.sync_ns))),
    ("other_ns", "ns", |s| Some(ns(s.other_ns))),
    ("device.busy_ns", "ns", |s| {
        s.device.as_ref().map(|d| ns(d.busy_ns))
    }),
    ("device.idle_ns", "ns", |s| {
        s.device.as_ref().map(|d| ns(d.idle_ns))
    }),
    ("device.copy_ns", "ns", |s| {
        s.device.as_ref().map(|d| ns(d.copy_ns))
    }),
    ("device.compute_ns", "ns", |s| {
        s.device.as_ref().map(|d| ns(d.compute_ns))
    }),
    ("device.overlap_ns", "ns", |s| {
        s.device.as_ref().map(|d| ns(d.overlap_ns))
    }),
    ("device.copy_compute_overlap", "millionths", |s| {
        s.device
            .as_ref()
            .and_then(|d| d.copy_compute_overlap)
            .map(|r| (r * 1e6).round() as i64)
    }),
];

fn step_ranges(steps: &[ProcessSteps]) -> Vec<String> {
    let set: BTreeSet<String> = steps
        .iter()
        .filter_map(|p| p.selection.as_ref())
        .map(|s| match &s.domain {
            Some(d) => format!("{}@{d}", s.name),
            None => s.name.clone(),
        })
        .collect();
    set.into_iter().collect()
}

fn side_info(r: &Report, steps: &[ProcessSteps]) -> SideInfo {
    let backends: BTreeSet<String> = r.processes.iter().map(|p| p.backend.clone()).collect();
    let levels: BTreeSet<u32> = r.processes.iter().map(|p| p.level).collect();
    let c = &r.device.clock;
    SideInfo {
        capture: r.capture.clone(),
        processes: r.processes.len(),
        backends: backends.into_iter().collect(),
        levels: levels.into_iter().collect(),
        clock_conversion: c.conversion.clone(),
        clock_bound_ns_p50: c.bound_ns_p50,
        clock_bound_ns_max: c.bound_ns_max,
        steps: steps.iter().map(|p| p.steps.len() as u64).sum(),
        step_ranges: step_ranges(steps),
    }
}

fn kernels(a: &Report, b: &Report) -> KernelsComparison {
    let device = !a.device.kernels.is_empty() && !b.device.kernels.is_empty();
    // name → (count, p50, total)
    type Row = (u64, Option<u64>, Option<u64>);
    let side = |r: &Report| -> BTreeMap<String, Row> {
        if device {
            r.device
                .kernels
                .iter()
                .map(|k| (k.name.clone(), (k.count, Some(k.p50_ns), Some(k.total_ns))))
                .collect()
        } else {
            r.kernels
                .iter()
                .map(|k| (k.name.clone(), (k.launches, None, None)))
                .collect()
        }
    };
    let (ka, kb) = (side(a), side(b));
    let names: BTreeSet<&String> = ka.keys().chain(kb.keys()).collect();
    let zero = if device { Some(0) } else { None };
    let mut rows: Vec<KernelRow> = names
        .into_iter()
        .map(|n| {
            let (x, y) = (ka.get(n), kb.get(n));
            let (ca, pa, ta) = x.copied().unwrap_or((0, None, zero));
            let (cb, pb, tb) = y.copied().unwrap_or((0, None, zero));
            KernelRow {
                name: n.clone(),
                present: present(x.is_some(), y.is_some()),
                count_a: ca,
                count_b: cb,
                count_diff: diff(ca, cb),
                p50_ns_a: pa,
                p50_ns_b: pb,
                p50_diff: opt_diff(pa, pb),
                total_ns_a: ta,
                total_ns_b: tb,
                total_diff: opt_diff(ta, tb),
            }
        })
        .collect();
    rows.sort_by(|x, y| {
        let key = |r: &KernelRow| r.total_diff.unwrap_or(r.count_diff).unsigned_abs();
        key(y).cmp(&key(x)).then_with(|| x.name.cmp(&y.name))
    });
    KernelsComparison {
        source: if device { "device" } else { "launches" },
        rows,
    }
}

fn apis(a: &Report, b: &Report) -> Vec<ApiRow> {
    let side = |r: &Report| -> BTreeMap<String, (u64, u64)> {
        let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for x in &r.apis {
            // Names are unique per report; keep the first should a layer repeat one.
            m.entry(x.name.clone()).or_insert((x.calls, x.p50_ns));
        }
        m
    };
    let (ma, mb) = (side(a), side(b));
    let names: BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
    let mut rows: Vec<ApiRow> = names
        .into_iter()
        .map(|n| {
            let (x, y) = (ma.get(n), mb.get(n));
            let (pa, pb) = (x.map(|v| v.1), y.map(|v| v.1));
            let (ca, cb) = (x.map_or(0, |v| v.0), y.map_or(0, |v| v.0));
            ApiRow {
                name: n.clone(),
                present: present(x.is_some(), y.is_some()),
                calls_a: ca,
                calls_b: cb,
                calls_diff: diff(ca, cb),
                p50_ns_a: pa,
                p50_ns_b: pb,
                p50_diff: opt_diff(pa, pb),
            }
        })
        .collect();
    rows.sort_by(|x, y| {
        let key = |r: &ApiRow| r.p50_diff.map_or(0, i64::unsigned_abs);
        key(y).cmp(&key(x)).then_with(|| x.name.cmp(&y.name))
    });
    rows
}

/// Why a side has no steps: the first process's `no steps: …` note, else a generic line.
fn no_steps_reason(steps: &[ProcessSteps]) -> String {
    steps
        .iter()
        .flat_map(|p| p.notes.iter())
        .find_map(|n| n.strip_prefix("no steps: ").map(str::to_string))
        .unwrap_or_else(|| "no process has a selected range".into())
}

impl Comparison {
    /// Compares two already summarized sides: each a report and its steps (one entry per process).
    pub fn build(
        a: (&Report, &[ProcessSteps]),
        b: (&Report, &[ProcessSteps]),
        o: &CompareOptions,
    ) -> Comparison {
        let (ia, ib) = (side_info(a.0, a.1), side_info(b.0, b.1));
        let mut warnings = Vec::new();
        if ia.backends != ib.backends {
            warnings.push(format!(
                "backends differ (A: {}, B: {}): device figures are not like for like",
                ia.backends.join(","),
                ib.backends.join(",")
            ));
        }
        if ia.levels != ib.levels {
            let l = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
            warnings.push(format!(
                "levels differ (A: {}, B: {}): figures are not like for like",
                l(&ia.levels),
                l(&ib.levels)
            ));
        }
        for (tag, info, steps) in [("A", &ia, a.1), ("B", &ib, b.1)] {
            if info.steps == 0 {
                warnings.push(format!(
                    "{tag} has no steps: {}",
                    no_steps_reason(steps).trim_end_matches('.')
                ));
            }
        }
        if ia.steps > 0 && ib.steps > 0 && ia.step_ranges != ib.step_ranges {
            warnings.push(format!(
                "the step ranges differ (A: {}, B: {})",
                ia.step_ranges.join(","),
                ib.step_ranges.join(",")
            ));
        }
        let all = |s: &[ProcessSteps], f: Extract| -> Vec<i64> {
            s.iter()
                .flat_map(|p| p.steps.iter())
                .filter_map(f)
                .collect()
        };
        let figures = FIGURES
            .iter()
            .map(|&(name, unit, f)| figure_row(name, unit, all(a.1, f), all(b.1, f)))
            .collect();
        Comparison {
            a: ia,
            b: ib,
            warnings,
            steps: StepsComparison {
                rule: if o.range.is_some() {
                    "range-option"
                } else {
                    "most-repeated-level-0"
                },
                figures,
            },
            kernels: kernels(a.0, b.0),
            apis: apis(a.0, b.0),
        }
    }

    /// Opens and summarizes both captures, then compares them. A `--range` that one side lacks is
    /// a finding (that side has no steps); one that neither has is an error listing their ranges.
    pub fn from_paths(a: &Path, b: &Path, o: &CompareOptions) -> Result<Comparison, CaptureError> {
        type Side = (Report, Vec<ProcessSteps>, Result<(), String>);
        // Each capture opened and decoded once, for its report and its timeline both.
        let load = |p: &Path| -> Result<Side, CaptureError> {
            let capture = crate::Capture::open(p)?;
            let rings = capture.rings()?;
            let label = p.display().to_string();
            let (r, t) = Report::build_with_timeline(&label, &rings);
            let (v, range) = Views::of_rings(
                &label,
                &rings,
                &t,
                &ViewOptions {
                    steps: Some(StepOptions {
                        range: o.range.clone(),
                        domain: None,
                    }),
                    gaps: false,
                },
            );
            Ok((r, v.steps.unwrap_or_default(), range))
        };
        let (ra, sa, range_a) = load(a)?;
        let (rb, sb, range_b) = load(b)?;
        if let (Err(ea), Err(eb)) = (range_a, range_b) {
            return Err(CaptureError::new(
                a,
                format!("{ea}; and {}: {eb}", b.display()),
            ));
        }
        Ok(Comparison::build((&ra, &sa), (&rb, &sb), o))
    }
}
