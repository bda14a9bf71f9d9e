//! What the hot path keeps per thread: the thread's kernel id (cached after its first call), how many
//! recorded calls are open on it, and the reentrancy guard — a flag set while the shim itself calls
//! into CUDA (kernel-name lookups, graph walks, device timing), so that those calls are never recorded
//! as the program's. One thread-local block without a destructor (initial-exec on x86-64 Linux):
//! reading it allocates nothing, takes no lock, makes no system call and calls no function.

use std::cell::Cell;

#[repr(C)]
pub(super) struct Tls {
    /// The thread's kernel id; 0 until its first call (`record::tid`).
    pub(super) tid: Cell<u32>,
    /// Recorded calls open on this thread.
    pub(super) depth: Cell<u16>,
    /// Set while the shim itself calls into CUDA: such calls are never recorded.
    pub(super) internal: Cell<bool>,
}

/// x86-64 Linux: the thread's `Tls` lives in the static TLS block, reached in the initial-exec model
/// (one load of its offset from the GOT, added to the thread pointer). Rust's `thread_local!` in a
/// shared object uses the general-dynamic model: every hooked call, recorded or not, called
/// `__tls_get_addr` through the PLT. A preloaded library may use static TLS (glibc sizes the block
/// for the libraries loaded at start-up); the 16 zero bytes are `Tls`'s initial value.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod block {
    use super::Tls;

    std::arch::global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".globl causeway_hot_tls",
        ".hidden causeway_hot_tls",
        ".type causeway_hot_tls,@object",
        ".size causeway_hot_tls,16",
        ".p2align 4",
        "causeway_hot_tls:",
        ".zero 16",
        ".popsection",
    );

    const _: () = assert!(size_of::<Tls>() <= 16 && align_of::<Tls>() <= 16);

    #[inline(always)]
    pub(super) fn get() -> *const Tls {
        let p: *const Tls;
        // SAFETY: reads the GOT slot the linker fills with the block's offset from the thread
        // pointer, and the thread pointer (%fs:0 holds its own address on x86-64); writes only `p`.
        unsafe {
            std::arch::asm!(
                "mov {p}, qword ptr [rip + causeway_hot_tls@GOTTPOFF]",
                "add {p}, qword ptr fs:[0]",
                p = out(reg) p,
                options(pure, readonly, nostack),
            );
        }
        p
    }
}

/// Elsewhere: a const-initialised `thread_local!` without a destructor.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod block {
    use super::Tls;
    use std::cell::Cell;

    thread_local! {
        static TLS: Tls = const { Tls { tid: Cell::new(0), depth: Cell::new(0), internal: Cell::new(false) } };
    }

    #[inline(always)]
    pub(super) fn get() -> *const Tls {
        TLS.with(|t| t as *const Tls)
    }
}

/// This thread's state. One TLS lookup per call: the pointer is kept in `record::Open` for `finish`.
#[inline(always)]
pub(super) fn tls() -> &'static Tls {
    // SAFETY: the block lives as long as its thread and is zeroed (= `Tls`'s initial value: all
    // fields are integers or `false`) when the thread starts; the reference never leaves the thread
    // (`Open` is created and finished on the same thread, within one hook).
    unsafe { &*block::get() }
}

/// Forgets the cached thread id and the open calls (a fork child's only thread has a new id, and the
/// calls open in the parent do not return in the child).
pub fn reset_thread() {
    let t = tls();
    t.tid.set(0);
    t.depth.set(0);
}

/// Recorded calls open on this thread now (0 = none).
#[inline(always)]
pub fn depth() -> u16 {
    tls().depth.get()
}

/// Whether this thread is inside `internal` (the shim's own calls into CUDA).
#[inline(always)]
pub fn is_internal() -> bool {
    tls().internal.get()
}

/// Runs `f` with recording suppressed on this thread: for the shim's own calls into CUDA.
pub fn internal<R>(f: impl FnOnce() -> R) -> R {
    let prev = tls().internal.replace(true);
    let r = f();
    tls().internal.set(prev);
    r
}
