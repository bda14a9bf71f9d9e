//! The process-wide state the hot path reads: the ring in use (or none: not yet, disabled, or a fork
//! child between rings), the capture level, and the once-per-process work of the first recorded call
//! (reserving the ring's entry area, starting device timing). Also how the shim stops recording and
//! what it says: `disable` and `warn`, one line on stderr each, no heap allocation.
//!
//! Start-up, fork and exit (`crate::lifecycle`) fill this in; nothing here knows the hook tables, NVTX
//! or the timing backends — device timing's start is handed in as a function at start-up.

use causeway_ring::writer::{reserve, ring_descriptor, FileId, FixedBuf};
use causeway_ring::{flags, layout, Policy, Writer};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

const UNINIT: u8 = 0;
const ACTIVE: u8 = 1;
const DISABLED: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static LEVEL: AtomicU8 = AtomicU8::new(2);
static SAID: AtomicBool = AtomicBool::new(false);
/// Device timing's start when it must run on the process's first hooked call (CUPTI), as a `fn()`;
/// 0: none. Set once at start-up, before the ring goes live.
static DEVICE_START: AtomicUsize = AtomicUsize::new(0);
/// Whether the process's first recorded call has run its start-up (see `ensure_started`).
static STARTED: AtomicBool = AtomicBool::new(false);

/// Settings kept from start-up so a fork child can make its own ring without allocating.
pub(crate) struct Config {
    pub(crate) writer: Option<Writer>,
    pub(crate) dir: FixedBuf,
    /// The capture directory is the private one `causeway record` made (`CAUSEWAY_PRIVATE_DIR=1`): a
    /// directory swapped for a link or for someone else's is refused.
    pub(crate) private: bool,
    pub(crate) exe: FixedBuf,
    pub(crate) host: FixedBuf,
    pub(crate) capacity: u64,
    pub(crate) policy: Policy,
    pub(crate) clock: layout::ClockKind,
    pub(crate) ticks_per_sec: u64,
    /// The ring file's descriptor and mapping, kept to reserve the entry area on first use, and the
    /// file's identity and path: the program may have closed the descriptor and reused its number
    /// by then (`ring_descriptor`).
    pub(crate) fd: i32,
    pub(crate) base: *mut u8,
    pub(crate) ring_id: FileId,
    pub(crate) ring_path: FixedBuf,
}

/// Whether the whole entry area is reserved and pre-faulted (see `ensure_reserved`).
static RESERVED: AtomicBool = AtomicBool::new(false);
/// Held by the one thread reserving it (`reserve_entries`); a fork child starts with it free.
static RESERVING: AtomicBool = AtomicBool::new(false);
/// Reserved when the ring is created: the header, this much of the string area (the API names) and
/// this much of the entry area (the lifecycle entries of a process that never records a call).
pub(crate) const RESERVED_AT_START: u64 = 64 << 10;

struct Cfg(UnsafeCell<Option<Config>>);
// SAFETY: written only during start-up (before STATE becomes ACTIVE, with Release) and in a fork child
// (single-threaded); read only after an Acquire load of STATE sees ACTIVE.
unsafe impl Sync for Cfg {}
static CFG: Cfg = Cfg(UnsafeCell::new(None));

/// String area: a quarter of the entry area, between 256 KiB and 4 MiB (kernel names and NVTX texts are
/// interned once each, so this rarely fills; a full area is counted).
pub fn strings_size(capacity: u64) -> u64 {
    (capacity * layout::ENTRY_SIZE as u64 / 4).clamp(256 << 10, 4 << 20)
}

#[inline(always)]
pub fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
}

/// The active ring, or `None` while the shim is not (yet, or any longer) recording.
#[inline(always)]
pub fn writer() -> Option<Writer> {
    if STATE.load(Ordering::Acquire) != ACTIVE {
        return None;
    }
    // SAFETY: see `Cfg`; ACTIVE is only published after the config is complete.
    unsafe { (*CFG.0.get()).as_ref().and_then(|c| c.writer) }
}

