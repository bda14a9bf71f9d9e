//! What the hot path keeps per thread: the thread's kernel id (cached after its first call), how many
//! recorded calls are open on it, and the reentrancy guard — a flag set while the shim itself calls
//! into CUDA (kernel-name lookups, graph walks, device timing), so that those calls are never recorded
//! as the program's. One const-initialised thread-local without a destructor: reading it allocates
//! nothing, takes no lock and makes no system call.

use std::cell::Cell;

pub(super) struct Tls {
    /// The thread's kernel id; 0 until its first call (`record::tid`).
    pub(super) tid: Cell<u32>,
    /// Recorded calls open on this thread.
    pub(super) depth: Cell<u16>,
    /// Set while the shim itself calls into CUDA: such calls are never recorded.
    pub(super) internal: Cell<bool>,
}

thread_local! {
    static TLS: Tls = const { Tls { tid: Cell::new(0), depth: Cell::new(0), internal: Cell::new(false) } };
}

/// This thread's state. One TLS lookup per call: the pointer is kept in `record::Open` for `finish`.
#[inline(always)]
pub(super) fn tls() -> &'static Tls {
    // SAFETY: const-initialised thread-locals without a destructor live as long as their thread, and the
    // reference never leaves it (`Open` is created and finished on the same thread, within one hook).
    TLS.with(|t| unsafe { &*(t as *const Tls) })
}

/// Forgets the cached thread id and the open calls (a fork child's only thread has a new id, and the
/// calls open in the parent do not return in the child).
pub fn reset_thread() {
    TLS.with(|t| {
        t.tid.set(0);
        t.depth.set(0);
    });
}

/// Recorded calls open on this thread now (0 = none).
#[inline(always)]
pub fn depth() -> u16 {
    TLS.with(|t| t.depth.get())
}

/// Whether this thread is inside `internal` (the shim's own calls into CUDA).
#[inline(always)]
pub fn is_internal() -> bool {
    TLS.with(|t| t.internal.get())
}

/// Runs `f` with recording suppressed on this thread: for the shim's own calls into CUDA.
pub fn internal<R>(f: impl FnOnce() -> R) -> R {
    let prev = TLS.with(|t| t.internal.replace(true));
    let r = f();
    TLS.with(|t| t.internal.set(prev));
    r
}
