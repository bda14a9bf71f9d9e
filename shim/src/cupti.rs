//! The CUPTI device-timing backend (capture level 3): when each kernel, copy and memset ran on the
//! device, tied to the call that issued it by identity, never by time.
//!
//! **Start.** CUPTI is loaded at run time (`libloading`), never linked, and started lazily on the
//! process's first recorded call (`state::ensure_started`), under `guard::internal` so that nothing
//! it does is recorded — not in the constructor, where CUDA may not be loaded yet. Where from:
//! `CAUSEWAY_CUPTI` if set; else next to the loaded `libcudart` (pip: `nvidia/cu13/lib/`; toolkit:
//! `lib64/../extras/CUPTI/lib64/`), `/usr/local/cuda/lib64`, `/usr/local/cuda/extras/CUPTI/lib64`,
//! then `libcupti.so.13` and `libcupti.so` through the loader's search. In order:
//!
//! 1. `cuptiSubscribe` claims CUPTI (its callback: see **Static cudart** below). When another tool
//!    holds it (torch.profiler, Nsight: `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`), or CUPTI
//!    cannot be loaded, the capture degrades to host calls only and says so (stderr and the ring's
//!    notice).
//! 2. `cuptiActivityRegisterTimestampCallback` before any kind is enabled, so that CUPTI's times are
//!    on the ring's clock and the intervals carry `HOST_CLOCK`. CUPTI wants nanoseconds, so the
//!    callback returns the ring's ticks scaled to nanoseconds (`Scale`; the identity when the ring's
//!    clock is CLOCK_MONOTONIC) and the intervals are scaled back to ticks. If CUPTI refuses it, the
//!    intervals keep CUPTI's default clock (CLOCK_REALTIME ns) without `HOST_CLOCK`: the scanner cannot
//!    put them on the ring's clock and reports them unconverted; the notice says so.
//! 3. `cuptiActivityRegisterCallbacks` (8 MiB buffers), then `cuptiActivityEnable` for
//!    `CONCURRENT_KERNEL` (never `KERNEL`, which serialises kernels), `MEMCPY`, `MEMSET`,
//!    `EXTERNAL_CORRELATION`, and `RUNTIME` + `DRIVER`: CUPTI writes an external-correlation record
//!    only in front of an API activity record, so without the API kinds no call could be tied to its
//!    work (their records are skipped here). `MEMCPY2` (peer copies) when CUPTI has it.
//!
//! **Association.** The outermost (depth 0) recorded launch, copy, memset or graph launch pushes its
//! own ring sequence number as external correlation id `CUSTOM0` around its real call (`push`/`pop`,
//! called from `hook_table!`). CUPTI then writes (correlation id → our sequence number) records, and
//! every kernel/copy/memset record carries the correlation id of the API call that issued it. Records
//! of one correlation may come in different buffers and in either order: a device record whose
//! correlation is not known yet waits (`Collector`) and is resolved by a later buffer or, at the final
//! flush, written with `a0 = NO_CALL`.
//!
//! **Callback correlation** (`CAUSEWAY_CUPTI_CORRELATION=callback`, `correlate.rs`): no
//! `EXTERNAL_CORRELATION`, `RUNTIME` or `DRIVER` activity kinds — the records CUPTI writes for every API
//! call. Instead the subscriber's callback is enabled for the runtime ids below and the whole driver
//! domain; at `API_ENTER` inside a hooked call, it notes (CUPTI's correlation id → the hook's sequence
//! number) in a lock-free queue the buffer thread drains. A runtime call and the driver call inside it
//! both map to the outer call, so a record carrying either id is tied. If the runtime callbacks cannot
//! be enabled, the backend falls back to external correlation and says so.
//!
//! **Static cudart.** A cudart linked statically (nvcc's default) exports nothing the shim can hook:
//! the first recorded call would be the driver call inside the runtime call, after CUPTI opened the
//! runtime call's API record, whose correlation id the device work carries. So the subscriber's
//! callback is enabled (`cuptiEnableCallback`) on the runtime domain for the correlating entry points
//! our runtime table knows (`RUNTIME_CBIDS`). At `API_ENTER`, when the thread has no recorded call open
//! (depth 0: with a shared cudart the shim's own hook is open and has pushed already), it begins an
//! entry for the runtime function (flag `VIA_CUPTI_CALLBACK`, a0–a2 = 0) and pushes its sequence
//! number; at `API_EXIT` (the same CUPTI correlation id) it finishes the entry with the call's result
//! and pops. The entry waits in a per-thread slot (no allocation). If CUPTI will not enable the
//! callback, the capture goes on without it and says so: static-cudart work is then left unassociated.
//!
//! **End.** `cuptiActivityFlushAll(FORCED)` runs from an `atexit` handler registered when CUPTI starts
//! (so it runs before the loader finalises libcupti) and again, as a no-op, from the shim's exit path
//! before `ProcessExit` is written. Errors are ignored: CUDA may already be torn down. Records still in
//! CUPTI when a process is killed are lost. A `fork` child gets no CUPTI (its threads and buffers stay
//! in the parent): the backend is off there, with a notice.

use crate::hooks::{self, Hook};
use crate::hot::{guard, record, state};
use crate::strings::text;
use crate::{correlate, resolve};
use causeway_ring::layout::{counter, entry_flags, Backend, DeviceKind, Kind, Layer, NO_CALL};
use causeway_ring::settings::{env, Choice, Correlation};
use causeway_ring::{clock, Fields, Writer};
use std::alloc::Layout;
use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_char, c_void, CStr, OsStr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

// ---- CUPTI's constants (CUDA 13.0: cupti_result.h, cupti_activity.h) ----

const SUCCESS: i32 = 0;
const KIND_MEMCPY: u32 = 1;
const KIND_MEMSET: u32 = 2;
const KIND_KERNEL: u32 = 3;
const KIND_DRIVER: u32 = 4;
const KIND_RUNTIME: u32 = 5;
const KIND_CONCURRENT_KERNEL: u32 = 10;
const KIND_MEMCPY2: u32 = 22;
const KIND_EXTERNAL_CORRELATION: u32 = 39;
/// The activity kinds' names, for messages.
fn kind_name(kind: u32) -> &'static str {
    match kind {
        KIND_MEMCPY => "MEMCPY",
        KIND_MEMSET => "MEMSET",
        KIND_KERNEL => "KERNEL",
        KIND_DRIVER => "DRIVER",
        KIND_RUNTIME => "RUNTIME",
        KIND_CONCURRENT_KERNEL => "CONCURRENT_KERNEL",
        KIND_MEMCPY2 => "MEMCPY2",
        KIND_EXTERNAL_CORRELATION => "EXTERNAL_CORRELATION",
        _ => "?",
    }
}
/// `CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0`: ours (torch uses its own kinds).
const EXTERNAL_KIND: u32 = 3;
const FLUSH_FORCED: u32 = 1;

/// Byte offsets of the fields read from CUPTI 13.0's activity records, from `cupti_activity.h`
/// (x86-64 / LP64, `PACKED_ALIGNMENT` = packed, 8-aligned). Each was checked with `offsetof` in a C
/// program compiled against the real header (CUDA 13.0.85); `SIZE` is `sizeof`. Change them only
/// together with that check.
mod off {
    /// `CUpti_ActivityKernel10` (kinds `KERNEL` and `CONCURRENT_KERNEL`).
    pub mod kernel {
        pub const START: usize = 16; // uint64_t start
        pub const END: usize = 24; // uint64_t end
        pub const DEVICE: usize = 40; // uint32_t deviceId
        pub const STREAM: usize = 48; // uint32_t streamId
        pub const CORRELATION: usize = 92; // uint32_t correlationId
        pub const NAME: usize = 104; // const char *name
        pub const SIZE: usize = 216;
    }
    /// `CUpti_ActivityMemcpy6` (kind `MEMCPY`).
    pub mod memcpy {
        pub const COPY_KIND: usize = 4; // uint8_t copyKind (CUpti_ActivityMemcpyKind)
        pub const BYTES: usize = 8; // uint64_t bytes
        pub const START: usize = 16;
        pub const END: usize = 24;
        pub const DEVICE: usize = 32;
        pub const STREAM: usize = 40;
        pub const CORRELATION: usize = 44;
        pub const SIZE: usize = 96;
    }
    /// `CUpti_ActivityMemcpyPtoP4` (kind `MEMCPY2`, peer-to-peer copies).
    pub mod p2p {
        pub const COPY_KIND: usize = 4;
        pub const BYTES: usize = 8;
        pub const START: usize = 16;
        pub const END: usize = 24;
        pub const DEVICE: usize = 32;
        pub const STREAM: usize = 40;
        pub const CORRELATION: usize = 60;
        pub const SIZE: usize = 96;
    }
    /// `CUpti_ActivityMemset4` (kind `MEMSET`).
    pub mod memset {
        pub const BYTES: usize = 8;
        pub const START: usize = 16;
        pub const END: usize = 24;
        pub const DEVICE: usize = 32;
        pub const STREAM: usize = 40;
        pub const CORRELATION: usize = 44;
        pub const SIZE: usize = 88;
    }
    /// `CUpti_ActivityExternalCorrelation` (kind `EXTERNAL_CORRELATION`).
    pub mod external {
        pub const EXTERNAL_KIND: usize = 4; // CUpti_ExternalCorrelationKind externalKind
        pub const EXTERNAL_ID: usize = 8; // uint64_t externalId
        pub const CORRELATION: usize = 16; // uint32_t correlationId
        pub const SIZE: usize = 24;
    }
}

