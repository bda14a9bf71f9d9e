//! causeway-cli's library half: what the `causeway` binary does besides reading captures, kept
//! apart from argument parsing so tests can drive it. [`record`] runs a program under the shim and
//! makes its capture directory; [`control`] runs the control harness's interleaved arms with it and
//! checks the capture's claims (the logic in `causeway-control`).

pub mod control;
pub mod record;

/// One line on stderr. A stderr that cannot be written (a full disk, a reader gone) loses the line,
/// not the exit status (`eprintln!` panics, exit 101, where `record` promises the program's own).
pub fn line(text: &str) {
    use std::io::Write as _;
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{text}");
}
