//! The arms of a control experiment and the order their runs go in.

use serde::Serialize;

/// One way of running the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arm {
    /// Under the shim at the level and backend asked for.
    Instrumented,
    /// Under the shim without device timing (no CUPTI, no timing events): NVTX steps and host timing.
    Control,
    /// No shim at all; only the whole process is timed.
    Bare,
    /// Under the shim at level 3 with CUPTI, only to measure how long each copy and kernel takes (the
    /// busy times of the control's lower bounds) when the instrumented arm times with events.
    Durations,
}

impl Arm {
    pub fn name(self) -> &'static str {
        match self {
            Arm::Instrumented => "instrumented",
            Arm::Control => "control",
            Arm::Bare => "bare",
            Arm::Durations => "durations",
        }
    }
}

/// One run of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PlannedRun {
    /// 1-based: the round this run belongs to (one run of every arm per round).
    pub round: usize,
    pub arm: Arm,
}

impl PlannedRun {
    /// The run's directory name: `r01-instrumented`, … (sorts in execution order within a round).
    pub fn dir_name(&self) -> String {
        format!("r{:02}-{}", self.round, self.arm.name())
    }
}

/// `runs` rounds of `arms`, interleaved: A B C A B C … (every round runs the arms in the given order,
/// so a slow drift of the machine — clocks, temperature, other tenants — shifts every arm alike and
/// shows up as spread, not as a difference between arms).
pub fn interleave(arms: &[Arm], runs: usize) -> Vec<PlannedRun> {
    (1..=runs)
        .flat_map(|round| arms.iter().map(move |&arm| PlannedRun { round, arm }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arms_alternate_round_by_round() {
        let p = interleave(&[Arm::Instrumented, Arm::Control, Arm::Bare], 2);
        let got: Vec<(usize, Arm)> = p.iter().map(|r| (r.round, r.arm)).collect();
        assert_eq!(
            got,
            vec![
                (1, Arm::Instrumented),
                (1, Arm::Control),
                (1, Arm::Bare),
                (2, Arm::Instrumented),
                (2, Arm::Control),
                (2, Arm::Bare)
            ]
        );
        assert_eq!(p[4].dir_name(), "r02-control");
        assert!(interleave(&[Arm::Control], 0).is_empty());
    }
}
