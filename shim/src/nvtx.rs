//! NVTX v3 injection. Every copy of the header-only NVTX in the process reads `NVTX_INJECTION64_PATH`
//! on its first call, dlopens that library and calls its `InitializeInjectionNvtx2`; `announce` points
//! the variable at this shim, and `InitializeInjectionNvtx2` writes our callbacks into NVTX's core
//! (`NVTX_CB_MODULE_CORE`) and domain (`NVTX_CB_MODULE_CORE2`) function tables. The callbacks record
//! marks and ranges as instant entries: a0 = message text id (0: none), a1 = domain (0: the default
//! domain; otherwise the domain name's text id, which is also the domain handle), a2 = range id for
//! start/end. They run on the application's hot path: no allocation, no lock, no panic.
//!
//! Layouts and ids come from the NVTX 3 headers (`nvtxDetail/nvtxTypes.h`, `nvtxDetail/nvtxImpl.h`,
//! `nvToolsExt.h`); the numbers are repeated here next to each use.

use crate::hot::{record, state};
use crate::strings::text::{self, Table, MAX_LEN};
use causeway_ring::layout::{ApiInfo, Class, Layer};
use causeway_ring::writer::FixedBuf;
use causeway_ring::{Kind, StrKind, Writer};
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_uint, c_void, OsStr};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

type WChar = libc::wchar_t;

/// API ids of the NVTX entry points that write entries.
#[derive(Clone, Copy)]
#[repr(u16)]
enum Api {
    MarkEx = 1000,
    MarkA,
    MarkW,
    RangeStartEx,
    RangeStartA,
    RangeStartW,
    RangeEnd,
    RangePushEx,
    RangePushA,
    RangePushW,
    RangePop,
    DomainMarkEx,
    DomainRangeStartEx,
    DomainRangeEnd,
    DomainRangePushEx,
    DomainRangePop,
}

const NAMES: [(Api, &str); 16] = [
    (Api::MarkEx, "nvtxMarkEx"),
    (Api::MarkA, "nvtxMarkA"),
    (Api::MarkW, "nvtxMarkW"),
    (Api::RangeStartEx, "nvtxRangeStartEx"),
    (Api::RangeStartA, "nvtxRangeStartA"),
    (Api::RangeStartW, "nvtxRangeStartW"),
    (Api::RangeEnd, "nvtxRangeEnd"),
    (Api::RangePushEx, "nvtxRangePushEx"),
    (Api::RangePushA, "nvtxRangePushA"),
    (Api::RangePushW, "nvtxRangePushW"),
    (Api::RangePop, "nvtxRangePop"),
    (Api::DomainMarkEx, "nvtxDomainMarkEx"),
    (Api::DomainRangeStartEx, "nvtxDomainRangeStartEx"),
    (Api::DomainRangeEnd, "nvtxDomainRangeEnd"),
    (Api::DomainRangePushEx, "nvtxDomainRangePushEx"),
    (Api::DomainRangePop, "nvtxDomainRangePop"),
];

const INFO: ApiInfo = ApiInfo {
    layer: Layer::Nvtx,
    class: Class::Other,
    level: 1,
};

/// The API ids and names of the NVTX entry points, interned when a ring is created.
pub fn apis() -> impl Iterator<Item = (u16, &'static str, ApiInfo)> {
    NAMES.iter().map(|&(api, name)| (api as u16, name, INFO))
}

// ---- NVTX ABI (nvtxDetail/nvtxTypes.h, nvToolsExt.h) ------------------------------------------------

/// `NVTX_ETID_CALLBACKS` and `NVTX_ETID_VERSIONINFO` (`enum NvtxExportTableID`).
const ETID_CALLBACKS: u32 = 1;
const ETID_VERSIONINFO: u32 = 3;
/// `NVTX_CB_MODULE_CORE` and `NVTX_CB_MODULE_CORE2` (`enum NvtxCallbackModule`).
const MODULE_CORE: c_int = 1;
const MODULE_CORE2: c_int = 5;
/// `NVTX_VERSION` of the headers this was written against.
const NVTX_VERSION: u32 = 3;
/// `NVTX_NO_PUSH_POP_TRACKING`: what push and pop return when levels are not tracked.
const NO_PUSH_POP_TRACKING: c_int = -2;
/// `NVTX_MESSAGE_TYPE_ASCII`, `_UNICODE`, `_REGISTERED` (`enum nvtxMessageType_t`).
const MESSAGE_ASCII: i32 = 1;
const MESSAGE_UNICODE: i32 = 2;
const MESSAGE_REGISTERED: i32 = 3;