// Every field read lies inside its struct, and `parse` is given enough bytes for the largest one.
const _: () = {
    assert!(off::kernel::NAME + 8 <= off::kernel::SIZE);
    assert!(off::memcpy::CORRELATION + 4 <= off::memcpy::SIZE);
    assert!(off::p2p::CORRELATION + 4 <= off::p2p::SIZE);
    assert!(off::memset::CORRELATION + 4 <= off::memset::SIZE);
    assert!(off::external::CORRELATION + 4 <= off::external::SIZE);
    assert!(off::kernel::SIZE >= off::memcpy::SIZE && off::kernel::SIZE >= off::p2p::SIZE);
    assert!(off::kernel::SIZE >= off::memset::SIZE && off::kernel::SIZE >= off::external::SIZE);
};
/// The most bytes of one record `parse` is handed.
const MAX_RECORD: usize = off::kernel::SIZE;

/// Activity buffers handed to CUPTI (CUPTI suggests 1–10 MB).
const BUFFER_SIZE: usize = 8 << 20;
const BUFFER_ALIGN: usize = 8;
/// Correlations kept: those within this many correlation ids of the newest one seen. A kernel's
/// record comes long before a million later calls; older entries are pruned.
const CORRELATION_WINDOW: u32 = 1 << 20;
/// Device records waiting for their correlation; past this the oldest are written with `NO_CALL`.
const PENDING_MAX: usize = 1 << 16;

/// What a child of `fork` says in its ring when its parent had started CUPTI.
pub const FORK_NOTICE: &[u8] =
    b"CUPTI does not survive fork: this child records host calls only (no device intervals)";

// ---- the library ----

type Subscribe = unsafe extern "C" fn(*mut *mut c_void, Option<CallbackFn>, *mut c_void) -> i32;
type CallbackFn = unsafe extern "C" fn(*mut c_void, u32, u32, *const c_void);
type RequestFn = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
type CompleteFn = unsafe extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);
type TimestampFn = unsafe extern "C" fn() -> u64;

/// The CUPTI entry points the backend calls (signatures from `cupti_activity.h`,
/// `cupti_callbacks.h`, `cupti_result.h`; enums are 32-bit).
struct Api {
    subscribe: Subscribe,
    unsubscribe: unsafe extern "C" fn(*mut c_void) -> i32,
    register_timestamp: unsafe extern "C" fn(TimestampFn) -> i32,
    register_callbacks: unsafe extern "C" fn(RequestFn, CompleteFn) -> i32,
    enable: unsafe extern "C" fn(u32) -> i32,
    disable: unsafe extern "C" fn(u32) -> i32,
    next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> i32,
    dropped: unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> i32,
    flush_all: unsafe extern "C" fn(u32) -> i32,
    push: unsafe extern "C" fn(u32, u64) -> i32,
    pop: unsafe extern "C" fn(u32, *mut u64) -> i32,
    result_string: Option<unsafe extern "C" fn(i32, *mut *const c_char) -> i32>,
    /// `cuptiEnableCallback(enable, subscriber, domain, cbid)`.
    enable_callback: Option<unsafe extern "C" fn(u32, *mut c_void, u32, u32) -> i32>,
    /// `cuptiEnableDomain(enable, subscriber, domain)`.
    enable_domain: Option<unsafe extern "C" fn(u32, *mut c_void, u32) -> i32>,
}

impl Api {
    /// `CUPTI_ERROR_… (n)` for a result code.
    fn describe(&self, r: i32) -> String {
        let mut s: *const c_char = std::ptr::null();
        if let Some(f) = self.result_string {
            // SAFETY: cuptiGetResultString writes a static string's address into `s`.
            if unsafe { f(r, &mut s) } == SUCCESS && !s.is_null() {
                // SAFETY: a NUL-terminated string CUPTI keeps for the life of the process.
                let name = unsafe { CStr::from_ptr(s) }.to_string_lossy();
                return format!("{name} ({r})");
            }
        }
        format!("error {r}")
    }
}

static API: OnceLock<Api> = OnceLock::new();

/// The places to look for CUPTI, in order: `CAUSEWAY_CUPTI` alone if set; else next to each loaded
/// libcudart (the pip wheels put both in `nvidia/cu13/lib`; the toolkit keeps CUPTI in
/// `extras/CUPTI/lib64` beside `lib64`), the toolkit's usual places, then bare names for `ld.so`.
fn candidates(explicit: Option<&OsStr>, cudart: &[PathBuf]) -> Vec<PathBuf> {
    if let Some(p) = explicit.filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(p)];
    }
    let mut v: Vec<PathBuf> = Vec::new();
    let mut add = |p: PathBuf| {
        if !v.contains(&p) {
            v.push(p);
        }
    };
    for lib in cudart {
        if let Some(dir) = lib.parent().filter(|d| !d.as_os_str().is_empty()) {
            add(dir.join("libcupti.so.13"));
            add(dir.join("../extras/CUPTI/lib64/libcupti.so.13"));
        }
    }
    add("/usr/local/cuda/lib64/libcupti.so.13".into());
    add("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13".into());
    add("libcupti.so.13".into());
    add("libcupti.so".into());
    v
}

/// Loads CUPTI from the first candidate that opens and has every entry point we call.
fn load() -> Result<Api, String> {
    let explicit = std::env::var_os(env::CUPTI);
    let cudart = resolve::loaded(Layer::Runtime);
    // The first failure other than "no such file" says most (a wrong ELF class, a missing
    // dependency); when every place came up empty, say where we looked.
    let mut why: Option<String> = None;
    for path in candidates(explicit.as_deref(), &cudart) {
        // Paths that name no file are skipped quietly; bare names go to the loader's search.
        if path.is_absolute() && explicit.is_none() && !path.exists() {
            continue;
        }
        // SAFETY: loading CUPTI runs its initialisers, which have no preconditions on us.
        match unsafe { libloading::Library::new(&path) } {
            Ok(lib) => {
                let api = symbols(&lib).map_err(|e| format!("{}: {e}", path.display()));
                // Never unloaded: CUPTI's threads and callbacks live as long as the process.
                std::mem::forget(lib);
                return api;
            }
            Err(e) => {
                let e = e.to_string();
                if explicit.is_some() || (why.is_none() && !e.contains("No such file")) {
                    why = Some(e);
                }
            }
        }
    }
    Err(why.unwrap_or_else(|| {
        format!(
            "no libcupti.so.13 next to libcudart, in /usr/local/cuda or on the library path; set {}",
            env::CUPTI
        )
    }))
}

fn symbols(lib: &libloading::Library) -> Result<Api, libloading::Error> {
    // SAFETY (every `get`): each name is a CUPTI 13 entry point and the type is its C signature.
    unsafe {
        Ok(Api {
            subscribe: *lib.get(b"cuptiSubscribe\0")?,
            unsubscribe: *lib.get(b"cuptiUnsubscribe\0")?,
            register_timestamp: *lib.get(b"cuptiActivityRegisterTimestampCallback\0")?,
            register_callbacks: *lib.get(b"cuptiActivityRegisterCallbacks\0")?,
            enable: *lib.get(b"cuptiActivityEnable\0")?,
            disable: *lib.get(b"cuptiActivityDisable\0")?,
            next_record: *lib.get(b"cuptiActivityGetNextRecord\0")?,
            dropped: *lib.get(b"cuptiActivityGetNumDroppedRecords\0")?,
            flush_all: *lib.get(b"cuptiActivityFlushAll\0")?,
            push: *lib.get(b"cuptiActivityPushExternalCorrelationId\0")?,
            pop: *lib.get(b"cuptiActivityPopExternalCorrelationId\0")?,
            result_string: lib.get(b"cuptiGetResultString\0").ok().map(|s| *s),
            enable_callback: lib.get(b"cuptiEnableCallback\0").ok().map(|s| *s),
            enable_domain: lib.get(b"cuptiEnableDomain\0").ok().map(|s| *s),
        })
    }
}

// ---- start, hot path, exit, fork ----

