//! `causeway control`: runs a program in interleaved arms (instrumented, control without device timing,
//! optionally bare), reads each run's capture with the steps view, and checks every claim of the
//! instrumented arm against the control (`causeway_control`, rules in `docs/control.md`).
//!
//! This module only glues: arms' commands come from `record` (the same environment `causeway record`
//! sets), per-step figures from `steps` and the timeline model, statistics and marks from the harness
//! crate.

use crate::record::{self, Backend, Policy, Prepared, RecordOptions};
use causeway_control::claims::{analyse, ArmRun, Inputs};
use causeway_control::run::{run_plan, RunRecord};
use causeway_control::{interleave, Analysis, Arm, ControlIs, DeviceMeasure, PlannedRun};
use causeway_control::{RunMeasures, Spread, StepMeasure};
use causeway_scanner::analysis::steps::{process_steps, SpanIndex, StepDevice, StepOptions};
use causeway_scanner::facts::model::Timeline;
use causeway_scanner::render::text::{fmt_ns, Align, Table};
use causeway_scanner::util::intervals::{measure, union};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The most runs per arm `--runs` accepts.
pub const MAX_RUNS: usize = 1000;

/// What `causeway control` was asked for.
#[derive(Debug, Clone)]
pub struct ControlOptions {
    /// Runs per arm.
    pub runs: usize,
    /// The instrumented arm's level and backend (as `causeway record`).
    pub level: u32,
    pub backend: Option<Backend>,
    pub cupti: Option<PathBuf>,
    /// With the events backend: time one in N steps (`None`: the record default).
    pub sample: Option<u32>,
    /// Add the durations arm (level 3 with CUPTI) when the instrumented arm times with events.
    pub durations: bool,
    /// The control arm's level; `None`: 2 when the instrumented arm records device timing, else one
    /// below the instrumented level.
    pub control_level: Option<u32>,
    /// Add the bare arm (no shim).
    pub bare: bool,
    pub steps: StepOptions,
    /// Steps left out at the start of each process (warm-up).
    pub skip_steps: usize,
    /// The experiment's directory is created in here.
    pub out: PathBuf,
    pub ring_mb: u64,
    pub shim: Option<PathBuf>,
    pub cmd: Vec<OsString>,
}

/// An arm's capture settings.
#[derive(Debug, Clone, Serialize)]
pub struct ArmSetup {
    /// `None` for the bare arm.
    pub level: Option<u32>,
    /// `none`, `cupti` or `events`: what the arm asked for.
    pub backend: &'static str,
    /// What timed the program's work in the arm's runs, as their captures say (`cupti`, `events`,
    /// `unified_runtime`, `level_zero`): the runtime's own timing where the work went through Level
    /// Zero or Unified Runtime. Empty when nothing was device-timed.
    pub timed_by: Vec<String>,
}

/// The whole experiment: settings, every run, and the analysis.
#[derive(Debug, Clone, Serialize)]
pub struct ControlReport {
    pub command: Vec<String>,
    pub runs_per_arm: usize,
    /// The arms in the order each round runs them.
    pub order: Vec<Arm>,
    pub instrumented: ArmSetup,
    pub control: ArmSetup,
    /// The durations arm (level 3 with CUPTI), when the instrumented arm times with events.
    pub durations: Option<ArmSetup>,
    /// With the events backend: one in this many steps timed (1: every call).
    pub sample_every: Option<u32>,
    /// Which ranges are the steps, in words.
    pub steps: String,
    pub skip_steps: usize,
    /// The experiment's directory: one sub-directory per run (`r01-instrumented`, …) with its capture,
    /// `stdout.txt` and `stderr.txt`.
    pub out_dir: PathBuf,
    pub runs: Vec<RunRecord>,
    #[serde(flatten)]
    pub analysis: Analysis,
}

