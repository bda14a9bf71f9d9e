//! causeway-cli's library half: what the `causeway` binary does besides reading captures, kept
//! apart from argument parsing so tests can drive it. [`record`] runs a program under the shim and
//! makes its capture directory; [`control`] runs the control harness's interleaved arms with it and
//! checks the capture's claims (the logic in `causeway-control`).

pub mod control;
pub mod record;