const UNINIT: u8 = 0;
const STARTING: u8 = 1;
const ON: u8 = 2;
const OFF: u8 = 3;
static STATE: AtomicU8 = AtomicU8::new(UNINIT);
/// The hot path's flag: CUPTI is collecting and correlated hooks push their sequence numbers.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Calls are tied to CUPTI's records through callbacks (`correlate.rs`), not external correlation.
static BY_CALLBACK: AtomicBool = AtomicBool::new(false);
/// The process that started CUPTI (a fork child must not touch the parent's CUPTI state).
static PID: AtomicU32 = AtomicU32::new(0);
static FLUSHED: AtomicBool = AtomicBool::new(false);
static SCALE: OnceLock<Scale> = OnceLock::new();
static COLLECTOR: Mutex<Option<Collector>> = Mutex::new(None);

/// Whether calls of `class` bracket their real call with their sequence number (const per hook).
pub const fn correlates(class: causeway_ring::layout::Class) -> bool {
    use causeway_ring::layout::Class;
    matches!(
        class,
        Class::Launch | Class::Copy | Class::Memset | Class::GraphLaunch
    )
}

/// Before a correlated hook's real call: pushes the call's sequence number if CUPTI is collecting and
/// the call is the outermost recorded one. Returns whether it pushed (then `pop` after the call).
#[inline(always)]
pub fn push(open: &record::Open) -> bool {
    if !ACTIVE.load(Ordering::Relaxed) {
        return false;
    }
    push_seq(open.depth(), open.seq())
}

#[inline(never)]
fn push_seq(depth: u16, seq: Option<u64>) -> bool {
    let (0, Some(seq)) = (depth, seq) else {
        return false;
    };
    if BY_CALLBACK.load(Ordering::Relaxed) {
        correlate::enter(seq);
        return true;
    }
    let Some(api) = API.get() else { return false };
    // SAFETY: CUPTI's push with a valid kind; it only records the id for this thread.
    unsafe { (api.push)(EXTERNAL_KIND, seq) == SUCCESS }
}

/// After the real call of a hook whose `push` returned true.
#[inline(never)]
pub fn pop() {
    if BY_CALLBACK.load(Ordering::Relaxed) {
        correlate::leave();
    } else if let Some(api) = API.get() {
        let mut last = 0u64;
        // SAFETY: CUPTI's pop with a valid kind and out-pointer; it balances our push on this thread.
        unsafe { (api.pop)(EXTERNAL_KIND, &mut last) };
    }
}

/// Starts the backend (level 3, first recorded call). Once per process; a thread that comes while
/// another is starting it waits for it (briefly) so that its calls are tied too.
#[cold]
pub fn start() {
    match STATE.compare_exchange(UNINIT, STARTING, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {}
        Err(STARTING) => {
            let t0 = clock::clock_ns(libc::CLOCK_MONOTONIC);
            while STATE.load(Ordering::Acquire) == STARTING
                && clock::clock_ns(libc::CLOCK_MONOTONIC) < t0 + 1_000_000_000
            {
                std::thread::yield_now();
            }
            return;
        }
        Err(_) => return,
    }
    let on = guard::internal(init);
    // A fork during start-up has already turned the backend off in the child; keep that.
    let _ = STATE.compare_exchange(
        STARTING,
        if on { ON } else { OFF },
        Ordering::AcqRel,
        Ordering::Relaxed,
    );
}

fn unavailable(why: &str) {
    state::warn(format!("CUPTI unavailable ({why}); recording host calls only").as_bytes());
}

fn init() -> bool {
    let Some(w) = state::writer() else {
        return false;
    };
    let loaded = match load() {
        Ok(api) => api,
        Err(why) => {
            unavailable(&why);
            return false;
        }
    };
    let api = API.get_or_init(|| loaded);
    let mut subscriber: *mut c_void = std::ptr::null_mut();
    // SAFETY: a valid out-pointer, a callback with CUPTI's signature, no user data.
    let r = unsafe { (api.subscribe)(&mut subscriber, Some(api_callback), std::ptr::null_mut()) };
    if r != SUCCESS {
        unavailable(&format!(
            "cuptiSubscribe: {}; another profiler may hold it",
            api.describe(r)
        ));
        return false;
    }
    let give_up = |why: String, enabled: &[u32]| {
        for &k in enabled {
            // SAFETY: disabling a kind we enabled.
            unsafe { (api.disable)(k) };
        }
        // SAFETY: the handle cuptiSubscribe gave us.
        unsafe { (api.unsubscribe)(subscriber) };
        unavailable(&why);
        false
    };

    let hz = state::ticks_per_sec().unwrap_or(1_000_000_000);
    let scale = *SCALE.get_or_init(|| match clock::kind() {
        causeway_ring::ClockKind::Monotonic => Scale::IDENTITY,
        causeway_ring::ClockKind::Tsc => {
            let a = clock::anchor();
            Scale::new(a.ticks, a.mono_ns, hz)
        }
    });
    let mut caveats: Vec<String> = Vec::new();
    // SAFETY: registering a function with CUPTI's timestamp-callback signature, before any kind.
    let r = if diag("no-timestamp") {
        -1
    } else {
        unsafe { (api.register_timestamp)(timestamp) }
    };
    let host_clock = r == SUCCESS;
    if !host_clock {
        caveats.push(format!(
            "timestamp callback refused ({}): device times are CUPTI's clock, not converted",
            api.describe(r)
        ));
    }
    // SAFETY: getpid has no preconditions.
    PID.store(unsafe { libc::getpid() } as u32, Ordering::Relaxed);
    *lock() = Some(Collector::new(host_clock.then_some(scale)));

    // SAFETY: two functions with CUPTI's buffer-callback signatures.
    let r = unsafe { (api.register_callbacks)(buffer_requested, buffer_completed) };
    if r != SUCCESS {
        return give_up(
            format!("cuptiActivityRegisterCallbacks: {}", api.describe(r)),
            &[],
        );
    }
    let by_callback = match std::env::var(env::CUPTI_CORRELATION) {
        Err(_) => false,
        Ok(v) => match Correlation::from_name(&v) {
            Ok(c) => c == Correlation::Callback,
            Err(e) => {
                caveats.push(format!("{}={e}; using external", env::CUPTI_CORRELATION));
                false
            }
        },
    };
    let mut enabled = Vec::new();
    for kind in [KIND_CONCURRENT_KERNEL, KIND_MEMCPY, KIND_MEMSET] {
        // SAFETY: enabling an activity kind CUPTI defines.
        let r = unsafe { (api.enable)(kind) };
        if r != SUCCESS {
            return give_up(
                format!(
                    "cuptiActivityEnable({}): {}",
                    kind_name(kind),
                    api.describe(r)
                ),
                &enabled,
            );
        }
        enabled.push(kind);
    }
    // Peer copies, when this CUPTI has them; their absence costs nothing else.
    // SAFETY: as above.
    unsafe { (api.enable)(KIND_MEMCPY2) };
    let runtime_cb = if by_callback && diag("no-runtime-cb") {
        None
    } else {
        enable_runtime_callbacks(api, subscriber)
    };
    if by_callback && runtime_cb.is_none() {
        // The runtime callbacks tie runtime calls; the driver domain ties calls made straight to the
        // driver (Triton, static cudart's driver calls are inside runtime calls).
        if let Some(why) = enable_driver_callbacks(api, subscriber) {
            caveats.push(format!(
                "driver callbacks not enabled ({why}): work launched through the driver API directly \
                 will not be tied to calls"
            ));
        }
        BY_CALLBACK.store(true, Ordering::Relaxed);
    } else {
        if let Some(why) = &runtime_cb {
            caveats.push(format!(
                "runtime callback not enabled ({why}): work issued through a statically linked \
                 cudart will not be tied to calls{}",
                if by_callback {
                    "; correlating through external correlation instead"
                } else {
                    ""
                }
            ));
        }
        // SAFETY: as above.
        let r = unsafe { (api.enable)(KIND_EXTERNAL_CORRELATION) };
        if r != SUCCESS {
            return give_up(
                format!(
                    "cuptiActivityEnable({}): {}",
                    kind_name(KIND_EXTERNAL_CORRELATION),
                    api.describe(r)
                ),
                &enabled,
            );
        }
        // The API kinds make CUPTI write the external-correlation records; either one suffices for
        // the calls of its layer.
        for kind in [KIND_RUNTIME, KIND_DRIVER] {
            // SAFETY: as above.
            let r = unsafe { (api.enable)(kind) };
            if r != SUCCESS {
                caveats.push(format!(
                    "cuptiActivityEnable({}): {}: some device work may not be tied to calls",
                    kind_name(kind),
                    api.describe(r)
                ));
            }
        }
    }

    w.set_backend(Backend::Cupti);
    ACTIVE.store(true, Ordering::Release);
    // Flush before the loader finalises libcupti: atexit handlers run before the loader's own.
    // SAFETY: registering a function with atexit's signature.
    unsafe { libc::atexit(at_exit) };
    if !caveats.is_empty() {
        state::warn(format!("CUPTI: {}", caveats.join("; ")).as_bytes());
    }
    true
}

