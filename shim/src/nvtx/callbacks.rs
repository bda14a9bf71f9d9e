//! What each NVTX call records: marks and ranges as instant entries (a0 = message text id, a1 =
//! domain, a2 = range id for start/end) followed, when their attribute structure sets a category,
//! colour or payload, by an `NvtxAttributes` entry; every other call as a complete `Call` entry
//! (naming calls: a0 = what is named, a1 = the name's text id, a2 = `named` kind | domain << 32);
//! thread names also as string records. These run on the application's hot path: no allocation, no
//! lock, no panic. Push and pop also return NVTX's levels, and an outermost push range is a step for
//! device timing's sampling.

use super::abi::*;
use super::message::{
    attr_extras, attr_message, c_text, domain_id, handle, intern_now, message_id, resource_attrs,
    sync_user_message, wide_to_utf8, wide_units, Msg,
};
use super::{Api, WChar};
use crate::hot::record::{self, NvtxAttributes};
use crate::hot::state;
use crate::strings::text::{self, MAX_LEN};
use crate::timing;
use causeway_ring::layout::named;
use causeway_ring::{Kind, StrKind};
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_RANGE: AtomicU64 = AtomicU64::new(1);

#[inline(always)]
fn next_range() -> u64 {
    NEXT_RANGE.fetch_add(1, Ordering::Relaxed)
}

/// Writes one NVTX entry, returning its sequence number.
///
/// # Safety
/// As `message_id`.
#[inline(always)]
unsafe fn emit(kind: Kind, api: Api, m: Msg, domain: u64, range: u64) -> Option<u64> {
    let w = state::writer()?;
    // SAFETY: forwarded contract.
    let msg = unsafe { message_id(&text::TEXT, m, Some(w)) };
    text::TEXT.touch(domain, Some(w));
    record::instant_seq(kind, api as u16, msg, domain, range)
}

/// `emit` for a call with an event attribute structure: its message goes into the entry, its
/// category, colour and payload (if any is set) into an `NvtxAttributes` entry right after.
///
/// # Safety
/// `a` is NULL or a valid attribute structure of at least its declared size.
#[inline(always)]
unsafe fn emit_ex(kind: Kind, api: Api, a: *const EventAttributes, domain: u64, range: u64) {
    // SAFETY: forwarded contract.
    let Some(owner) = (unsafe { emit(kind, api, attr_message(a), domain, range) }) else {
        return;
    };
    // SAFETY: forwarded contract.
    let x = unsafe { attr_extras(a) };
    if !x.is_empty() {
        let attrs = NvtxAttributes {
            owner,
            payload: x.payload,
            category: x.category,
            color: x.color,
            payload_type: x.payload_type,
            ext_count: x.ext_count,
        };
        record::nvtx_attributes(api as u16, &attrs);
    }
}

/// Records a naming call: `what` (a `named` kind) `id` is called `name` (in `domain`, categories).
///
/// # Safety
/// As `message_id`.
unsafe fn name_call(api: Api, id: u64, name: Msg, what: u64, domain: u64) {
    let Some(w) = state::writer() else { return };
    state::ensure_reserved();
    // SAFETY: forwarded contract.
    let text = unsafe { message_id(&text::TEXT, name, Some(w)) };
    text::TEXT.touch(domain, Some(w));
    record::nvtx_call(api as u16, id, text, what | (domain & 0xffff_ffff) << 32);
}

/// Records a call that names nothing (a0 = `a0`, a1 = `text`, a text id, a2 = `a2`).
fn plain_call(api: Api, a0: u64, text: u64, a2: u64) {
    let Some(w) = state::writer() else { return };
    text::TEXT.touch(text, Some(w));
    text::TEXT.touch(a2, Some(w));
    record::nvtx_call(api as u16, a0, text, a2);
}

/// Domains whose push/pop levels one thread tracks at a time.
const TRACKED: usize = 8;

/// Open push ranges per domain on this thread (an entry with depth 0 is free).
struct Levels {
    domain: [Cell<u64>; TRACKED],
    depth: [Cell<u32>; TRACKED],
}