/// Makes sure the whole entry area is reserved on disk and pre-faulted before the first recorded call or
/// NVTX range writes to it. Done once per process, on first use, so that a process that never records
/// anything (a shell, a compiler a framework runs) costs neither the memory nor the disk of a full ring.
#[inline(always)]
pub fn ensure_reserved() {
    if !RESERVED.load(Ordering::Relaxed) {
        reserve_entries();
    }
}

/// Runs, once per process (and once per fork child), what the first recorded call needs: the ring's
/// entry area reserved and, at level 3 with CUPTI, the backend started. One relaxed load afterwards.
/// NVTX ranges only reserve (`ensure_reserved`): CUPTI starts with the first CUDA call, when CUDA is
/// loaded.
#[inline(always)]
pub fn ensure_started() {
    if !STARTED.load(Ordering::Relaxed) {
        first_recorded_call();
    }
}

/// Device timing must run before the first call that issues device work. Under a statically linked
/// cudart the first hooked calls are driver calls of a higher level than the capture's (`cuMemAlloc`
/// inside `cudaMalloc`), so at level 3 any hooked call starts it, recorded or not. One relaxed load
/// otherwise.
#[inline(always)]
pub fn start_device_timing_early() {
    if DEVICE_START.load(Ordering::Relaxed) != 0 && !STARTED.load(Ordering::Relaxed) {
        start_early_cold();
    }
}

#[cold]
fn start_early_cold() {
    if writer().is_some() && !super::guard::is_internal() {
        first_recorded_call();
    }
}

// Kept out of line (as when it called the CUPTI backend directly): it runs once per process and
// would only lengthen every hook.
#[cold]
#[inline(never)]
fn first_recorded_call() {
    ensure_reserved();
    let start = DEVICE_START.load(Ordering::Relaxed);
    if start != 0 {
        // SAFETY: DEVICE_START only ever holds a `fn()` (`start_device_timing_with`).
        let start = unsafe { std::mem::transmute::<usize, fn()>(start) };
        start();
    }
    STARTED.store(true, Ordering::Release);
}

/// At start-up, before the ring goes live: device timing starts with `start` on the process's first
/// hooked call (of any level; see `start_device_timing_early`).
pub(crate) fn start_device_timing_with(start: fn()) {
    DEVICE_START.store(start as usize, Ordering::Relaxed);
}

/// Sets the capture level (start-up, before the ring goes live).
pub(crate) fn set_level(level: u8) {
    LEVEL.store(level, Ordering::Relaxed);
}

/// Publishes the ring `cfg` holds: from here on the hooks record into it.
///
/// # Safety
/// Only at start-up, before anything else reads the config: nothing reads `CFG` before `ACTIVE`.
pub(crate) unsafe fn publish(cfg: Config) {
    // SAFETY: the caller's contract; the Release store below publishes the write.
    unsafe { *CFG.0.get() = Some(cfg) };
    STATE.store(ACTIVE, Ordering::Release);
}

/// Records again into the ring just made for this process (a fork child's).
pub(crate) fn reactivate() {
    STATE.store(ACTIVE, Ordering::Release);
}

/// Passes every call through and writes nothing, without a word (secure execution).
pub(crate) fn pass_through() {
    STATE.store(DISABLED, Ordering::Release);
}

/// In a fork child: stops recording into the parent's ring at once. Returns whether the parent was
/// recording.
pub(crate) fn stop_for_fork() -> bool {
    STATE.swap(UNINIT, Ordering::AcqRel) == ACTIVE
}

/// The start-up config, to make a fork child's ring from.
///
/// # Safety
/// Only in a fork child, single-threaded, after `stop_for_fork`: nothing else reads it then.
pub(crate) unsafe fn config_mut() -> Option<&'static mut Config> {
    // SAFETY: the caller's contract; see `Cfg`.
    unsafe { (*CFG.0.get()).as_mut() }
}

/// A new ring was made for this process: its entry area is reserved, and device timing started, on
/// its first recorded call again.
pub(crate) fn new_ring() {
    RESERVED.store(false, Ordering::Relaxed);
    STARTED.store(false, Ordering::Relaxed);
    // A fork while another thread of the parent reserved copies the lock held, with no thread left
    // in the child to free it.
    RESERVING.store(false, Ordering::Relaxed);
}

