//! The registry: every hook of every table, looked up by name or by address, and how `dlsym` and
//! `cuGetProcAddress` answers are swapped for hooks (`substitute`, `driver_variants`).

use super::hooks::{per_thread, Hook};
use super::procaddr;
use super::tables::{driver, runtime};
use causeway_ring::layout::Layer;
use std::ffi::CStr;
use std::sync::atomic::Ordering;

/// Every hook of every table.
pub fn all() -> impl Iterator<Item = &'static Hook> {
    runtime::TABLE
        .iter()
        .chain(driver::TABLE.iter())
        .chain(procaddr::TABLE.iter())
}

pub fn find(name: &CStr) -> Option<&'static Hook> {
    find_bytes(name.to_bytes())
}

/// The hook exported as `name`.
pub fn find_bytes(name: &[u8]) -> Option<&'static Hook> {
    if !name.starts_with(b"cu") && !name.starts_with(b"__cuda") {
        return None;
    }
    all().find(|h| h.name.to_bytes() == name)
}

/// The hook exported as `name`, as device timing's CUPTI runtime callback records its calls
/// (`timing::FindApi`).
pub fn hooked_api(name: &[u8]) -> Option<crate::timing::HookedApi> {
    find_bytes(name).map(|h| crate::timing::HookedApi {
        id: h.id,
        name: h.name,
        info: h.info,
        flags: per_thread(h.name.to_str().unwrap_or("")),
    })
}

pub fn is_hook(addr: usize) -> bool {
    all().any(|h| h.hook as usize == addr)
}

/// What to hand a caller who looked up `h` and got `real`: our hook if it calls exactly that
/// function, otherwise the untouched answer.
pub fn substitute(h: &'static Hook, real: usize) -> usize {
    if real == h.hook as usize || is_hook(real) {
        return real;
    }
    match h
        .real
        .compare_exchange(0, real, Ordering::AcqRel, Ordering::Acquire)
    {
        Ok(_) => h.hook as usize,
        Err(existing) if existing == real => h.hook as usize,
        Err(_) => real,
    }
}

/// The name `cuGetProcAddress` knows an entry point by: the exported name without its ABI version
/// (`_v2`, `_v3`, …) and stream-mode (`_ptsz`, `_ptds`) suffixes.
pub fn base_name(name: &[u8]) -> &[u8] {
    let mut n = name;
    for suffix in [&b"_ptsz"[..], b"_ptds"] {
        if n.ends_with(suffix) {
            n = &n[..n.len() - suffix.len()];
        }
    }
    if let Some(pos) = n.iter().rposition(|&c| c == b'_') {
        let tail = &n[pos + 1..];
        if tail.len() >= 2 && tail[0] == b'v' && tail[1..].iter().all(u8::is_ascii_digit) {
            n = &n[..pos];
        }
    }
    n
}

/// Names `cuGetProcAddress` answers with a function exported under another base name (CUDA 12's
/// `cuGraphInstantiate` is `cuGraphInstantiateWithFlags`).
const ALIASES: &[(&[u8], &[u8])] = &[(b"cuGraphInstantiate", b"cuGraphInstantiateWithFlags")];

/// Driver hooks whose base name is `symbol` (or its alias): the variants `cuGetProcAddress` may answer
/// with.
pub fn driver_variants(symbol: &[u8]) -> impl Iterator<Item = &'static Hook> + '_ {
    let alias = ALIASES.iter().find(|(s, _)| *s == symbol).map(|&(_, a)| a);
    all().filter(move |h| {
        let base = base_name(h.name.to_bytes());
        h.info.layer == Layer::Driver && (base == symbol || Some(base) == alias)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names_strip_abi_and_stream_suffixes() {
        assert_eq!(base_name(b"cuMemcpyHtoD_v2_ptds"), b"cuMemcpyHtoD");
        assert_eq!(base_name(b"cuLaunchKernel_ptsz"), b"cuLaunchKernel");
        assert_eq!(base_name(b"cuGetProcAddress_v2"), b"cuGetProcAddress");
        assert_eq!(base_name(b"cuMemsetD2D8_v2"), b"cuMemsetD2D8");
        assert_eq!(base_name(b"cuStreamWaitValue32"), b"cuStreamWaitValue32");
        assert_eq!(base_name(b"cuLaunchKernelEx"), b"cuLaunchKernelEx");
    }

    #[test]
    fn ids_are_unique_and_names_resolve_to_their_hook() {
        let mut ids: Vec<u16> = all().map(|h| h.id).collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "duplicate API ids");
        for h in all() {
            assert!(std::ptr::eq(find(h.name).unwrap(), h), "{:?}", h.name);
            assert!(is_hook(h.hook as usize));
        }
    }

    #[test]
    fn variants_cover_per_thread_and_versioned_forms() {
        let names: Vec<_> = driver_variants(b"cuMemcpyHtoD")
            .map(|h| h.name.to_str().unwrap())
            .collect();
        assert!(
            names.contains(&"cuMemcpyHtoD_v2") && names.contains(&"cuMemcpyHtoD_v2_ptds"),
            "{names:?}"
        );
        let gpa: Vec<_> = driver_variants(b"cuGetProcAddress")
            .map(|h| h.name.to_str().unwrap())
            .collect();
        assert_eq!(gpa.len(), 2, "{gpa:?}");
        let inst: Vec<_> = driver_variants(b"cuGraphInstantiate")
            .map(|h| h.name.to_str().unwrap())
            .collect();
        assert!(inst.contains(&"cuGraphInstantiateWithFlags"), "{inst:?}");
        assert_eq!(per_thread("cuLaunchKernel_ptsz"), 1);
        assert_eq!(per_thread("cuLaunchKernel"), 0);
    }
}
