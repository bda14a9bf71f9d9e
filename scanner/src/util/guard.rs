//! Reading a mapped file that shrinks under the reader must not kill it. A ring is mapped read-only
//! and read in place; if another process truncates the file meanwhile, touching a page past the new
//! end raises SIGBUS, whose default action ends the reader. A SIGBUS handler, installed once, checks
//! whether the faulting address lies in a mapping registered here: if so it maps a zero-filled page
//! over the faulting one (the access is retried and reads zeros, which the decoder treats as torn
//! slots) and notes that the file changed; the command then reports it as an error instead of printing
//! figures read from a file that was cut short. A fault anywhere else is no business of ours: the
//! previous disposition is put back and the signal raised again.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

/// Mappings watched at once (a capture of this many processes and more reads the rest with `read`).
const SLOTS: usize = 16384;

/// Per slot: start address (0 = free) and length.
static START: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static LEN: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// Per slot: a fault was answered with a zero page.
static FAULTED: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
static ANY_FAULT: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();
/// The disposition SIGBUS had before ours (a `sigaction`, written once before ours is installed).
static mut PREVIOUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    for i in 0..SLOTS {
        let s = START[i].load(Ordering::Acquire);
        if s == 0 || s == usize::MAX || addr < s || addr - s >= LEN[i].load(Ordering::Acquire) {
            continue;
        }
        // SAFETY: sysconf is async-signal-safe in practice (a read of a cached value).
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let at = addr & !(page - 1);
        // SAFETY: replaces one page of our own read-only mapping with zeros (mmap is a plain system
        // call); the faulting load is retried on return and reads them.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            FAULTED[i].store(true, Ordering::Release);
            ANY_FAULT.store(true, Ordering::Release);
            return;
        }
        break;
    }
    // Not ours (or not repairable): as if we had never been here.
    // SAFETY: restores the disposition saved at install and raises the signal again.
    unsafe {
        libc::sigaction(
            sig,
            (*std::ptr::addr_of!(PREVIOUS)).as_ptr(),
            std::ptr::null_mut(),
        );
        libc::raise(sig);
    }
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: zeroed bytes are a valid `sigaction`; PREVIOUS is written here once, before the
        // handler that reads it can run.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus
                as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                as libc::sighandler_t;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(
                libc::SIGBUS,
                &sa,
                (*std::ptr::addr_of_mut!(PREVIOUS)).as_mut_ptr(),
            );
        }
    });
}

/// A registered mapping; unregistered when dropped.
pub struct Watch(Option<usize>);

/// Watches the mapping `[start, start + len)`; `Watch(None)` when the table is full (the caller then
/// reads the file rather than mapping it).
pub fn watch(start: *const u8, len: usize) -> Watch {
    install();
    for i in 0..SLOTS {
        if START[i]
            .compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            LEN[i].store(len, Ordering::Release);
            FAULTED[i].store(false, Ordering::Release);
            START[i].store(start as usize, Ordering::Release);
            return Watch(Some(i));
        }
    }
    Watch(None)
}

impl Watch {
    /// Whether the table had room.
    pub fn active(&self) -> bool {
        self.0.is_some()
    }

    /// Whether a read of this mapping hit a page the file no longer had.
    pub fn faulted(&self) -> bool {
        self.0.is_some_and(|i| FAULTED[i].load(Ordering::Acquire))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            START[i].store(0, Ordering::Release);
        }
    }
}

/// Whether any watched mapping faulted since the process started.
pub fn any_fault() -> bool {
    ANY_FAULT.load(Ordering::Acquire)
}
