//! Claims, their control-side counterparts, and the marks.
//!
//! A **claim** is a figure the instrumented arm supports: the step time, the copy/compute overlap of a
//! step, the concurrency of a step's streams, and (with a bare arm) the process time. Each is reduced
//! to one value per run — the median over the run's steps — and a claim's range is the min..max of
//! those per-run values (a run median is robust to one stalled step; the spread across runs is the
//! run-to-run variation that interleaving exposes).
//!
//! **Control counterparts.**
//! - Step time: measured directly in the control arm (its NVTX steps on the host clock).
//! - Process time: measured directly in the bare arm.
//! - Copy/compute overlap and stream concurrency: the control arm has no device timing, so it cannot
//!   measure them. What it can do is bound them from below. If a step's copies took C and its kernels
//!   K (as the instrumented arm measured, step index by step index, median over its runs), and the
//!   step's device work fits inside the control step's wall W, then |C ∪ K| ≤ W and the overlap
//!   |C ∩ K| = C + K − |C ∪ K| ≥ C + K − W. So the control figure is
//!   `overlap ≥ (C + K − out − W) / min(C, K)`, clamped to [0, 1]; likewise, with per-stream busy
//!   times S_i, `concurrency ≥ (Σ S_i − out − W) / (Σ S_i − max S_i)`. `out` is how far the
//!   instrumented arm's device work reached beyond the step's edges (the control's work is
//!   allowed as much: W + out bounds its union). Span lengths come from the backend's own clock
//!   (CUPTI's timestamps, the events' elapsed time); the conversion bound of the events backend
//!   shifts spans in time, which can only shorten what lies inside a step, so it is not subtracted.
//!   Taking the control's idle
//!   time as zero is what makes it a lower bound: the control can show that a claim of *little*
//!   overlap cannot be true of the uninstrumented program (its steps are too short for that), not
//!   that a claim of *much* overlap is false.
//!
//! **Marks.** "does not survive the control" when the control's range excludes the instrumented one:
//! for a lower bound, when the least the control allows is above the most the instrumented arm saw
//! by more than [`RATIO_RESOLUTION`] (`control.min > instrumented.max + 0.05`); for a measured figure,
//! when the two [min, max] ranges do not meet. "holds under control" otherwise. "not tested" when either side has no figure (say why). The
//! marks say whether the instrument changed the answer; they never say that anything ran faster or
//! slower.

use crate::measures::{DeviceMeasure, RunMeasures};
use crate::plan::Arm;
use crate::stats::{median, ratio, Spread};
use serde::Serialize;

pub const STEP_TIME: &str = "step_time";
pub const OVERLAP: &str = "copy_compute_overlap";
pub const CONCURRENCY: &str = "stream_concurrency";
pub const PROCESS_TIME: &str = "process_time";

/// How far a ratio's control range must lie beyond the instrumented range to exclude it: at least 5 %
/// of the smaller activity, and at least `WALL_JITTER_NS` expressed in it. Step walls on a busy host
/// move by tens of microseconds from run to run, and the events backend's spans include a few
/// microseconds of launch before the work; below this a gap between the ranges says nothing about the
/// instrument. (A fixed 5 % alone flagged a serialised 20 µs copy: 3 µs of span inflation is 15 % of it.)
pub const RATIO_RESOLUTION: f64 = 0.05;
/// The absolute part of that resolution: run-to-run movement of a step's wall.
pub const WALL_JITTER_NS: f64 = 50_000.0;
/// Fewer runs per arm than this give ranges too thin to mark: claims stay "not tested".
pub const MIN_RUNS: usize = 3;

/// One run as the analysis sees it.
#[derive(Debug, Clone)]
pub struct ArmRun {
    pub round: usize,
    /// The process's wall time (spawn to exit).
    pub wall_ns: u64,
    /// From its capture (instrumented and control arms); `None` for the bare arm.
    pub measures: Option<RunMeasures>,
}

/// The runs of each arm, in round order (`bare` empty without a bare arm).
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub instrumented: &'a [ArmRun],
    pub control: &'a [ArmRun],
    pub bare: &'a [ArmRun],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mark {
    /// The control's range does not exclude the instrumented one.
    Holds,
    /// The control's range excludes the instrumented one.
    DoesNotSurvive,
    /// One side has no figure (`compared` says why).
    NotTested,
}

impl Mark {
    pub fn text(self) -> &'static str {
        match self {
            Mark::Holds => "holds under control",
            Mark::DoesNotSurvive => "does not survive the control",
            Mark::NotTested => "not tested",
        }
    }
}

/// What the control side of a claim is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControlIs {
    /// Measured in the other arm.
    Measured,
    /// The least value consistent with the control arm's step walls (see the module documentation).
    LowerBound,
}

