//! Starting and stopping CUPTI: `start` on the process's first hooked call (subscribe, timestamp
//! callback, activity kinds, callbacks), the per-call `push` and `pop` of external correlation ids
//! (the only part on the hot path), the exit flush and what a fork child does.

use super::callback::{api_callback, enable_driver_callbacks, enable_runtime_callbacks, FIND};
use super::collect::{
    buffer_completed, buffer_requested, callback_pairs, count_dropped, lock, Collector,
};
use super::ffi::*;
use super::{clocks, correlate, library, FindApi, ACTIVE, API, BY_CALLBACK};
use crate::hot::{guard, record, state};
use crate::resolve;
use causeway_ring::clock;
use causeway_ring::layout::{Backend, Layer};
use causeway_ring::settings::{env, Choice, Correlation};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};

const UNINIT: u8 = 0;
const STARTING: u8 = 1;
const ON: u8 = 2;
const OFF: u8 = 3;
static STATE: AtomicU8 = AtomicU8::new(UNINIT);
/// The process that started CUPTI (a fork child must not touch the parent's CUPTI state).
static PID: AtomicU32 = AtomicU32::new(0);
static FLUSHED: AtomicBool = AtomicBool::new(false);

/// What a child of `fork` says in its ring when its parent had started CUPTI.
pub(crate) const FORK_NOTICE: &[u8] =
    b"CUPTI does not survive fork: this child records host calls only (no device intervals)";

/// At start-up (level 3 with CUPTI): how the runtime callback will find hooked entry points. CUPTI
/// itself starts on the first hooked call (`start`).
pub(crate) fn want(find: FindApi) {
    let _ = FIND.set(find);
}

/// Before a correlated hook's real call: pushes the call's sequence number if CUPTI is collecting and
/// the call is the outermost recorded one. Returns whether it pushed (then `pop` after the call).
#[inline(always)]
pub(crate) fn push(open: &record::Open) -> bool {
    if !ACTIVE.load(Ordering::Relaxed) || UNTIED.load(Ordering::Relaxed) {
        return false;
    }
    push_seq(open.depth(), open.seq())
}

