//! causeway-scanner: reads the captures that the causeway shim writes (one ring file per traced
//! process) and summarizes them; also launches programs under the shim (`causeway record`).
//!
//! The pipeline is `capture` (find and map ring files) → `decode` (read slots into entries) → `pair`
//! (nest calls per thread) → `device` (level 3 device intervals, tied to their calls; `anchors` converts
//! the events backend's device times) → `waits` (the
//! device work each host sync waited for) → `report` (the numbers) → `render` (the text form).
//! `record` is the other
//! half of the CLI; `control` runs a program in interleaved arms and checks the instrumented arm's claims
//! against a control without device timing (logic in the `causeway-control` crate). The ring format itself lives in `causeway-ring` and is not redefined here.

pub mod anchors;
pub(crate) mod bigvec;
pub mod capture;
pub mod compare;
pub mod control;
pub mod decode;
pub mod device;
pub mod export;
pub(crate) mod fastmap;
pub mod gaps;
pub mod guard;
pub mod html;
#[cfg(target_os = "linux")]
pub mod hugealloc;
pub mod model;
pub(crate) mod names;
pub mod pair;
pub mod progress;
pub mod rank;
pub mod record;
pub mod render;
pub mod report;
pub mod steps;
pub mod waits;

pub use capture::{Capture, CaptureError};
pub use report::Report;