#[derive(Debug, Clone, Serialize)]
pub struct Claim {
    /// `step_time`, `copy_compute_overlap`, `stream_concurrency`, `process_time`.
    pub id: &'static str,
    pub title: &'static str,
    /// `ns` or `ratio` (0..1).
    pub unit: &'static str,
    /// Per-run medians of the instrumented arm.
    pub instrumented: Option<Spread>,
    /// The arm the claim is checked against (`control`, or `bare` for the process time).
    pub against: Arm,
    /// Per-run medians of that arm's counterpart.
    pub control: Option<Spread>,
    pub control_is: ControlIs,
    pub mark: Mark,
    /// One line: what was compared and how the mark follows (or why it is not tested).
    pub compared: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ArmSummary {
    pub arm: Arm,
    pub runs: usize,
    /// Fewest and most steps in one run (`None` for the bare arm).
    pub steps: Option<(usize, usize)>,
    /// Per-run median step wall (ns).
    pub step_wall_ns: Option<Spread>,
    /// Process wall per run (ns).
    pub process_wall_ns: Option<Spread>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub arms: Vec<ArmSummary>,
    /// How control steps meet the instrumented busy times: `step-index` (step j of every run with
    /// step j of the instrumented runs; every run has the same number of steps) or `pooled` (medians
    /// over all instrumented steps).
    pub pairing: &'static str,
    pub claims: Vec<Claim>,
    /// Per round: instrumented median step wall / control median step wall.
    pub step_time_ratio: Option<Spread>,
    /// Per round: instrumented process wall / bare process wall.
    pub process_time_ratio: Option<Spread>,
    /// Per round: control process wall / bare process wall (what the control arm itself costs).
    pub control_process_time_ratio: Option<Spread>,
    /// The assumptions behind the control figures, one sentence each.
    pub assumptions: Vec<String>,
    /// What limits these figures (left-out steps, pairing, violated assumptions).
    pub notes: Vec<String>,
}

/// The assumptions every lower-bound control figure rests on.
pub const ASSUMPTIONS: [&str; 3] = [
    "Copy, kernel and per-stream busy times are the instrumented arm's (per step, median over its runs): \
     the instrument is assumed to move device work in time, not to lengthen it (events-backend spans \
     include a stream's wait before its work: upper bounds).",
    "A step's device work lies inside the step (the step ends after its work, e.g. in a sync), or \
     reaches beyond its edges no further than the instrumented arm's did (that reach is subtracted).",
    "The control's device idle time in a step is taken as zero, the least it can be: each control \
     overlap or concurrency figure is a lower bound, which can show that the instrument removed \
     overlap, never that it invented it.",
];

fn fmt_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// A spread's range as text: `0.05..0.10` or `2.10 ms..2.30 ms`.
pub fn range_text(s: &Spread, unit: &str) -> String {
    let f = |v: f64| {
        if unit == "ns" {
            fmt_ns(v)
        } else {
            format!("{v:.2}")
        }
    };
    format!("{}..{}", f(s.min), f(s.max))
}

/// Per-step inputs of a lower-bound claim, from one instrumented step.
#[derive(Debug, Clone, Copy)]
struct Work {
    /// The instrumented figure of the step.
    value: f64,
    /// C + K, or Σ streams.
    total: f64,
    /// min(C, K), or Σ streams − max stream.
    denom: f64,
    /// Subtracted from `total` (ns): the work's reach beyond the step.
    slack: f64,
    /// The work's reach beyond the step's edges (ns).
    outside: f64,
}

fn overlap_work(d: &DeviceMeasure) -> Option<Work> {
    Some(Work {
        value: d.copy_compute_overlap()?,
        total: (d.copy_ns + d.compute_ns) as f64,
        denom: d.copy_ns.min(d.compute_ns) as f64,
        slack: d.outside_ns as f64,
        outside: d.outside_ns as f64,
    })
}

fn concurrency_work(d: &DeviceMeasure) -> Option<Work> {
    let sum: u64 = d.streams_ns.iter().sum();
    let max = d.streams_ns.iter().copied().max().unwrap_or(0);
    Some(Work {
        value: d.stream_concurrency()?,
        total: sum as f64,
        denom: (sum - max) as f64,
        slack: d.outside_ns as f64,
        outside: d.outside_ns as f64,
    })
}

/// The instrumented busy times a control step is held against.
#[derive(Debug, Clone, Copy)]
struct Reference {
    total: f64,
    denom: f64,
    slack: f64,
}

/// How a lower-bound claim is described.
struct LowerBoundSpec {
    id: &'static str,
    title: &'static str,
    work: fn(&DeviceMeasure) -> Option<Work>,
    /// What the instrumented arm lacks when no step has this figure.
    absent: &'static str,
    /// Name of the figure in the one-line explanation.
    figure: &'static str,
    formula: &'static str,
}

fn steps_of(runs: &[ArmRun]) -> Vec<&RunMeasures> {
    runs.iter().filter_map(|r| r.measures.as_ref()).collect()
}

fn run_median(values: &[f64]) -> Option<f64> {
    median(values)
}

fn lower_bound_claim(
    spec: &LowerBoundSpec,
    ins: &[&RunMeasures],
    ctl: &[&RunMeasures],
    by_index: bool,
    notes: &mut Vec<String>,
) -> Claim {
    let mut claim = Claim {
        id: spec.id,
        title: spec.title,
        unit: "ratio",
        instrumented: None,
        against: Arm::Control,
        control: None,
        control_is: ControlIs::LowerBound,
        mark: Mark::NotTested,
        compared: String::new(),
    };
    let timed = ins.iter().any(|r| r.device_timed);
    // work[r][j]: the instrumented step's inputs, when the step has the figure.
    let work: Vec<Vec<Option<Work>>> = ins
        .iter()
        .map(|r| {
            r.steps
                .iter()
                .map(|s| s.device.as_ref().and_then(spec.work))
                .collect()
        })
        .collect();
    if !work.iter().flatten().any(Option::is_some) {
        claim.compared = if timed {
            format!("not tested: {}", spec.absent)
        } else {
            "not tested: the instrumented arm has no device timing (level 3, or 4 with a backend, \
             records it), so it makes no such claim"
                .into()
        };
        return claim;
    }
    let ins_values: Vec<f64> = work
        .iter()
        .filter_map(|r| run_median(&r.iter().flatten().map(|w| w.value).collect::<Vec<_>>()))
        .collect();
    claim.instrumented = Spread::of(&ins_values);
    let Some(ins_spread) = claim.instrumented else {
        claim.compared = format!("not tested: {}", spec.absent);
        return claim;
    };
    let outside = work
        .iter()
        .flatten()
        .flatten()
        .map(|w| w.outside)
        .fold(0.0, f64::max);
    if outside > 0.0 {
        notes.push(format!(
            "{}: the instrumented arm's device work reached up to {} beyond its steps' edges; the \
             control's is allowed as much (subtracted in its bound)",
            spec.figure,
            fmt_ns(outside)
        ));
    }
    // The references: per step index, or one pooled over every step.
    let reference = |ws: Vec<Work>| -> Option<Reference> {
        if ws.is_empty() {
            return None;
        }
        let tot: Vec<f64> = ws.iter().map(|w| w.total).collect();
        let den: Vec<f64> = ws.iter().map(|w| w.denom).collect();
        Some(Reference {
            total: median(&tot)?,
            denom: median(&den)?,
            slack: ws.iter().map(|w| w.slack).fold(0.0, f64::max),
        })
    };
    let nsteps = work.iter().map(Vec::len).max().unwrap_or(0);
    let refs: Vec<Option<Reference>> = if by_index {
        (0..nsteps)
            .map(|j| {
                reference(
                    work.iter()
                        .filter_map(|r| r.get(j).copied().flatten())
                        .collect(),
                )
            })
            .collect()
    } else {
        vec![reference(
            work.iter().flatten().flatten().copied().collect(),
        )]
    };
    // A control step shorter than the bound allows even with everything overlapped (lo > 1) shows
    // that the instrument lengthened the work itself: the first assumption fails there, and the step
    // is left out rather than clamped.
    let (mut broken, mut met) = (0usize, 0usize);
    let mut ctl_values = Vec::new();
    for r in ctl {
        let vals: Vec<f64> = r
            .steps
            .iter()
            .enumerate()
            .filter_map(|(j, s)| {
                let rf = if by_index {
                    refs.get(j)?.as_ref()?
                } else {
                    refs[0].as_ref()?
                };
                if rf.denom <= 0.0 {
                    return None;
                }
                met += 1;
                let lo = (rf.total - rf.slack - s.wall_ns as f64) / rf.denom;
                if lo > 1.0 {
                    broken += 1;
                    return None;
                }
                Some(lo.max(0.0))
            })
            .collect();
        if let Some(m) = run_median(&vals) {
            ctl_values.push(m);
        }
    }
    if broken > 0 {
        notes.push(format!(
            "{}: {broken} of {met} control steps were shorter than the instrumented arm's longer \
             activity alone: there the instrument lengthened the work itself (the first assumption \
             fails), so those steps are left out",
            spec.figure
        ));
    }
    claim.control = Spread::of(&ctl_values);
    let Some(ctl_spread) = claim.control else {
        claim.compared = if broken > 0 {
            "not tested: every control step was shorter than the instrumented copies or kernels \
             alone, so the instrumented busy times do not describe the uninstrumented program"
                .into()
        } else {
            "not tested: no control step meets an instrumented step with this figure".into()
        };
        return claim;
    };
    let (lo_min, ins_max) = (ctl_spread.min, ins_spread.max);
    // The resolution in units of the smaller activity (its median over the references).
    let denoms: Vec<f64> = refs.iter().flatten().map(|r| r.denom).collect();
    let resolution = median(&denoms)
        .filter(|&d| d > 0.0)
        .map_or(RATIO_RESOLUTION, |d| {
            RATIO_RESOLUTION.max(WALL_JITTER_NS / d)
        });
    if lo_min > ins_max + resolution {
        claim.mark = Mark::DoesNotSurvive;
        claim.compared = format!(
            "the control's step walls W need at least {lo_min:.2} by {}, the instrumented arm saw at \
             most {ins_max:.2}: the uninstrumented steps are too short for work this long and this \
             serialised, so the instrument took overlap away (or lengthened the work itself)",
            spec.formula
        );
    } else {
        claim.mark = Mark::Holds;
        claim.compared = format!(
            "the instrumented arm saw up to {ins_max:.2}, the control's step walls W need at least \
             {lo_min:.2} by {}: {}",
            spec.formula,
            if lo_min > ins_max {
                format!(
                    "above it by less than the resolution ({resolution:.2}: 5 % of the smaller \
                     activity, at least {} of it)",
                    fmt_ns(WALL_JITTER_NS)
                )
            } else {
                "consistent".into()
            }
        );
    }
    claim
}

fn step_walls(r: &RunMeasures) -> Option<f64> {
    let w: Vec<f64> = r.steps.iter().map(|s| s.wall_ns as f64).collect();
    median(&w)
}

fn measured_claim(
    id: &'static str,
    title: &'static str,
    against: Arm,
    ins: Option<Spread>,
    ctl: Option<Spread>,
    what: &str,
    missing: &str,
) -> Claim {
    let mut c = Claim {
        id,
        title,
        unit: "ns",
        instrumented: ins,
        against,
        control: ctl,
        control_is: ControlIs::Measured,
        mark: Mark::NotTested,
        compared: format!("not tested: {missing}"),
    };
    if let (Some(i), Some(k)) = (ins, ctl) {
        let (ri, rk) = (range_text(&i, "ns"), range_text(&k, "ns"));
        if i.disjoint(&k) {
            c.mark = Mark::DoesNotSurvive;
            c.compared = format!(
                "{what}: instrumented {ri} and {} {rk} do not meet: the instrument changed it beyond \
                 the run-to-run spread",
                against.name()
            );
        } else {
            c.mark = Mark::Holds;
            c.compared = format!("{what}: instrumented {ri} and {} {rk} meet", against.name());
        }
    }
    c
}

/// Per round: f(a's run) / f(b's run) for rounds where both have a value.
fn round_ratios(a: &[ArmRun], b: &[ArmRun], f: impl Fn(&ArmRun) -> Option<f64>) -> Option<Spread> {
    let v: Vec<f64> = a
        .iter()
        .filter_map(|x| {
            let y = b.iter().find(|y| y.round == x.round)?;
            ratio(f(x)?, f(y)?)
        })
        .collect();
    Spread::of(&v)
}

fn summary(arm: Arm, runs: &[ArmRun]) -> ArmSummary {
    let ms = steps_of(runs);
    let counts: Vec<usize> = ms.iter().map(|m| m.steps.len()).collect();
    let walls: Vec<f64> = ms.iter().filter_map(|m| step_walls(m)).collect();
    let proc: Vec<f64> = runs.iter().map(|r| r.wall_ns as f64).collect();
    ArmSummary {
        arm,
        runs: runs.len(),
        steps: counts
            .iter()
            .min()
            .zip(counts.iter().max())
            .map(|(&a, &b)| (a, b)),
        step_wall_ns: Spread::of(&walls),
        process_wall_ns: Spread::of(&proc),
    }
}

/// Every claim of the instrumented arm against its control (module documentation).
pub fn analyse(i: &Inputs) -> Analysis {
    let ins = steps_of(i.instrumented);
    let ctl = steps_of(i.control);
    let mut notes = Vec::new();
    let counts: Vec<usize> = ins.iter().chain(&ctl).map(|m| m.steps.len()).collect();
    let by_index = counts
        .first()
        .is_some_and(|&n| n > 0 && counts.iter().all(|&c| c == n));
    if !by_index && !counts.is_empty() {
        notes.push(format!(
            "runs have different numbers of steps ({}..{}): each control step is held against the \
             medians over all instrumented steps (pooled), not against its own step index",
            counts.iter().min().unwrap_or(&0),
            counts.iter().max().unwrap_or(&0)
        ));
    }
    for (arm, runs) in [
        (Arm::Instrumented, i.instrumented),
        (Arm::Control, i.control),
    ] {
        let empty = runs
            .iter()
            .filter(|r| r.measures.as_ref().is_some_and(|m| m.steps.is_empty()))
            .count();
        if empty > 0 {
            notes.push(format!(
                "{empty} {} run{} had no steps",
                arm.name(),
                if empty == 1 { "" } else { "s" }
            ));
        }
    }
    let wall_spread = |ms: &[&RunMeasures]| {
        Spread::of(&ms.iter().filter_map(|m| step_walls(m)).collect::<Vec<_>>())
    };
    let mut claims = vec![measured_claim(
        STEP_TIME,
        "step time",
        Arm::Control,
        wall_spread(&ins),
        wall_spread(&ctl),
        "median step wall per run",
        "an arm has no steps",
    )];
    claims.push(lower_bound_claim(
        &LowerBoundSpec {
            id: OVERLAP,
            title: "copy/compute overlap",
            work: overlap_work,
            absent: "no instrumented step has both copies and kernels",
            figure: "copy/compute overlap",
            formula: "(copy + compute - out - W) / min(copy, compute)",
        },
        &ins,
        &ctl,
        by_index,
        &mut notes,
    ));
    claims.push(lower_bound_claim(
        &LowerBoundSpec {
            id: CONCURRENCY,
            title: "stream concurrency (0 = streams serialised)",
            work: concurrency_work,
            absent: "no instrumented step has device work on two streams",
            figure: "stream concurrency",
            formula: "(sum of stream busy - out - W) / (sum - busiest)",
        },
        &ins,
        &ctl,
        by_index,
        &mut notes,
    ));
    let bare_walls =
        |runs: &[ArmRun]| Spread::of(&runs.iter().map(|r| r.wall_ns as f64).collect::<Vec<_>>());
    if !i.bare.is_empty() {
        claims.push(measured_claim(
            PROCESS_TIME,
            "process time",
            Arm::Bare,
            bare_walls(i.instrumented),
            bare_walls(i.bare),
            "process wall time (spawn to exit)",
            "no instrumented runs",
        ));
    }
    let steps_median = |r: &ArmRun| r.measures.as_ref().and_then(step_walls);
    let proc_wall = |r: &ArmRun| Some(r.wall_ns as f64);
    let mut arms = vec![
        summary(Arm::Instrumented, i.instrumented),
        summary(Arm::Control, i.control),
    ];
    if !i.bare.is_empty() {
        let mut b = summary(Arm::Bare, i.bare);
        b.steps = None;
        arms.push(b);
    }
    // A capture that lost records has steps without some of their calls, ranges or device spans.
    let lost = |runs: &[ArmRun]| -> u64 {
        runs.iter()
            .filter_map(|r| r.measures.as_ref())
            .map(|m| m.lost)
            .sum()
    };
    let (lost_ins, lost_ctl) = (lost(i.instrumented), lost(i.control));
    if lost_ins + lost_ctl > 0 {
        notes.push(format!(
            "the captures lost records (instrumented arm {lost_ins}, control arm {lost_ctl}: dropped or \
             overwritten entries, device records the backend dropped); a larger --ring-mb keeps them"
        ));
    }
    if lost_ins > 0 {
        for c in claims
            .iter_mut()
            .filter(|c| c.control_is == ControlIs::LowerBound && c.mark != Mark::NotTested)
        {
            c.mark = Mark::NotTested;
            c.compared = format!(
                "not tested: the instrumented captures lost {lost_ins} records, so their busy times \
                 are not the program's. Measured: {}",
                c.compared
            );
        }
    }
    let runs = i.instrumented.len().min(i.control.len());
    if runs < MIN_RUNS {
        for c in claims.iter_mut().filter(|c| c.mark != Mark::NotTested) {
            c.mark = Mark::NotTested;
            c.compared = format!(
                "not tested: {runs} run(s) per arm; marks need at least {MIN_RUNS} (a range of one \
                 or two runs says nothing about run-to-run spread). Measured: {}",
                c.compared
            );
        }
    }
    let lower_bounds_tested = claims
        .iter()
        .any(|c| c.control_is == ControlIs::LowerBound && c.mark != Mark::NotTested);
    Analysis {
        arms,
        pairing: if by_index { "step-index" } else { "pooled" },
        claims,
        step_time_ratio: round_ratios(i.instrumented, i.control, steps_median),
        process_time_ratio: round_ratios(i.instrumented, i.bare, proc_wall),
        control_process_time_ratio: round_ratios(i.control, i.bare, proc_wall),
        assumptions: if lower_bounds_tested {
            ASSUMPTIONS.iter().map(|s| s.to_string()).collect()
        } else {
            Vec::new()
        },
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measures::StepMeasure;

    const MS: u64 = 1_000_000;

    /// A step of a two-stream program: a copy of `copy` ms and a kernel of `kern` ms on two streams,
    /// `ov` ms of them together, in a step of `wall` ms.
    fn step(wall: f64, copy: f64, kern: f64, ov: f64) -> StepMeasure {
        let ns = |x: f64| (x * MS as f64) as u64;
        let mut streams = vec![ns(copy), ns(kern)];
        streams.sort_unstable_by(|a, b| b.cmp(a));
        StepMeasure {
            wall_ns: ns(wall),
            device: Some(DeviceMeasure {
                copy_ns: ns(copy),
                compute_ns: ns(kern),
                overlap_ns: ns(ov),
                streams_ns: streams,
                union_ns: ns(copy + kern - ov),
                outside_ns: 0,
            }),
        }
    }

    fn host_step(wall: f64) -> StepMeasure {
        StepMeasure {
            wall_ns: (wall * MS as f64) as u64,
            device: None,
        }
    }

    fn runs(round_steps: Vec<Vec<StepMeasure>>, timed: bool) -> Vec<ArmRun> {
        round_steps
            .into_iter()
            .enumerate()
            .map(|(i, steps)| ArmRun {
                round: i + 1,
                wall_ns: 500 * MS + i as u64 * MS,
                measures: Some(RunMeasures {
                    steps,
                    device_timed: timed,
                    lost: 0,
                }),
            })
            .collect()
    }

    fn claim<'a>(a: &'a Analysis, id: &str) -> &'a Claim {
        a.claims.iter().find(|c| c.id == id).unwrap()
    }

