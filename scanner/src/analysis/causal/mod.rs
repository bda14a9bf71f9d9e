//! The causal layer: a typed dependency graph of each process (`graph`: host calls, device work,
//! program order, issue, stream order, event waits, host waits, each edge with its evidence class)
//! and `why` (the critical predecessor chain of one late item, with its cause).
//!
//! Built on the facts (`facts::model`: calls, device intervals placed on the host clock, what the
//! ring lost); read by `causeway why` and the views that name a slow step's cause.

pub mod graph;
pub mod why;
