//! Finding the real functions behind the hooks — and the CUDA functions the shim calls itself (kernel
//! names, graph walks, the timing backends), which is why this sits below every part that needs it
//! rather than inside `intercept/`. `RTLD_NEXT` finds libraries in the global scope; a cudart that a
//! Python extension loaded with `RTLD_LOCAL` is invisible to it, so the fallback walks the loaded
//! objects (`dl_iterate_phdr`) and looks the symbol up in the matching library by handle. glibc's own
//! `dlsym` is found here too (the shim exports a `dlsym` of its own).

use causeway_ring::layout::Layer;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

type DlsymFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

static REAL_DLSYM: AtomicUsize = AtomicUsize::new(0);

/// glibc's own `dlsym`, found through `dlvsym` (which the shim does not hook). `_dl_sym` and
/// `__libc_dlsym` are gone since glibc 2.34, so the versioned lookup is the one way in.
pub fn real_dlsym() -> DlsymFn {
    let mut p = REAL_DLSYM.load(Ordering::Acquire);
    if p == 0 {
        for ver in [c"GLIBC_2.34", c"GLIBC_2.2.5", c"GLIBC_2.17"] {
            // SAFETY: both strings are NUL-terminated; RTLD_NEXT from the shim finds libc's dlsym.
            p = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), ver.as_ptr()) } as usize;
            if p != 0 {
                break;
            }
        }
        if p == 0 {
            // No way to reach glibc's dlsym: answer every lookup with "not found" rather than recurse
            // into our own export.
            crate::hot::state::disable(b"cannot find glibc's dlsym");
            p = null_dlsym as *const () as usize;
        }
        REAL_DLSYM.store(p, Ordering::Release);
    }
    // SAFETY: p is the address of a function with dlsym's signature.
    unsafe { std::mem::transmute::<usize, DlsymFn>(p) }
}

extern "C" fn null_dlsym(_: *mut c_void, _: *const c_char) -> *mut c_void {
    std::ptr::null_mut()
}

/// Called by the `dlsym` trampoline for `RTLD_NEXT` lookups, which it forwards by tail jump so that
/// glibc sees the original caller's return address.
pub(crate) extern "C" fn causeway_real_dlsym_addr() -> usize {
    real_dlsym() as usize
}

/// Whether a loaded object's path names a library of this layer.
fn matches_layer(path: &[u8], layer: Layer) -> bool {
    let base = path.rsplit(|&c| c == b'/').next().unwrap_or(path);
    match layer {
        Layer::Runtime => base.starts_with(b"libcudart.so") || base.starts_with(b"libcudart-"),
        Layer::Driver => base.starts_with(b"libcuda.so"),
        Layer::LevelZero => base.starts_with(b"libze_loader.so"),
        Layer::UnifiedRuntime => base.starts_with(b"libur_loader.so"),
        Layer::Nvtx | Layer::Loader => false,
    }
}

struct Search<'a> {
    name: &'a CStr,
    layer: Layer,
    own_base: usize,
    found: usize,
}

