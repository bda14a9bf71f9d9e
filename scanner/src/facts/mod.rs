//! What happened in a capture, each fact computed in one place and read by every analysis and
//! export: streams and stream capture ([`streams`]), the device clock conversion of the events backend ([`anchors`]), device intervals tied to
//! the calls that issued them ([`device`]), what each host wait waited on ([`waits`]), and the whole
//! timeline of each process ([`model`]).

pub mod anchors;
pub mod device;
pub mod model;
pub mod streams;
pub mod waits;