thread_local! {
    static LEVELS: Levels = const {
        Levels { domain: [const { Cell::new(0) }; TRACKED], depth: [const { Cell::new(0) }; TRACKED] }
    };
}

/// The 0-based level of the range being pushed in `domain` (NVTX's push return value), or
/// `NVTX_NO_PUSH_POP_TRACKING` when this thread already tracks `TRACKED` other domains.
pub(super) fn push_level(domain: u64) -> c_int {
    LEVELS
        .try_with(|l| {
            let mut free = None;
            for (d, depth) in l.domain.iter().zip(&l.depth) {
                let n = depth.get();
                if n > 0 && d.get() == domain {
                    depth.set(n.saturating_add(1));
                    return n.min(i32::MAX as u32) as c_int;
                }
                if n == 0 && free.is_none() {
                    free = Some((d, depth));
                }
            }
            match free {
                Some((d, depth)) => {
                    d.set(domain);
                    depth.set(1);
                    // An outermost range: a step, for the events backend's sampling.
                    timing::outer_push(domain);
                    0
                }
                None => NO_PUSH_POP_TRACKING,
            }
        })
        .unwrap_or(NO_PUSH_POP_TRACKING)
}

/// The level of the range being popped in `domain` (NVTX's pop return value); -1 when none is open.
pub(super) fn pop_level(domain: u64) -> c_int {
    LEVELS
        .try_with(|l| {
            for (d, depth) in l.domain.iter().zip(&l.depth) {
                let n = depth.get();
                if n > 0 && d.get() == domain {
                    depth.set(n - 1);
                    if n == 1 {
                        timing::outer_pop(domain);
                    }
                    return (n - 1).min(i32::MAX as u32) as c_int;
                }
            }
            -1
        })
        .unwrap_or(NO_PUSH_POP_TRACKING)
}

// SAFETY (all callbacks): NVTX passes the application's arguments through unchanged; the NVTX API
// requires strings to be NULL or NUL-terminated and attribute pointers to be NULL or valid.

pub(super) unsafe extern "C" fn mark_ex(a: *const EventAttributes) {
    // SAFETY: see the note above the callbacks.
    unsafe { emit_ex(Kind::Mark, Api::MarkEx, a, 0, 0) }
}

pub(super) unsafe extern "C" fn mark_a(m: *const c_char) {
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::Mark, Api::MarkA, Msg::Ascii(m), 0, 0) };
}

pub(super) unsafe extern "C" fn mark_w(m: *const WChar) {
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::Mark, Api::MarkW, Msg::Wide(m), 0, 0) };
}

pub(super) unsafe extern "C" fn range_start_ex(a: *const EventAttributes) -> u64 {
    let id = next_range();
    // SAFETY: see the note above the callbacks.
    unsafe { emit_ex(Kind::RangeStart, Api::RangeStartEx, a, 0, id) };
    id
}

pub(super) unsafe extern "C" fn range_start_a(m: *const c_char) -> u64 {
    let id = next_range();
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::RangeStart, Api::RangeStartA, Msg::Ascii(m), 0, id) };
    id
}

pub(super) unsafe extern "C" fn range_start_w(m: *const WChar) -> u64 {
    let id = next_range();
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::RangeStart, Api::RangeStartW, Msg::Wide(m), 0, id) };
    id
}

pub(super) unsafe extern "C" fn range_end(id: u64) {
    // SAFETY: no pointers involved.
    unsafe { emit(Kind::RangeEnd, Api::RangeEnd, Msg::None, 0, id) };
}

pub(super) unsafe extern "C" fn range_push_ex(a: *const EventAttributes) -> c_int {
    let level = push_level(0);
    // SAFETY: see the note above the callbacks.
    unsafe { emit_ex(Kind::RangePush, Api::RangePushEx, a, 0, 0) };
    level
}

pub(super) unsafe extern "C" fn range_push_a(m: *const c_char) -> c_int {
    let level = push_level(0);
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::RangePush, Api::RangePushA, Msg::Ascii(m), 0, 0) };
    level
}