/// The per-step measures of one run's capture. Every process's steps count, in ring order, each
/// process's first `skip` steps left out.
pub fn measures(dir: &Path, o: &StepOptions, skip: usize) -> Result<RunMeasures, String> {
    let capture = causeway_scanner::Capture::open(dir).map_err(|e| e.to_string())?;
    let rings = capture.rings().map_err(|e| e.to_string())?;
    let t = Timeline::build(&rings);
    let mut out = RunMeasures::default();
    for r in &rings {
        let h = &r.view.header;
        out.lost = out
            .lost
            .saturating_add(h.dropped)
            .saturating_add(h.overwritten())
            .saturating_add(h.counters[causeway_ring::layout::counter::DEVICE_DROPPED]);
    }
    let mut why = Vec::new();
    for p in &t.processes {
        let ps = process_steps(p, o);
        if ps.steps.len() <= skip {
            let reason = ps
                .notes
                .first()
                .cloned()
                .unwrap_or_else(|| format!("{} steps, {skip} skipped", ps.steps.len()));
            why.push(format!("pid {} ({}): {reason}", p.pid, p.exe));
            continue;
        }
        out.device_timed |= ps.device_timed;
        if ps.device_timed && !out.timed_by.contains(&p.backend) {
            out.timed_by.push(p.backend.clone());
            out.timed_by.sort();
        }
        let events = p.backend == "events";
        out.event_timed |= ps.device_timed && events;
        let idx = SpanIndex::new(&p.device);
        let issue = if events {
            issue_times(p)
        } else {
            HashMap::new()
        };
        for s in ps.steps.iter().skip(skip) {
            out.steps.push(StepMeasure {
                wall_ns: s.wall_ns,
                device: s
                    .device
                    .as_ref()
                    .map(|d| device_measure(&idx, &issue, s.begin_ns, s.end_ns, d)),
            });
        }
    }
    if out.steps.is_empty() {
        return Err(format!(
            "no steps in {}: {}; the control compares per-step figures, so the program needs NVTX \
             ranges around its steps (or name them with --steps RANGE)",
            dir.display(),
            if why.is_empty() {
                "no process recorded anything".to_string()
            } else {
                why.join("; ")
            }
        ));
    }
    Ok(out)
}

/// Host time of each call that issued an event-timed span, by sequence number: how much later than
/// its start event the work can have been submitted (`DeviceMeasure::copy_lo_ns`).
fn issue_times(p: &causeway_scanner::facts::model::ProcessTimeline) -> HashMap<u64, u64> {
    let issuing: std::collections::HashSet<u64> =
        p.device.iter().filter_map(|s| s.call.get()).collect();
    p.calls
        .iter()
        .filter(|c| issuing.contains(&c.seq))
        .filter_map(|c| Some((c.seq, c.end_ns.get()?.saturating_sub(c.begin_ns))))
        .collect()
}

/// Busy time per stream, their union, and how far the work reaches beyond the window's edges
/// (`DeviceMeasure::outside_ns`); the least busy times with each event-timed span's start moved later
/// by its issuing call's host time (`issue`; empty for CUPTI's spans).
fn device_measure(
    idx: &SpanIndex,
    issue: &HashMap<u64, u64>,
    lo: u64,
    hi: u64,
    d: &StepDevice,
) -> DeviceMeasure {
    let mut per: BTreeMap<causeway_scanner::facts::model::StreamId, Vec<(u64, u64)>> =
        BTreeMap::new();
    let mut per_lo: BTreeMap<causeway_scanner::facts::model::StreamId, Vec<(u64, u64)>> =
        BTreeMap::new();
    let (mut copy_lo, mut kern_lo) = (Vec::new(), Vec::new());
    let mut all = Vec::new();
    // A span mostly inside the window is the step's own work: how far it reaches out counts. A span
    // mostly outside is another step's work: the piece of it inside counts.
    let (mut before, mut after, mut foreign) = (0u64, 0u64, 0u64);
    for s in idx.overlapping(lo, hi) {
        let c = (s.begin_ns.max(lo), s.end_ns.min(hi));
        let inside = c.1.saturating_sub(c.0);
        // Saturating: a hostile capture's span times may be anything.
        if inside.saturating_mul(2) >= s.end_ns.saturating_sub(s.begin_ns) {
            before = before.max(lo.saturating_sub(s.begin_ns));
            after = after.max(s.end_ns.saturating_sub(hi));
        } else {
            foreign = foreign.max(inside);
        }
        per.entry(s.stream.get()).or_default().push(c);
        all.push(c);
        let late = s
            .call
            .get()
            .and_then(|q| issue.get(&q))
            .map_or(s.begin_ns, |&t| s.begin_ns.saturating_add(t).min(s.end_ns));
        let c_lo = (late.max(lo), s.end_ns.min(hi));
        per_lo.entry(s.stream.get()).or_default().push(c_lo);
        match s.kind {
            causeway_ring::layout::DeviceKind::Memcpy => copy_lo.push(c_lo),
            causeway_ring::layout::DeviceKind::Kernel => kern_lo.push(c_lo),
            _ => {}
        }
    }
    // Streams in the order of their busy time, largest first; the least busy times in the same order.
    let mut streams: Vec<(u64, u64)> = per
        .into_iter()
        .map(|(k, v)| {
            let lo_v = per_lo.remove(&k).unwrap_or_default();
            (measure(&union(v)), measure(&union(lo_v)))
        })
        .filter(|&(n, _)| n > 0)
        .collect();
    streams.sort_unstable_by(|a, b| b.cmp(a));
    DeviceMeasure {
        copy_ns: d.copy_ns,
        compute_ns: d.compute_ns,
        overlap_ns: d.overlap_ns,
        streams_ns: streams.iter().map(|s| s.0).collect(),
        union_ns: measure(&union(all)),
        outside_ns: before + after + foreign,
        copy_lo_ns: measure(&union(copy_lo)).min(d.copy_ns),
        compute_lo_ns: measure(&union(kern_lo)).min(d.compute_ns),
        streams_lo_ns: streams.iter().map(|s| s.1).collect(),
    }
}

