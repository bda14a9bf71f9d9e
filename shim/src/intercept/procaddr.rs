//! `cuGetProcAddress` / `cuGetProcAddress_v2`: how cudart (shared or static), cuBLAS and PyTorch reach
//! the driver. The driver picks the ABI variant from `cudaVersion` and `flags`; rather than re-derive
//! that choice, the hook compares the pointer the driver returned with each exported variant of the
//! requested name and substitutes the hook of the variant it *is*. No match: the pointer passes through
//! untouched (and is counted), so a hook never calls a function with the wrong ABI. A request for
//! "cuGetProcAddress" itself is answered with our hook too, which keeps every later lookup visible.

use super::hooks::{missing, Hook, P};
use super::registry;
use crate::hot::record;
use crate::resolve;
use causeway_ring::layout::{counter, ApiInfo, Class, Kind, Layer};
use std::ffi::{c_char, CStr};
use std::sync::atomic::AtomicUsize;

static REALS: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];
const INFO: ApiInfo = ApiInfo {
    layer: Layer::Driver,
    class: Class::Lookup,
    level: 4,
};

pub static TABLE: [Hook; 2] = [
    Hook {
        id: 900,
        name: c"cuGetProcAddress",
        info: INFO,
        hook: cuGetProcAddress as *const (),
        real: &REALS[0],
        abi: 11030,
    },
    Hook {
        id: 901,
        name: c"cuGetProcAddress_v2",
        info: INFO,
        hook: cuGetProcAddress_v2 as *const (),
        real: &REALS[1],
        abi: 12000,
    },
];

/// The API id unmatched-lookup entries carry (the v2 entry point's).
fn h_id() -> u16 {
    TABLE[1].id
}

/// Replaces `*pfn` with the hook of the variant it points to, if any. Returns whether it did.
///
/// # Safety
/// `symbol` is NULL or NUL-terminated and `pfn` is NULL or valid, as the real call just required.
unsafe fn substitute(symbol: *const c_char, pfn: *mut P, version: i32, flags: u64) -> bool {
    if symbol.is_null() || pfn.is_null() {
        return false;
    }
    // SAFETY: the caller's out-pointer, just written by the driver.
    let got = unsafe { *pfn } as usize;
    if got == 0 || registry::is_hook(got) {
        return false;
    }
    // SAFETY: a NUL-terminated symbol name (the driver accepted it).
    let sym = unsafe { CStr::from_ptr(symbol) }.to_bytes();
    let mut known = false;
    for v in registry::driver_variants(sym) {
        known = true;
        if resolve::real(v.real, v.name, Layer::Driver) == got {
            // SAFETY: as above.
            unsafe { *pfn = v.hook as P };
            return true;
        }
    }
    if known || registry::is_cuda_name(sym) {
        // Say which name: a variant missing from the tables, or a name they do not have at all
        // (a newer driver's), so the gap is visible in the report rather than silent.
        untraced(sym, version as u64, flags);
    }
    false
}

/// Records a lookup whose answer no hook stands in for: `name` is reached, but its calls are not traced.
pub(super) fn untraced(name: &[u8], version: u64, flags: u64) {
    if let Some(w) = crate::hot::state::writer() {
        w.bump(counter::PROC_UNMATCHED);
        let id = crate::strings::text::TEXT.intern(name, Some(w));
        record::instant(Kind::ProcUnmatched, h_id(), id, version, flags);
    }
}

/// # Safety
/// The C contract of `cuGetProcAddress` (CUDA < 12.0 ABI).
#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut P,
    version: i32,
    flags: u64,
) -> i32 {
    let h = &TABLE[0];
    let real = resolve::real(h.real, h.name, Layer::Driver);
    if real == 0 {
        return missing(3);
    }
    type F = unsafe extern "C" fn(*const c_char, *mut P, i32, u64) -> i32;
    // SAFETY: the driver's cuGetProcAddress has exactly this signature.
    let f = unsafe { std::mem::transmute::<usize, F>(real) };
    let open = record::begin(h.id, 4, 0, version as u64, flags, 0);
    // SAFETY: the caller's own arguments.
    let r = unsafe { f(symbol, pfn, version, flags) };
    if r == 0 {
        // SAFETY: the real call accepted these pointers.
        unsafe { substitute(symbol, pfn, version, flags) };
    }
    if let Some(o) = open {
        o.finish(r);
    }
    r
}

/// # Safety
/// The C contract of `cuGetProcAddress_v2` (CUDA ≥ 12.0 ABI).
#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut P,
    version: i32,
    flags: u64,
    status: P,
) -> i32 {
    let h = &TABLE[1];
    let real = resolve::real(h.real, h.name, Layer::Driver);
    if real == 0 {
        return missing(3);
    }
    type F = unsafe extern "C" fn(*const c_char, *mut P, i32, u64, P) -> i32;
    // SAFETY: the driver's cuGetProcAddress_v2 has exactly this signature.
    let f = unsafe { std::mem::transmute::<usize, F>(real) };
    let open = record::begin(h.id, 4, 0, version as u64, flags, 0);
    // SAFETY: the caller's own arguments.
    let r = unsafe { f(symbol, pfn, version, flags, status) };
    if r == 0 {
        // SAFETY: the real call accepted these pointers.
        unsafe { substitute(symbol, pfn, version, flags) };
    }
    if let Some(o) = open {
        o.finish(r);
    }
    r
}