    /// The Intel case: the instrument serialised a 2 ms copy behind a 2 ms kernel (steps of 4.1 ms,
    /// overlap 0), while the control's steps take 2.2 ms.
    #[test]
    fn instrument_made_serialisation_does_not_survive() {
        let ins = runs(vec![vec![step(4.1, 2.0, 2.0, 0.0); 4]; 3], true);
        let ctl = runs(
            vec![
                vec![host_step(2.2); 4],
                vec![host_step(2.3); 4],
                vec![host_step(2.25); 4],
            ],
            false,
        );
        let a = analyse(&Inputs {
            instrumented: &ins,
            control: &ctl,
            bare: &[],
        });
        assert_eq!(a.pairing, "step-index");
        let o = claim(&a, OVERLAP);
        assert_eq!(o.mark, Mark::DoesNotSurvive, "{}", o.compared);
        let i = o.instrumented.unwrap();
        assert_eq!((i.min, i.max), (0.0, 0.0));
        // (2 + 2 - 2.3) / 2 = 0.85 .. (2 + 2 - 2.2) / 2 = 0.9
        let c = o.control.unwrap();
        assert!(
            (c.min - 0.85).abs() < 1e-6 && (c.max - 0.9).abs() < 1e-6,
            "{c:?}"
        );
        assert_eq!(claim(&a, CONCURRENCY).mark, Mark::DoesNotSurvive);
        let s = claim(&a, STEP_TIME);
        assert_eq!(s.mark, Mark::DoesNotSurvive);
        let r = a.step_time_ratio.unwrap();
        assert!((r.min - 4.1 / 2.3).abs() < 1e-6 && (r.max - 4.1 / 2.2).abs() < 1e-6);
        assert_eq!(a.assumptions.len(), 3);
        // No process-time claim without a bare arm.
        assert!(a.claims.iter().all(|c| c.id != PROCESS_TIME));
    }

