//! libcauseway.so — the LD_PRELOAD shim. It interposes on CUDA runtime and driver entry points (by
//! symbol, through `dlsym`, and through `cuGetProcAddress`) and acts as an NVTX injection library,
//! writing one fixed-size entry per call into a file-backed ring (see the `causeway-ring` crate).
//! It never changes what the traced program computes: on any internal failure it disables itself and
//! passes every call through.
//!
//! # Layers
//!
//! The shim is in folders by concern. Each depends only on those below it, so there is no import
//! loop between them and nothing reaches up:
//!
//! ```text
//!                 lifecycle.rs        start-up, fork, exit: the one place that knows every part
//!                  │         │
//!          ┌───────┘         └────────┐
//!          ▼                          ▼
//!     intercept/                    nvtx/
//!   hook tables and machinery,    the NVTX injection library
//!   dlsym, cuGetProcAddress           │
//!          │                          │
//!          └───────┐         ┌────────┘
//!                  ▼         ▼
//!                   timing/           device timing: one seam over cupti/ and events
//!                      │
//!                      ▼
//!                   strings/          NVTX texts and kernel names into the ring
//!                      │
//!                      ▼
//!                  resolve.rs         finding real functions (for hooks, lookups and backends)
//!                      │
//!                      ▼
//!                    hot/             recording an entry: state, guard, record
//! ```
//!
//! `token.rs` (the work-token C ABI) stands beside the tower and uses only `hot/`.
//!
//! A layer may use every layer below it, not only the next. Inside `timing/`, the backends (`cupti/`,
//! `events.rs`) know neither each other nor the seam above them (`timing/mod.rs`), and only the seam
//! is visible outside; inside `intercept/`, the tables (`tables/`) name only the hook machinery
//! (`hooks.rs`) and graph walking (`graph.rs`). `tests/layers.rs` reads every `crate::` path in
//! `src/` (test modules aside) and fails on an edge this list does not allow:
//!
//! - `hot`: —
//! - `resolve`: hot
//! - `strings`: hot, resolve
//! - `timing`: hot, resolve, strings
//! - `nvtx`: hot, resolve, strings, timing
//! - `intercept`: hot, resolve, strings, timing
//! - `lifecycle`: hot, resolve, strings, timing, nvtx, intercept
//! - `token`: hot

// Unit tests link the crate without its load-time constructor, which leaves start-up code unused.
#![cfg_attr(test, allow(dead_code))]
// Every `unsafe` block says why it is sound (`cargo clippy -- -D warnings` holds the shim to it).
#![warn(clippy::undocumented_unsafe_blocks)]

mod hot;
mod intercept;
mod lifecycle;
mod nvtx;
mod resolve;
mod strings;
mod timing;
mod token;
