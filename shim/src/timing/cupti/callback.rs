//! The runtime-API callback, for a statically linked cudart (nvcc's default), which exports nothing
//! the shim can hook: CUPTI calls the subscriber at `API_ENTER` and `API_EXIT` of the device-work
//! runtime calls (`RUNTIME_CBIDS`), and a call no hook of ours has opened is recorded from there (flag
//! `VIA_CUPTI_CALLBACK`) and pushes its sequence number. Under callback correlation the same callback
//! (and the driver domain's) notes (CUPTI correlation id → call) for `correlate`.

use super::ffi::*;
use super::start::{diag, pop, push_seq};
use super::{correlate, FindApi, HookedApi, ACTIVE, BY_CALLBACK};
use crate::hot::{guard, record};
use causeway_ring::layout::{entry_flags, Layer};
use std::cell::Cell;
use std::ffi::{c_void, CStr};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

/// How the runtime callback finds the hooked entry point of a call (from the interception layer, at
/// start-up: `start::want`).
pub(super) static FIND: OnceLock<FindApi> = OnceLock::new();

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
pub(super) fn enable_runtime_callbacks(api: &Api, subscriber: *mut c_void) -> Option<String> {
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

/// Enables the driver callbacks of callback correlation; `Some(why)` when CUPTI enabled none.
pub(super) fn enable_driver_callbacks(api: &Api, subscriber: *mut c_void) -> Option<String> {
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

/// The hooked runtime entry point a callback id stands for (its name as a fallback), found with
/// `find`; `None` for ids and names the hook tables do not know and for calls that issue no device
/// work.
fn runtime_hook(find: FindApi, cbid: u32, name: Option<&CStr>) -> Option<HookedApi> {
    let by_id = RUNTIME_CBIDS
        .binary_search_by_key(&cbid, |&(id, _)| id)
        .ok()
        .and_then(|i| find(RUNTIME_CBIDS[i].1.as_bytes()));
    let h = by_id.or_else(|| name.and_then(|n| find(n.to_bytes())))?;
    (h.info.layer == Layer::Runtime && h.info.class.issues_work()).then_some(h)
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

pub(super) unsafe extern "C" fn api_callback(
    _: *mut c_void,
    domain: u32,
    cbid: u32,
    data: *const c_void,
) {
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
    let Some(h) = FIND.get().and_then(|&find| runtime_hook(find, cbid, name)) else {
        return;
    };
    let flags = h.flags | entry_flags::VIA_CUPTI_CALLBACK;
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

#[cfg(test)]
mod tests {
    use super::*;
    // The real hook tables: what this checks is that the callback ids and the tables agree.
    use crate::intercept::registry::hooked_api as find;

    #[test]
    fn runtime_cbids_are_sorted_and_name_correlating_runtime_hooks() {
        assert!(RUNTIME_CBIDS.windows(2).all(|w| w[0].0 < w[1].0));
        for &(cbid, name) in RUNTIME_CBIDS {
            let h = runtime_hook(find, cbid, None).unwrap_or_else(|| panic!("{name} ({cbid})"));
            assert_eq!(h.name.to_bytes(), name.as_bytes());
            assert_eq!(h.info.layer, Layer::Runtime);
            assert!(h.info.class.issues_work(), "{name}");
        }
        // Every correlating runtime hook has its callback id.
        for h in crate::intercept::tables::runtime::TABLE
            .iter()
            .filter(|h| h.info.class.issues_work())
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
        // cudaGetDeviceCount (3): hooked, but it issues no device work.
        assert!(runtime_hook(find, 3, None).is_none());
        assert!(runtime_hook(find, 3, Some(c"cudaGetDeviceCount")).is_none());
        // cudaMemset3D (142) issues work: the id finds its hook.
        assert_eq!(
            runtime_hook(find, 142, None).map(|h| h.name),
            Some(c"cudaMemset3D")
        );
        // An unknown id falls back on the name, but only for correlating runtime calls.
        assert_eq!(
            runtime_hook(find, 9999, Some(c"cudaLaunchKernel")).map(|h| h.name),
            Some(c"cudaLaunchKernel")
        );
        assert!(runtime_hook(find, 9999, Some(c"cudaStreamSynchronize")).is_none());
        assert!(runtime_hook(find, 9999, Some(c"cuLaunchKernel")).is_none());
        assert!(runtime_hook(find, 9999, Some(c"cudaLaunchKernel_v7000")).is_none());
        assert!(runtime_hook(find, 9999, None).is_none());
        // The id wins over the name.
        assert_eq!(
            runtime_hook(find, 505, Some(c"whatever")).map(|h| h.name),
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
}