    /// Free events: the instrument sees the overlap the control allows.
    #[test]
    fn true_overlap_holds() {
        let ins = runs(vec![vec![step(2.2, 2.0, 2.0, 1.95); 4]; 3], true);
        let ctl = runs(
            vec![
                vec![host_step(2.15); 4],
                vec![host_step(2.25); 4],
                vec![host_step(2.2); 4],
            ],
            false,
        );
        let a = analyse(&Inputs {
            instrumented: &ins,
            control: &ctl,
            bare: &[],
        });
        let o = claim(&a, OVERLAP);
        assert_eq!(o.mark, Mark::Holds, "{}", o.compared);
        assert!((o.control.unwrap().max - 0.925).abs() < 1e-6);
        assert!((o.instrumented.unwrap().max - 0.975).abs() < 1e-6);
        assert_eq!(claim(&a, STEP_TIME).mark, Mark::Holds);
    }

    /// True serialisation (one stream, or a dependency): the control's steps are as long; not flagged.
    #[test]
    fn true_serialisation_is_not_flagged() {
        let ins = runs(vec![vec![step(4.2, 2.0, 2.0, 0.0); 4]; 3], true);
        let ctl = runs(
            vec![
                vec![host_step(4.1); 4],
                vec![host_step(4.3); 4],
                vec![host_step(4.2); 4],
            ],
            false,
        );
        let a = analyse(&Inputs {
            instrumented: &ins,
            control: &ctl,
            bare: &[],
        });
        let o = claim(&a, OVERLAP);
        assert_eq!(o.mark, Mark::Holds, "{}", o.compared);
        assert_eq!(o.control.unwrap().max, 0.0);
        assert_eq!(claim(&a, CONCURRENCY).mark, Mark::Holds);
    }