/// `NvtxGetExportTableFunc_t`: `const void *(*)(uint32_t exportTableId)`.
type GetExportTable = unsafe extern "C" fn(u32) -> *const c_void;
/// `NvtxFunctionTable`: an array of pointers to NVTX's function-pointer slots.
type FunctionTable = *mut *mut *const ();
/// `NvtxExportTableCallbacks::GetModuleFunctionTable`.
type GetModuleFunctionTable = unsafe extern "C" fn(c_int, *mut FunctionTable, *mut c_uint) -> c_int;

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table: Option<GetModuleFunctionTable>,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
struct ExportTableVersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: Option<unsafe extern "C" fn(u32)>,
}

/// `nvtxEventAttributes_v2` (v1 has the same layout). The payload union holds a double, so it is
/// 8-aligned: `message_type` is at 32 and `message` at 40, 48 bytes in all.
#[repr(C)]
pub struct EventAttributes {
    pub version: u16,
    pub size: u16,
    pub category: u32,
    pub color_type: i32,
    pub color: u32,
    pub payload_type: i32,
    pub reserved0: i32,
    pub payload: u64,
    pub message_type: i32,
    /// `nvtxMessageValue_t`: `const char *`, `const wchar_t *` or `nvtxStringHandle_t`.
    pub message: *const c_void,
}

// ---- messages ----------------------------------------------------------------------------------------

/// A message as the application passed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Msg {
    None,
    Ascii(*const c_char),
    Wide(*const WChar),
    Registered(u64),
}

/// Handle value returned when a domain or registered string could not be interned: never NULL, never
/// an id. A domain with this handle is recorded as domain `u64::MAX` (unnamed, but kept apart from the
/// default domain); a registered string with it as "no message".
const UNNAMED: u64 = u64::MAX;

fn handle(id: u64) -> *mut c_void {
    (if id == 0 { UNNAMED } else { id }) as usize as *mut c_void
}

fn domain_id(d: *const c_void) -> u64 {
    d as usize as u64
}

/// The message of an event attribute structure, reading only fields inside its declared `size`.
///
/// # Safety
/// `a` is NULL or points to at least `(*a).size` readable bytes, as the NVTX API requires.
unsafe fn attr_message(a: *const EventAttributes) -> Msg {
    if a.is_null() {
        return Msg::None;
    }
    // SAFETY: the first four bytes (version, size) are always present.
    let size = unsafe { std::ptr::addr_of!((*a).size).read_unaligned() } as usize;
    if size < std::mem::offset_of!(EventAttributes, message) + std::mem::size_of::<*const c_void>()
    {
        return Msg::None;
    }
    // SAFETY: both fields lie within the `size` bytes the caller declared.
    let (ty, v) = unsafe {
        (
            std::ptr::addr_of!((*a).message_type).read_unaligned(),
            std::ptr::addr_of!((*a).message).read_unaligned(),
        )
    };
    match ty {
        MESSAGE_ASCII => Msg::Ascii(v as *const c_char),
        MESSAGE_UNICODE => Msg::Wide(v as *const WChar),
        MESSAGE_REGISTERED => Msg::Registered(v as usize as u64),
        _ => Msg::None,
    }
}

/// The bytes of a C string, at most `MAX_LEN`; a cut never splits a UTF-8 sequence.
///
/// # Safety
/// `p` is a valid NUL-terminated string.
unsafe fn c_text<'a>(p: *const c_char) -> &'a [u8] {
    // SAFETY: strnlen reads at most MAX_LEN bytes, stopping at the NUL the caller guarantees.
    let n = unsafe { libc::strnlen(p, MAX_LEN) };
    // SAFETY: the n bytes before the NUL (or the cap) are readable.
    let b = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
    if n == MAX_LEN {
        if let Err(e) = std::str::from_utf8(b) {
            if e.error_len().is_none() {
                return &b[..e.valid_up_to()];
            }
        }
    }
    b
}

/// Converts wide characters to UTF-8 into `out`, stopping when the next character would not fit.
/// Takes UTF-32 (Linux's `wchar_t`) and also pairs UTF-16 surrogates; anything invalid becomes U+FFFD.
pub fn wide_to_utf8(units: impl Iterator<Item = u32>, out: &mut [u8]) -> usize {
    let mut units = units.peekable();
    let mut n = 0;
    while let Some(u) = units.next() {
        let c = match u {
            0xd800..=0xdbff => match units.peek() {
                Some(&lo @ 0xdc00..=0xdfff) => {
                    units.next();
                    char::from_u32(0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00))
                }
                _ => None,
            },
            _ => char::from_u32(u),
        }
        .unwrap_or(char::REPLACEMENT_CHARACTER);
        let Some(dst) = out.get_mut(n..n + c.len_utf8()) else {
            break;
        };
        c.encode_utf8(dst);
        n += c.len_utf8();
    }
    n
}