/// The control arm's level (see `ControlOptions::control_level`), checked.
fn control_level(o: &ControlOptions, timed: bool) -> Result<u32, String> {
    let level = match o.control_level {
        Some(l) if l == 0 || l > 2 => {
            return Err(format!(
                "--control-level {l}: the control arm records no device timing, so its level is 1 \
                 (NVTX only) or 2 (+ host calls)"
            ))
        }
        Some(l) => l,
        None if timed => 2,
        None if o.level > 2 => 2,
        None => o.level - 1,
    };
    if level == 0 {
        return Err(format!(
            "level {} records the least a capture can (NVTX); with no device timing there is no lighter \
             control arm: instrument at level 3 (device timing) or compare against --bare alone",
            o.level
        ));
    }
    if !timed && level >= o.level {
        return Err(format!(
            "--control-level {level} records at least what the instrumented level {} does (no device \
             timing): the arms would not differ",
            o.level
        ));
    }
    Ok(level)
}

/// A fresh, private `out/cw-control-<timestamp>-<pid>` (with a suffix if it exists), absolute.
fn make_out_dir(out: &Path) -> Result<PathBuf, String> {
    record::make_dir_in(out, "cw-control").map_err(|e| e.0)
}

/// The bare arm's command: the program as it is, without the shim or any capture setting.
fn bare_command(cmd: &[OsString]) -> Command {
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..]);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("CAUSEWAY_") {
            c.env_remove(k);
        }
    }
    c
}