/// The tick rate of the ring's clock (ticks per second), once the shim is active.
pub fn ticks_per_sec() -> Option<u64> {
    writer()?;
    // SAFETY: see `Cfg`; `writer()` returned a ring, so the config is complete.
    unsafe { (*CFG.0.get()).as_ref().map(|c| c.ticks_per_sec) }
}

/// Ring clock ticks as nanoseconds (for pacing and brackets, not for entries: those keep ticks).
pub fn ticks_to_ns(t: u64) -> u64 {
    match ticks_per_sec() {
        Some(tps) if tps != 1_000_000_000 => {
            ((t as u128) * 1_000_000_000 / tps.max(1) as u128) as u64
        }
        _ => t,
    }
}

#[cold]
fn reserve_entries() {
    // One thread reserves; others wait (only the first calls of a process can get here).
    while RESERVING
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    if !RESERVED.load(Ordering::Acquire) {
        // SAFETY: see `Cfg`; `writer()` returned a ring, so the config is complete.
        let cfg = unsafe { (*CFG.0.get()).as_ref() };
        if let Some(c) = cfg.filter(|_| writer().is_some()) {
            let size = layout::file_size(c.capacity, strings_size(c.capacity));
            let entries = layout::HEADER_SIZE as u64 + strings_size(c.capacity);
            let strings_rest = (layout::HEADER_SIZE as u64 + RESERVED_AT_START, entries);
            let entries_rest = (entries + RESERVED_AT_START, size);
            let mut path = FixedBuf::default();
            path.push(c.ring_path.as_bytes());
            // Never the descriptor's number alone: by now it may be one of the program's own files,
            // which `fallocate` would grow. (The program closing and reusing it again between this
            // check and the reservation is a race with itself that no descriptor rules out.)
            let r = match ring_descriptor(c.fd, c.ring_id, &mut path) {
                Some((fd, opened)) => {
                    // SAFETY: `base` maps the whole ring file, which `fd` refers to (checked).
                    let r = unsafe { reserve(fd, c.base, strings_rest.0, strings_rest.1) }
                        // SAFETY: as above.
                        .and_then(|()| unsafe {
                            reserve(fd, c.base, entries_rest.0, entries_rest.1)
                        });
                    if opened {
                        // SAFETY: closing the descriptor `ring_descriptor` opened for us.
                        unsafe { libc::close(fd) };
                    }
                    r.map_err(Some)
                }
                None => Err(None),
            };
            if let Err(e) = r {
                let mut m = FixedBuf::default();
                m.push(b"cannot reserve the ring ")
                    .push(c.ring_path.as_bytes())
                    .push(b": ");
                match e {
                    Some(e) => e.describe(&mut m),
                    None => {
                        m.push(b"the program closed its descriptor and the file cannot be opened again");
                    }
                }
                disable(m.as_bytes());
            }
            RESERVED.store(true, Ordering::Release);
        }
    }
    RESERVING.store(false, Ordering::Release);
}

/// Stops recording for good and says why, once, on stderr and in the capture.
pub fn disable(why: &[u8]) {
    let w = writer();
    STATE.store(DISABLED, Ordering::Release);
    if let Some(w) = w {
        w.set_flag(flags::DISABLED);
        w.notice(why);
    }
    if !SAID.swap(true, Ordering::Relaxed) {
        let mut msg = FixedBuf::default();
        msg.push(b"causeway: ")
            .push(why)
            .push(b"; passing calls through unrecorded\n");
        let b = msg.as_bytes();
        // SAFETY: writing a valid buffer to stderr.
        unsafe { libc::write(2, b.as_ptr() as *const libc::c_void, b.len()) };
    }
}

/// Says something the user should know about the capture, without stopping it: one stderr line and
/// the ring's notice (the first notice of a ring is kept). No heap allocation.
pub fn warn(what: &[u8]) {
    let mut msg = FixedBuf::default();
    msg.push(b"causeway: ").push(what).push(b"\n");
    let b = msg.as_bytes();
    // SAFETY: writing a valid buffer to stderr.
    unsafe { libc::write(2, b.as_ptr() as *const libc::c_void, b.len()) };
    if let Some(w) = writer() {
        w.notice(what);
    }
}
