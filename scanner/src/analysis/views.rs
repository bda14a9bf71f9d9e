//! `causeway report --steps/--gaps`: the views a command asked for, per process, computed from one
//! timeline; and the check that a `--range` names a range the capture has.

use crate::analysis::steps::{process_steps, ProcessSteps, StepOptions};
use crate::facts::model::{Range, Timeline};
use serde::Serialize;

/// What `causeway report --steps/--gaps` computes: the requested views, per process.
#[derive(Debug, Clone, Serialize)]
pub struct Views {
    pub capture: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<ProcessSteps>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gaps: Option<Vec<crate::analysis::gaps::ProcessGaps>>,
}

/// Which views to compute.
#[derive(Debug, Clone, Default)]
pub struct ViewOptions {
    /// `Some`: the steps view with these options.
    pub steps: Option<StepOptions>,
    pub gaps: bool,
}

impl Views {
    pub fn build(capture: &str, t: &Timeline, o: &ViewOptions) -> Views {
        Views {
            capture: capture.to_string(),
            steps: o.steps.as_ref().map(|so| {
                t.processes
                    .iter()
                    .map(|p| {
                        let mut s = process_steps(p, so);
                        s.causes = crate::analysis::causal::why::step_causes(p, &s);
                        s
                    })
                    .collect()
            }),
            gaps: o.gaps.then(|| {
                t.processes
                    .iter()
                    .map(crate::analysis::gaps::process_gaps)
                    .collect()
            }),
        }
    }

    /// Opens a capture, builds its timeline and the requested views; notes lost entries per process.
    /// A `--range` naming no range of the capture is an error listing those it has.
    pub fn from_path(
        path: &std::path::Path,
        o: &ViewOptions,
    ) -> Result<Views, crate::CaptureError> {
        let capture = crate::Capture::open(path)?;
        let rings = capture.rings()?;
        let t = Timeline::build(&rings);
        // The views read the model (and the rings' parsed headers), not the mapped entries.
        capture.release_pages();
        let (v, range) = Views::of_rings(&path.display().to_string(), &rings, &t, o);
        crate::util::drop::drop_later(t);
        range.map_err(|e| crate::CaptureError::new(path, e))?;
        Ok(v)
    }

    /// The views of `t`, the timeline of `rings`, each process's lost entries noted; and the
    /// `--range` check's result (`compare` accepts a range missing from one side).
    pub fn of_rings(
        label: &str,
        rings: &[crate::read::capture::Ring],
        t: &Timeline,
        o: &ViewOptions,
    ) -> (Views, Result<(), String>) {
        let range = match &o.steps {
            Some(s) => named_range_exists(t, s),
            None => Ok(()),
        };
        let mut v = Views::build(label, t, o);
        for (ring, i) in rings.iter().zip(0..) {
            let h = &ring.view.header;
            let mut lost = Vec::new();
            if h.dropped > 0 {
                lost.push(format!(
                    "the ring was full and dropped {} entries: calls, ranges or device spans after that are missing",
                    h.dropped
                ));
            }
            if h.overwritten() > 0 {
                lost.push(format!(
                    "the ring overwrote its oldest {} entries: the start of the run is missing",
                    h.overwritten()
                ));
            }
            if let Some(s) = v.steps.as_mut() {
                s[i].notes.extend(lost.iter().cloned());
            }
            if let Some(g) = v.gaps.as_mut() {
                g[i].notes.extend(lost);
            }
        }
        (v, range)
    }
}

/// With `--range NAME`: an error unless some process of the capture has a range of that name (in
/// `--domain`, when given), listing the ranges it does have, most frequent first (a mistyped name
/// must not read as "no steps").
pub fn named_range_exists(t: &Timeline, o: &StepOptions) -> Result<(), String> {
    let Some(name) = &o.range else {
        return Ok(());
    };
    let in_domain = |r: &Range| o.domain.is_none() || r.domain.as_deref() == o.domain.as_deref();
    if t.processes
        .iter()
        .any(|p| p.ranges.iter().any(|r| *r.name == **name && in_domain(r)))
    {
        return Ok(());
    }
    let mut seen: std::collections::BTreeMap<(String, Option<String>), u64> = Default::default();
    for p in &t.processes {
        for r in &p.ranges {
            *seen
                .entry((r.name.to_string(), r.domain.map(|d| d.to_string())))
                .or_default() += 1;
        }
    }
    let mut seen: Vec<_> = seen.into_iter().collect();
    seen.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let what = match &o.domain {
        Some(d) => format!("no NVTX range \"{name}\" in domain \"{d}\""),
        None => format!("no NVTX range \"{name}\""),
    };
    if seen.is_empty() {
        return Err(format!("{what}: the capture has no NVTX ranges at all"));
    }
    const SHOWN: usize = 12;
    let list: Vec<String> = seen
        .iter()
        .take(SHOWN)
        .map(|((n, d), c)| match d {
            Some(d) => format!("\"{n}\" (domain \"{d}\", {c}x)"),
            None => format!("\"{n}\" ({c}x)"),
        })
        .collect();
    Err(format!(
        "{what}; the capture's ranges: {}{}",
        list.join(", "),
        if seen.len() > SHOWN {
            format!(", and {} more", seen.len() - SHOWN)
        } else {
            String::new()
        }
    ))
}
