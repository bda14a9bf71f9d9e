//! Loading CUPTI: at run time with `libloading`, never linked, so a machine without CUPTI still runs
//! the shim. Where from: `CAUSEWAY_CUPTI` if set; else next to each loaded libcudart, the toolkit's
//! usual places, then the loader's search.

use super::ffi::Api;
use crate::resolve;
use causeway_ring::layout::Layer;
use causeway_ring::settings::env;
use std::ffi::OsStr;
use std::path::PathBuf;

/// The places to look for CUPTI, in order: `CAUSEWAY_CUPTI` alone if set; else next to each loaded
/// libcudart (the pip wheels put both in `nvidia/cu13/lib`; the toolkit keeps CUPTI in
/// `extras/CUPTI/lib64` beside `lib64`), the toolkit's usual places, then bare names for `ld.so`.
fn candidates(explicit: Option<&OsStr>, cudart: &[PathBuf]) -> Vec<PathBuf> {
    if let Some(p) = explicit.filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(p)];
    }
    let mut v: Vec<PathBuf> = Vec::new();
    let mut add = |p: PathBuf| {
        if !v.contains(&p) {
            v.push(p);
        }
    };
    for lib in cudart {
        if let Some(dir) = lib.parent().filter(|d| !d.as_os_str().is_empty()) {
            add(dir.join("libcupti.so.13"));
            add(dir.join("../extras/CUPTI/lib64/libcupti.so.13"));
        }
    }
    add("/usr/local/cuda/lib64/libcupti.so.13".into());
    add("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13".into());
    add("libcupti.so.13".into());
    add("libcupti.so".into());
    v
}

/// Loads CUPTI from the first candidate that opens and has every entry point we call.
pub(super) fn load() -> Result<Api, String> {
    let explicit = std::env::var_os(env::CUPTI);
    let cudart = resolve::loaded(Layer::Runtime);
    // The first failure other than "no such file" says most (a wrong ELF class, a missing
    // dependency); when every place came up empty, say where we looked.
    let mut why: Option<String> = None;
    for path in candidates(explicit.as_deref(), &cudart) {
        // Paths that name no file are skipped quietly; bare names go to the loader's search.
        if path.is_absolute() && explicit.is_none() && !path.exists() {
            continue;
        }
        // SAFETY: loading CUPTI runs its initialisers, which have no preconditions on us.
        match unsafe { libloading::Library::new(&path) } {
            Ok(lib) => {
                let api = symbols(&lib).map_err(|e| format!("{}: {e}", path.display()));
                // Never unloaded: CUPTI's threads and callbacks live as long as the process.
                std::mem::forget(lib);
                return api;
            }
            Err(e) => {
                let e = e.to_string();
                if explicit.is_some() || (why.is_none() && !e.contains("No such file")) {
                    why = Some(e);
                }
            }
        }
    }
    Err(why.unwrap_or_else(|| {
        format!(
            "no libcupti.so.13 next to libcudart, in /usr/local/cuda or on the library path; set {}",
            env::CUPTI
        )
    }))
}

fn symbols(lib: &libloading::Library) -> Result<Api, libloading::Error> {
    // SAFETY: (every `get`) each name is a CUPTI 13 entry point and the type is its C signature.
    unsafe {
        Ok(Api {
            subscribe: *lib.get(b"cuptiSubscribe\0")?,
            unsubscribe: *lib.get(b"cuptiUnsubscribe\0")?,
            register_timestamp: *lib.get(b"cuptiActivityRegisterTimestampCallback\0")?,
            register_callbacks: *lib.get(b"cuptiActivityRegisterCallbacks\0")?,
            enable: *lib.get(b"cuptiActivityEnable\0")?,
            disable: *lib.get(b"cuptiActivityDisable\0")?,
            next_record: *lib.get(b"cuptiActivityGetNextRecord\0")?,
            dropped: *lib.get(b"cuptiActivityGetNumDroppedRecords\0")?,
            flush_all: *lib.get(b"cuptiActivityFlushAll\0")?,
            push: *lib.get(b"cuptiActivityPushExternalCorrelationId\0")?,
            pop: *lib.get(b"cuptiActivityPopExternalCorrelationId\0")?,
            result_string: lib.get(b"cuptiGetResultString\0").ok().map(|s| *s),
            enable_callback: lib.get(b"cuptiEnableCallback\0").ok().map(|s| *s),
            enable_domain: lib.get(b"cuptiEnableDomain\0").ok().map(|s| *s),
            enable_latency: lib
                .get(b"cuptiActivityEnableLatencyTimestamps\0")
                .ok()
                .map(|s| *s),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cupti_is_looked_for_in_order() {
        let p =
            |v: &[PathBuf]| -> Vec<String> { v.iter().map(|p| p.display().to_string()).collect() };
        assert_eq!(
            p(&candidates(Some(OsStr::new("/opt/x/libcupti.so.13")), &[])),
            vec!["/opt/x/libcupti.so.13"]
        );
        let cudart = [
            PathBuf::from("/venv/nvidia/cu13/lib/libcudart.so.13"),
            PathBuf::from("/usr/local/cuda/lib64/libcudart.so.13"),
        ];
        assert_eq!(
            p(&candidates(Some(OsStr::new("")), &cudart)),
            vec![
                "/venv/nvidia/cu13/lib/libcupti.so.13",
                "/venv/nvidia/cu13/lib/../extras/CUPTI/lib64/libcupti.so.13",
                "/usr/local/cuda/lib64/libcupti.so.13",
                "/usr/local/cuda/lib64/../extras/CUPTI/lib64/libcupti.so.13",
                "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                "libcupti.so.13",
                "libcupti.so",
            ]
        );
        assert_eq!(
            p(&candidates(None, &[PathBuf::from("libcudart.so.13")])),
            vec![
                "/usr/local/cuda/lib64/libcupti.so.13",
                "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                "libcupti.so.13",
                "libcupti.so",
            ]
        );
    }
}
