//! causeway-control: the control harness behind `causeway control`.
//!
//! An instrument can change what it measures: on Intel's Unified Runtime, timing events made the copy
//! engine wait, and a copy/compute overlap read 0.21 with them and 1.09 without. `causeway control`
//! therefore runs a program in interleaved arms — **instrumented** (the capture level and device-timing
//! backend asked for), **control** (no device timing at all: NVTX step boundaries and host timing only)
//! and optionally **bare** (no shim; the whole process timed) — and checks every claim the instrumented
//! arm supports against what the control arm can say without device timing.
//!
//! This crate is the pure logic, with no dependency on the scanner:
//! - [`plan`]: the arms and their interleaved order (A B C A B C …, so drift hits every arm alike);
//! - [`run`]: running the plan — one directory per run, stdout and stderr kept, the process timed; the
//!   caller builds each arm's command (the scanner does, with `causeway record`'s environment);
//! - [`signals`]: SIGTERM and SIGHUP passed on to the program being run (also used by `record`);
//! - [`stats`]: min/median/max spreads;
//! - [`noise`]: each claim's effect and the noise it is judged against (the spread of the per-run
//!   medians, a Welch interval), and the smallest effect the experiment resolves;
//! - [`measures`]: what the caller extracts from each run's capture (per step: wall time, copy and
//!   compute busy, their overlap, busy time per stream, whether device work crossed the step's edges);
//! - [`claims`]: the claims (step time, copy/compute overlap, stream concurrency, process time), their
//!   control-side counterparts (with the busy times of a CUPTI durations arm when the instrumented
//!   arm times with events), and the marks "holds under control" / "does not survive the control".
//!
//! The rules, the assumptions and why they are what they are: `docs/control.md`.

pub mod claims;
pub mod measures;
pub mod noise;
pub mod plan;
pub mod run;
pub mod signals;
pub mod stats;

pub use claims::{analyse, Analysis, Claim, ControlIs, Mark};
pub use measures::{DeviceMeasure, RunMeasures, StepMeasure};
pub use noise::Difference;
pub use plan::{interleave, Arm, PlannedRun};
pub use stats::Spread;