    #[test]
    fn work_reaching_beyond_its_step_loosens_the_bound() {
        let mut reaching = step(4.1, 2.0, 2.0, 0.0);
        reaching.device.as_mut().unwrap().outside_ns = MS;
        let ins = runs(
            vec![
                vec![reaching, step(4.1, 2.0, 2.0, 0.0)],
                vec![step(4.1, 2.0, 2.0, 0.0); 2],
                vec![step(4.1, 2.0, 2.0, 0.0); 2],
            ],
            true,
        );
        let ctl = runs(vec![vec![host_step(2.2); 2]; 3], false);
        let a = analyse(&Inputs {
            instrumented: &ins,
            control: &ctl,
            bare: &[],
        });
        // Step 0: (4 - 1 - 2.2) / 2 = 0.4; step 1: 0.9; the run median (nearest rank) is 0.4.
        let c = claim(&a, OVERLAP).control.unwrap();
        assert!((c.max - 0.4).abs() < 1e-6, "{c:?}");
        assert!(
            a.notes.iter().any(|n| n.contains("reached up to 1.00 ms")),
            "{:?}",
            a.notes
        );
        assert_eq!(claim(&a, OVERLAP).mark, Mark::DoesNotSurvive);
    }

    #[test]
    fn different_step_counts_pool_the_busy_times() {
        let ins = runs(
            vec![
                vec![step(4.1, 2.0, 2.0, 0.0); 3],
                vec![step(4.1, 2.0, 2.0, 0.0); 4],
                vec![step(4.1, 2.0, 2.0, 0.0); 4],
            ],
            true,
        );
        let ctl = runs(vec![vec![host_step(2.2); 5]; 3], false);
        let a = analyse(&Inputs {
            instrumented: &ins,
            control: &ctl,
            bare: &[],
        });
        assert_eq!(a.pairing, "pooled");
        assert_eq!(claim(&a, OVERLAP).mark, Mark::DoesNotSurvive);
        assert!(a.notes[0].contains("different numbers of steps (3..5)"));
    }