/// The units of a NUL-terminated wide string, never reading past its NUL nor past `MAX_LEN + 1`
/// units.
///
/// # Safety
/// `p` is a valid NUL-terminated wide string.
unsafe fn wide_units(p: *const WChar) -> impl Iterator<Item = u32> {
    let mut i = 0usize;
    std::iter::from_fn(move || {
        if i > MAX_LEN {
            return None;
        }
        // SAFETY: units up to and including the NUL are readable; `i` stops at the NUL (it is not
        // advanced past it, so every later call reads the NUL again).
        let u = unsafe { p.add(i).read() };
        if u == 0 {
            return None;
        }
        i += 1;
        Some(u as u32)
    })
}

/// The text id of a message, interned in `t` (and recorded in `w`'s ring).
///
/// # Safety
/// Pointers in `m` are NULL or valid NUL-terminated strings.
unsafe fn message_id<const S: usize, const A: usize>(
    t: &Table<S, A>,
    m: Msg,
    w: Option<Writer>,
) -> u64 {
    match m {
        Msg::None => 0,
        Msg::Ascii(p) if p.is_null() => 0,
        Msg::Wide(p) if p.is_null() => 0,
        // SAFETY: a valid string, per this function's contract.
        Msg::Ascii(p) => t.intern(unsafe { c_text(p) }, w),
        Msg::Wide(p) => {
            let mut buf = [0u8; MAX_LEN];
            // SAFETY: as above.
            let n = wide_to_utf8(unsafe { wide_units(p) }, &mut buf);
            t.intern(&buf[..n], w)
        }
        Msg::Registered(UNNAMED) => 0,
        Msg::Registered(id) => {
            t.touch(id, w);
            id
        }
    }
}

/// Interns the text of `m` in the process-wide table whether or not a ring is active (handles must stay
/// valid), returning its id.
///
/// # Safety
/// As `message_id`.
unsafe fn intern_now(m: Msg) -> u64 {
    // SAFETY: forwarded contract.
    unsafe { message_id(&text::TEXT, m, state::writer()) }
}

// ---- recording ---------------------------------------------------------------------------------------

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
fn push_level(domain: u64) -> c_int {
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
                    crate::timing::outer_push(domain);
                    0
                }
                None => NO_PUSH_POP_TRACKING,
            }
        })
        .unwrap_or(NO_PUSH_POP_TRACKING)
}

/// The level of the range being popped in `domain` (NVTX's pop return value); -1 when none is open.
fn pop_level(domain: u64) -> c_int {
    LEVELS
        .try_with(|l| {
            for (d, depth) in l.domain.iter().zip(&l.depth) {
                let n = depth.get();
                if n > 0 && d.get() == domain {
                    depth.set(n - 1);
                    if n == 1 {
                        crate::timing::outer_pop(domain);
                    }
                    return (n - 1).min(i32::MAX as u32) as c_int;
                }
            }
            -1
        })
        .unwrap_or(NO_PUSH_POP_TRACKING)
}

// ---- callbacks (signatures: nvtxDetail/nvtxTypes.h, `*_impl_fntype`) ----------------------------------
// SAFETY (all callbacks): NVTX passes the application's arguments through unchanged; the NVTX API
// requires strings to be NULL or NUL-terminated and attribute pointers to be NULL or valid.

unsafe extern "C" fn mark_ex(a: *const EventAttributes) {
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::Mark, Api::MarkEx, attr_message(a), 0, 0) }
}

unsafe extern "C" fn mark_a(m: *const c_char) {
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::Mark, Api::MarkA, Msg::Ascii(m), 0, 0) }
}

unsafe extern "C" fn mark_w(m: *const WChar) {
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::Mark, Api::MarkW, Msg::Wide(m), 0, 0) }
}

unsafe extern "C" fn range_start_ex(a: *const EventAttributes) -> u64 {
    let id = next_range();
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::RangeStart, Api::RangeStartEx, attr_message(a), 0, id) };
    id
}

unsafe extern "C" fn range_start_a(m: *const c_char) -> u64 {
    let id = next_range();
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::RangeStart, Api::RangeStartA, Msg::Ascii(m), 0, id) };
    id
}

unsafe extern "C" fn range_start_w(m: *const WChar) -> u64 {
    let id = next_range();
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::RangeStart, Api::RangeStartW, Msg::Wide(m), 0, id) };
    id
}

unsafe extern "C" fn range_end(id: u64) {
    // SAFETY: no pointers involved.
    unsafe { emit(Kind::RangeEnd, Api::RangeEnd, Msg::None, 0, id) }
}

unsafe extern "C" fn range_push_ex(a: *const EventAttributes) -> c_int {
    let level = push_level(0);
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::RangePush, Api::RangePushEx, attr_message(a), 0, 0) };
    level
}

unsafe extern "C" fn range_push_a(m: *const c_char) -> c_int {
    let level = push_level(0);
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::RangePush, Api::RangePushA, Msg::Ascii(m), 0, 0) };
    level
}

