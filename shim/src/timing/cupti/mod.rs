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
//!    `CONCURRENT_KERNEL` (never `KERNEL`, which serialises kernels), `MEMCPY`, `MEMSET`; under
//!    external correlation also `EXTERNAL_CORRELATION`, and `RUNTIME` + `DRIVER`: CUPTI writes an
//!    external-correlation record only in front of an API activity record, so without the API kinds no
//!    call could be tied to its work (their records are skipped here). `MEMCPY2` (peer copies) when
//!    CUPTI has it.
//!
//! **Association** is by callback correlation (below) unless `CAUSEWAY_CUPTI_CORRELATION=external`:
//! on the H200 it added 1.3 µs per launch against external correlation's 3.6 µs (CUPTI alone: 0.8;
//! `control-experiments/device/cupti_parts.sh`), with the same exact counts. **External
//! correlation:** the outermost (depth 0) recorded launch, copy, memset or graph launch pushes its
//! own ring sequence number as external correlation id `CUSTOM0` around its real call (`push`/`pop`,
//! which the hook macro reaches through `timing::tie`/`untie`). CUPTI then writes (correlation id → our sequence number) records, and
//! every kernel/copy/memset record carries the correlation id of the API call that issued it. Records
//! of one correlation may come in different buffers and in either order: a device record whose
//! correlation is not known yet waits (`Collector`) and is resolved by a later buffer or, at the final
//! flush, written with `a0 = NO_CALL`.
//!
//! **Callback correlation** (the default, `correlate.rs`): no
//! `EXTERNAL_CORRELATION`, `RUNTIME` or `DRIVER` activity kinds — the records CUPTI writes for every API
//! call. Instead the subscriber's callback is enabled for the runtime ids below and the driver's
//! device-work ids (`DRIVER_CBIDS`); at `API_ENTER` inside a hooked call, it notes (CUPTI's correlation id → the hook's sequence
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
//!
//! **Files.** `ffi` (CUPTI's codes, record offsets and entry points), `library` (finding and loading
//! it), `start` (start, the per-call `push`/`pop`, exit, fork), `callback` (the runtime-API callback),
//! `correlate` (callback correlation's queue), `records` (reading activity records), `collect`
//! (association and writing), `clocks` (CUPTI's timestamps on the ring's clock). Outside `timing/`
//! nothing names this module; the hook tables reach it only through the `FindApi` handed over at
//! start-up.

mod callback;
mod cbids;
mod clocks;
mod collect;
mod correlate;
mod ffi;
mod library;
mod records;
mod start;

use causeway_ring::layout::ApiInfo;
use std::ffi::CStr;
use std::sync::atomic::AtomicBool;
use std::sync::OnceLock;

pub(crate) use start::{flush_at_exit, on_fork_child, pop, push, start, want, FORK_NOTICE};

/// A hooked entry point, as the runtime callback records a call that no hook of ours saw: the
/// interception layer, which owns the hook tables, describes its hooks this way (`FindApi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookedApi {
    /// The API id its entries carry.
    pub id: u16,
    pub name: &'static CStr,
    pub info: ApiInfo,
    /// The entry flags its hook writes (`PER_THREAD` for the `_ptsz`/`_ptds` variants).
    pub flags: u8,
}

/// Finds the hooked entry point exported under a name.
pub type FindApi = fn(&[u8]) -> Option<HookedApi>;

/// The loaded CUPTI (set by the first `start`).
static API: OnceLock<ffi::Api> = OnceLock::new();
/// The hot path's flag: CUPTI is collecting and correlated hooks push their sequence numbers.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Calls are tied to CUPTI's records through callbacks (`correlate.rs`), not external correlation.
static BY_CALLBACK: AtomicBool = AtomicBool::new(false);
