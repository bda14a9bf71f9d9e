//! Helpers that know nothing of captures: fast hash maps keyed by small integers, vectors that grow
//! in huge pages without copying, percentiles, the progress bar long scans show, and dropping a large
//! model off the caller's path; indices grouped by key, or kept as bits with their ranks; which
//! intervals reach a window.

pub(crate) mod bigvec;
pub mod bits;
pub mod drop;
pub mod escape;
pub(crate) mod fastmap;
pub mod groups;
pub mod guard;
#[cfg(target_os = "linux")]
pub mod hugealloc;
pub mod intervals;
pub mod lanes;
pub mod output;
pub mod progress;
pub mod rank;
pub mod reach;
pub mod stages;
