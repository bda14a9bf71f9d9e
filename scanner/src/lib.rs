//! causeway-scanner: reads the captures that the causeway shim writes (one ring file per traced
//! process) and turns them into what the `causeway` CLI and the Python module show. Its folders are
//! the pipeline, each layer using only the layers before it (`tests/layers.rs` checks this):
//!
//! * [`util`] — containers and helpers that know nothing of captures (hash maps, huge-page vectors,
//!   percentiles, interval arithmetic, progress, writing output files).
//! * [`read`] — a capture as its rings: open and map them safely ([`read::capture`],
//!   [`util::guard`]), decode the slots into entries ([`read::decode`]), nest each thread's calls
//!   ([`read::pair`]), name what the entries refer to ([`read::names`]).
//! * [`facts`] — what happened, each fact computed in one place: which stream a call is on and the
//!   stream-capture state ([`facts::streams`]), when device work ran on the host clock
//!   ([`facts::placement`], [`facts::anchors`]), which call issued it ([`facts::device`]), the NVTX
//!   ranges ([`facts::ranges`]), what each host wait waited on ([`facts::waits`]), and the whole
//!   timeline of a process ([`facts::model`]).
//! * [`analysis`] — the views computed from the facts: the report ([`analysis::report`]), steps
//!   and launch gaps ([`analysis::steps`], [`analysis::gaps`]), two captures compared
//!   ([`analysis::compare`]).
//! * [`render`] — the views as text ([`render::text`]) and as an HTML page ([`render::html`]); JSON
//!   is the analyses' own serde form.
//! * [`export`] — the timeline as files for other tools: Perfetto, Chrome trace JSON, Parquet.
//!
//! The ring format itself lives in `causeway-ring` and is not redefined here. The command line
//! (`causeway-cli`) adds `record` (launch a program under the shim) and `control` (the control
//! harness, whose logic is `causeway-control`).

pub mod analysis;
pub mod export;
pub mod facts;
pub mod read;
pub mod render;
pub mod util;

pub use analysis::report::Report;
pub use read::capture::{Capture, CaptureError};
