//! The `dlsym` hook. Libraries find driver entry points with `dlsym(libcuda, "cuXxx")` (cudart itself
//! starts with `cuGetProcAddress_v2`), so `dlsym` must hand out our hooks for the names we trace.
//!
//! `dlsym(RTLD_NEXT, …)` is special: glibc resolves it relative to the object that *called* dlsym,
//! which it finds from the return address. A Rust hook that calls the real dlsym would make every
//! such lookup relative to the shim. So `dlsym` is a small assembly trampoline: RTLD_NEXT lookups
//! tail-jump into glibc's dlsym with the caller's return address untouched; every other lookup goes
//! to `dlsym_hook`, for which the caller does not matter.

use super::registry;
use crate::resolve;
use std::ffi::{c_char, c_void, CStr};

/// The exported `dlsym`. A naked function so that it is exported like any `#[no_mangle]` item and
/// owns its stack frame: nothing runs before the `cmp`.
///
/// # Safety
/// The C contract of `dlsym`.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn dlsym(_handle: *mut c_void, _name: *const c_char) -> *mut c_void {
    std::arch::naked_asm!(
        "cmp rdi, -1", // RTLD_NEXT is ((void *) -1)
        "jne {hook}",
        "push rdi",
        "push rsi",
        "sub rsp, 8", // keep the stack 16-byte aligned for the call
        "call {real}",
        "add rsp, 8",
        "pop rsi",
        "pop rdi",
        "jmp rax",
        hook = sym dlsym_hook,
        real = sym resolve::causeway_real_dlsym_addr,
    )
}

/// # Safety
/// The C contract of `dlsym`.
#[cfg(target_arch = "aarch64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn dlsym(_handle: *mut c_void, _name: *const c_char) -> *mut c_void {
    std::arch::naked_asm!(
        "cmn x0, #1", // RTLD_NEXT is ((void *) -1)
        "b.ne {hook}",
        "stp x0, x1, [sp, #-32]!",
        "str x30, [sp, #16]",
        "bl {real}",
        "mov x16, x0",
        "ldr x30, [sp, #16]",
        "ldp x0, x1, [sp], #32",
        "br x16",
        hook = sym dlsym_hook,
        real = sym resolve::causeway_real_dlsym_addr,
    )
}

/// Handle-relative and RTLD_DEFAULT lookups: the real answer, with our hook substituted when the
/// answer is exactly the function that hook calls.
extern "C" fn dlsym_hook(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    // SAFETY: forwarding the caller's own arguments to glibc's dlsym.
    let r = unsafe { resolve::real_dlsym()(handle, name) };
    if r.is_null() || name.is_null() {
        return r;
    }
    // SAFETY: dlsym succeeded, so `name` is a valid NUL-terminated string.
    let name = unsafe { CStr::from_ptr(name) };
    match registry::find(name) {
        // The lookup found the shim's own export (a global lookup, the shim being first in scope):
        // without the shim it would have found the library's function, or nothing when no loaded
        // library has one. Nothing it stays: a program probing whether Level Zero, UR or CUDA is
        // there must get the answer it gets bare.
        Some(h)
            if std::ptr::eq(r.cast_const().cast::<()>(), h.hook)
                && resolve::real(h.real, h.name, h.info.layer) == 0 =>
        {
            std::ptr::null_mut()
        }
        Some(h) => registry::substitute(h, r as usize) as *mut c_void,
        None => {
            // A CUDA entry point the tables do not have (a newer runtime's or driver's): listed in
            // the capture as reached but untraced. Version 0: dlsym names no ABI version.
            if registry::is_cuda_name(name.to_bytes()) && resolve::in_cuda_library(r as usize) {
                super::procaddr::untraced(name.to_bytes(), 0, 0);
            }
            r
        }
    }
}