unsafe extern "C" fn visit(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: dl_iterate_phdr passes a valid info and our own `Search` as data.
    let (info, s) = unsafe { (&*info, &mut *(data as *mut Search)) };
    if info.dlpi_name.is_null() || info.dlpi_addr as usize == s.own_base {
        return 0;
    }
    // SAFETY: dlpi_name is a NUL-terminated string owned by the loader.
    let path = unsafe { CStr::from_ptr(info.dlpi_name) };
    if !matches_layer(path.to_bytes(), s.layer) {
        return 0;
    }
    // SAFETY: RTLD_NOLOAD only returns a handle to an object that is already loaded.
    let h = unsafe { libc::dlopen(info.dlpi_name, libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if h.is_null() {
        return 0;
    }
    // SAFETY: a valid handle and a NUL-terminated name.
    let f = unsafe { real_dlsym()(h, s.name.as_ptr()) } as usize;
    // SAFETY: balances the reference RTLD_NOLOAD took; the object stays loaded (its loader holds it).
    unsafe { libc::dlclose(h) };
    if f != 0 {
        s.found = f;
        return 1;
    }
    0
}

struct Paths {
    layer: Layer,
    found: Vec<std::path::PathBuf>,
}

unsafe extern "C" fn collect(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: dl_iterate_phdr passes a valid info and our own `Paths` as data.
    let (info, p) = unsafe { (&*info, &mut *(data as *mut Paths)) };
    if info.dlpi_name.is_null() {
        return 0;
    }
    // SAFETY: dlpi_name is a NUL-terminated string owned by the loader.
    let path = unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes();
    if !path.is_empty() && matches_layer(path, p.layer) {
        use std::os::unix::ffi::OsStrExt;
        p.found
            .push(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(path)));
    }
    0
}

/// Paths of the loaded libraries of `layer` (`libcudart*` / `libcuda.so*`), in load order. Allocates:
/// for cold paths only (finding CUPTI next to cudart).
pub fn loaded(layer: Layer) -> Vec<std::path::PathBuf> {
    let mut p = Paths {
        layer,
        found: Vec::new(),
    };
    // SAFETY: `collect` matches the callback type and `p` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(collect), &mut p as *mut Paths as *mut c_void) };
    p.found
}

/// The load address of the shim itself, so the search never picks one of our own hooks.
fn own_base() -> usize {
    // SAFETY: Dl_info is plain data for which all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address; info is a valid out-pointer.
    if unsafe { libc::dladdr(own_base as *const c_void, &mut info) } != 0 {
        info.dli_fbase as usize
    } else {
        0
    }
}

/// Whether `addr` lies in the shim itself (then it is one of its hooks: a lookup that finds the shim
/// has found nothing real).
fn in_shim(addr: usize) -> bool {
    // SAFETY: Dl_info is plain data for which all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address; info is a valid out-pointer.
    let found = unsafe { libc::dladdr(addr as *const c_void, &mut info) } != 0;
    found && info.dli_fbase as usize == own_base()
}

/// Whether `addr` lies in a loaded CUDA runtime or driver library (by its file name, as `loaded`).
pub fn in_cuda_library(addr: usize) -> bool {
    // SAFETY: Dl_info is plain data for which all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address; info is a valid out-pointer.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes();
    matches_layer(path, Layer::Runtime) || matches_layer(path, Layer::Driver)
}

/// Looks `name` up the way the hook's caller would have found it, skipping the shim.
pub fn find(name: &CStr, layer: Layer) -> usize {
    // SAFETY: RTLD_NEXT relative to the shim, NUL-terminated name.
    let p = unsafe { real_dlsym()(libc::RTLD_NEXT, name.as_ptr()) } as usize;
    if p != 0 && !in_shim(p) {
        return p;
    }
    let mut s = Search {
        name,
        layer,
        own_base: own_base(),
        found: 0,
    };
    // SAFETY: `visit` matches the callback type and `s` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut s as *mut Search as *mut c_void) };
    s.found
}

/// `find`, `None` where nothing was found: for a backend's table of the runtime's own functions.
pub fn found(name: &CStr, layer: Layer) -> Option<usize> {
    Some(find(name, layer)).filter(|&p| p != 0)
}

/// The real function behind a hook: cached in `slot` once found (first writer wins, so a hook always
/// calls one and the same function).
#[inline(always)]
pub fn real(slot: &AtomicUsize, name: &CStr, layer: Layer) -> usize {
    match slot.load(Ordering::Acquire) {
        0 => resolve_slow(slot, name, layer),
        p => p,
    }
}

#[cold]
fn resolve_slow(slot: &AtomicUsize, name: &CStr, layer: Layer) -> usize {
    let p = find(name, layer);
    if p == 0 {
        return 0;
    }
    match slot.compare_exchange(0, p, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => p,
        Err(existing) => existing,
    }
}

/// Where this library lives (for `NVTX_INJECTION64_PATH` and messages).
pub fn own_path() -> Option<std::path::PathBuf> {
    // SAFETY: Dl_info is plain data for which all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as in `own_base`.
    if unsafe { libc::dladdr(own_base as *const c_void, &mut info) } == 0
        || info.dli_fname.is_null()
    {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    let p = unsafe { CStr::from_ptr(info.dli_fname) };
    use std::os::unix::ffi::OsStrExt;
    std::fs::canonicalize(std::ffi::OsStr::from_bytes(p.to_bytes())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_match_library_names() {
        assert!(matches_layer(
            b"/x/nvidia/cu13/lib/libcudart.so.13",
            Layer::Runtime
        ));
        assert!(matches_layer(b"libcuda.so.1", Layer::Driver));
        assert!(!matches_layer(
            b"/usr/lib/libcudart_static_helper.a",
            Layer::Driver
        ));
        assert!(!matches_layer(b"/usr/lib/libcudnn.so.9", Layer::Runtime));
    }
}