// ---- the runtime-API callback (static cudart) ----

/// `CUPTI_CB_DOMAIN_RUNTIME_API`, `CUPTI_API_ENTER`, `CUPTI_API_EXIT` (`cupti_callbacks.h`).
const DOMAIN_RUNTIME: u32 = 2;
const API_ENTER: u32 = 0;
const API_EXIT: u32 = 1;

/// The runtime callback ids (`cupti_runtime_cbid.h`, CUDA 13.0) of the launch, copy, memset and
/// graph-launch entry points of our runtime table, sorted by id. Entry points the table lacks
/// (`cudaMemset3D*`, `cudaMemcpy3DPeer*`, the array and batch copies) are left out: their calls would
/// have no API id to be recorded under.
const RUNTIME_CBIDS: &[(u32, &str)] = &[
    (31, "cudaMemcpy"),
    (32, "cudaMemcpy2D"),
    (39, "cudaMemcpyToSymbol"),
    (40, "cudaMemcpyFromSymbol"),
    (41, "cudaMemcpyAsync"),
    (44, "cudaMemcpy2DAsync"),
    (47, "cudaMemcpyToSymbolAsync"),
    (48, "cudaMemcpyFromSymbolAsync"),
    (49, "cudaMemset"),
    (50, "cudaMemset2D"),
    (51, "cudaMemsetAsync"),
    (52, "cudaMemset2DAsync"),
    (144, "cudaMemcpy3D"),
    (145, "cudaMemcpy3DAsync"),
    (160, "cudaMemcpyPeer"),
    (161, "cudaMemcpyPeerAsync"),
    (211, "cudaLaunchKernel"),
    (214, "cudaLaunchKernel_ptsz"),
    (215, "cudaMemcpy_ptds"),
    (216, "cudaMemcpy2D_ptds"),
    (223, "cudaMemcpyToSymbol_ptds"),
    (224, "cudaMemcpyFromSymbol_ptds"),
    (225, "cudaMemcpyAsync_ptsz"),
    (228, "cudaMemcpy2DAsync_ptsz"),
    (231, "cudaMemcpyToSymbolAsync_ptsz"),
    (232, "cudaMemcpyFromSymbolAsync_ptsz"),
    (233, "cudaMemset_ptds"),
    (234, "cudaMemset2D_ptds"),
    (235, "cudaMemsetAsync_ptsz"),
    (236, "cudaMemset2DAsync_ptsz"),
    (245, "cudaMemcpy3D_ptds"),
    (246, "cudaMemcpy3DAsync_ptsz"),
    (269, "cudaLaunchCooperativeKernel"),
    (270, "cudaLaunchCooperativeKernel_ptsz"),
    (311, "cudaGraphLaunch"),
    (312, "cudaGraphLaunch_ptsz"),
    (430, "cudaLaunchKernelExC"),
    (431, "cudaLaunchKernelExC_ptsz"),
    (505, "__cudaLaunchKernel"),
    (506, "__cudaLaunchKernel_ptsz"),
];

/// `CUpti_CallbackData` (CUDA 13.0, LP64): the fields up to `correlationId`.
#[repr(C)]
struct CallbackData {
    callback_site: u32,
    function_name: *const c_char,
    function_params: *const c_void,
    function_return_value: *mut c_void,
    symbol_name: *const c_char,
    context: *mut c_void,
    context_uid: u32,
    correlation_data: *mut u64,
    correlation_id: u32,
}

/// A call recorded at `API_ENTER`, waiting for its `API_EXIT`.
struct Pending {
    corr: u32,
    pushed: bool,
    open: record::Open,
}

thread_local! {
    /// At most one per thread: only a call at depth 0 is recorded, and it keeps the depth at 1 until
    /// its exit.
    static PENDING: Cell<Option<Pending>> = const { Cell::new(None) };
}

/// Enables the runtime callback for `RUNTIME_CBIDS`; `Some(why)` when CUPTI enabled none.
fn enable_runtime_callbacks(api: &Api, subscriber: *mut c_void) -> Option<String> {
    let ids = RUNTIME_CBIDS.iter().map(|&(cbid, _)| cbid);
    enable_callbacks(api, subscriber, DOMAIN_RUNTIME, "RUNTIME", ids)
}

/// Enables the subscriber's callback for `cbids` of `domain`; `Some(why)` when CUPTI enabled none
/// (the first refusal).
fn enable_callbacks(
    api: &Api,
    subscriber: *mut c_void,
    domain: u32,
    domain_name: &str,
    cbids: impl Iterator<Item = u32>,
) -> Option<String> {
    let Some(enable) = api.enable_callback else {
        return Some("this CUPTI has no cuptiEnableCallback".into());
    };
    let (mut on, mut refused) = (0usize, None);
    for cbid in cbids {
        // SAFETY: our subscriber, a CUPTI domain and a callback id of that domain.
        let r = unsafe { enable(1, subscriber, domain, cbid) };
        if r == SUCCESS {
            on += 1;
        } else if refused.is_none() {
            refused = Some(format!(
                "cuptiEnableCallback({domain_name}, {cbid}): {}",
                api.describe(r)
            ));
        }
    }
    if on == 0 {
        refused
    } else {
        None
    }
}

/// `CUPTI_CB_DOMAIN_DRIVER_API`.
const DOMAIN_DRIVER: u32 = 1;

/// The driver callback ids (`cupti_driver_cbid.h`; ids are never reused) of the launch, copy, memset and
/// graph-launch entry points, all ABI versions and stream variants: the calls whose work a device record
/// can carry. Callbacks on these only, not the whole domain, so other driver calls pay nothing.
const DRIVER_CBIDS: &[u32] = &[
    43, 45, 47, 49, 51, 53, 54, 55, 56, 57, 58, 60, 62, 64, 66, 67, 68, 69, // cuMemcpy* (v1)
    71, 73, 75, 77, 79, 81, 216, 218, 220, 222, 224, 226, // cuMemset* (v1)
    248, 249, 250, 251, 252, 253, 254, // cuMemcpy_v2, cuMemset*_v2
    276, 277, 278, 279, 280, 281, 282, 283, 284, 285, 286, 287, 288, 289, 290, 291, 292, 293, 305,
    306, 307, 318, 319, 320, 321, // cuMemcpy, cuMemcpyAsync, cuLaunchKernel, peer copies
    397, 398, 399, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, // _ptds copies
    411, 412, 413, 414, 415, 416, // _ptds memsets
    418, 419, 420, 421, 422, 423, 424, 425, 426, 427, // _ptsz async copies
    428, 429, 430, 431, 432, 433, // _ptsz async memsets
    442, 477, 478, 514, 515, 652, 653, // launches (_ptsz, cooperative, Ex) and cuGraphLaunch
    776, 777, 778, 779, // batch copies
];

/// Diagnostic switches (`CAUSEWAY_CUPTI_DIAG`, comma-separated), to measure what each part of the
/// backend costs: `driver-domain` (callbacks on the whole driver domain instead of `DRIVER_CBIDS`),
/// `no-timestamp` (CUPTI's own clock: intervals unconverted), `no-runtime-cb` (no runtime callbacks:
/// runtime launches untied under callback correlation). Not for normal use.
fn diag(what: &str) -> bool {
    std::env::var(env::CUPTI_DIAG)
        .map(|v| v.split(',').any(|t| t.trim() == what))
        .unwrap_or(false)
}

/// Enables the driver callbacks of callback correlation; `Some(why)` when CUPTI enabled none.
fn enable_driver_callbacks(api: &Api, subscriber: *mut c_void) -> Option<String> {
    if diag("driver-domain") {
        let Some(enable) = api.enable_domain else {
            return Some("this CUPTI has no cuptiEnableDomain".into());
        };
        // SAFETY: our subscriber and a CUPTI domain.
        let r = unsafe { enable(1, subscriber, DOMAIN_DRIVER) };
        return (r != SUCCESS).then(|| format!("cuptiEnableDomain(DRIVER): {}", api.describe(r)));
    }
    enable_callbacks(
        api,
        subscriber,
        DOMAIN_DRIVER,
        "DRIVER",
        DRIVER_CBIDS.iter().copied(),
    )
}

/// The runtime hook a callback id stands for (its name as a fallback); `None` for ids and names our
/// tables do not know.
fn runtime_hook(cbid: u32, name: Option<&CStr>) -> Option<&'static Hook> {
    let by_id = RUNTIME_CBIDS
        .binary_search_by_key(&cbid, |&(id, _)| id)
        .ok()
        .and_then(|i| {
            let n = RUNTIME_CBIDS[i].1.as_bytes();
            hooks::all().find(|h| h.name.to_bytes() == n)
        });
    let h = by_id.or_else(|| name.and_then(hooks::find))?;
    (h.info.layer == Layer::Runtime && correlates(h.info.class)).then_some(h)
}

