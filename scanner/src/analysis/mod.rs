//! The views computed from the facts: the report ([`report`]: APIs, kernels, device time, waits,
//! ranges), steps ([`steps`]) and launch gaps ([`gaps`]), and two captures side by side
//! ([`compare`]); the causal graph and `why` ([`causal`]).

pub mod causal;
pub mod compare;
pub mod gaps;
pub mod report;
pub mod steps;
pub mod views;