pub(super) unsafe extern "C" fn range_push_w(m: *const WChar) -> c_int {
    let level = push_level(0);
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::RangePush, Api::RangePushW, Msg::Wide(m), 0, 0) };
    level
}

pub(super) unsafe extern "C" fn range_pop() -> c_int {
    let level = pop_level(0);
    // SAFETY: no pointers involved.
    unsafe { emit(Kind::RangePop, Api::RangePop, Msg::None, 0, 0) };
    level
}

/// `nvtxNameOsThread`: the name becomes the thread's `StrKind::Thread` record, and a naming call.
unsafe fn name_thread(api: Api, tid: u32, name: Msg) {
    // SAFETY: see the note above the callbacks.
    unsafe { name_call(api, tid as u64, name, named::THREAD, 0) };
    let Some(w) = state::writer() else { return };
    state::ensure_reserved();
    let mut buf = [0u8; MAX_LEN];
    let bytes: &[u8] = match name {
        // SAFETY: see the note above the callbacks.
        Msg::Ascii(p) if !p.is_null() => unsafe { c_text(p) },
        Msg::Wide(p) if !p.is_null() => {
            // SAFETY: see the note above the callbacks.
            let n = wide_to_utf8(unsafe { wide_units(p) }, &mut buf);
            &buf[..n]
        }
        _ => return,
    };
    w.intern(StrKind::Thread, tid as u64, 0, bytes);
}

pub(super) unsafe extern "C" fn name_os_thread_a(tid: u32, name: *const c_char) {
    // SAFETY: see the note above the callbacks.
    unsafe { name_thread(Api::NameOsThreadA, tid, Msg::Ascii(name)) }
}

pub(super) unsafe extern "C" fn name_os_thread_w(tid: u32, name: *const WChar) {
    // SAFETY: see the note above the callbacks.
    unsafe { name_thread(Api::NameOsThreadW, tid, Msg::Wide(name)) }
}

pub(super) unsafe extern "C" fn domain_mark_ex(d: *const c_void, a: *const EventAttributes) {
    // SAFETY: see the note above the callbacks.
    unsafe { emit_ex(Kind::Mark, Api::DomainMarkEx, a, domain_id(d), 0) }
}

pub(super) unsafe extern "C" fn domain_range_start_ex(
    d: *const c_void,
    a: *const EventAttributes,
) -> u64 {
    let id = next_range();
    // SAFETY: see the note above the callbacks.
    unsafe {
        emit_ex(
            Kind::RangeStart,
            Api::DomainRangeStartEx,
            a,
            domain_id(d),
            id,
        )
    };
    id
}

pub(super) unsafe extern "C" fn domain_range_end(d: *const c_void, id: u64) {
    // SAFETY: no message pointers involved.
    unsafe {
        emit(
            Kind::RangeEnd,
            Api::DomainRangeEnd,
            Msg::None,
            domain_id(d),
            id,
        )
    };
}

pub(super) unsafe extern "C" fn domain_range_push_ex(
    d: *const c_void,
    a: *const EventAttributes,
) -> c_int {
    let level = push_level(domain_id(d));
    // SAFETY: see the note above the callbacks.
    unsafe { emit_ex(Kind::RangePush, Api::DomainRangePushEx, a, domain_id(d), 0) };
    level
}

pub(super) unsafe extern "C" fn domain_range_pop(d: *const c_void) -> c_int {
    let level = pop_level(domain_id(d));
    // SAFETY: no message pointers involved.
    unsafe {
        emit(
            Kind::RangePop,
            Api::DomainRangePop,
            Msg::None,
            domain_id(d),
            0,
        )
    };
    level
}

/// Registered strings are process-wide (one id per text, whatever the domain).
pub(super) unsafe extern "C" fn domain_register_string_a(
    d: *const c_void,
    s: *const c_char,
) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    let id = unsafe { intern_now(Msg::Ascii(s)) };
    plain_call(Api::DomainRegisterStringA, id, id, domain_id(d));
    handle(id)
}

pub(super) unsafe extern "C" fn domain_register_string_w(
    d: *const c_void,
    s: *const WChar,
) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    let id = unsafe { intern_now(Msg::Wide(s)) };
    plain_call(Api::DomainRegisterStringW, id, id, domain_id(d));
    handle(id)
}