/// Whether a runtime call's `API_ENTER` records it: CUPTI is collecting, the shim is not the caller,
/// and no recorded call is open on the thread (a hooked call has pushed its own id already).
fn records_at_enter(active: bool, internal: bool, depth: u16, pending: bool) -> bool {
    active && !internal && depth == 0 && !pending
}

/// Whether an `API_EXIT` is the one of the pending call: CUPTI's correlation id (one per API call)
/// is the pending call's, and no recorded call is open inside it (`depth` counts the pending one).
fn is_pending_exit(pending_corr: u32, corr: u32, depth: u16) -> bool {
    pending_corr == corr && depth == 1
}

unsafe extern "C" fn api_callback(_: *mut c_void, domain: u32, cbid: u32, data: *const c_void) {
    if (domain != DOMAIN_RUNTIME && domain != DOMAIN_DRIVER) || data.is_null() {
        return;
    }
    // SAFETY: CUPTI passes a `CUpti_CallbackData` for the runtime and driver domains, valid during
    // the callback.
    let d = unsafe { &*(data as *const CallbackData) };
    match (d.callback_site, domain) {
        (API_ENTER, DOMAIN_RUNTIME) => {
            runtime_enter(cbid, d);
            if BY_CALLBACK.load(Ordering::Relaxed) {
                correlate::note(d.correlation_id);
            }
        }
        (API_ENTER, _) if BY_CALLBACK.load(Ordering::Relaxed) => correlate::note(d.correlation_id),
        (API_EXIT, DOMAIN_RUNTIME) => runtime_exit(d),
        _ => {}
    }
}

fn runtime_enter(cbid: u32, d: &CallbackData) {
    let pending = PENDING.with(|p| {
        let v = p.take();
        let busy = v.is_some();
        p.set(v);
        busy
    });
    if !records_at_enter(
        ACTIVE.load(Ordering::Relaxed),
        guard::is_internal(),
        guard::depth(),
        pending,
    ) {
        return;
    }
    let name = (!d.function_name.is_null())
        // SAFETY: CUPTI's NUL-terminated function name, valid during the callback.
        .then(|| unsafe { CStr::from_ptr(d.function_name) });
    let Some(h) = runtime_hook(cbid, name) else {
        return;
    };
    let flags = hooks::per_thread(h.name.to_str().unwrap_or("")) | entry_flags::VIA_CUPTI_CALLBACK;
    let Some(open) = record::begin(h.id, h.info.level, flags, 0, 0, 0) else {
        return;
    };
    let pushed = push_seq(open.depth(), open.seq());
    PENDING.with(|p| {
        p.set(Some(Pending {
            corr: d.correlation_id,
            pushed,
            open,
        }))
    });
}

fn runtime_exit(d: &CallbackData) {
    let Some(p) = PENDING.with(|p| p.take()) else {
        return;
    };
    if !is_pending_exit(p.corr, d.correlation_id, guard::depth()) {
        // A nested runtime call's exit: ours is still open.
        PENDING.with(|c| c.set(Some(p)));
        return;
    }
    let result = if d.function_return_value.is_null() {
        0
    } else {
        // SAFETY: for the runtime domain at API_EXIT, the call's `cudaError_t`.
        unsafe { *(d.function_return_value as *const i32) }
    };
    p.open.finish(result);
    if p.pushed {
        pop();
    }
}

/// CUPTI's clock: the ring's ticks in nanoseconds (CUPTI requires nanoseconds).
unsafe extern "C" fn timestamp() -> u64 {
    let t = clock::ticks();
    match SCALE.get() {
        Some(s) => s.ns(t),
        None => t,
    }
}

extern "C" fn at_exit() {
    flush_at_exit();
}

/// Delivers everything CUPTI still holds into the ring and writes the still-unresolved device records
/// with `NO_CALL`. Once per process; errors are ignored (CUDA may already be torn down).
pub fn flush_at_exit() {
    if STATE.load(Ordering::Acquire) != ON
        || !same_process()
        || FLUSHED.swap(true, Ordering::AcqRel)
    {
        return;
    }
    ACTIVE.store(false, Ordering::Release);
    let Some(api) = API.get() else { return };
    guard::internal(|| {
        // SAFETY: CUPTI's flush with a valid flag; it calls `buffer_completed` for what it holds.
        unsafe { (api.flush_all)(FLUSH_FORCED) };
        let w = state::writer();
        count_dropped(api, w);
        if let Some(c) = lock().as_mut() {
            c.absorb(callback_pairs(true).collect(), w);
            c.finish(w);
        }
        let lost = correlate::LOST.load(Ordering::Relaxed);
        if lost > 0 {
            state::warn(
                format!("CUPTI: {lost} call correlations lost (queue full): their device work is unassociated")
                    .as_bytes(),
            );
        }
    });
}

/// In a fork child (single-threaded, no allocation): CUPTI's threads and buffers did not come along,
/// so the backend stays off here. Returns whether the parent had started it (the child says so).
pub fn on_fork_child() -> bool {
    ACTIVE.store(false, Ordering::Relaxed);
    match STATE.load(Ordering::Relaxed) {
        // Never started in the parent: the child may start its own on its first call.
        UNINIT => false,
        _ => {
            STATE.store(OFF, Ordering::Relaxed);
            true
        }
    }
}

fn same_process() -> bool {
    // SAFETY: getpid has no preconditions.
    PID.load(Ordering::Relaxed) == unsafe { libc::getpid() } as u32
}

fn lock() -> std::sync::MutexGuard<'static, Option<Collector>> {
    COLLECTOR.lock().unwrap_or_else(|e| e.into_inner())
}

fn count_dropped(api: &Api, w: Option<Writer>) {
    let mut n = 0usize;
    // SAFETY: NULL context = the global queue; a valid out-pointer.
    if unsafe { (api.dropped)(std::ptr::null_mut(), 0, &mut n) } == SUCCESS {
        if let Some(w) = w {
            for _ in 0..n {
                w.bump(counter::DEVICE_DROPPED);
            }
        }
    }
}

fn buffer_layout() -> Layout {
    match Layout::from_size_align(BUFFER_SIZE, BUFFER_ALIGN) {
        Ok(l) => l,
        Err(_) => Layout::new::<u64>(),
    }
}

/// CUPTI asks for an empty buffer (on its own thread or in a CUDA call: off the shim's hot path).
unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max: *mut usize) {
    // SAFETY: a non-zero-sized layout.
    let p = unsafe { std::alloc::alloc(buffer_layout()) };
    // SAFETY: CUPTI passes valid out-pointers.
    unsafe {
        *buffer = p;
        *size = if p.is_null() { 0 } else { BUFFER_SIZE };
        *max = 0;
    }
}

/// CUPTI hands a buffer of records back: write its device records into the ring and free it.
unsafe extern "C" fn buffer_completed(
    _ctx: *mut c_void,
    _stream: u32,
    buffer: *mut u8,
    size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    if same_process() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            guard::internal(|| drain(buffer, valid.min(size)))
        }));
    }
    if size == BUFFER_SIZE {
        // SAFETY: `buffer_requested` allocated it with this layout and CUPTI is done with it.
        unsafe { std::alloc::dealloc(buffer, buffer_layout()) };
    }
}

fn drain(buffer: *mut u8, valid: usize) {
    let Some(api) = API.get() else { return };
    let w = state::writer();
    let mut items = Vec::new();
    let mut rec: *mut u8 = std::ptr::null_mut();
    let end = buffer as usize + valid;
    loop {
        // SAFETY: our buffer, its valid length, and the previous record (NULL for the first).
        if unsafe { (api.next_record)(buffer, valid, &mut rec) } != SUCCESS || rec.is_null() {
            break;
        }
        let at = rec as usize;
        if at < buffer as usize || at >= end {
            break;
        }
        // SAFETY: CUPTI's record lies inside the buffer's valid bytes.
        let bytes = unsafe { std::slice::from_raw_parts(rec, (end - at).min(MAX_RECORD)) };
        match parse(bytes) {
            Rec::External { kind, id, corr } if kind == EXTERNAL_KIND => {
                items.push(Item::Correlation { corr, id })
            }
            Rec::Device(d) => {
                let a1 = match d.name {
                    // SAFETY: CUPTI's kernel name, NUL-terminated, kept alive by CUPTI.
                    Some(p) if p != 0 => text::TEXT
                        .intern(unsafe { CStr::from_ptr(p as *const c_char) }.to_bytes(), w),
                    Some(_) => 0,
                    None => d.bytes,
                };
                items.push(Item::Interval(Interval::of(&d, a1)));
            }
            _ => {}
        }
    }
    let mut c = lock();
    if let Some(c) = c.as_mut() {
        c.absorb(callback_pairs(false).chain(items).collect(), w);
    }
    count_dropped(api, w);
}

