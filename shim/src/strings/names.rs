//! Kernel names, looked up once per function handle. A fixed open-addressing table of seen handles
//! (no allocation, lock-free) keeps the hot path to one hash probe; the first sight of a handle asks the
//! runtime or driver for its name and interns it in the ring's string area.

use crate::hot::{guard, state};
use crate::resolve;
use causeway_ring::layout::{counter, Layer};
use causeway_ring::StrKind;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const SLOTS: usize = 1 << 14;
const PROBES: usize = 32;
static SEEN: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

static CUDA_FUNC_GET_NAME: AtomicUsize = AtomicUsize::new(0);
static CU_FUNC_GET_NAME: AtomicUsize = AtomicUsize::new(0);
static CU_KERNEL_GET_NAME: AtomicUsize = AtomicUsize::new(0);
static ZE_KERNEL_GET_NAME: AtomicUsize = AtomicUsize::new(0);
static UR_KERNEL_GET_INFO: AtomicUsize = AtomicUsize::new(0);

/// The longest Level Zero or Unified Runtime kernel name kept (longer ones are cut).
const NAME_MAX: usize = 1024;

type GetName = unsafe extern "C" fn(*mut *const c_char, *mut c_void) -> i32;

/// Forgets every handle (a fork child writes a new ring, whose string area starts empty).
pub fn reset() {
    for s in SEEN.iter() {
        s.store(0, Ordering::Relaxed);
    }
}

#[inline(always)]
fn hash(h: u64) -> usize {
    (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 50) as usize & (SLOTS - 1)
}

/// What kind of handle a launch entry point passes, which decides how to ask for its name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// A host stub (`cudaLaunchKernel`): `cudaFuncGetName`.
    HostStub,
    /// A `cudaKernel_t` (`__cudaLaunchKernel`), the same object as a `CUkernel`: `cuKernelGetName`.
    Kernel,
    /// A `CUfunction`, or a `CUkernel` cast to one (driver launches): `cuFuncGetName`, then `cuKernelGetName`.
    Function,
    /// A Level Zero `ze_kernel_handle_t`: `zeKernelGetName`.
    ZeKernel,
    /// A Unified Runtime `ur_kernel_handle_t`: `urKernelGetInfo(UR_KERNEL_INFO_FUNCTION_NAME)`.
    UrKernel,
}

impl How {
    pub const fn of(layer: Layer, name: &str) -> How {
        let b = name.as_bytes();
        let mut i = 0;
        let prefix = b"__cudaLaunchKernel";
        while i < prefix.len() && i < b.len() && b[i] == prefix[i] {
            i += 1;
        }
        match layer {
            _ if i == prefix.len() => How::Kernel,
            Layer::Runtime => How::HostStub,
            Layer::LevelZero => How::ZeKernel,
            Layer::UnifiedRuntime => How::UrKernel,
            _ => How::Function,
        }
    }
}

/// Notes a launch of `handle`; the first time, records its name.
#[inline(always)]
pub fn note(how: How, handle: u64) {
    if handle == 0 {
        return;
    }
    let start = hash(handle);
    for i in 0..PROBES {
        let slot = &SEEN[(start + i) & (SLOTS - 1)];
        match slot.load(Ordering::Relaxed) {
            h if h == handle => return,
            0 => {
                if slot
                    .compare_exchange(0, handle, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                {
                    return first_sight(how, handle);
                }
                if slot.load(Ordering::Relaxed) == handle {
                    return;
                }
            }
            _ => {}
        }
    }
    missed();
}

#[cold]
fn missed() {
    if let Some(w) = state::writer() {
        w.bump(counter::NAMES_MISSED);
    }
}

fn call(slot: &AtomicUsize, name: &CStr, layer: Layer, handle: u64) -> Option<&'static CStr> {
    let f = resolve::real(slot, name, layer);
    if f == 0 {
        return None;
    }
    // SAFETY: `f` is the library's name getter: (const char **name, handle) -> status.
    let f = unsafe { std::mem::transmute::<usize, GetName>(f) };
    let mut out: *const c_char = std::ptr::null();
    // SAFETY: a valid out-pointer and the handle the application just passed to a launch.
    let r = unsafe { f(&mut out, handle as *mut c_void) };
    // SAFETY: on success the runtime returns a NUL-terminated name it keeps alive with the function.
    (r == 0 && !out.is_null()).then(|| unsafe { CStr::from_ptr(out) })
}

