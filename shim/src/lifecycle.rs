//! The shim's life in a process: start-up (when the loader maps the library: read the settings, make
//! the ring, publish it, hand device timing its start), `fork` (the child gets a ring of its own, made
//! without heap allocation) and exit (flush device timing, write the exit entry, close the ring).
//!
//! The top of the shim's layers (see `lib.rs`): the one place that knows every other part — the hook
//! tables and NVTX (whose API names go into each ring), device timing and the hot path's state. Any
//! failure here disables the shim (every hook then passes straight through) and says so once on
//! stderr and in the capture.

use crate::hot::state::{self, disable, strings_size, warn, Config, RESERVED_AT_START};
use crate::hot::{guard, record};
use crate::intercept::registry;
use crate::strings::{names, text};
use crate::{nvtx, timing};
use causeway_ring::settings::{self, env, Settings};
use causeway_ring::writer::{create_file_lazy, reserve_written, FixedBuf};
use causeway_ring::{clock, flags, layout, Kind, Params, StrKind, Writer};

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
    if cfg.ring_id.is(cfg.fd) {
        // A fork child's copy of the parent's ring descriptor: its own ring is made.
        // SAFETY: the descriptor is the parent's ring file (checked), which this child no longer uses.
        unsafe { libc::close(cfg.fd) };
    }
    cfg.fd = f.fd;
    cfg.ring_id = f.id;
    cfg.ring_path = f.path;
    cfg.base = base;
    state::new_ring();
    let p = Params {
        capacity: cfg.capacity,
        strings_size: strings_size(cfg.capacity),
        policy: cfg.policy,
        pid,
        ppid,
        level: state::level() as u32,
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
    for h in registry::all() {
        w.intern(StrKind::Api, h.id as u64, h.info.pack(), h.name.to_bytes());
    }
    for (id, name, info) in nvtx::apis() {
        w.intern(StrKind::Api, id as u64, info.pack(), name.as_bytes());
    }
    cfg.writer = Some(w);
    Ok(())
}

/// What every copy of the shim exports under this name, and nothing else does: the process's global
/// lookup of it finds the copy loaded first (`another_copy_first`). Not a function the shim also
/// offers programs (a program defining its own `causeway_token_begin` would pass for a copy).
#[no_mangle]
#[used]
#[allow(non_upper_case_globals)]
pub static causeway_shim_identity: [u8; 16] = *b"causeway shim v1";

/// The path of another copy of this shim loaded before this one, if there is one: the process's
/// global lookup of `causeway_shim_identity` finds that copy's (two installs; a shim in LD_PRELOAD
/// already when `causeway record` adds its own).
fn another_copy_first() -> Option<Vec<u8>> {
    // The object each address is in, by its load address: an exported function's own address may
    // itself be interposed (taken through the GOT), so this copy is found by a private one.
    let object = |addr: *const libc::c_void| {
        // SAFETY: zeroed bytes are a valid `Dl_info`; dladdr only fills it in.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: `addr` is an address in a loaded object (ours, or one dlsym returned).
        (unsafe { libc::dladdr(addr, &mut info) } != 0).then_some(info)
    };
    let ours = object(another_copy_first as *const libc::c_void)?;
    // SAFETY: a NUL-terminated symbol name; RTLD_DEFAULT searches the global scope in load order.
    let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"causeway_shim_identity".as_ptr()) };
    if found.is_null() {
        return None;
    }
    let info = object(found)?;
    if info.dli_fbase == ours.dli_fbase {
        return None;
    }
    let named = !info.dli_fname.is_null();
    Some(match named {
        // SAFETY: dladdr's file name is a NUL-terminated string owned by the loader.
        true => unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }
            .to_bytes()
            .to_vec(),
        false => b"unknown path".to_vec(),
    })
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
        state::pass_through();
        return;
    }
    if let Some(first) = another_copy_first() {
        // Both copies would record every call (each hook calls the next copy's): one ring of
        // each, every count doubled. The copy loaded first records; this one only passes calls on.
        state::pass_through();
        let mut m = FixedBuf::default();
        m.push(b"another copy of the shim is loaded before this one (")
            .push(&first)
            .push(b"): it records, this one passes calls through");
        return warn(m.as_bytes());
    }
    let (set, warnings) = match Settings::from_env(settings::var) {
        Ok(s) => s,
        Err(e) => return disable(e.as_bytes()),
    };
    // A relative directory would change meaning when the program (or a child) changes directory.
    let given = std::path::Path::new(&set.out);
    let out = match std::env::current_dir() {
        Ok(cwd) if given.is_relative() => {
            let out = cwd.join(given);
            // Children take the same directory, wherever they run (constructors run before the
            // program's threads exist, as for the tick rate below).
            std::env::set_var(env::OUT, &out);
            out
        }
        _ => given.to_path_buf(),
    };
    // Root writing where another user's link leads would write wherever that user chose.
    if let Some(why) = causeway_ring::private::planted_link(&out) {
        return disable(format!("{} ({}): {why}", env::OUT, out.display()).as_bytes());
    }
    let mut dir = FixedBuf::default();
    dir.push(out.as_os_str().as_encoded_bytes());
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
    state::set_level(lvl);
    timing::configure(device, registry::hooked_api);
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
        ring_id: Default::default(),
        ring_path: FixedBuf::default(),
    };
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() } as u32;
    if let Err(m) = open_ring(&mut cfg, ppid, 0) {
        return disable(m.as_bytes());
    }
    // SAFETY: start-up is single-threaded with respect to the shim: nothing reads the config before it
    // is published.
    unsafe { state::publish(cfg) };
    record::instant(Kind::ProcessStart, 0, 0, 0, 0);
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
    timing::announce(device, set.sample_every());
    nvtx::announce();
    // SAFETY: registering a handler with no preconditions.
    unsafe { libc::pthread_atfork(None, None, Some(on_fork_child)) };
}

extern "C" fn on_fork_child() {
    // Only this thread survives the fork; stop recording into the parent's ring at once.
    if !state::stop_for_fork() {
        return;
    }
    guard::reset_thread();
    names::reset();
    text::reset();
    // CUPTI's threads and buffers stay behind in the parent: the child records host calls only.
    let lost = timing::on_fork_child();
    // SAFETY: the child is single-threaded here; see `Cfg`.
    let cfg = unsafe { state::config_mut() };
    let Some(cfg) = cfg else { return };
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() } as u32;
    match open_ring(cfg, ppid, flags::FORKED) {
        Ok(()) => {
            state::reactivate();
            record::instant(Kind::ProcessStart, 0, 0, 0, 0);
            for notice in lost.notices() {
                warn(notice);
            }
        }
        Err(m) => {
            cfg.writer = None;
            disable(m.as_bytes());
        }
    }
}

extern "C" fn on_unload() {
    if let Some(w) = state::writer() {
        // Device records CUPTI still holds go in before the exit entry (usually already done by the
        // backend's own exit handler, which runs before this one; a second call does nothing).
        timing::flush_at_exit();
        record::instant(Kind::ProcessExit, 0, 0, 0, 0);
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