    #[test]
    fn without_device_timing_only_times_are_compared() {
        let ins = runs(vec![vec![host_step(2.0); 3]; 3], false);
        let ctl = runs(vec![vec![host_step(2.0); 3]; 3], false);
        let bare = vec![
            ArmRun {
                round: 1,
                wall_ns: 100 * MS,
                measures: None,
            },
            ArmRun {
                round: 2,
                wall_ns: 110 * MS,
                measures: None,
            },
        ];
        let a = analyse(&Inputs {
            instrumented: &ins,
            control: &ctl,
            bare: &bare,
        });
        assert_eq!(claim(&a, STEP_TIME).mark, Mark::Holds);
        let o = claim(&a, OVERLAP);
        assert_eq!(o.mark, Mark::NotTested);
        assert!(o.compared.contains("no device timing"), "{}", o.compared);
        assert!(a.assumptions.is_empty());
        // Process time: 500..501 ms against 100..110 ms.
        let p = claim(&a, PROCESS_TIME);
        assert_eq!(p.mark, Mark::DoesNotSurvive);
        assert_eq!(p.against, Arm::Bare);
        let r = a.process_time_ratio.unwrap();
        assert!((r.max - 5.0).abs() < 1e-6 && (r.min - 501.0 / 110.0).abs() < 1e-6);
        assert_eq!(a.arms.len(), 3);
        assert_eq!(a.arms[2].steps, None);
        assert_eq!(a.arms[0].steps, Some((3, 3)));
    }