/// The (correlation id → call) pairs the callbacks noted since the last drain, as items.
fn callback_pairs(last: bool) -> impl Iterator<Item = Item> {
    let mut v = Vec::new();
    if BY_CALLBACK.load(Ordering::Relaxed) {
        correlate::drain(&mut v, last);
    }
    v.into_iter()
        .map(|(corr, id)| Item::Correlation { corr, id })
}

// ---- record parsing ----

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// A device record's fields, as CUPTI wrote them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Device {
    kind: DeviceKind,
    copy_kind: u8,
    start: u64,
    end: u64,
    device: u32,
    stream: u32,
    corr: u32,
    bytes: u64,
    /// Kernels: the address of CUPTI's copy of the name (0 = none).
    name: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rec {
    External {
        kind: u32,
        id: u64,
        corr: u32,
    },
    Device(Device),
    /// Kinds the backend does not use (API records, …), and records too short to read.
    Other,
}

/// Reads one activity record (the bytes from its start to at most the end of the buffer).
fn parse(b: &[u8]) -> Rec {
    parse_opt(b).unwrap_or(Rec::Other)
}

fn parse_opt(b: &[u8]) -> Option<Rec> {
    let device = |kind, start, end, dev, stream, corr, bytes, copy_kind, name| -> Option<Rec> {
        Some(Rec::Device(Device {
            kind,
            copy_kind,
            start: u64_at(b, start)?,
            end: u64_at(b, end)?,
            device: u32_at(b, dev)?,
            stream: u32_at(b, stream)?,
            corr: u32_at(b, corr)?,
            bytes,
            name,
        }))
    };
    Some(match u32_at(b, 0)? {
        KIND_KERNEL | KIND_CONCURRENT_KERNEL => {
            use off::kernel as k;
            let name = u64_at(b, k::NAME)? as usize;
            let (s, e, d, st, c) = (k::START, k::END, k::DEVICE, k::STREAM, k::CORRELATION);
            device(DeviceKind::Kernel, s, e, d, st, c, 0, 0, Some(name))?
        }
        KIND_MEMCPY => {
            use off::memcpy as m;
            let (bytes, ck) = (u64_at(b, m::BYTES)?, *b.get(m::COPY_KIND)?);
            let (s, e, d, st, c) = (m::START, m::END, m::DEVICE, m::STREAM, m::CORRELATION);
            device(DeviceKind::Memcpy, s, e, d, st, c, bytes, ck, None)?
        }
        KIND_MEMCPY2 => {
            use off::p2p as m;
            let (bytes, ck) = (u64_at(b, m::BYTES)?, *b.get(m::COPY_KIND)?);
            let (s, e, d, st, c) = (m::START, m::END, m::DEVICE, m::STREAM, m::CORRELATION);
            device(DeviceKind::Memcpy, s, e, d, st, c, bytes, ck, None)?
        }
        KIND_MEMSET => {
            use off::memset as m;
            let bytes = u64_at(b, m::BYTES)?;
            let (s, e, d, st, c) = (m::START, m::END, m::DEVICE, m::STREAM, m::CORRELATION);
            device(DeviceKind::Memset, s, e, d, st, c, bytes, 0, None)?
        }
        KIND_EXTERNAL_CORRELATION => {
            use off::external as x;
            Rec::External {
                kind: u32_at(b, x::EXTERNAL_KIND)?,
                id: u64_at(b, x::EXTERNAL_ID)?,
                corr: u32_at(b, x::CORRELATION)?,
            }
        }
        _ => Rec::Other,
    })
}

// ---- association and writing ----

/// A device interval ready to write but for its call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Interval {
    api: DeviceKind,
    depth: u16,
    start: u64,
    end: u64,
    /// Text id of the kernel name, or bytes.
    a1: u64,
    /// Stream | device << 32.
    a2: u64,
    corr: u32,
}

impl Interval {
    fn of(d: &Device, a1: u64) -> Interval {
        Interval {
            api: d.kind,
            depth: d.copy_kind as u16,
            start: d.start,
            end: d.end,
            a1,
            a2: d.stream as u64 | (d.device as u64) << 32,
            corr: d.corr,
        }
    }
}

/// What one buffer contributes, in buffer order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item {
    /// CUPTI's correlation id `corr` belongs to the call with sequence number `id`.
    Correlation {
        corr: u32,
        id: u64,
    },
    Interval(Interval),
}

/// Ties device records to calls across buffers: correlations seen so far, and device records whose
/// correlation has not been seen yet.
struct Collector {
    calls: HashMap<u32, u64>,
    newest: u32,
    pending: VecDeque<Interval>,
    /// After the final flush nothing waits any more.
    finished: bool,
    /// Set when CUPTI's times are on the ring's clock (the timestamp callback was accepted).
    clock: Option<Scale>,
}

impl Collector {
    fn new(clock: Option<Scale>) -> Collector {
        Collector {
            calls: HashMap::new(),
            newest: 0,
            pending: VecDeque::new(),
            finished: false,
            clock,
        }
    }

    /// One buffer's records: learn its correlations, then write every device record (older ones
    /// first) whose call is known, and keep the others for later buffers.
    fn absorb(&mut self, items: Vec<Item>, w: Option<Writer>) {
        let mut fresh = Vec::new();
        for it in items {
            match it {
                Item::Correlation { corr, id } => self.learn(corr, id),
                Item::Interval(iv) => fresh.push(iv),
            }
        }
        let waiting = std::mem::take(&mut self.pending);
        for iv in waiting.into_iter().chain(fresh) {
            self.place(iv, w);
        }
        while self.pending.len() > PENDING_MAX {
            if let Some(iv) = self.pending.pop_front() {
                self.write(&iv, NO_CALL, w);
            }
        }
    }

    /// The final flush: whatever still waits has no call.
    fn finish(&mut self, w: Option<Writer>) {
        self.finished = true;
        while let Some(iv) = self.pending.pop_front() {
            self.write(&iv, NO_CALL, w);
        }
    }

    fn learn(&mut self, corr: u32, id: u64) {
        self.calls.insert(corr, id);
        if corr.wrapping_sub(self.newest) < u32::MAX / 2 {
            self.newest = corr;
        }
        if self.calls.len() > 2 * CORRELATION_WINDOW as usize {
            let newest = self.newest;
            self.calls
                .retain(|&c, _| newest.wrapping_sub(c) <= CORRELATION_WINDOW);
        }
    }

    fn place(&mut self, iv: Interval, w: Option<Writer>) {
        match self.calls.get(&iv.corr) {
            Some(&seq) => self.write(&iv, seq, w),
            // Correlation id 0 is none (device-launched work): nothing will ever tie it.
            None if self.finished || iv.corr == 0 => self.write(&iv, NO_CALL, w),
            None => self.pending.push_back(iv),
        }
    }

    fn write(&self, iv: &Interval, call: u64, w: Option<Writer>) {
        let Some(w) = w else { return };
        // A time of 0 means CUPTI could not time the work (out of device memory): kept as 0.
        let (t0, t1, flags) = match self.clock {
            Some(s) => (s.ticks(iv.start), s.ticks(iv.end), entry_flags::HOST_CLOCK),
            None => (iv.start, iv.end, 0),
        };
        let f = Fields {
            t_begin: t0,
            tid: 0,
            api: iv.api as u16,
            kind: Kind::DeviceInterval as u8,
            flags,
            depth: iv.depth,
            a0: call,
            a1: iv.a1,
            a2: iv.a2,
        };
        w.complete(&f, t1, 0);
    }
}

// ---- clocks ----

/// The ring's ticks ↔ nanoseconds for CUPTI, linear around one anchor, in 64.64 fixed point so that
/// the timestamp callback (called on CUDA API calls) costs a multiplication. The identity when the
/// ring's clock is CLOCK_MONOTONIC. Both directions round to nearest: a round trip is exact to a tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Scale {
    t0: u64,
    ns0: u64,
    /// Nanoseconds per tick, << 64.
    ns_per_tick: u128,
    /// Ticks per nanosecond, << 64.
    ticks_per_ns: u128,
}

impl Scale {
    const IDENTITY: Scale = Scale {
        t0: 0,
        ns0: 0,
        ns_per_tick: 1 << 64,
        ticks_per_ns: 1 << 64,
    };

    fn new(t0: u64, ns0: u64, hz: u64) -> Scale {
        let hz = hz.max(1) as u128;
        Scale {
            t0,
            ns0,
            ns_per_tick: ((1_000_000_000u128 << 64) + hz / 2) / hz,
            ticks_per_ns: ((hz << 64) + 500_000_000) / 1_000_000_000,
        }
    }