/// The handle of a domain is its name's text id, so domains of the same name share one handle.
pub(super) unsafe extern "C" fn domain_create_a(name: *const c_char) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    let id = unsafe { intern_now(Msg::Ascii(name)) };
    plain_call(Api::DomainCreateA, id, id, 0);
    handle(id)
}

pub(super) unsafe extern "C" fn domain_create_w(name: *const WChar) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    let id = unsafe { intern_now(Msg::Wide(name)) };
    plain_call(Api::DomainCreateW, id, id, 0);
    handle(id)
}

/// Domains hold nothing to free; their handle stays valid (NVTX leaves reuse after destroy undefined).
pub(super) unsafe extern "C" fn domain_destroy(d: *const c_void) {
    plain_call(Api::DomainDestroy, domain_id(d), 0, 0);
}

/// `nvtxInitialize`: NVTX is already initialised when a callback runs; only recorded.
pub(super) unsafe extern "C" fn initialize(_reserved: *const c_void) {
    plain_call(Api::Initialize, 0, 0, 0);
}

pub(super) unsafe extern "C" fn name_category_a(category: u32, name: *const c_char) {
    // SAFETY: see the note above the callbacks.
    unsafe {
        name_call(
            Api::NameCategoryA,
            category as u64,
            Msg::Ascii(name),
            named::CATEGORY,
            0,
        )
    }
}

pub(super) unsafe extern "C" fn name_category_w(category: u32, name: *const WChar) {
    // SAFETY: see the note above the callbacks.
    unsafe {
        name_call(
            Api::NameCategoryW,
            category as u64,
            Msg::Wide(name),
            named::CATEGORY,
            0,
        )
    }
}

pub(super) unsafe extern "C" fn domain_name_category_a(
    d: *const c_void,
    category: u32,
    name: *const c_char,
) {
    let (api, what) = (Api::DomainNameCategoryA, named::CATEGORY);
    // SAFETY: see the note above the callbacks.
    unsafe { name_call(api, category as u64, Msg::Ascii(name), what, domain_id(d)) }
}

pub(super) unsafe extern "C" fn domain_name_category_w(
    d: *const c_void,
    category: u32,
    name: *const WChar,
) {
    let (api, what) = (Api::DomainNameCategoryW, named::CATEGORY);
    // SAFETY: see the note above the callbacks.
    unsafe { name_call(api, category as u64, Msg::Wide(name), what, domain_id(d)) }
}

/// Handles of resources and user sync objects: never NULL (NVTX's own no-op answer), never reused.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

/// `nvtxDomainResourceCreate`: a resource whose identifier is a CUDA device, context, stream or event
/// names it, like the `nvtxNameCu*`/`nvtxNameCuda*` calls; any other is recorded with kind `OTHER`.
pub(super) unsafe extern "C" fn domain_resource_create(
    d: *const c_void,
    a: *mut ResourceAttributes,
) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    let (ty, id, msg) = unsafe { resource_attrs(a) };
    let what = match ty {
        RESOURCE_CUDA_DEVICE | RESOURCE_CUDART_DEVICE => named::DEVICE,
        RESOURCE_CUDA_CONTEXT => named::CONTEXT,
        RESOURCE_CUDA_STREAM | RESOURCE_CUDART_STREAM => named::STREAM,
        RESOURCE_CUDA_EVENT | RESOURCE_CUDART_EVENT => named::EVENT,
        _ => named::OTHER,
    };
    // SAFETY: see the note above the callbacks.
    unsafe { name_call(Api::DomainResourceCreate, id, msg, what, domain_id(d)) };
    NEXT_HANDLE.fetch_add(1, Ordering::Relaxed) as usize as *mut c_void
}

pub(super) unsafe extern "C" fn domain_resource_destroy(h: *mut c_void) {
    plain_call(Api::DomainResourceDestroy, h as usize as u64, 0, 0);
}