    #[test]
    fn one_stream_has_no_concurrency_claim() {
        let mut s = step(4.2, 2.0, 2.0, 0.0);
        let d = s.device.as_mut().unwrap();
        d.streams_ns = vec![4 * MS];
        d.union_ns = 4 * MS;
        let ins = runs(vec![vec![s; 2]; 3], true);
        let ctl = runs(vec![vec![host_step(4.2); 2]; 3], false);
        let a = analyse(&Inputs {
            instrumented: &ins,
            control: &ctl,
            bare: &[],
        });
        let c = claim(&a, CONCURRENCY);
        assert_eq!(c.mark, Mark::NotTested);
        assert!(c.compared.contains("two streams"), "{}", c.compared);
        assert_eq!(claim(&a, OVERLAP).mark, Mark::Holds);
    }

    /// A serialised 20 µs copy behind a 5 ms kernel, every span 3 µs longer under the instrument: the
    /// control's bound (0.17 .. 0.22 of the copy) is within the absolute wall jitter, not a finding.
    #[test]
    fn a_small_serialised_copy_is_not_flagged_for_microseconds() {
        let ins = runs(vec![vec![step(5.026, 0.023, 5.003, 0.0); 4]; 3], true);
        let ctl = runs(
            vec![
                vec![host_step(5.021); 4],
                vec![host_step(5.022); 4],
                vec![host_step(5.0215); 4],
            ],
            false,
        );
        let a = analyse(&Inputs {
            instrumented: &ins,
            control: &ctl,
            bare: &[],
        });
        let o = claim(&a, OVERLAP);
        assert!(o.control.unwrap().min > 0.1, "{:?}", o.control);
        assert_eq!(o.mark, Mark::Holds, "{}", o.compared);
    }