/// Runs the experiment. `progress(done, total, run)` is called after each run.
pub fn run(
    o: &ControlOptions,
    mut progress: impl FnMut(usize, usize, &PlannedRun, &RunRecord),
) -> Result<ControlReport, String> {
    if o.runs == 0 || o.runs > MAX_RUNS {
        return Err(format!(
            "--runs {}: give 1..={MAX_RUNS} runs per arm (3 or more give the ranges the marks need)",
            o.runs
        ));
    }
    let rec = |level, backend, cupti: Option<PathBuf>, sample| RecordOptions {
        level,
        backend,
        cupti,
        sample,
        out: o.out.clone(),
        ring_mb: o.ring_mb,
        policy: Policy::Drop,
        shim: o.shim.clone(),
        cmd: o.cmd.clone(),
    };
    // With events, --cupti names the durations arm's CUPTI.
    let events = o.backend == Some(Backend::Events);
    if events && !o.durations && o.cupti.is_some() {
        return Err(
            "--cupti names the CUPTI library of --backend cupti or of the durations arm; with              --backend events --no-durations nothing loads it"
                .into(),
        );
    }
    let ins_cupti = if events { None } else { o.cupti.clone() };
    let ins: Prepared =
        record::prepare(&rec(o.level, o.backend, ins_cupti, o.sample)).map_err(|e| e.0)?;
    let ctl_level = control_level(o, ins.backend != Backend::None)?;
    let ctl: Prepared = record::prepare(&rec(ctl_level, None, None, None)).map_err(|e| e.0)?;
    // Events spans start before their work (launch latency): the lower bounds take busy times from a
    // CUPTI arm instead, when the program lets CUPTI load.
    let dur: Option<Prepared> = if o.durations && ins.backend == Backend::Events {
        Some(
            record::prepare(&rec(3, Some(Backend::Cupti), o.cupti.clone(), None))
                .map_err(|e| e.0)?,
        )
    } else {
        None
    };
    let Some(program) = o.cmd.first() else {
        return Err("no command to run; usage: causeway control [OPTIONS] -- CMD [ARGS...]".into());
    };
    let args = &o.cmd[1..];
    let out_dir = make_out_dir(&o.out)?;
    let mut order = vec![Arm::Instrumented, Arm::Control];
    if dur.is_some() {
        order.push(Arm::Durations);
    }
    if o.bare {
        order.push(Arm::Bare);
    }
    let plan = interleave(&order, o.runs);
    let total = plan.len();
    let done = std::cell::Cell::new(0usize);
    let read_run = |r: &RunRecord| -> Result<Option<RunMeasures>, String> {
        match r.arm {
            Arm::Bare => Ok(None),
            _ => measures(&r.dir, &o.steps, o.skip_steps)
                .map(Some)
                .map_err(|e| format!("run {} ({} arm): {e}", r.dir.display(), r.arm.name())),
        }
    };
    // The first round runs alone and is read at once: a program with no steps (or a shim that never
    // loaded) is said after one round, not after every run.
    let mut by_arm: BTreeMap<Arm, Vec<ArmRun>> = BTreeMap::new();
    let mut all_runs: Vec<RunRecord> = Vec::with_capacity(total);
    let first = order.len().min(plan.len());
    for part in [&plan[..first], &plan[first..]] {
        let runs = run_plan(
            part,
            &out_dir,
            |arm, dir| {
                Ok(match arm {
                    Arm::Instrumented => ins.command(program, args, dir),
                    Arm::Control => ctl.command(program, args, dir),
                    Arm::Durations => match &dur {
                        Some(d) => d.command(program, args, dir),
                        None => ctl.command(program, args, dir),
                    },
                    Arm::Bare => bare_command(&o.cmd),
                })
            },
            |_, p, r| {
                done.set(done.get() + 1);
                progress(done.get(), total, p, r)
            },
        );
        let runs = match runs {
            Ok(r) => r,
            // The program could not even start: nothing ran, so leave no experiment folder behind.
            Err(e) if done.get() == 0 && e.to_string().starts_with("cannot run") => {
                let _ = std::fs::remove_dir_all(&out_dir);
                return Err(e.to_string());
            }
            Err(e) => {
                return Err(format!(
                    "{e} (the runs so far are in {})",
                    out_dir.display()
                ))
            }
        };
        for r in &runs {
            let m = read_run(r)?;
            by_arm.entry(r.arm).or_default().push(ArmRun {
                round: r.round,
                wall_ns: r.wall_ns,
                measures: m,
            });
        }
        all_runs.extend(runs);
    }
    let runs = all_runs;
    let get = |a: Arm| by_arm.get(&a).map_or(&[][..], Vec::as_slice);
    let analysis = analyse(&Inputs {
        instrumented: get(Arm::Instrumented),
        control: get(Arm::Control),
        bare: get(Arm::Bare),
        durations: get(Arm::Durations),
    });
    // What timed each arm's runs, as their captures say.
    let timed_by = |a: Arm| -> Vec<String> {
        let mut v: Vec<String> = get(a)
            .iter()
            .filter_map(|r| r.measures.as_ref())
            .flat_map(|m| m.timed_by.iter().cloned())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let steps = match (&o.steps.range, &o.steps.domain) {
        (Some(r), Some(d)) => format!("NVTX ranges \"{r}\" in domain \"{d}\""),
        (Some(r), None) => format!("NVTX ranges \"{r}\""),
        (None, Some(d)) => format!("the outermost repeating NVTX range of domain \"{d}\""),
        (None, None) => "the outermost repeating NVTX range".into(),
    };
    Ok(ControlReport {
        command: o
            .cmd
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        runs_per_arm: o.runs,
        order,
        instrumented: ArmSetup {
            level: Some(ins.level.into()),
            backend: ins.backend.name(),
            timed_by: timed_by(Arm::Instrumented),
        },
        control: ArmSetup {
            level: Some(ctl.level.into()),
            backend: "none",
            timed_by: timed_by(Arm::Control),
        },
        durations: dur.as_ref().map(|d| ArmSetup {
            level: Some(d.level.into()),
            backend: d.backend.name(),
            timed_by: timed_by(Arm::Durations),
        }),
        sample_every: (ins.backend == Backend::Events)
            .then(|| ins.sample.unwrap_or(record::DEFAULT_EVENTS_SAMPLE)),
        steps,
        skip_steps: o.skip_steps,
        out_dir,
        runs,
        analysis,
    })
}

// ---- text ----------------------------------------------------------------------------------------------

fn spread_text(s: Option<&Spread>, unit: &str, lower: bool) -> String {
    let Some(s) = s else {
        return "-".into();
    };
    let f = |v: f64| {
        if unit == "ns" {
            fmt_ns(v.max(0.0) as u64)
        } else {
            format!("{v:.2}")
        }
    };
    format!(
        "{}{} / {} / {}",
        if lower { ">= " } else { "" },
        f(s.min),
        f(s.median),
        f(s.max)
    )
}

fn ratio_text(s: Option<&Spread>) -> String {
    s.map_or("-".into(), |s| {
        format!(
            "{:.3} / {:.3} / {:.3} ({} rounds)",
            s.min, s.median, s.max, s.n
        )
    })
}

/// An arm's device timing in words: what it asked for, and what timed the work where that differs
/// (a Level Zero or Unified Runtime program is timed by its runtime's own events whatever was asked).
fn timing_text(a: &ArmSetup) -> String {
    match a.timed_by.as_slice() {
        [] => a.backend.to_string(),
        [one] if one == a.backend => one.clone(),
        by => format!(
            "{} asked; the work timed by {}",
            a.backend,
            by.join(" and ")
        ),
    }
}

/// The report as text: settings, arms, claims with their marks and one line each, ratios,
/// assumptions, notes, where the captures are.
pub fn render(r: &ControlReport) -> String {
    let mut out = String::new();
    let a = &r.analysis;
    let names: Vec<&str> = r.order.iter().map(|a| a.name()).collect();
    let _ = writeln!(
        out,
        "causeway control: {} run{} per arm, interleaved ({} per round)",
        r.runs_per_arm,
        if r.runs_per_arm == 1 { "" } else { "s" },
        names.join(", ")
    );
    let _ = writeln!(out, "  command       {}", r.command.join(" "));
    let _ = writeln!(
        out,
        "  instrumented  level {}, device timing: {}{}",
        r.instrumented.level.unwrap_or(0),
        timing_text(&r.instrumented),
        match r.sample_every {
            Some(1) => ", every call timed".to_string(),
            Some(n) => format!(", one step in {n} timed (--sample)"),
            None => String::new(),
        }
    );
    let _ = writeln!(
        out,
        "  control       level {}, no device timing (no CUPTI, no timing events): NVTX steps and host time",
        r.control.level.unwrap_or(0)
    );
    if r.durations.is_some() {
        let _ = writeln!(
            out,
            "  durations     level 3 with CUPTI: how long each copy and kernel takes, for the control's bounds"
        );
    }
    if r.order.contains(&Arm::Bare) {
        let _ = writeln!(out, "  bare          no shim: the whole process timed");
    }
    let _ = writeln!(
        out,
        "  steps         {}{}; control steps held against {} busy times by {}",
        r.steps,
        if r.skip_steps > 0 {
            format!(", the first {} of each process left out", r.skip_steps)
        } else {
            String::new()
        },
        match a.busy_times_from {
            "durations" => "the durations arm's",
            _ => "the instrumented arm's",
        },
        if a.pairing == "step-index" {
            "step index"
        } else {
            "pooled medians"
        }
    );
    out.push('\n');

    let mut t = Table::new(&[
        ("ARM", Align::Left),
        ("RUNS", Align::Right),
        ("STEPS/RUN", Align::Right),
        (
            "STEP WALL, MEDIAN PER RUN (min / median / max)",
            Align::Left,
        ),
        ("PROCESS WALL (min / median / max)", Align::Left),
    ]);
    for s in &a.arms {
        t.row(vec![
            s.arm.name().into(),
            s.runs.to_string(),
            match s.steps {
                Some((lo, hi)) if lo == hi => lo.to_string(),
                Some((lo, hi)) => format!("{lo}..{hi}"),
                None => "-".into(),
            },
            spread_text(s.step_wall_ns.as_ref(), "ns", false),
            spread_text(s.process_wall_ns.as_ref(), "ns", false),
        ]);
    }
    t.write(&mut out);
    out.push('\n');

    let mut t = Table::new(&[
        ("CLAIM", Align::Left),
        ("INSTRUMENTED (min / median / max)", Align::Left),
        ("AGAINST", Align::Left),
        ("COUNTERPART (min / median / max)", Align::Left),
        ("EFFECT [95 % INTERVAL]", Align::Left),
        ("RESOLVES", Align::Right),
        ("MARK", Align::Left),
    ]);
    for c in &a.claims {
        let v = |x: f64| causeway_control::claims::value_text(x, c.unit);
        t.row(vec![
            c.title.into(),
            spread_text(c.instrumented.as_ref(), c.unit, false),
            c.against.name().into(),
            spread_text(
                c.control.as_ref(),
                c.unit,
                c.control_is == ControlIs::LowerBound,
            ),
            c.effect.map_or("-".into(), |d| {
                format!("{} [{} .. {}]", v(d.estimate), v(d.low), v(d.high))
            }),
            c.effect.map_or("-".into(), |d| v(d.resolution)),
            c.mark.text().into(),
        ]);
    }
    t.write(&mut out);
    for c in &a.claims {
        let _ = writeln!(out, "  - {}: {}", c.title, c.compared);
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "step time ratio, instrumented / control, per round (min / median / max): {}",
        ratio_text(a.step_time_ratio.as_ref())
    );
    if r.order.contains(&Arm::Bare) {
        let _ = writeln!(
            out,
            "process time ratio, instrumented / bare, per round:                       {}",
            ratio_text(a.process_time_ratio.as_ref())
        );
        let _ = writeln!(
            out,
            "process time ratio, control / bare, per round:                            {}",
            ratio_text(a.control_process_time_ratio.as_ref())
        );
    }
    if !a.assumptions.is_empty() {
        out.push_str(
            "\nASSUMPTIONS (a counterpart marked >= is a lower bound derived from them)\n",
        );
        for s in &a.assumptions {
            let _ = writeln!(out, "  - {s}");
        }
    }
    if !a.notes.is_empty() {
        out.push_str("\nNOTES\n");
        for s in &a.notes {
            let _ = writeln!(out, "  - {s}");
        }
    }
    let _ = writeln!(
        out,
        "\ncaptures: {} (one directory per run, r01-{} ...: its capture, stdout.txt, stderr.txt)",
        r.out_dir.display(),
        r.order[0].name()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(level: u32, control_level: Option<u32>) -> ControlOptions {
        ControlOptions {
            runs: 3,
            level,
            backend: None,
            cupti: None,
            control_level,
            sample: None,
            durations: true,
            bare: false,
            steps: StepOptions::default(),
            skip_steps: 0,
            out: PathBuf::from("."),
            ring_mb: 16,
            shim: None,
            cmd: vec!["true".into()],
        }
    }

    #[test]
    fn the_control_level_never_records_device_timing_nor_equals_an_untimed_arm() {
        assert_eq!(control_level(&opts(3, None), true), Ok(2));
        assert_eq!(control_level(&opts(4, None), true), Ok(2));
        assert_eq!(control_level(&opts(3, Some(1)), true), Ok(1));
        assert_eq!(control_level(&opts(2, None), false), Ok(1));
        assert_eq!(control_level(&opts(4, None), false), Ok(2));
        let e = control_level(&opts(3, Some(3)), true).unwrap_err();
        assert!(e.contains("no device timing"), "{e}");
        let e = control_level(&opts(2, Some(2)), false).unwrap_err();
        assert!(e.contains("would not differ"), "{e}");
        let e = control_level(&opts(1, None), false).unwrap_err();
        assert!(e.contains("no lighter"), "{e}");
    }

    #[test]
    fn the_header_says_what_timed_the_work_where_it_is_not_what_was_asked() {
        let arm = |backend, by: &[&str]| ArmSetup {
            level: Some(3),
            backend,
            timed_by: by.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(timing_text(&arm("cupti", &[])), "cupti");
        assert_eq!(timing_text(&arm("cupti", &["cupti"])), "cupti");
        assert_eq!(
            timing_text(&arm("cupti", &["level_zero"])),
            "cupti asked; the work timed by level_zero"
        );
        assert_eq!(
            timing_text(&arm("events", &["events", "unified_runtime"])),
            "events asked; the work timed by events and unified_runtime"
        );
    }

    #[test]
    fn zero_runs_are_refused_before_anything_runs() {
        let mut o = opts(3, None);
        o.runs = 0;
        let e = run(&o, |_, _, _, _| panic!("nothing may run")).unwrap_err();
        assert!(e.starts_with("--runs 0"), "{e}");
    }
}