/// One `nvtxName<Object>A`/`W` pair of the CUDA and CUDART modules: the object's handle (a pointer or
/// a device ordinal) is named.
macro_rules! name_object {
    ($a:ident, $w:ident, $api_a:ident, $api_w:ident, $handle:ty, $what:expr) => {
        pub(super) unsafe extern "C" fn $a(h: $handle, name: *const c_char) {
            // SAFETY: see the note above the callbacks.
            unsafe { name_call(Api::$api_a, h as usize as u64, Msg::Ascii(name), $what, 0) }
        }

        pub(super) unsafe extern "C" fn $w(h: $handle, name: *const WChar) {
            // SAFETY: see the note above the callbacks.
            unsafe { name_call(Api::$api_w, h as usize as u64, Msg::Wide(name), $what, 0) }
        }
    };
}

// Device ordinals are C ints (`CUdevice`, cudart's `int device`): kept as their 32 bits.
name_object!(
    name_cu_device_a,
    name_cu_device_w,
    NameCuDeviceA,
    NameCuDeviceW,
    u32,
    named::DEVICE
);
name_object!(
    name_cu_context_a,
    name_cu_context_w,
    NameCuContextA,
    NameCuContextW,
    *mut c_void,
    named::CONTEXT
);
name_object!(
    name_cu_stream_a,
    name_cu_stream_w,
    NameCuStreamA,
    NameCuStreamW,
    *mut c_void,
    named::STREAM
);
name_object!(
    name_cu_event_a,
    name_cu_event_w,
    NameCuEventA,
    NameCuEventW,
    *mut c_void,
    named::EVENT
);
name_object!(
    name_cuda_device_a,
    name_cuda_device_w,
    NameCudaDeviceA,
    NameCudaDeviceW,
    u32,
    named::DEVICE
);
name_object!(
    name_cuda_stream_a,
    name_cuda_stream_w,
    NameCudaStreamA,
    NameCudaStreamW,
    *mut c_void,
    named::STREAM
);
name_object!(
    name_cuda_event_a,
    name_cuda_event_w,
    NameCudaEventA,
    NameCudaEventW,
    *mut c_void,
    named::EVENT
);

/// `nvtxDomainSyncUserCreate`: a0 = the new handle, a1 = its message's text id, a2 = the domain.
pub(super) unsafe extern "C" fn sync_user_create(
    d: *const c_void,
    a: *const SyncUserAttributes,
) -> *mut c_void {
    let h = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
    if let Some(w) = state::writer() {
        // SAFETY: see the note above the callbacks.
        let text = unsafe { message_id(&text::TEXT, sync_user_message(a), Some(w)) };
        plain_call(Api::DomainSyncUserCreate, h, text, domain_id(d));
    }
    h as usize as *mut c_void
}

/// The user sync object calls that take only the handle: a0 = the handle.
macro_rules! sync_user {
    ($($f:ident => $api:ident),* $(,)?) => {$(
        pub(super) unsafe extern "C" fn $f(h: *mut c_void) {
            plain_call(Api::$api, h as usize as u64, 0, 0);
        }
    )*};
}

sync_user!(
    sync_user_destroy => DomainSyncUserDestroy,
    sync_user_acquire_start => DomainSyncUserAcquireStart,
    sync_user_acquire_failed => DomainSyncUserAcquireFailed,
    sync_user_acquire_success => DomainSyncUserAcquireSuccess,
    sync_user_releasing => DomainSyncUserReleasing,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_and_pop_return_nvtx_levels_per_domain() {
        std::thread::spawn(|| {
            assert_eq!(push_level(0), 0);
            assert_eq!(push_level(0), 1);
            assert_eq!(push_level(5), 0);
            assert_eq!(pop_level(0), 1);
            assert_eq!(pop_level(5), 0);
            assert_eq!(pop_level(0), 0);
            assert_eq!(pop_level(0), -1);
            assert_eq!(pop_level(5), -1);
            for d in 0..TRACKED as u64 {
                assert_eq!(push_level(100 + d), 0);
            }
            assert_eq!(push_level(7), NO_PUSH_POP_TRACKING);
            assert_eq!(pop_level(100), 0);
            assert_eq!(push_level(7), 0);
        })
        .join()
        .unwrap();
    }
}
