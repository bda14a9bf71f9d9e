//! Start-up: makes NVTX load this shim as its injection library, in this process and its children, by
//! pointing `NVTX_INJECTION64_PATH` at it — unless another tool's injection is already configured,
//! which is left alone and reported.

use crate::resolve;
use causeway_ring::writer::FixedBuf;
use std::ffi::{c_void, OsStr};
use std::path::Path;

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
    let Some(own) = resolve::own_path() else {
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
    use crate::nvtx::apis;
    use causeway_ring::layout::{Class, Layer};

    #[test]
    fn startup_plan_respects_another_injection() {
        let own = resolve::own_path().unwrap();
        assert_eq!(plan(None, &own), Plan::Set);
        assert_eq!(plan(Some(OsStr::new("")), &own), Plan::Set);
        assert_eq!(plan(Some(own.as_os_str()), &own), Plan::Keep);
        assert_eq!(
            plan(Some(OsStr::new("/opt/nsight/libToolsInjection64.so")), &own),
            Plan::Conflict
        );
        assert_eq!(plan(Some(OsStr::new("./.")), &own), Plan::Conflict);
        assert_eq!(apis().count(), 50);
        assert!(apis().all(|(id, name, info)| (1000..1050).contains(&id)
            && name.starts_with("nvtx")
            && info.layer == Layer::Nvtx
            && info.level == 1
            && (info.class == Class::Name)
                == (name.contains("Name") || name == "nvtxDomainResourceCreate")));
    }
}