    fn map(x: u64, from: u64, to: u64, factor: u128) -> u64 {
        let scaled = |d: u64| {
            (d as u128)
                .checked_mul(factor)
                .and_then(|p| p.checked_add(1 << 63))
                .map_or(u64::MAX, |p| (p >> 64).min(u64::MAX as u128) as u64)
        };
        if x >= from {
            to.saturating_add(scaled(x - from))
        } else {
            to.saturating_sub(scaled(from - x))
        }
    }

    fn ns(&self, ticks: u64) -> u64 {
        Scale::map(ticks, self.t0, self.ns0, self.ns_per_tick)
    }

    /// Ticks of a CUPTI time; 0 (no time) stays 0.
    fn ticks(&self, ns: u64) -> u64 {
        if ns == 0 {
            return 0;
        }
        Scale::map(ns, self.ns0, self.t0, self.ticks_per_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strings::text::tests::TestRing;
    use causeway_ring::{Entry, RingView, Slot};

    #[test]
    fn runtime_cbids_are_sorted_and_name_correlating_runtime_hooks() {
        assert!(RUNTIME_CBIDS.windows(2).all(|w| w[0].0 < w[1].0));
        for &(cbid, name) in RUNTIME_CBIDS {
            let h = runtime_hook(cbid, None).unwrap_or_else(|| panic!("{name} ({cbid})"));
            assert_eq!(h.name.to_bytes(), name.as_bytes());
            assert_eq!(h.info.layer, Layer::Runtime);
            assert!(correlates(h.info.class), "{name}");
        }
        // Every correlating runtime hook has its callback id.
        for h in crate::runtime::TABLE
            .iter()
            .filter(|h| correlates(h.info.class))
        {
            assert!(
                RUNTIME_CBIDS
                    .iter()
                    .any(|&(_, n)| n.as_bytes() == h.name.to_bytes()),
                "{:?} has no callback id",
                h.name
            );
        }
    }

    #[test]
    fn runtime_hook_skips_unknown_and_uncorrelated_calls() {
        // cudaMemset3D (142): not in our tables.
        assert!(runtime_hook(142, None).is_none());
        assert!(runtime_hook(142, Some(c"cudaMemset3D")).is_none());
        // An unknown id falls back on the name, but only for correlating runtime calls.
        assert_eq!(
            runtime_hook(9999, Some(c"cudaLaunchKernel")).map(|h| h.name),
            Some(c"cudaLaunchKernel")
        );
        assert!(runtime_hook(9999, Some(c"cudaStreamSynchronize")).is_none());
        assert!(runtime_hook(9999, Some(c"cuLaunchKernel")).is_none());
        assert!(runtime_hook(9999, Some(c"cudaLaunchKernel_v7000")).is_none());
        assert!(runtime_hook(9999, None).is_none());
        // The id wins over the name.
        assert_eq!(
            runtime_hook(505, Some(c"whatever")).map(|h| h.name),
            Some(c"__cudaLaunchKernel")
        );
    }

    #[test]
    fn runtime_enter_records_only_outermost_external_calls() {
        assert!(records_at_enter(true, false, 0, false));
        // Shared cudart: the shim's hook is open and pushed already.
        assert!(!records_at_enter(true, false, 1, false));
        assert!(!records_at_enter(true, false, 3, false));
        // The shim's own calls, a backend that is off, a call already pending.
        assert!(!records_at_enter(true, true, 0, false));
        assert!(!records_at_enter(false, false, 0, false));
        assert!(!records_at_enter(true, false, 0, true));
    }

    #[test]
    fn runtime_exit_matches_only_its_own_call() {
        assert!(is_pending_exit(7, 7, 1));
        // A nested runtime call (another correlation id), or a recorded call still open inside.
        assert!(!is_pending_exit(7, 8, 1));
        assert!(!is_pending_exit(7, 7, 2));
    }

    /// A record of `size` bytes with `kind` at 0 and the given fields at their offsets.
    fn record(size: usize, kind: u32, fields: &[(usize, &[u8])]) -> Vec<u8> {
        let mut b = vec![0xAAu8; size];
        b[..4].copy_from_slice(&kind.to_le_bytes());
        for (off, bytes) in fields {
            b[*off..*off + bytes.len()].copy_from_slice(bytes);
        }
        b
    }

    fn kernel(corr: u32, start: u64, end: u64, name: usize) -> Vec<u8> {
        use off::kernel as k;
        record(
            k::SIZE,
            KIND_CONCURRENT_KERNEL,
            &[
                (k::START, &start.to_le_bytes()),
                (k::END, &end.to_le_bytes()),
                (k::DEVICE, &1u32.to_le_bytes()),
                (k::STREAM, &7u32.to_le_bytes()),
                (k::CORRELATION, &corr.to_le_bytes()),
                (k::NAME, &(name as u64).to_le_bytes()),
            ],
        )
    }

    fn external(corr: u32, id: u64) -> Vec<u8> {
        use off::external as x;
        record(
            x::SIZE,
            KIND_EXTERNAL_CORRELATION,
            &[
                (x::EXTERNAL_KIND, &EXTERNAL_KIND.to_le_bytes()),
                (x::EXTERNAL_ID, &id.to_le_bytes()),
                (x::CORRELATION, &corr.to_le_bytes()),
                (x::SIZE - 4, &0u32.to_le_bytes()),
            ],
        )
    }

    #[test]
    fn kernel_records_parse_at_the_header_offsets() {
        let name = c"_Z6vecAddPfS_S_i";
        let b = kernel(42, 1000, 2500, name.as_ptr() as usize);
        assert_eq!(b.len(), 216, "sizeof(CUpti_ActivityKernel10)");
        assert_eq!(
            parse(&b),
            Rec::Device(Device {
                kind: DeviceKind::Kernel,
                copy_kind: 0,
                start: 1000,
                end: 2500,
                device: 1,
                stream: 7,
                corr: 42,
                bytes: 0,
                name: Some(name.as_ptr() as usize),
            })
        );
        // KIND_KERNEL shares the struct.
        let mut b3 = b.clone();
        b3[..4].copy_from_slice(&KIND_KERNEL.to_le_bytes());
        assert!(matches!(parse(&b3), Rec::Device(d) if d.corr == 42));
        // A record cut short by the end of the buffer is not read past it.
        assert_eq!(parse(&b[..100]), Rec::Other);
        assert_eq!(parse(&b[..2]), Rec::Other);
    }

    #[test]
    fn copy_and_memset_records_parse_at_the_header_offsets() {
        use off::{memcpy as c, memset as s, p2p as p};
        let m = record(
            c::SIZE,
            KIND_MEMCPY,
            &[
                (c::COPY_KIND, &[1]),
                (c::BYTES, &4096u64.to_le_bytes()),
                (c::START, &10u64.to_le_bytes()),
                (c::END, &20u64.to_le_bytes()),
                (c::DEVICE, &0u32.to_le_bytes()),
                (c::STREAM, &3u32.to_le_bytes()),
                (c::CORRELATION, &9u32.to_le_bytes()),
            ],
        );
        assert_eq!(m.len(), 96, "sizeof(CUpti_ActivityMemcpy6)");
        assert_eq!(
            parse(&m),
            Rec::Device(Device {
                kind: DeviceKind::Memcpy,
                copy_kind: 1,
                start: 10,
                end: 20,
                device: 0,
                stream: 3,
                corr: 9,
                bytes: 4096,
                name: None,
            })
        );
        let q = record(
            p::SIZE,
            KIND_MEMCPY2,
            &[
                (p::COPY_KIND, &[10]),
                (p::BYTES, &64u64.to_le_bytes()),
                (p::START, &1u64.to_le_bytes()),
                (p::END, &2u64.to_le_bytes()),
                (p::DEVICE, &1u32.to_le_bytes()),
                (p::STREAM, &5u32.to_le_bytes()),
                (p::CORRELATION, &11u32.to_le_bytes()),
            ],
        );
        assert!(
            matches!(parse(&q), Rec::Device(d) if d.corr == 11 && d.copy_kind == 10 && d.bytes == 64)
        );
        let z = record(
            s::SIZE,
            KIND_MEMSET,
            &[
                (4, &0xffu32.to_le_bytes()),
                (s::BYTES, &512u64.to_le_bytes()),
                (s::START, &30u64.to_le_bytes()),
                (s::END, &31u64.to_le_bytes()),
                (s::DEVICE, &2u32.to_le_bytes()),
                (s::STREAM, &4u32.to_le_bytes()),
                (s::CORRELATION, &12u32.to_le_bytes()),
            ],
        );
        assert_eq!(z.len(), 88, "sizeof(CUpti_ActivityMemset4)");
        assert_eq!(
            parse(&z),
            Rec::Device(Device {
                kind: DeviceKind::Memset,
                copy_kind: 0,
                start: 30,
                end: 31,
                device: 2,
                stream: 4,
                corr: 12,
                bytes: 512,
                name: None,
            })
        );
        let x = external(12, 777);
        assert_eq!(x.len(), 24, "sizeof(CUpti_ActivityExternalCorrelation)");
        assert_eq!(
            parse(&x),
            Rec::External {
                kind: EXTERNAL_KIND,
                id: 777,
                corr: 12
            }
        );
        // API records (runtime/driver) and unknown kinds are skipped.
        assert_eq!(parse(&record(64, KIND_RUNTIME, &[])), Rec::Other);
        assert_eq!(parse(&record(64, 999, &[])), Rec::Other);
    }

    fn iv(corr: u32, start: u64) -> Item {
        Item::Interval(Interval {
            api: DeviceKind::Kernel,
            depth: 0,
            start,
            end: start + 5,
            a1: 3,
            a2: 7 | 1 << 32,
            corr,
        })
    }

    fn corr(corr: u32, id: u64) -> Item {
        Item::Correlation { corr, id }
    }

    fn intervals(r: &TestRing) -> Vec<Entry> {
        let v = RingView::parse(r.bytes()).expect("ring parses");
        let (a, b) = v.window();
        (a..b)
            .filter_map(|s| match v.read(s) {
                Slot::Entry(e) if e.kind == Some(Kind::DeviceInterval) => Some(e),
                _ => None,
            })
            .collect()
    }

    /// (start, call) of each written interval, in ring order.
    fn written(r: &TestRing) -> Vec<(u64, u64)> {
        intervals(r).iter().map(|e| (e.t_begin, e.a0)).collect()
    }

    #[test]
    fn intervals_carry_their_fields() {
        let r = TestRing::new();
        let mut c = Collector::new(None);
        c.absorb(vec![corr(5, 40), iv(5, 100)], Some(r.w));
        let e = intervals(&r);
        assert_eq!(e.len(), 1);
        let e = e[0];
        assert!(e.done);
        assert_eq!((e.t_begin, e.t_end, e.tid), (100, 105, 0));
        assert_eq!(e.api, DeviceKind::Kernel as u16);
        assert_eq!((e.a0, e.a1, e.a2), (40, 3, 7 | 1 << 32));
        assert_eq!(e.flags & entry_flags::HOST_CLOCK, 0, "CUPTI's own clock");
        // On the ring's clock: flagged.
        let r = TestRing::new();
        let mut c = Collector::new(Some(Scale::IDENTITY));
        c.absorb(vec![corr(5, 40), iv(5, 100)], Some(r.w));
        let e = intervals(&r)[0];
        assert_eq!(e.flags, entry_flags::HOST_CLOCK);
        assert_eq!((e.t_begin, e.t_end), (100, 105));
    }

    #[test]
    fn a_record_before_its_correlation_waits_for_it() {
        let r = TestRing::new();
        let mut c = Collector::new(None);
        // Same buffer, kernel first.
        c.absorb(vec![iv(1, 100), corr(1, 10)], Some(r.w));
        assert_eq!(written(&r), vec![(100, 10)]);
        // Correlation only in a later buffer.
        c.absorb(vec![iv(2, 200)], Some(r.w));
        assert_eq!(written(&r).len(), 1, "waits");
        c.absorb(vec![corr(3, 30)], Some(r.w));
        assert_eq!(written(&r).len(), 1, "still waits");
        c.absorb(vec![corr(2, 20), iv(3, 300)], Some(r.w));
        assert_eq!(written(&r), vec![(100, 10), (200, 20), (300, 30)]);
    }

    #[test]
    fn one_call_many_kernels_and_foreign_kinds() {
        let r = TestRing::new();
        let mut c = Collector::new(None);
        // A graph launch: one correlation, three kernels, across two buffers.
        c.absorb(vec![corr(8, 80), iv(8, 1), iv(8, 2)], Some(r.w));
        c.absorb(vec![iv(8, 3)], Some(r.w));
        assert_eq!(written(&r), vec![(1, 80), (2, 80), (3, 80)]);
        // Correlation id 0 (device-launched work) is never tied.
        c.absorb(vec![iv(0, 4)], Some(r.w));
        assert_eq!(written(&r)[3], (4, NO_CALL));
    }

    #[test]
    fn never_resolved_records_get_no_call_at_the_final_flush() {
        let r = TestRing::new();
        let mut c = Collector::new(None);
        c.absorb(vec![iv(4, 400), iv(5, 500), corr(5, 50)], Some(r.w));
        assert_eq!(written(&r), vec![(500, 50)]);
        c.finish(Some(r.w));
        assert_eq!(written(&r), vec![(500, 50), (400, NO_CALL)]);
        // Buffers after the final flush are written at once.
        c.absorb(vec![iv(6, 600)], Some(r.w));
        assert_eq!(written(&r)[2], (600, NO_CALL));
    }

    #[test]
    fn waiting_records_are_bounded() {
        let r = TestRing::new();
        let mut c = Collector::new(None);
        let items: Vec<Item> = (0..PENDING_MAX as u64 + 3)
            .map(|i| iv(1000 + i as u32, i + 1))
            .collect();
        c.absorb(items, None);
        assert_eq!(c.pending.len(), PENDING_MAX);
        assert_eq!(c.pending.front().unwrap().start, 4, "the oldest went first");
        c.finish(Some(r.w));
        assert!(c.pending.is_empty());
    }

    #[test]
    fn old_correlations_are_pruned() {
        let mut c = Collector::new(None);
        for i in 1..=2 * CORRELATION_WINDOW + 1 {
            c.learn(i, i as u64);
        }
        assert!(c.calls.len() <= CORRELATION_WINDOW as usize + 1);
        assert!(c.calls.contains_key(&(2 * CORRELATION_WINDOW + 1)));
        assert!(!c.calls.contains_key(&1));
    }

    #[test]
    fn scale_round_trips_to_a_tick() {
        let s = Scale::IDENTITY;
        for t in [1u64, 12345, u64::MAX / 3] {
            assert_eq!(s.ns(t), t);
            assert_eq!(s.ticks(t), t);
        }
        // A 2.9 GHz TSC anchored at (ticks 10^12, mono 5·10^11 ns).
        let s = Scale::new(1_000_000_000_000, 500_000_000_000, 2_900_000_000);
        assert_eq!(s.ns(1_000_000_000_000), 500_000_000_000);
        assert_eq!(s.ns(1_000_000_000_000 + 2_900_000_000), 501_000_000_000);
        assert_eq!(s.ns(1_000_000_000_000 - 2_900_000_000), 499_000_000_000);
        for t in [
            1_000_000_000_000u64,
            1_000_000_000_001,
            999_999_123_456,
            1_000_000_000_000 + 86_400 * 2_900_000_000,
        ] {
            let back = s.ticks(s.ns(t));
            assert!(back.abs_diff(t) <= 1, "{t} -> {back}");
        }
        assert_eq!(s.ticks(0), 0, "no time stays no time");
    }

    #[test]
    fn cupti_is_looked_for_in_order() {
        let p =
            |v: &[PathBuf]| -> Vec<String> { v.iter().map(|p| p.display().to_string()).collect() };
        assert_eq!(
            p(&candidates(Some(OsStr::new("/opt/x/libcupti.so.13")), &[])),
            vec!["/opt/x/libcupti.so.13"]
        );
        let cudart = [
            PathBuf::from("/venv/nvidia/cu13/lib/libcudart.so.13"),
            PathBuf::from("/usr/local/cuda/lib64/libcudart.so.13"),
        ];
        assert_eq!(
            p(&candidates(Some(OsStr::new("")), &cudart)),
            vec![
                "/venv/nvidia/cu13/lib/libcupti.so.13",
                "/venv/nvidia/cu13/lib/../extras/CUPTI/lib64/libcupti.so.13",
                "/usr/local/cuda/lib64/libcupti.so.13",
                "/usr/local/cuda/lib64/../extras/CUPTI/lib64/libcupti.so.13",
                "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                "libcupti.so.13",
                "libcupti.so",
            ]
        );
        assert_eq!(
            p(&candidates(None, &[PathBuf::from("libcudart.so.13")])),
            vec![
                "/usr/local/cuda/lib64/libcupti.so.13",
                "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                "libcupti.so.13",
                "libcupti.so",
            ]
        );
    }

    #[test]
    fn only_outermost_work_calls_correlate() {
        use causeway_ring::layout::Class;
        assert!(correlates(Class::Launch) && correlates(Class::GraphLaunch));
        assert!(correlates(Class::Copy) && correlates(Class::Memset));
        assert!(!correlates(Class::Sync) && !correlates(Class::HostFunc));
        assert!(!push_seq(1, Some(5)), "nested calls never push");
        assert!(!push_seq(0, None), "a dropped entry has nothing to push");
    }
}
