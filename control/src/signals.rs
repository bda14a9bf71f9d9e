//! Termination requests that reach causeway while it runs a program — SIGTERM (a scheduler, `kill`,
//! systemd) and SIGHUP (the terminal went away) — are passed on to the program, and causeway then
//! exits as the program did. Without this `causeway record` died at once and left the program running
//! as an orphan. (Ctrl-C and Ctrl-\ reach the whole foreground group by themselves; those are ignored
//! while the program runs, elsewhere.)

use std::sync::atomic::{AtomicI32, Ordering};

/// The signals passed on.
const FORWARDED: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGHUP];

/// The running program's pid (0: none yet).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// A signal that arrived before the pid was known (0: none), passed on once it is.
static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn pass_on(sig: libc::c_int) {
    let pid = CHILD.load(Ordering::Acquire);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    } else {
        PENDING.store(sig, Ordering::Release);
    }
}

/// Forwarding in force; dropping it puts the previous dispositions back.
pub struct Forwarding {
    old: [libc::sigaction; 2],
}

/// Starts forwarding, before the program is spawned (a signal arriving in between is kept and passed
/// on by [`Forwarding::child`]). The program gets the default dispositions: a handler does not survive
/// `exec`.
pub fn forward() -> Forwarding {
    CHILD.store(0, Ordering::Release);
    PENDING.store(0, Ordering::Release);
    // SAFETY: zeroed bytes are a valid `sigaction`; the handler is an `extern "C" fn(c_int)` that only
    // does async-signal-safe work; SA_RESTART keeps `wait` going.
    let old = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = pass_on as extern "C" fn(libc::c_int) as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        let mut old: [libc::sigaction; 2] = std::mem::zeroed();
        for (i, sig) in FORWARDED.into_iter().enumerate() {
            libc::sigaction(sig, &sa, &mut old[i]);
        }
        old
    };
    Forwarding { old }
}

impl Forwarding {
    /// The program started as `pid`: from now on the signals go to it (one that came early, now).
    pub fn child(&self, pid: u32) {
        CHILD.store(pid as i32, Ordering::Release);
        let early = PENDING.swap(0, Ordering::AcqRel);
        if early != 0 {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid as i32, early) };
        }
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        CHILD.store(0, Ordering::Release);
        for (i, sig) in FORWARDED.into_iter().enumerate() {
            // SAFETY: restores the disposition `forward` replaced.
            unsafe { libc::sigaction(sig, &self.old[i], std::ptr::null_mut()) };
        }
    }
}