/// The `kernel-only` diagnostic: calls push no correlation.
static UNTIED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[inline(never)]
pub(super) fn push_seq(depth: u16, seq: Option<u64>) -> bool {
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
pub(crate) fn pop() {
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
pub(crate) fn start() {
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
    let loaded = match library::load() {
        Ok(api) => api,
        Err(why) => {
            // A Level Zero or Unified Runtime program with no CUDA library loaded has nothing for
            // CUPTI to time and nothing to be told about it. (CUPTI still starts, before CUDA
            // loads, wherever it can be found: a program's first recorded call may be an NVTX
            // one.)
            let intel = !resolve::loaded(Layer::UnifiedRuntime).is_empty()
                || !resolve::loaded(Layer::LevelZero).is_empty();
            let cuda = !resolve::loaded(Layer::Runtime).is_empty()
                || !resolve::loaded(Layer::Driver).is_empty();
            if cuda || !intel {
                unavailable(&why);
            }
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
    let scale = clocks::ring_scale(hz);
    let mut caveats: Vec<String> = Vec::new();
    let r = if diag("no-timestamp") {
        -1
    } else {
        // SAFETY: registering a function with CUPTI's timestamp-callback signature, before any kind.
        unsafe { (api.register_timestamp)(clocks::timestamp) }
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
        Err(_) => Correlation::default() == Correlation::Callback,
        Ok(v) => match Correlation::from_name(&v) {
            Ok(c) => c == Correlation::Callback,
            Err(e) => {
                caveats.push(format!(
                    "{}={e}; using {}",
                    env::CUPTI_CORRELATION,
                    Correlation::default().name()
                ));
                Correlation::default() == Correlation::Callback
            }
        },
    };
    let mut enabled = Vec::new();
    let kernel_only = diag("kernel-only");
    let kinds: &[u32] = if kernel_only || diag("no-copies") {
        &[KIND_CONCURRENT_KERNEL]
    } else {
        &[KIND_CONCURRENT_KERNEL, KIND_MEMCPY, KIND_MEMSET]
    };
    for &kind in kinds {
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
    // Kernels' queued and submitted times (`causeway why`'s phases), when asked for and where this
    // CUPTI and device have them; without, the intervals simply carry none. Off by default: on the
    // H200 the tiny-op loop measured +2.1 µs per op with them (noisy: −0.3 to +3.1).
    let want_latency = std::env::var(env::CUPTI_LATENCY).is_ok_and(|v| v == "1");
    if let Some(latency) = api.enable_latency.filter(|_| want_latency) {
        // SAFETY: cuptiActivityEnableLatencyTimestamps(uint8_t enable).
        let r = unsafe { latency(1) };
        if r != SUCCESS {
            caveats.push(format!(
                "cuptiActivityEnableLatencyTimestamps: {}: kernels carry no queued/submitted times",
                api.describe(r)
            ));
        }
    }
    let runtime_cb = if kernel_only || diag("no-runtime-cb") {
        // Measured apart: under external correlation, None here only drops the static-cudart path.
        None
    } else {
        enable_runtime_callbacks(api, subscriber)
    };
    if kernel_only {
        UNTIED.store(true, Ordering::Relaxed);
        caveats.push("diagnostic kernel-only: device work is not tied to calls".into());
    } else if by_callback && runtime_cb.is_none() {
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
        let api_kinds: &[u32] = if diag("no-api-kinds") {
            &[]
        } else if diag("runtime-kind-only") {
            &[KIND_RUNTIME]
        } else {
            &[KIND_RUNTIME, KIND_DRIVER]
        };
        for &kind in api_kinds {
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

    // Unless a runtime of its own timed the process's work first (Level Zero, Unified Runtime).
    w.claim_backend(Backend::Cupti);
    ACTIVE.store(true, Ordering::Release);
    // Flush before the loader finalises libcupti: atexit handlers run before the loader's own.
    // SAFETY: registering a function with atexit's signature.
    unsafe { libc::atexit(at_exit) };
    if !caveats.is_empty() {
        state::warn(format!("CUPTI: {}", caveats.join("; ")).as_bytes());
    }
    true
}

/// Diagnostic switches (`CAUSEWAY_CUPTI_DIAG`, comma-separated), to measure what each part of the
/// backend costs: `driver-domain` (callbacks on the whole driver domain instead of `DRIVER_CBIDS`),
/// `no-timestamp` (CUPTI's own clock: intervals unconverted), `no-runtime-cb` (no runtime callbacks:
/// runtime launches untied under callback correlation, static cudart untied under external),
/// `kernel-only` (CONCURRENT_KERNEL alone: nothing tied), `no-copies` (no MEMCPY/MEMSET kinds),
/// `no-api-kinds` (external correlation without the RUNTIME and DRIVER kinds: nothing tied),
/// `runtime-kind-only` (RUNTIME without DRIVER: driver-API launches untied), `discard` (buffers
/// returned unread). Not for normal use.
pub(super) fn diag(what: &str) -> bool {
    std::env::var(env::CUPTI_DIAG)
        .map(|v| v.split(',').any(|t| t.trim() == what))
        .unwrap_or(false)
}

extern "C" fn at_exit() {
    flush_at_exit();
}

/// Delivers everything CUPTI still holds into the ring and writes the still-unresolved device records
/// with `NO_CALL`. Once per process; errors are ignored (CUDA may already be torn down).
pub(crate) fn flush_at_exit() {
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
pub(crate) fn on_fork_child() -> bool {
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

pub(super) fn same_process() -> bool {
    // SAFETY: getpid has no preconditions.
    PID.load(Ordering::Relaxed) == unsafe { libc::getpid() } as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_outermost_work_calls_correlate() {
        use causeway_ring::layout::Class;
        assert!(Class::Launch.issues_work() && Class::GraphLaunch.issues_work());
        assert!(Class::Copy.issues_work() && Class::Memset.issues_work());
        assert!(!Class::Sync.issues_work() && !Class::HostFunc.issues_work());
        assert!(!push_seq(1, Some(5)), "nested calls never push");
        assert!(!push_seq(0, None), "a dropped entry has nothing to push");
    }
}
