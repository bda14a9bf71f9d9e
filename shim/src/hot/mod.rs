//! The hot path: what every hooked call and every NVTX callback runs in the traced program's own
//! thread. `record` writes a call's entry into the ring, `state` is the process-wide state it reads
//! (the ring, the level), `guard` the per-thread state (thread id, nesting depth, and the reentrancy
//! guard that keeps the shim's own CUDA calls out of the capture). No allocation, no lock and no
//! system call on this path; the few once-per-thread and once-per-process steps are `#[cold]`.
//!
//! The lowest layer of the shim: it names no other part of it.

pub mod guard;
pub mod record;
pub mod state;