unsafe extern "C" fn range_push_w(m: *const WChar) -> c_int {
    let level = push_level(0);
    // SAFETY: see the note above the callbacks.
    unsafe { emit(Kind::RangePush, Api::RangePushW, Msg::Wide(m), 0, 0) };
    level
}

unsafe extern "C" fn range_pop() -> c_int {
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

unsafe extern "C" fn name_os_thread_a(tid: u32, name: *const c_char) {
    // SAFETY: see the note above the callbacks.
    unsafe { name_thread(tid, Msg::Ascii(name)) }
}

unsafe extern "C" fn name_os_thread_w(tid: u32, name: *const WChar) {
    // SAFETY: see the note above the callbacks.
    unsafe { name_thread(tid, Msg::Wide(name)) }
}

unsafe extern "C" fn domain_mark_ex(d: *const c_void, a: *const EventAttributes) {
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

unsafe extern "C" fn domain_range_start_ex(d: *const c_void, a: *const EventAttributes) -> u64 {
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

unsafe extern "C" fn domain_range_end(d: *const c_void, id: u64) {
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

unsafe extern "C" fn domain_range_push_ex(d: *const c_void, a: *const EventAttributes) -> c_int {
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

unsafe extern "C" fn domain_range_pop(d: *const c_void) -> c_int {
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
unsafe extern "C" fn domain_register_string_a(_d: *const c_void, s: *const c_char) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    handle(unsafe { intern_now(Msg::Ascii(s)) })
}

unsafe extern "C" fn domain_register_string_w(_d: *const c_void, s: *const WChar) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    handle(unsafe { intern_now(Msg::Wide(s)) })
}

/// The handle of a domain is its name's text id, so domains of the same name share one handle.
unsafe extern "C" fn domain_create_a(name: *const c_char) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    handle(unsafe { intern_now(Msg::Ascii(name)) })
}

unsafe extern "C" fn domain_create_w(name: *const WChar) -> *mut c_void {
    // SAFETY: see the note above the callbacks.
    handle(unsafe { intern_now(Msg::Wide(name)) })
}

/// Domains hold nothing to free; their handle stays valid (NVTX leaves reuse after destroy undefined).
unsafe extern "C" fn domain_destroy(_d: *const c_void) {}

// ---- injection entry point ---------------------------------------------------------------------------

/// (callback id, function) pairs for `NVTX_CB_MODULE_CORE` (`enum NvtxCallbackIdCore`). 12 and 13
/// (NameCategoryA/W) stay NVTX's no-ops.
fn core_callbacks() -> [(u32, *const ()); 13] {
    [
        (1, mark_ex as *const ()),           // NVTX_CBID_CORE_MarkEx
        (2, mark_a as *const ()),            // NVTX_CBID_CORE_MarkA
        (3, mark_w as *const ()),            // NVTX_CBID_CORE_MarkW
        (4, range_start_ex as *const ()),    // NVTX_CBID_CORE_RangeStartEx
        (5, range_start_a as *const ()),     // NVTX_CBID_CORE_RangeStartA
        (6, range_start_w as *const ()),     // NVTX_CBID_CORE_RangeStartW
        (7, range_end as *const ()),         // NVTX_CBID_CORE_RangeEnd
        (8, range_push_ex as *const ()),     // NVTX_CBID_CORE_RangePushEx
        (9, range_push_a as *const ()),      // NVTX_CBID_CORE_RangePushA
        (10, range_push_w as *const ()),     // NVTX_CBID_CORE_RangePushW
        (11, range_pop as *const ()),        // NVTX_CBID_CORE_RangePop
        (14, name_os_thread_a as *const ()), // NVTX_CBID_CORE_NameOsThreadA
        (15, name_os_thread_w as *const ()), // NVTX_CBID_CORE_NameOsThreadW
    ]
}

/// (callback id, function) pairs for `NVTX_CB_MODULE_CORE2` (`enum NvtxCallbackIdCore2`). 6-9
/// (resources, category names) and 15 (Initialize) stay NVTX's no-ops.
fn core2_callbacks() -> [(u32, *const ()); 10] {
    [
        (1, domain_mark_ex as *const ()), // NVTX_CBID_CORE2_DomainMarkEx
        (2, domain_range_start_ex as *const ()), // NVTX_CBID_CORE2_DomainRangeStartEx
        (3, domain_range_end as *const ()), // NVTX_CBID_CORE2_DomainRangeEnd
        (4, domain_range_push_ex as *const ()), // NVTX_CBID_CORE2_DomainRangePushEx
        (5, domain_range_pop as *const ()), // NVTX_CBID_CORE2_DomainRangePop
        (10, domain_register_string_a as *const ()), // NVTX_CBID_CORE2_DomainRegisterStringA
        (11, domain_register_string_w as *const ()), // NVTX_CBID_CORE2_DomainRegisterStringW
        (12, domain_create_a as *const ()), // NVTX_CBID_CORE2_DomainCreateA
        (13, domain_create_w as *const ()), // NVTX_CBID_CORE2_DomainCreateW
        (14, domain_destroy as *const ()), // NVTX_CBID_CORE2_DomainDestroy
    ]
}

/// Writes `fns` into the slots of one module's function table. False if NVTX has no such table.
///
/// # Safety
/// `get_table` is NVTX's `GetModuleFunctionTable`.
unsafe fn install(
    get_table: GetModuleFunctionTable,
    module: c_int,
    fns: &[(u32, *const ())],
) -> bool {
    let mut table: FunctionTable = std::ptr::null_mut();
    let mut size: c_uint = 0;
    // SAFETY: valid out-pointers.
    if unsafe { get_table(module, &mut table, &mut size) } == 0 || table.is_null() {
        return false;
    }
    for &(cbid, f) in fns {
        // `size` counts the table's entries, index 0 (always NULL) included.
        if cbid >= size {
            continue;
        }
        // SAFETY: cbid < size, so the entry is inside the table NVTX handed out.
        let slot = unsafe { *table.add(cbid as usize) };
        if !slot.is_null() {
            // SAFETY: the entry points at NVTX's function-pointer slot for this callback id; NVTX's
            // init holds every other caller off until it returns (nvtxInitOnce).
            unsafe { slot.write(f) };
        }
    }
    true
}

/// NVTX's injection entry point (`NvtxInitializeInjectionNvtxFunc_t`), called once by each NVTX copy
/// in the process on its first NVTX call. Returns 1 when attached, 0 to leave NVTX to its no-ops.
///
/// # Safety
/// `get_export_table` is NULL or NVTX's `nvtxGetExportTable`.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx2(
    get_export_table: Option<GetExportTable>,
) -> c_int {
    let Some(get) = get_export_table else {
        return 0;
    };
    // SAFETY: NVTX's export-table getter returns NULL or a table of the requested kind that starts
    // with its size; fields are read only when that size covers them.
    unsafe {
        let vi = get(ETID_VERSIONINFO) as *const ExportTableVersionInfo;
        if !vi.is_null() && (*vi).struct_size >= std::mem::size_of::<ExportTableVersionInfo>() {
            if let Some(set) = (*vi).set_injection_nvtx_version {
                set(NVTX_VERSION);
            }
        }
        let cb = get(ETID_CALLBACKS) as *const ExportTableCallbacks;
        if cb.is_null() || (*cb).struct_size < std::mem::size_of::<ExportTableCallbacks>() {
            return 0;
        }
        let Some(get_table) = (*cb).get_module_function_table else {
            return 0;
        };
        if !install(get_table, MODULE_CORE, &core_callbacks()) {
            return 0;
        }
        install(get_table, MODULE_CORE2, &core2_callbacks());
    }
    1
}

// ---- start-up ------------------------------------------------------------------------------------------

// Unit tests never run the start-up constructor, which is what calls `announce`.
#[cfg_attr(test, allow(dead_code))]
const ENV: &str = "NVTX_INJECTION64_PATH";

#[derive(Debug, PartialEq, Eq)]
enum Plan {
    /// Point the variable at the shim.
    Set,
    /// It already names the shim.
    Keep,
    /// It names another injection (a profiler's): leave it and say so.
    Conflict,
}

fn plan(current: Option<&OsStr>, own: &Path) -> Plan {
    match current {
        None => Plan::Set,
        Some(v) if v.is_empty() => Plan::Set,
        Some(v) if v == own.as_os_str() => Plan::Keep,
        Some(v) if std::fs::canonicalize(v).is_ok_and(|p| p == own) => Plan::Keep,
        Some(_) => Plan::Conflict,
    }
}

#[cfg_attr(test, allow(dead_code))]
fn say(parts: &[&[u8]]) {
    let mut m = FixedBuf::default();
    m.push(b"causeway: ");
    for p in parts {
        m.push(p);
    }
    m.push(b"\n");
    let b = m.as_bytes();
    // SAFETY: writing a valid buffer to stderr.
    unsafe { libc::write(2, b.as_ptr() as *const c_void, b.len()) };
}

/// Makes NVTX load this shim as its injection, in this process and its children (called once at
/// start-up, after the ring is active) — unless another tool's injection is already configured.
#[cfg_attr(test, allow(dead_code))]
pub fn announce() {
    use std::os::unix::ffi::OsStrExt;
    let Some(own) = crate::resolve::own_path() else {
        return say(&[b"cannot find the shim's own path; NVTX ranges will not be recorded"]);
    };
    let current = std::env::var_os(ENV);
    match plan(current.as_deref(), &own) {
        Plan::Keep => {}
        Plan::Conflict => {
            let v = current.unwrap_or_default();
            say(&[
                ENV.as_bytes(),
                b" already points to ",
                v.as_bytes(),
                b"; NVTX ranges will not be recorded",
            ]);
        }
        Plan::Set => {
            let (Ok(name), Ok(value)) = (
                std::ffi::CString::new(ENV),
                std::ffi::CString::new(own.as_os_str().as_bytes()),
            ) else {
                return;
            };
            // SAFETY: NUL-terminated strings; called from the start-up constructor, before the
            // application's threads exist.
            unsafe { libc::setenv(name.as_ptr(), value.as_ptr(), 1) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strings::text::tests::TestRing;
    use crate::strings::text::{hash, Table};
    use std::sync::atomic::{AtomicU32, AtomicUsize};

    fn attrs(ty: i32, msg: *const c_void) -> EventAttributes {
        EventAttributes {
            version: 3,
            size: std::mem::size_of::<EventAttributes>() as u16,
            category: 0,
            color_type: 1,
            color: 0xff88_0000,
            payload_type: 0,
            reserved0: 0,
            payload: 0,
            message_type: ty,
            message: msg,
        }
    }

    fn wide(s: &str) -> Vec<WChar> {
        s.chars().map(|c| c as WChar).chain([0]).collect()
    }

    #[test]
    fn event_attributes_layout_matches_the_header() {
        assert_eq!(std::mem::offset_of!(EventAttributes, message_type), 32);
        assert_eq!(std::mem::offset_of!(EventAttributes, message), 40);
        assert_eq!(std::mem::size_of::<EventAttributes>(), 48);
        assert_eq!(std::mem::size_of::<ExportTableVersionInfo>(), 24);
        assert_eq!(std::mem::size_of::<ExportTableCallbacks>(), 16);
    }

    #[test]
    fn event_attributes_parse() {
        let s = c"step";
        let w = wide("wide");
        let a = attrs(MESSAGE_ASCII, s.as_ptr() as *const c_void);
        let u = attrs(MESSAGE_UNICODE, w.as_ptr() as *const c_void);
        let r = attrs(MESSAGE_REGISTERED, 7usize as *const c_void);
        let none = attrs(0, s.as_ptr() as *const c_void);
        let bogus = attrs(9, s.as_ptr() as *const c_void);
        let mut short = attrs(MESSAGE_ASCII, s.as_ptr() as *const c_void);
        short.size = 40;
        let mut zero = attrs(MESSAGE_ASCII, s.as_ptr() as *const c_void);
        zero.size = 0;
        // SAFETY: valid structs (or NULL).
        unsafe {
            assert_eq!(attr_message(&a), Msg::Ascii(s.as_ptr()));
            assert_eq!(attr_message(&u), Msg::Wide(w.as_ptr()));
            assert_eq!(attr_message(&r), Msg::Registered(7));
            assert_eq!(attr_message(&none), Msg::None);
            assert_eq!(attr_message(&bogus), Msg::None);
            assert_eq!(attr_message(&short), Msg::None);
            assert_eq!(attr_message(&zero), Msg::None);
            assert_eq!(attr_message(std::ptr::null()), Msg::None);
        }
    }

    #[test]
    fn a_shorter_struct_is_read_only_within_its_size() {
        // A v1-sized caller that declares only the first 36 bytes: the message is not read.
        let mut b = [0u8; 36];
        b[2..4].copy_from_slice(&36u16.to_le_bytes());
        b[32..36].copy_from_slice(&MESSAGE_ASCII.to_le_bytes());
        // SAFETY: 36 readable bytes, as declared.
        assert_eq!(
            unsafe { attr_message(b.as_ptr() as *const EventAttributes) },
            Msg::None
        );
    }

    #[test]
    fn wide_strings_become_utf8() {
        let mut out = [0u8; 64];
        let utf32 = ['h' as u32, 0xe9, 0x4e2d, 0x1f600];
        let n = wide_to_utf8(utf32.into_iter(), &mut out);
        assert_eq!(std::str::from_utf8(&out[..n]).unwrap(), "hé中😀");
        // UTF-16 surrogate pairs are paired; lone surrogates and out-of-range values are replaced.
        let utf16 = [
            0xd83d,
            0xde00,
            0x41,
            0xd800,
            0x42,
            0xdc00,
            0x11_0000,
            0xffff_ffff,
        ];
        let n = wide_to_utf8(utf16.into_iter(), &mut out);
        assert_eq!(
            std::str::from_utf8(&out[..n]).unwrap(),
            "😀A\u{fffd}B\u{fffd}\u{fffd}\u{fffd}"
        );
        // A full buffer stops at a character boundary.
        let mut small = [0u8; 5];
        let n = wide_to_utf8(['a' as u32, 0x1f600, 'b' as u32].into_iter(), &mut small);
        assert_eq!(&small[..n], "a😀".as_bytes());
        let mut tiny = [0u8; 4];
        let n = wide_to_utf8(['a' as u32, 0x1f600].into_iter(), &mut tiny);
        assert_eq!(&tiny[..n], b"a");
    }

    #[test]
    fn wide_units_stop_at_nul_and_cap() {
        let w = wide("abc");
        // SAFETY: NUL-terminated.
        let units: Vec<u32> = unsafe { wide_units(w.as_ptr()) }.collect();
        assert_eq!(units, vec![97, 98, 99]);
        let mut long = vec!['x' as WChar; 5000];
        long.push(0);
        // SAFETY: NUL-terminated.
        assert_eq!(unsafe { wide_units(long.as_ptr()) }.count(), MAX_LEN + 1);
    }

    #[test]
    fn long_ascii_is_cut_on_a_character_boundary() {
        let mut s = vec![b'a'; MAX_LEN - 1];
        s.extend_from_slice("é tail".as_bytes());
        s.push(0);
        // SAFETY: NUL-terminated.
        let b = unsafe { c_text(s.as_ptr() as *const c_char) };
        assert_eq!(b.len(), MAX_LEN - 1);
        let mut t = vec![b'a'; 10];
        t.push(0);
        // SAFETY: NUL-terminated.
        assert_eq!(unsafe { c_text(t.as_ptr() as *const c_char) }, &t[..10]);
    }

    #[test]
    fn messages_intern_by_content_whatever_their_encoding() {
        let t: Box<Table<64, 8192>> = Box::new(Table::new(hash));
        let r = TestRing::new();
        let w = wide("héllo");
        let a = c"héllo";
        // SAFETY: NUL-terminated strings.
        unsafe {
            let id = message_id(&*t, Msg::Ascii(a.as_ptr()), Some(r.w));
            assert_ne!(id, 0);
            assert_eq!(message_id(&*t, Msg::Wide(w.as_ptr()), Some(r.w)), id);
            let other = message_id(&*t, Msg::Ascii(c"bye".as_ptr()), Some(r.w));
            assert_ne!(other, id);
            assert_eq!(message_id(&*t, Msg::Registered(other), Some(r.w)), other);
            assert_eq!(message_id(&*t, Msg::Registered(UNNAMED), Some(r.w)), 0);
            assert_eq!(message_id(&*t, Msg::None, Some(r.w)), 0);
            assert_eq!(message_id(&*t, Msg::Ascii(std::ptr::null()), Some(r.w)), 0);
            assert_eq!(message_id(&*t, Msg::Wide(std::ptr::null()), Some(r.w)), 0);
            assert_eq!(r.texts(), vec![(id, "héllo".into()), (other, "bye".into())]);
        }
    }

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

    #[test]
    fn startup_plan_respects_another_injection() {
        let own = crate::resolve::own_path().unwrap();
        assert_eq!(plan(None, &own), Plan::Set);
        assert_eq!(plan(Some(OsStr::new("")), &own), Plan::Set);
        assert_eq!(plan(Some(own.as_os_str()), &own), Plan::Keep);
        assert_eq!(
            plan(Some(OsStr::new("/opt/nsight/libToolsInjection64.so")), &own),
            Plan::Conflict
        );
        assert_eq!(plan(Some(OsStr::new("./.")), &own), Plan::Conflict);
        assert_eq!(apis().count(), 16);
        assert!(apis().all(|(id, name, info)| (1000..1016).contains(&id)
            && name.starts_with("nvtx")
            && info == INFO));
    }

    // A stand-in for NVTX's side of the protocol: two modules of 16 slots (index 0 unused), as in
    // nvtxGlobals_t's functionTable_CORE / functionTable_CORE2.
    const UNSET: usize = 0xdead;
    static CORE: [AtomicUsize; 16] = [const { AtomicUsize::new(UNSET) }; 16];
    static CORE2: [AtomicUsize; 16] = [const { AtomicUsize::new(UNSET) }; 16];
    static VERSION_SET: AtomicU32 = AtomicU32::new(0);

    unsafe extern "C" fn fake_table(
        module: c_int,
        out: *mut FunctionTable,
        size: *mut c_uint,
    ) -> c_int {
        let slots = match module {
            MODULE_CORE => &CORE,
            MODULE_CORE2 => &CORE2,
            _ => return 0,
        };
        let mut v: Vec<*mut *const ()> =
            slots.iter().map(|s| s.as_ptr() as *mut *const ()).collect();
        v[0] = std::ptr::null_mut();
        v.push(std::ptr::null_mut());
        // SAFETY: the caller's out-pointers.
        unsafe {
            *out = Box::leak(v.into_boxed_slice()).as_mut_ptr();
            *size = 16;
        }
        1
    }

    unsafe extern "C" fn fake_set_version(v: u32) {
        VERSION_SET.store(v, Ordering::Relaxed);
    }

    static CALLBACKS: ExportTableCallbacks = ExportTableCallbacks {
        struct_size: 16,
        get_module_function_table: Some(fake_table),
    };
    static VERSION_INFO: ExportTableVersionInfo = ExportTableVersionInfo {
        struct_size: 24,
        version: 3,
        reserved0: 0,
        set_injection_nvtx_version: Some(fake_set_version),
    };

    unsafe extern "C" fn fake_get(id: u32) -> *const c_void {
        match id {
            ETID_CALLBACKS => &CALLBACKS as *const _ as *const c_void,
            ETID_VERSIONINFO => &VERSION_INFO as *const _ as *const c_void,
            _ => std::ptr::null(),
        }
    }

    unsafe extern "C" fn no_tables(_: u32) -> *const c_void {
        std::ptr::null()
    }

    #[test]
    fn injection_fills_the_right_slots_and_callbacks_answer_like_nvtx() {
        // SAFETY: our stand-in export table.
        assert_eq!(unsafe { InitializeInjectionNvtx2(Some(fake_get)) }, 1);
        // SAFETY: as above.
        assert_eq!(unsafe { InitializeInjectionNvtx2(Some(no_tables)) }, 0);
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { InitializeInjectionNvtx2(None) }, 0);
        assert_eq!(VERSION_SET.load(Ordering::Relaxed), 3);
        let core = |i: usize| CORE[i].load(Ordering::Relaxed);
        let core2 = |i: usize| CORE2[i].load(Ordering::Relaxed);
        for (cbid, f) in core_callbacks() {
            assert_eq!(core(cbid as usize), f as usize, "core {cbid}");
        }
        for (cbid, f) in core2_callbacks() {
            assert_eq!(core2(cbid as usize), f as usize, "core2 {cbid}");
        }
        assert_eq!((core(0), core(12), core(13)), (UNSET, UNSET, UNSET));
        for i in [0, 6, 7, 8, 9, 15] {
            assert_eq!(core2(i), UNSET, "core2 {i}");
        }
        assert_eq!(core(9), range_push_a as *const () as usize);
        assert_eq!(core2(12), domain_create_a as *const () as usize);

        std::thread::spawn(move || {
            type PushA = unsafe extern "C" fn(*const c_char) -> c_int;
            type Pop = unsafe extern "C" fn() -> c_int;
            type StartA = unsafe extern "C" fn(*const c_char) -> u64;
            type CreateA = unsafe extern "C" fn(*const c_char) -> *mut c_void;
            type RegisterA = unsafe extern "C" fn(*const c_void, *const c_char) -> *mut c_void;
            type DomainPush = unsafe extern "C" fn(*const c_void, *const EventAttributes) -> c_int;
            type DomainPop = unsafe extern "C" fn(*const c_void) -> c_int;
            // SAFETY: each slot holds the callback of that id, whose signature is the header's.
            unsafe {
                let push = std::mem::transmute::<usize, PushA>(core(9));
                let pop = std::mem::transmute::<usize, Pop>(core(11));
                let start = std::mem::transmute::<usize, StartA>(core(5));
                let create = std::mem::transmute::<usize, CreateA>(core2(12));
                let register = std::mem::transmute::<usize, RegisterA>(core2(10));
                let dpush = std::mem::transmute::<usize, DomainPush>(core2(4));
                let dpop = std::mem::transmute::<usize, DomainPop>(core2(5));
                assert_eq!(push(c"outer".as_ptr()), 0);
                assert_eq!(push(std::ptr::null()), 1);
                let d = create(c"my domain".as_ptr());
                assert!(!d.is_null());
                assert_eq!(create(c"my domain".as_ptr()), d);
                assert_ne!(create(c"other domain".as_ptr()), d);
                let s = register(d, c"registered".as_ptr());
                assert!(!s.is_null());
                assert_eq!(register(std::ptr::null(), c"registered".as_ptr()), s);
                let a = attrs(MESSAGE_REGISTERED, s);
                assert_eq!(dpush(d, &a), 0);
                assert_eq!(dpush(d, std::ptr::null()), 1);
                assert_eq!(dpop(d), 1);
                assert_eq!(dpop(d), 0);
                assert_eq!(pop(), 1);
                assert_eq!(pop(), 0);
                assert_eq!(pop(), -1);
                let (r1, r2) = (start(c"a".as_ptr()), start(c"b".as_ptr()));
                assert!(r1 != 0 && r2 > r1);
            }
        })
        .join()
        .unwrap();
    }
}
