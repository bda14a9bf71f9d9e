//! Process-wide shim state: the ring in use, the capture level, the device-timing backend, and the
//! set-up and tear-down that run when the library is loaded, when the process forks and when it exits.
//! Any failure here disables the shim (every hook then passes straight through) and says so once on
//! stderr and in the capture.

use crate::{hooks, nvtx};
use causeway_ring::settings::{self, env, Backend, Settings};
use causeway_ring::writer::{create_file_lazy, reserve, reserve_written, FixedBuf};
use causeway_ring::{clock, flags, layout, Kind, Params, Policy, StrKind, Writer};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

const UNINIT: u8 = 0;
const ACTIVE: u8 = 1;
const DISABLED: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static LEVEL: AtomicU8 = AtomicU8::new(2);
static SAID: AtomicBool = AtomicBool::new(false);
/// Level 3: whether device intervals come from CUPTI (started on the first recorded call).
static CUPTI: AtomicBool = AtomicBool::new(false);
/// Whether the process's first recorded call has run its start-up (see `ensure_started`).
static STARTED: AtomicBool = AtomicBool::new(false);

/// Settings kept from start-up so a fork child can make its own ring without allocating.
struct Config {
    writer: Option<Writer>,
    dir: FixedBuf,
    /// The capture directory is the private one `causeway record` made (`CAUSEWAY_PRIVATE_DIR=1`): a
    /// directory swapped for a link or for someone else's is refused.
    private: bool,
    exe: FixedBuf,
    host: FixedBuf,
    capacity: u64,
    policy: Policy,
    clock: layout::ClockKind,
    ticks_per_sec: u64,
    /// The ring file's descriptor and mapping, kept to reserve the entry area on first use.
    fd: i32,
    base: *mut u8,
}

/// Whether the whole entry area is reserved and pre-faulted (see `ensure_reserved`).
static RESERVED: AtomicBool = AtomicBool::new(false);
/// Reserved when the ring is created: the header, this much of the string area (the API names) and
/// this much of the entry area (the lifecycle entries of a process that never records a call).
const RESERVED_AT_START: u64 = 64 << 10;

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
    if CUPTI.load(Ordering::Relaxed) && !STARTED.load(Ordering::Relaxed) {
        start_early_cold();
    }
}

#[cold]
fn start_early_cold() {
    if writer().is_some() && !crate::record::is_internal() {
        first_recorded_call();
    }
}

#[cold]
fn first_recorded_call() {
    ensure_reserved();
    if CUPTI.load(Ordering::Relaxed) {
        crate::cupti::start();
    }
    STARTED.store(true, Ordering::Release);
}

/// The tick rate of the ring's clock (ticks per second), once the shim is active.
pub fn ticks_per_sec() -> Option<u64> {
    writer()?;
    // SAFETY: see `Cfg`; `writer()` returned a ring, so the config is complete.
    unsafe { (*CFG.0.get()).as_ref().map(|c| c.ticks_per_sec) }
}

#[cold]
fn reserve_entries() {
    static LOCK: AtomicBool = AtomicBool::new(false);
    // One thread reserves; others wait (only the first calls of a process can get here).
    while LOCK
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
            // SAFETY: `base` maps the whole file `fd` (see `open_ring`).
            let r = unsafe { reserve(c.fd, c.base, strings_rest.0, strings_rest.1) }
                // SAFETY: as above.
                .and_then(|()| unsafe { reserve(c.fd, c.base, entries_rest.0, entries_rest.1) });
            match r {
                Ok(()) => RESERVED.store(true, Ordering::Release),
                Err(e) => {
                    let mut m = FixedBuf::default();
                    m.push(b"cannot reserve the ring in ")
                        .push(c.dir.as_bytes())
                        .push(b": ");
                    e.describe(&mut m);
                    disable(m.as_bytes());
                    RESERVED.store(true, Ordering::Release);
                }
            }
        }
    }
    LOCK.store(false, Ordering::Release);
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

/// Entries that fit `mb` MiB, rounded down to a power of two (at least 1024).
pub fn capacity_for_mb(mb: u64) -> u64 {
    let entries = (mb.max(1) << 20) / layout::ENTRY_SIZE as u64;
    (1u64 << (63 - entries.leading_zeros())).max(1024)
}

