//! What happened in a capture, each fact computed in one place and read by every analysis and
//! export: which stream a call is on and which streams are being captured ([`streams`]); when
//! device work ran on the host clock ([`placement`], through the events backend's clock model in
//! [`anchors`]); which call issued it ([`device`]); the NVTX ranges ([`ranges`]); what each host wait
//! waited on ([`waits`]); which work token each thread's calls belong to and where the work moved
//! between threads ([`tokens`]); and the whole timeline of each process ([`model`]).

pub mod anchors;
pub mod device;
pub mod handle;
pub mod model;
pub mod placement;
pub mod ranges;
pub mod streams;
pub mod tokens;
pub mod waits;
