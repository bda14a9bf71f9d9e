//! What each NVTX call records: marks and ranges as instant entries (a0 = message text id, a1 =
//! domain, a2 = range id for start/end), thread names as string records. These run on the
//! application's hot path: no allocation, no lock, no panic. Push and pop also return NVTX's levels,
//! and an outermost push range is a step for device timing's sampling.

use super::abi::{EventAttributes, NO_PUSH_POP_TRACKING};
use super::message::{
    attr_message, c_text, domain_id, handle, intern_now, message_id, wide_to_utf8, wide_units, Msg,
};
use super::{Api, WChar};
use crate::hot::{record, state};
use crate::strings::text::{self, MAX_LEN};
use crate::timing;
use causeway_ring::{Kind, StrKind};
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_RANGE: AtomicU64 = AtomicU64::new(1);

#[inline(always)]
fn next_range() -> u64 {
    NEXT_RANGE.fetch_add(1, Ordering::Relaxed)
}

/// Writes one NVTX entry.
///
/// # Safety
/// As `message_id`.
#[inline(always)]
unsafe fn emit(kind: Kind, api: Api, m: Msg, domain: u64, range: u64) {
    let Some(w) = state::writer() else { return };
    // SAFETY: forwarded contract.
    let msg = unsafe { message_id(&text::TEXT, m, Some(w)) };
    text::TEXT.touch(domain, Some(w));
    record::instant(kind, api as u16, msg, domain, range);
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
    unsafe { emit(Kind::Mark, Api::MarkEx, attr_message(a), 0, 0) }
}

pub(super) unsafe extern "C" fn mark_a(m: *const c_char) {
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::Mark, Api::MarkA, Msg::Ascii(m), 0, 0) }
}

pub(super) unsafe extern "C" fn mark_w(m: *const WChar) {
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::Mark, Api::MarkW, Msg::Wide(m), 0, 0) }
}

pub(super) unsafe extern "C" fn range_start_ex(a: *const EventAttributes) -> u64 {
    let id = next_range();
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::RangeStart, Api::RangeStartEx, attr_message(a), 0, id) };
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
    unsafe { emit(Kind::RangeEnd, Api::RangeEnd, Msg::None, 0, id) }
}

pub(super) unsafe extern "C" fn range_push_ex(a: *const EventAttributes) -> c_int {
    let level = push_level(0);
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::RangePush, Api::RangePushEx, attr_message(a), 0, 0) };
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

/// `nvtxNameOsThread`: the name becomes the thread's `StrKind::Thread` record.
unsafe fn name_thread(tid: u32, name: Msg) {
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
    unsafe { name_thread(tid, Msg::Ascii(name)) }
}

pub(super) unsafe extern "C" fn name_os_thread_w(tid: u32, name: *const WChar) {
    // SAFETY: see the note above the callbacks.
    unsafe { name_thread(tid, Msg::Wide(name)) }
}

pub(super) unsafe extern "C" fn domain_mark_ex(d: *const c_void, a: *const EventAttributes) {
    // SAFETY: see the note above the callbacks.
    unsafe {
        emit(
            Kind::Mark,
            Api::DomainMarkEx,
            attr_message(a),
            domain_id(d),
            0,
        )
    }
}

pub(super) unsafe extern "C" fn domain_range_start_ex(
    d: *const c_void,
    a: *const EventAttributes,
) -> u64 {
    let id = next_range();
    // SAFETY: see the note above the callbacks.
    unsafe {
        emit(
            Kind::RangeStart,
            Api::DomainRangeStartEx,
            attr_message(a),
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
    }
}

pub(super) unsafe extern "C" fn domain_range_push_ex(
    d: *const c_void,
    a: *const EventAttributes,
) -> c_int {
    let level = push_level(domain_id(d));
    // SAFETY: see the note above the callbacks.
    unsafe {
        emit(
            Kind::RangePush,
            Api::DomainRangePushEx,
            attr_message(a),
            domain_id(d),
            0,
        )
    };
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
    _d: *const c_void,
    s: *const c_char,
) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    handle(unsafe { intern_now(Msg::Ascii(s)) })
}

pub(super) unsafe extern "C" fn domain_register_string_w(
    _d: *const c_void,
    s: *const WChar,
) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    handle(unsafe { intern_now(Msg::Wide(s)) })
}

/// The handle of a domain is its name's text id, so domains of the same name share one handle.
pub(super) unsafe extern "C" fn domain_create_a(name: *const c_char) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    handle(unsafe { intern_now(Msg::Ascii(name)) })
}

pub(super) unsafe extern "C" fn domain_create_w(name: *const WChar) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    handle(unsafe { intern_now(Msg::Wide(name)) })
}

/// Domains hold nothing to free; their handle stays valid (NVTX leaves reuse after destroy undefined).
pub(super) unsafe extern "C" fn domain_destroy(_d: *const c_void) {}

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
