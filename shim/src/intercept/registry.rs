//! The registry: every hook of every table, looked up by name or by address, and how `dlsym` and
//! `cuGetProcAddress` answers are swapped for hooks (`substitute`, `driver_variants`).
//!
//! The generated tables are sorted by name (a unit test checks), so a name is found by binary search
//! and a base name's variants (`cuMemcpyHtoD`, `cuMemcpyHtoD_v2`, `cuMemcpyHtoD_v2_ptds`) are one run
//! of the driver table: `cuGetProcAddress` is answered in O(log n) even with a thousand hooks.

use super::hooks::{per_thread, Hook};
use super::procaddr;
use super::tables::{driver, level_zero, runtime, unified_runtime};
use std::ffi::CStr;
use std::sync::atomic::Ordering;

/// Every hook of every table.
pub fn all() -> impl Iterator<Item = &'static Hook> {
    runtime::TABLE
        .iter()
        .chain(driver::TABLE.iter())
        .chain(level_zero::TABLE.iter())
        .chain(unified_runtime::TABLE.iter())
        .chain(procaddr::TABLE.iter())
}

pub fn find(name: &CStr) -> Option<&'static Hook> {
    find_bytes(name.to_bytes())
}

/// The hook exported as `name`.
pub fn find_bytes(name: &[u8]) -> Option<&'static Hook> {
    let table: &'static [Hook] = if name.starts_with(b"cuda") || name.starts_with(b"__cuda") {
        &runtime::TABLE
    } else if name.starts_with(b"cu") {
        &driver::TABLE
    } else if name.starts_with(b"ze") {
        &level_zero::TABLE
    } else if name.starts_with(b"ur") {
        &unified_runtime::TABLE
    } else {
        return None;
    };
    if let Ok(i) = table.binary_search_by(|h| h.name.to_bytes().cmp(name)) {
        return Some(&table[i]);
    }
    procaddr::TABLE.iter().find(|h| h.name.to_bytes() == name)
}

/// Whether `name` is a CUDA runtime or driver entry point by its spelling (`cu…`, `cuda…`,
/// `__cuda…`): a lookup of such a name that no hook answers is one the capture should list.
pub fn is_cuda_name(name: &[u8]) -> bool {
    name.starts_with(b"cuda")
        || name.starts_with(b"__cuda")
        || (name.starts_with(b"cu") && name.get(2).is_some_and(u8::is_ascii_uppercase))
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
    hook_addresses().binary_search(&addr).is_ok()
}

/// Every hook's address, sorted: built once (addresses are only known at run time).
fn hook_addresses() -> &'static [usize] {
    static ADDRS: std::sync::OnceLock<Box<[usize]>> = std::sync::OnceLock::new();
    ADDRS.get_or_init(|| {
        let mut v: Vec<usize> = all().map(|h| h.hook as usize).collect();
        v.sort_unstable();
        v.into_boxed_slice()
    })
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
    std::iter::once(symbol)
        .chain(alias)
        .flat_map(|base| run_of(&driver::TABLE, base).chain(run_of(&procaddr::TABLE, base)))
}

/// The hooks of a name-sorted `table` whose base name is `base`: they all start with `base`, so they
/// lie in one run from the first name not below it.
fn run_of<'a>(table: &'static [Hook], base: &'a [u8]) -> impl Iterator<Item = &'static Hook> + 'a {
    let start = table.partition_point(|h| h.name.to_bytes() < base);
    table[start..]
        .iter()
        .take_while(move |h| h.name.to_bytes().starts_with(base))
        .filter(move |h| base_name(h.name.to_bytes()) == base)
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
    fn the_generator_knows_which_classes_issue_work() {
        // hookgen.py lists the work-issuing classes for CUPTI's callback ids; they must be the ones
        // `Class::issues_work` says.
        let gen = include_str!("../../gen/hookgen.py");
        let line = gen
            .lines()
            .find(|l| l.starts_with("WORK_CLASSES = {"))
            .expect("WORK_CLASSES in hookgen.py");
        let mut listed: Vec<String> = line
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        listed.sort();
        let mut issuing: Vec<String> = (0..=u8::MAX)
            .map(causeway_ring::Class::from_u8)
            .filter(|c| c.issues_work())
            .map(|c| format!("{c:?}"))
            .collect();
        issuing.sort();
        issuing.dedup();
        assert_eq!(listed, issuing);
    }

    #[test]
    fn generated_tables_are_sorted_by_name() {
        for t in [&runtime::TABLE[..], &driver::TABLE[..]] {
            assert!(
                t.windows(2).all(|w| w[0].name < w[1].name),
                "a table is not sorted: binary search would miss names"
            );
        }
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
        let abi = |n: &str| find_bytes(n.as_bytes()).map(|h| h.abi);
        assert_eq!(abi("cuMemcpyHtoD"), Some(2000), "the legacy 32-bit form");
        assert_eq!(abi("cuMemcpyHtoD_v2"), Some(3020));
        assert_eq!(abi("cuMemcpyHtoD_v2_ptds"), Some(7000));
        assert_eq!(abi("cuStreamWaitValue32_v2"), Some(11070));
        assert_eq!(abi("cuMemcpyBatchAsync_v2"), Some(13000));
        let inst: Vec<_> = driver_variants(b"cuGraphInstantiate")
            .map(|h| h.name.to_str().unwrap())
            .collect();
        assert!(inst.contains(&"cuGraphInstantiateWithFlags"), "{inst:?}");
        assert_eq!(per_thread("cuLaunchKernel_ptsz"), 1);
        assert_eq!(per_thread("cuLaunchKernel"), 0);
    }
}