/// Creates a ring for the current process from `cfg` and publishes it. The error is a message built in
/// a fixed buffer because a fork child must not allocate.
#[allow(clippy::result_large_err)]
fn open_ring(cfg: &mut Config, ppid: u32, extra_flags: u32) -> Result<(), FixedBuf> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u32;
    let size = layout::file_size(cfg.capacity, strings_size(cfg.capacity));
    let entries = layout::HEADER_SIZE as u64 + strings_size(cfg.capacity);
    let describe = |e: causeway_ring::writer::CreateError| {
        let mut m = FixedBuf::default();
        m.push(b"cannot create a ring in ")
            .push(cfg.dir.as_bytes())
            .push(b": ");
        e.describe(&mut m);
        m
    };
    let now = layout::HEADER_SIZE as u64 + RESERVED_AT_START;
    let f = create_file_lazy(
        cfg.dir.as_bytes(),
        cfg.private,
        cfg.host.as_bytes(),
        pid,
        size,
        now,
    )
    .map_err(describe)?;
    // SAFETY: `f.base` maps the whole file `f.fd`.
    unsafe { reserve_written(f.fd, f.base, entries, entries + RESERVED_AT_START) }
        .map_err(describe)?;
    let base = f.base;
    cfg.fd = f.fd;
    cfg.base = base;
    RESERVED.store(false, Ordering::Relaxed);
    STARTED.store(false, Ordering::Relaxed);
    let p = Params {
        capacity: cfg.capacity,
        strings_size: strings_size(cfg.capacity),
        policy: cfg.policy,
        pid,
        ppid,
        level: level() as u32,
        clock: cfg.clock,
        ticks_per_sec: cfg.ticks_per_sec,
        anchor: clock::anchor(),
        exe: cfg.exe.as_bytes(),
        host: cfg.host.as_bytes(),
        flags: extra_flags,
    };
    // SAFETY: `create_file_lazy` returned a fresh zero-filled shared mapping of exactly `size` bytes that
    // is never unmapped; the header lies in its reserved prefix.
    let w = unsafe { Writer::init(base, &p) };
    for h in hooks::all() {
        w.intern(StrKind::Api, h.id as u64, h.info.pack(), h.name.to_bytes());
    }
    for (id, name, info) in nvtx::apis() {
        w.intern(StrKind::Api, id as u64, info.pack(), name.as_bytes());
    }
    cfg.writer = Some(w);
    Ok(())
}