    /// Instrumented captures that lost records: the busy times are incomplete, the bounds unmarked.
    #[test]
    fn lost_records_leave_the_bounds_unmarked() {
        let mut ins = runs(vec![vec![step(4.1, 2.0, 2.0, 0.0); 4]; 3], true);
        if let Some(m) = ins[1].measures.as_mut() {
            m.lost = 17;
        }
        let ctl = runs(vec![vec![host_step(2.2); 4]; 3], false);
        let a = analyse(&Inputs {
            instrumented: &ins,
            control: &ctl,
            bare: &[],
        });
        let o = claim(&a, OVERLAP);
        assert_eq!(o.mark, Mark::NotTested, "{}", o.compared);
        assert!(o.compared.contains("lost 17 records"), "{}", o.compared);
        assert!(
            a.notes.iter().any(|n| n.contains("instrumented arm 17")),
            "{:?}",
            a.notes
        );
        assert_eq!(claim(&a, STEP_TIME).mark, Mark::DoesNotSurvive);
    }

    /// One or two runs per arm: every claim is measured but none is marked.
    #[test]
    fn fewer_than_three_runs_mark_nothing() {
        let ins = runs(vec![vec![step(4.1, 2.0, 2.0, 0.0); 4]; 2], true);
        let ctl = runs(vec![vec![host_step(2.2); 4]; 2], false);
        let a = analyse(&Inputs {
            instrumented: &ins,
            control: &ctl,
            bare: &[],
        });
        for c in &a.claims {
            assert_eq!(c.mark, Mark::NotTested, "{}: {}", c.id, c.compared);
            assert!(c.compared.contains("at least 3"), "{}", c.compared);
        }
        assert!(claim(&a, OVERLAP).control.is_some());
    }

    #[test]
    fn a_control_shorter_than_the_work_is_noted() {
        let ins = runs(vec![vec![step(4.1, 2.0, 2.0, 0.0); 2]; 3], true);
        let ctl = runs(vec![vec![host_step(1.5); 2]; 3], false);
        let a = analyse(&Inputs {
            instrumented: &ins,
            control: &ctl,
            bare: &[],
        });
        let o = claim(&a, OVERLAP);
        assert_eq!(o.mark, Mark::NotTested);
        assert!(
            o.compared.contains("shorter than the instrumented"),
            "{}",
            o.compared
        );
        assert!(
            a.notes.iter().any(|n| n.contains("6 of 6 control steps")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn a_gap_below_the_resolution_does_not_flag() {
        // Instrumented 0.96; the control needs (2 + 2 - 2.04) / 2 = 0.98: above, by less than 0.05.
        let ins = runs(vec![vec![step(2.2, 2.0, 2.0, 1.92); 2]; 3], true);
        let ctl = runs(vec![vec![host_step(2.04); 2]; 3], false);
        let a = analyse(&Inputs {
            instrumented: &ins,
            control: &ctl,
            bare: &[],
        });
        let o = claim(&a, OVERLAP);
        assert_eq!(o.mark, Mark::Holds, "{}", o.compared);
        assert!(o.compared.contains("resolution"), "{}", o.compared);
        // Instrumented 0.8, the control needs 0.9: a gap of 0.1 does flag.
        let ctl = runs(vec![vec![host_step(2.2); 2]; 3], false);
        let a = analyse(&Inputs {
            instrumented: &runs(vec![vec![step(2.4, 2.0, 2.0, 1.6); 2]; 3], true),
            control: &ctl,
            bare: &[],
        });
        assert_eq!(claim(&a, OVERLAP).mark, Mark::DoesNotSurvive);
    }

    #[test]
    fn no_explanation_calls_anything_faster_or_slower() {
        let cases = [
            (step(4.1, 2.0, 2.0, 0.0), 2.2),
            (step(2.2, 2.0, 2.0, 1.9), 2.2),
            (step(4.2, 2.0, 2.0, 0.0), 4.2),
        ];
        for (s, w) in cases {
            let ins = runs(vec![vec![s; 2]; 3], true);
            let ctl = runs(vec![vec![host_step(w); 2]; 3], false);
            let a = analyse(&Inputs {
                instrumented: &ins,
                control: &ctl,
                bare: &ins,
            });
            let text = serde_json::to_string(&a).unwrap().to_lowercase();
            for word in ["faster", "slower", "speedup", "speed-up", "regress"] {
                assert!(!text.contains(word), "{word} in {text}");
            }
        }
    }
}