/// A Level Zero or Unified Runtime kernel's name, asked of the loader into `buf` (these APIs copy
/// the name out instead of lending it); its bytes without the NUL.
fn copied_name(how: How, handle: u64, buf: &mut [u8; NAME_MAX]) -> Option<usize> {
    let size: usize;
    let r = match how {
        How::ZeKernel => {
            type ZeGetName = unsafe extern "C" fn(*mut c_void, *mut usize, *mut c_char) -> i32;
            let f = resolve::real(&ZE_KERNEL_GET_NAME, c"zeKernelGetName", Layer::LevelZero);
            if f == 0 {
                return None;
            }
            // SAFETY: zeKernelGetName's signature (ze_api.h).
            let f = unsafe { std::mem::transmute::<usize, ZeGetName>(f) };
            // SAFETY: asks for the size first (a NULL name), then copies at most NAME_MAX bytes.
            unsafe {
                let mut need = 0usize;
                if f(handle as *mut c_void, &mut need, std::ptr::null_mut()) != 0 || need > NAME_MAX
                {
                    return None;
                }
                let mut copied = need;
                let r = f(handle as *mut c_void, &mut copied, buf.as_mut_ptr().cast());
                size = copied;
                r
            }
        }
        How::UrKernel => {
            type UrGetInfo =
                unsafe extern "C" fn(*mut c_void, u32, usize, *mut c_void, *mut usize) -> i32;
            let f = resolve::real(
                &UR_KERNEL_GET_INFO,
                c"urKernelGetInfo",
                Layer::UnifiedRuntime,
            );
            if f == 0 {
                return None;
            }
            // SAFETY: urKernelGetInfo's signature (ur_api.h); property 0 is the function name.
            let f = unsafe { std::mem::transmute::<usize, UrGetInfo>(f) };
            // The size first (no buffer), then the name into a buffer of exactly that size (the
            // OpenCL adapter refuses any other size).
            let mut need = 0usize;
            // SAFETY: no buffer, a valid out-pointer for the size.
            let r = unsafe { f(handle as *mut c_void, 0, 0, std::ptr::null_mut(), &mut need) };
            if r != 0 || need == 0 || need > NAME_MAX {
                return None;
            }
            let mut got = 0usize;
            // SAFETY: as above: a buffer of `need` <= NAME_MAX bytes.
            let r = unsafe {
                f(
                    handle as *mut c_void,
                    0,
                    need,
                    buf.as_mut_ptr().cast(),
                    &mut got,
                )
            };
            size = got;
            r
        }
        _ => return None,
    };
    if r != 0 || size == 0 || size > NAME_MAX {
        return None;
    }
    let n = buf[..size].iter().position(|&b| b == 0).unwrap_or(size);
    (n > 0).then_some(n)
}

#[cold]
fn first_sight(how: How, handle: u64) {
    let Some(w) = state::writer() else { return };
    if matches!(how, How::ZeKernel | How::UrKernel) {
        let mut buf = [0u8; NAME_MAX];
        match guard::internal(|| copied_name(how, handle, &mut buf)) {
            Some(n) => {
                w.intern(StrKind::Kernel, handle, 0, &buf[..n]);
            }
            None => w.bump(counter::NAMES_MISSED),
        }
        return;
    }
    // cudaFuncGetName is only asked about host stubs: a failed runtime call would set the thread's
    // sticky last error, which the application could then see.
    let name = guard::internal(|| match how {
        How::HostStub => call(
            &CUDA_FUNC_GET_NAME,
            c"cudaFuncGetName",
            Layer::Runtime,
            handle,
        ),
        How::Kernel => call(
            &CU_KERNEL_GET_NAME,
            c"cuKernelGetName",
            Layer::Driver,
            handle,
        ),
        How::Function => {
            call(&CU_FUNC_GET_NAME, c"cuFuncGetName", Layer::Driver, handle).or_else(|| {
                call(
                    &CU_KERNEL_GET_NAME,
                    c"cuKernelGetName",
                    Layer::Driver,
                    handle,
                )
            })
        }
        How::ZeKernel | How::UrKernel => None,
    });
    match name {
        Some(n) => {
            w.intern(StrKind::Kernel, handle, 0, n.to_bytes());
        }
        None => w.bump(counter::NAMES_MISSED),
    }
}