/// Whether the process runs under secure execution (setuid or setgid, file capabilities,
/// `AT_SECURE`): the dynamic loader honours only trusted preloads then, and a program started that way
/// by an ordinary user must not write a privileged ring where that user's environment says.
fn secure_execution() -> bool {
    // SAFETY: getauxval has no preconditions.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

/// The largest capacity not above `capacity` whose ring fits under the process's file-size limit and,
/// once reserved, in the free space of `dir`: `(capacity, what limited it)`; capacity 0 when not even
/// the smallest ring fits.
fn fitting_capacity(capacity: u64, dir: &[u8]) -> (u64, Option<(&'static str, u64)>) {
    let limit = causeway_ring::writer::file_size_limit();
    let free = causeway_ring::writer::free_bytes(dir);
    let fits = |c: u64| {
        let size = layout::file_size(c, strings_size(c));
        limit.is_none_or(|l| size <= l) && free.is_none_or(|f| size <= f)
    };
    let mut c = capacity;
    while c >= MIN_CAPACITY && !fits(c) {
        c /= 2;
    }
    let size = layout::file_size(capacity, strings_size(capacity));
    let why = if limit.is_some_and(|l| size > l) {
        limit.map(|l| ("RLIMIT_FSIZE is", l))
    } else if free.is_some_and(|f| size > f) {
        free.map(|f| ("free space on its filesystem is", f))
    } else {
        None
    };
    (if c >= MIN_CAPACITY { c } else { 0 }, why)
}

/// The smallest ring made (`capacity_for_mb` of 1 MiB and less).
const MIN_CAPACITY: u64 = 1024;

extern "C" fn on_load() {
    if secure_execution() {
        // Pass everything through and write nothing; no message either (stderr may belong to a
        // privileged program's caller).
        STATE.store(DISABLED, Ordering::Release);
        return;
    }
    let (set, warnings) = match Settings::from_env(settings::var) {
        Ok(s) => s,
        Err(e) => return disable(e.as_bytes()),
    };
    let mut dir = FixedBuf::default();
    dir.push(set.out.as_encoded_bytes());
    if dir.overflowed() {
        return disable(format!("{} is too long", env::OUT).as_bytes());
    }
    let (lvl, device, policy) = (set.level.number(), set.backend, set.policy);
    let capacity = capacity_for_mb(set.ring_mb);
    // A ring that the file-size limit or the disk cannot hold is made smaller, or not at all: growing a
    // file past RLIMIT_FSIZE kills the program with SIGXFSZ.
    let asked = capacity;
    let (capacity, limited) = fitting_capacity(capacity, dir.as_bytes());
    if capacity == 0 {
        let mut m = FixedBuf::default();
        m.push(b"no ring fits in ").push(dir.as_bytes());
        if let Some((what, n)) = limited {
            m.push(b": ")
                .push(what.as_bytes())
                .push(b" ")
                .push_u64(n)
                .push(b" bytes");
        }
        return disable(m.as_bytes());
    }
    LEVEL.store(lvl, Ordering::Relaxed);
    CUPTI.store(device == Backend::Cupti, Ordering::Relaxed);
    let inherited = settings::var(env::TICKS);
    let (clock_kind, hz) = clock::init_from(
        settings::forces_monotonic(settings::var(env::CLOCK).as_deref()),
        inherited.as_deref(),
    );
    if inherited.is_none() {
        // The children this program starts take the measured rate instead of measuring it again
        // (2 ms each). Constructors run before the program's threads exist.
        std::env::set_var(env::TICKS, clock::describe(clock_kind, hz));
    }
    let mut exe = FixedBuf::default();
    if let Ok(p) = std::fs::read_link("/proc/self/exe") {
        exe.push(p.as_os_str().as_encoded_bytes());
    }
    let mut host = FixedBuf::default();
    let mut hb = [0u8; 64];
    // SAFETY: gethostname writes at most hb.len() bytes into hb.
    if unsafe { libc::gethostname(hb.as_mut_ptr() as *mut libc::c_char, hb.len()) } == 0 {
        let n = hb.iter().position(|&c| c == 0).unwrap_or(hb.len());
        host.push(&hb[..n]);
    }
    let mut cfg = Config {
        writer: None,
        dir,
        private: set.private_dir,
        exe,
        host,
        capacity,
        policy,
        clock: clock_kind,
        ticks_per_sec: hz,
        fd: -1,
        base: std::ptr::null_mut(),
    };
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() } as u32;
    if let Err(m) = open_ring(&mut cfg, ppid, 0) {
        return disable(m.as_bytes());
    }
    // SAFETY: start-up is single-threaded with respect to the shim: nothing reads CFG before ACTIVE.
    unsafe { *CFG.0.get() = Some(cfg) };
    STATE.store(ACTIVE, Ordering::Release);
    crate::record::instant(Kind::ProcessStart, 0, 0, 0, 0);
    if capacity < asked {
        let mut m = FixedBuf::default();
        m.push(b"ring reduced to ")
            .push_u64((capacity * layout::ENTRY_SIZE as u64) >> 10)
            .push(b" KiB of entries (asked for ")
            .push_u64((asked * layout::ENTRY_SIZE as u64) >> 20)
            .push(b" MiB)");
        if let Some((what, n)) = limited {
            m.push(b": ")
                .push(what.as_bytes())
                .push(b" ")
                .push_u64(n)
                .push(b" bytes");
        }
        warn(m.as_bytes());
    }
    // Said once the ring is live, so that they also land in its notice.
    for w in &warnings {
        warn(w.as_bytes());
    }
    if device == Backend::Events {
        crate::events::want(set.sample_every());
    }
    nvtx::announce();
    // SAFETY: registering a handler with no preconditions.
    unsafe { libc::pthread_atfork(None, None, Some(on_fork_child)) };
}

extern "C" fn on_fork_child() {
    // Only this thread survives the fork; stop recording into the parent's ring at once.
    if STATE.swap(UNINIT, Ordering::AcqRel) != ACTIVE {
        return;
    }
    crate::record::reset_thread();
    crate::names::reset();
    crate::text::reset();
    // CUPTI's threads and buffers stay behind in the parent: the child records host calls only.
    let cupti_lost = crate::cupti::on_fork_child();
    let events_lost = crate::events::on_fork_child();
    // SAFETY: the child is single-threaded here; see `Cfg`.
    let cfg = unsafe { (*CFG.0.get()).as_mut() };
    let Some(cfg) = cfg else { return };
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() } as u32;
    match open_ring(cfg, ppid, flags::FORKED) {
        Ok(()) => {
            STATE.store(ACTIVE, Ordering::Release);
            crate::record::instant(Kind::ProcessStart, 0, 0, 0, 0);
            if cupti_lost {
                warn(crate::cupti::FORK_NOTICE);
            }
            if events_lost {
                warn(crate::events::FORK_NOTICE);
            }
        }
        Err(m) => {
            cfg.writer = None;
            disable(m.as_bytes());
        }
    }
}

extern "C" fn on_unload() {
    if let Some(w) = writer() {
        // Device records CUPTI still holds go in before the exit entry (usually already done by the
        // backend's own exit handler, which runs before this one; a second call does nothing).
        crate::cupti::flush_at_exit();
        crate::events::flush_at_exit();
        crate::record::instant(Kind::ProcessExit, 0, 0, 0, 0);
        w.update_anchor();
        w.set_flag(flags::CLOSED);
    }
}

// The loader runs these when the library is mapped and when the process exits normally. Unit tests
// link this crate as an rlib and must not start a capture.
#[cfg(not(test))]
#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

#[cfg(not(test))]
#[used]
#[link_section = ".fini_array"]
static ON_UNLOAD: extern "C" fn() = on_unload;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_a_power_of_two_that_fits() {
        assert_eq!(capacity_for_mb(64), 1 << 20);
        assert_eq!(capacity_for_mb(1), 1 << 14);
        assert_eq!(capacity_for_mb(3), 1 << 15);
        assert!(capacity_for_mb(3) * 64 <= 3 << 20);
    }
}
