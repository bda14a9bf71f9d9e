//! `causeway record`: option checks, shim lookup, the environment the command gets, exit codes, and
//! fresh capture directories. The real shim is built elsewhere, so the "shim" preloaded here is the C
//! library the test process already uses: a harmless, loadable shared object.

#[path = "../../scanner/tests/common/mod.rs"]
mod common;

use causeway_cli::record::{self, find_shim, make_capture_dir, preload_value};
use common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The C library this process has mapped (glibc or musl), to stand in for the shim.
fn libc_path() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            let name = p.rsplit('/').next().unwrap_or("");
            name.starts_with("libc.so") || name.starts_with("libc-") || name.starts_with("ld-musl")
        })
        .map(PathBuf::from)
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn record(args: &[&OsStr], env: &[(&str, &OsStr)]) -> Run {
    let mut c = causeway();
    c.arg("record")
        .args(args)
        .env_remove("CAUSEWAY_SHIM")
        .env_remove("LD_PRELOAD");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    Run {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// `record`'s own failures exit 125 (127 command not found, 126 not runnable), apart from any code
/// the program itself can return, as `env` and `timeout` do.
fn one_error_line(r: &Run) -> &str {
    one_error_line_with(r, 125)
}

fn one_error_line_with(r: &Run, code: i32) -> &str {
    assert_eq!(r.code, Some(code), "stderr: {}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{:?}", r.stderr);
    assert!(r.stderr.starts_with("causeway: error: "), "{}", r.stderr);
    r.stderr.trim_end()
}

fn entries_of(dir: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn levels_are_checked() {
    let out = TempDir::new("levels");
    for bad in ["0", "5", "99"] {
        let r = record(
            &[
                os("--level"),
                os(bad),
                os("--out"),
                out.path().as_os_str(),
                os("--"),
                os("true"),
            ],
            &[],
        );
        let line = one_error_line(&r);
        assert!(line.contains(&format!("level {bad} does not exist")));
        assert!(
            line.contains(
                "levels are 1 (phases), 2 (host), 3 (full: + device intervals) and 4 (edge)"
            ),
            "{line}"
        );
    }
    let r = record(&[os("--ring-mb"), os("0"), os("--"), os("true")], &[]);
    assert!(one_error_line(&r).contains("--ring-mb 0 is out of range"));
    // Refused before anything was created.
    assert!(entries_of(out.path()).is_empty());
}

#[test]
fn missing_shim_is_a_clear_error() {
    let out = TempDir::new("noshim");
    let r = record(
        &[
            os("--shim"),
            os("/nonexistent/libcauseway.so"),
            os("--out"),
            out.path().as_os_str(),
            os("--"),
            os("true"),
        ],
        &[],
    );
    let line = one_error_line(&r);
    assert!(
        line.contains("shim not found: /nonexistent/libcauseway.so (--shim)"),
        "{line}"
    );
    assert!(
        entries_of(out.path()).is_empty(),
        "no capture dir for a refused run"
    );
    // The same through the environment variable.
    let r = record(
        &[os("--out"), out.path().as_os_str(), os("--"), os("true")],
        &[("CAUSEWAY_SHIM", os("/nonexistent/x.so"))],
    );
    assert!(one_error_line(&r).contains("shim not found: /nonexistent/x.so (CAUSEWAY_SHIM)"));
}

#[test]
fn shim_that_is_not_a_library_is_refused() {
    let out = TempDir::new("badshim");
    let r = record(
        &[
            os("--shim"),
            os("/dev/null"),
            os("--out"),
            out.path().as_os_str(),
            os("--"),
            os("true"),
        ],
        &[],
    );
    assert!(one_error_line(&r).contains("shim /dev/null (--shim) is not a regular file"));
    let text = out.join("fake.so");
    std::fs::write(&text, "#!/bin/sh\n").unwrap();
    let r = record(
        &[
            os("--shim"),
            text.as_os_str(),
            os("--out"),
            out.path().as_os_str(),
            os("--"),
            os("true"),
        ],
        &[],
    );
    assert!(one_error_line(&r).contains("is not a shared library (no ELF header)"));
    let r = record(
        &[os("--shim"), out.path().as_os_str(), os("--"), os("true")],
        &[],
    );
    assert!(one_error_line(&r).contains("is not a regular file"));
}

#[test]
fn shim_beside_the_executable_is_found() {
    let dir = TempDir::new("beside");
    let exe = dir.join("causeway");
    let err = find_shim(None, None, Some(exe.clone())).unwrap_err();
    assert!(
        err.0.contains("beside the causeway executable"),
        "{}",
        err.0
    );
    std::fs::write(dir.join("libcauseway.so"), b"\x7fELF rest").unwrap();
    let found = find_shim(None, None, Some(exe)).unwrap();
    assert_eq!(
        found,
        std::fs::canonicalize(dir.join("libcauseway.so")).unwrap()
    );
    // --shim wins over the environment, which wins over the executable's directory.
    let other = dir.join("other.so");
    std::fs::write(&other, b"\x7fELF").unwrap();
    let env_pick = find_shim(None, Some(other.clone().into()), Some(dir.join("causeway"))).unwrap();
    assert!(env_pick.ends_with("other.so"));
    assert!(find_shim(Some(Path::new("/nope.so")), Some(other.into()), None).is_err());
    // A path LD_PRELOAD cannot carry.
    let spaced = dir.join("with space.so");
    std::fs::write(&spaced, b"\x7fELF").unwrap();
    assert!(find_shim(Some(&spaced), None, None)
        .unwrap_err()
        .0
        .contains("space or colon"));
}

#[test]
fn preload_keeps_the_users_libraries_after_the_shim() {
    let shim = Path::new("/opt/cw/libcauseway.so");
    assert_eq!(preload_value(shim, None), "/opt/cw/libcauseway.so");
    assert_eq!(
        preload_value(shim, Some(OsStr::new(""))),
        "/opt/cw/libcauseway.so"
    );
    assert_eq!(
        preload_value(shim, Some(OsStr::new("/usr/lib/libjemalloc.so"))),
        "/opt/cw/libcauseway.so:/usr/lib/libjemalloc.so"
    );
    // A sanitizer's runtime must load first (ASan aborts the program otherwise): it stays ahead.
    assert_eq!(
        preload_value(
            shim,
            Some(OsStr::new(
                "/usr/lib/libjemalloc.so /usr/lib/gcc/libasan.so.8:libclang_rt.tsan-x86_64.so"
            ))
        ),
        "/usr/lib/gcc/libasan.so.8:libclang_rt.tsan-x86_64.so:/opt/cw/libcauseway.so:\
         /usr/lib/libjemalloc.so"
    );
}

#[test]
fn capture_dirs_are_fresh() {
    let out = TempDir::new("fresh");
    let nested = out.join("a/b");
    let one = make_capture_dir(&nested).unwrap();
    let two = make_capture_dir(&nested).unwrap();
    assert_ne!(one, two);
    for d in [&one, &two] {
        assert!(d.is_dir() && d.is_absolute());
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("cw-"), "{name}");
        let parts: Vec<&str> = name.split('-').collect();
        assert_eq!(parts[1].len(), 8, "{name}");
        assert_eq!(parts[2].len(), 6, "{name}");
        assert_eq!(parts[3], std::process::id().to_string());
    }
    // A file where the directory should be is named as such.
    let file = out.join("file");
    std::fs::write(&file, b"x").unwrap();
    let e = make_capture_dir(&file).unwrap_err().to_string();
    assert!(
        e.ends_with("file: not a directory (--out names the directory captures go in)"),
        "{e}"
    );
}

#[test]
fn missing_command_is_a_clear_error() {
    let Some(libc) = libc_path() else {
        eprintln!("skipped: no C library found in /proc/self/maps");
        return;
    };
    let out = TempDir::new("nocmd");
    let r = record(
        &[
            os("--shim"),
            libc.as_os_str(),
            os("--out"),
            out.path().as_os_str(),
            os("--"),
            os("/nonexistent/program"),
        ],
        &[],
    );
    assert_eq!(
        one_error_line_with(&r, 127),
        "causeway: error: cannot run /nonexistent/program: command not found"
    );
    assert!(
        entries_of(out.path()).is_empty(),
        "the unused capture dir is removed"
    );
}

#[test]
fn command_runs_with_the_capture_environment() {
    let Some(libc) = libc_path() else {
        eprintln!("skipped: no C library found in /proc/self/maps");
        return;
    };
    let out = TempDir::new("env");
    let out_dir = out.join("new/dir");
    let script = "echo \"$LD_PRELOAD|$CAUSEWAY_OUT|$CAUSEWAY_LEVEL|$CAUSEWAY_RING_MB|$CAUSEWAY_POLICY|$1\"; exit 3";
    let r = record(
        &[
            os("--level"),
            os("4"),
            os("--ring-mb"),
            os("8"),
            os("--policy"),
            os("overwrite"),
            os("--shim"),
            libc.as_os_str(),
            os("--out"),
            out_dir.as_os_str(),
            os("--"),
            os("sh"),
            os("-c"),
            os(script),
            os("sh"),
            os("--flag-for-the-command"),
        ],
        &[("LD_PRELOAD", libc.as_os_str())],
    );
    assert_eq!(r.code, Some(3), "stderr: {}", r.stderr);
    let shim = std::fs::canonicalize(&libc).unwrap();
    let fields: Vec<&str> = r.stdout.trim_end().split('|').collect();
    assert_eq!(fields[0], format!("{}:{}", shim.display(), libc.display()));
    let capture = PathBuf::from(fields[1]);
    assert!(capture.is_absolute() && capture.is_dir());
    assert_eq!(
        capture.parent().unwrap(),
        std::fs::canonicalize(&out_dir).unwrap()
    );
    assert_eq!(
        &fields[2..],
        ["4", "8", "overwrite", "--flag-for-the-command"]
    );
    let last = r.stderr.lines().last().unwrap();
    assert_eq!(
        last,
        format!("causeway: capture written to {}", capture.display())
    );
    // libc is not the shim, so nothing was recorded, and record says so.
    assert!(r.stderr.contains("no ring files were written"));
    // Default options, and a command given without `--`.
    let r = record(
        &[
            os("--shim"),
            libc.as_os_str(),
            os("--out"),
            out_dir.as_os_str(),
            os("sh"),
            os("-c"),
            os("echo \"$CAUSEWAY_LEVEL|$CAUSEWAY_RING_MB|$CAUSEWAY_POLICY\""),
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stdout.trim_end(),
        format!("{}|{}|drop", record::DEFAULT_LEVEL, record::DEFAULT_RING_MB)
    );
    assert_eq!(
        entries_of(&out_dir).len(),
        2,
        "each run gets its own capture dir"
    );
}

/// Runs `sh -c 'echo …'` under the stand-in shim with `args` before `--`, printing the level-3
/// variables the command got ("-" for unset).
fn device_env(libc: &Path, out: &Path, args: &[&OsStr], env: &[(&str, &OsStr)]) -> Run {
    let mut all = args.to_vec();
    all.extend([
        os("--shim"),
        libc.as_os_str(),
        os("--out"),
        out.as_os_str(),
        os("--"),
        os("sh"),
        os("-c"),
        os("echo \"$CAUSEWAY_LEVEL|${CAUSEWAY_BACKEND--}|${CAUSEWAY_CUPTI--}\""),
    ]);
    record(&all, env)
}

#[test]
fn level_3_records_device_timing_with_cupti_by_default() {
    let Some(libc) = libc_path() else {
        eprintln!("skipped: no C library found in /proc/self/maps");
        return;
    };
    let out = TempDir::new("level3");
    let r = device_env(&libc, out.path(), &[os("--level"), os("3")], &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.trim_end(), "3|cupti|-");
    assert!(!r.stderr.contains("events backend"), "{}", r.stderr);
    // An explicit backend.
    let r = device_env(
        &libc,
        out.path(),
        &[os("--level"), os("3"), os("--backend"), os("cupti")],
        &[],
    );
    assert_eq!(r.stdout.trim_end(), "3|cupti|-");
    // The events backend is passed on, with no note (it is built in).
    let r = device_env(
        &libc,
        out.path(),
        &[os("--level"), os("3"), os("--backend"), os("events")],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.trim_end(), "3|events|-");
    assert!(!r.stderr.contains("note:"), "{}", r.stderr);
    // --cupti PATH is passed on absolute; a bare library name is left to the dynamic loader.
    let cupti = out.join("libcupti.so.12");
    std::fs::write(&cupti, b"\x7fELF").unwrap();
    let r = record(
        &[
            os("--level"),
            os("3"),
            os("--cupti"),
            cupti.as_os_str(),
            os("--shim"),
            libc.as_os_str(),
            os("--out"),
            out.path().as_os_str(),
            os("--"),
            os("sh"),
            os("-c"),
            os("echo \"$CAUSEWAY_LEVEL|$CAUSEWAY_BACKEND|$CAUSEWAY_CUPTI\""),
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let abs = std::fs::canonicalize(&cupti).unwrap();
    assert_eq!(r.stdout.trim_end(), format!("3|cupti|{}", abs.display()));
    let r = device_env(
        &libc,
        out.path(),
        &[os("--level"), os("3"), os("--cupti"), os("libcupti.so.12")],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.trim_end(), "3|cupti|libcupti.so.12");
    // A backend inherited from the environment never contradicts --level: cleared below level 3,
    // replaced at level 3.
    let r = device_env(
        &libc,
        out.path(),
        &[os("--level"), os("2")],
        &[("CAUSEWAY_BACKEND", os("events"))],
    );
    assert_eq!(r.stdout.trim_end(), "2|-|-");
    let r = device_env(
        &libc,
        out.path(),
        &[os("--level"), os("3")],
        &[("CAUSEWAY_BACKEND", os("events"))],
    );
    assert_eq!(r.stdout.trim_end(), "3|cupti|-");
    // Level 4 times the device only when a backend is named; an inherited one is cleared.
    let r = device_env(
        &libc,
        out.path(),
        &[os("--level"), os("4")],
        &[("CAUSEWAY_BACKEND", os("events"))],
    );
    assert_eq!(r.stdout.trim_end(), "4|-|-");
    let r = device_env(
        &libc,
        out.path(),
        &[os("--level"), os("4"), os("--backend"), os("events")],
        &[],
    );
    assert_eq!(r.stdout.trim_end(), "4|events|-");
}

#[test]
fn device_options_need_level_3_or_4() {
    let out = TempDir::new("backend");
    let base = |extra: &[&'static str]| -> Run {
        let mut a: Vec<&OsStr> = extra.iter().map(|s| os(s)).collect();
        a.extend([os("--out"), out.path().as_os_str(), os("--"), os("true")]);
        record(&a, &[])
    };
    for level in ["1", "2"] {
        let r = base(&["--level", level, "--backend", "cupti"]);
        assert_eq!(
            one_error_line(&r),
            format!("causeway: error: --backend cupti needs --level 3 or 4: device timing (when each kernel, copy and memset ran) is what level 3 adds; level {level} records none")
        );
    }
    // The default level is 2, so --backend alone is refused too.
    let r = base(&["--backend", "events"]);
    assert!(one_error_line(&r).contains("--backend events needs --level 3 or 4"));
    let r = base(&["--level", "2", "--cupti", "/usr/lib/libcupti.so"]);
    assert_eq!(
        one_error_line(&r),
        "causeway: error: --cupti needs --level 3 or 4: CUPTI is a device-timing backend; level 2 does not load it"
    );
    let r = base(&["--level", "4", "--cupti", "/usr/lib/libcupti.so"]);
    assert_eq!(
        one_error_line(&r),
        "causeway: error: --cupti at level 4 needs --backend cupti (level 4 records device times only when a backend is given)"
    );
    let r = base(&[
        "--level",
        "3",
        "--backend",
        "events",
        "--cupti",
        "/usr/lib/libcupti.so",
    ]);
    assert_eq!(
        one_error_line(&r),
        "causeway: error: --cupti names the CUPTI library of --backend cupti; --backend events does not load it"
    );
    let r = base(&["--level", "3", "--cupti", "/nonexistent/libcupti.so"]);
    assert!(
        one_error_line(&r).contains("CUPTI library not found: /nonexistent/libcupti.so (--cupti)")
    );
    let r = base(&["--level", "3", "--sample", "8"]);
    assert_eq!(
        one_error_line(&r),
        "causeway: error: --sample needs --backend events (CUPTI records every kernel; events can be sampled)"
    );
    let r = base(&["--level", "3", "--backend", "events", "--sample", "0"]);
    assert!(one_error_line(&r).contains("--sample 0: give N >= 1"));
    let r = base(&["--level", "3", "--backend", "nvml"]);
    assert_eq!(
        r.code,
        Some(125),
        "clap refuses an unknown backend, with record's own code: {}",
        r.stderr
    );
    assert!(r.stderr.contains("invalid value 'nvml'"), "{}", r.stderr);
    // Refused before anything was created.
    assert!(entries_of(out.path()).is_empty());
}

#[test]
fn death_by_signal_exits_128_plus_signal() {
    let Some(libc) = libc_path() else {
        eprintln!("skipped: no C library found in /proc/self/maps");
        return;
    };
    let out = TempDir::new("signal");
    let r = record(
        &[
            os("--shim"),
            libc.as_os_str(),
            os("--out"),
            out.path().as_os_str(),
            os("--"),
            os("sh"),
            os("-c"),
            os("kill -9 $$"),
        ],
        &[],
    );
    assert_eq!(r.code, Some(137), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("sh was killed by signal 9 (SIGKILL); exiting with 137"),
        "{}",
        r.stderr
    );
    assert!(r
        .stderr
        .lines()
        .last()
        .unwrap()
        .starts_with("causeway: capture written to "));
}

#[test]
fn help_explains_levels_policies_and_env() {
    let o = causeway().args(["record", "--help"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let h = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "1  phases: NVTX ranges",
        "2  host:",
        "3  full:   + device intervals: when each kernel, copy and memset ran on the device",
        "4  edge:   + every other call of the CUDA runtime and driver API",
        "DEVICE TIMING (level 3, default cupti; level 4 with --backend",
        "cupti   CUPTI activity records, put on the host clock by CUPTI's timestamp callback",
        "--cupti PATH names libcupti.so (CAUSEWAY_CUPTI)",
        "events  CUDA timing events recorded around each launch, copy, memset and graph launch",
        "never on a capturing stream",
        "the report states the conversion bound",
        "--backend <BACKEND>",
        "overwrite",
        "64 MiB",
        "CAUSEWAY_OUT",
        "CAUSEWAY_SHIM",
        "causeway record [OPTIONS] -- CMD [ARGS]...",
    ] {
        assert!(h.contains(needle), "help lacks {needle:?}:\n{h}");
    }
}

#[test]
fn a_command_that_cannot_run_exits_126() {
    let Some(libc) = libc_path() else {
        eprintln!("skipped: no C library found in /proc/self/maps");
        return;
    };
    let out = TempDir::new("noexec");
    let script = out.join("not-executable.sh");
    std::fs::write(&script, b"#!/bin/sh\nexit 0\n").unwrap();
    let r = record(
        &[
            os("--shim"),
            libc.as_os_str(),
            os("--out"),
            out.path().as_os_str(),
            os("--"),
            script.as_os_str(),
        ],
        &[],
    );
    assert!(
        one_error_line_with(&r, 126).ends_with("permission denied"),
        "{}",
        r.stderr
    );
}

/// A ring larger than the free space where it goes is refused before anything runs; a large one that
/// fits is allowed with what it will cost said first (issue 20: 64 GiB rings filled a disk, 4 GiB
/// ones stalled the first call 18 s unannounced).
#[test]
fn ring_sizes_are_checked_against_the_disk_and_their_cost_said() {
    let Some(libc) = libc_path() else {
        eprintln!("skipped: no C library found in /proc/self/maps");
        return;
    };
    let out = TempDir::new("ringcost");
    let free = {
        let c = std::ffi::CString::new(out.path().as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: zeroed bytes are a valid statvfs; a NUL-terminated path.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
        st.f_bavail as u64 * st.f_frsize as u64
    };
    // A GiB beyond what is free: other tests write and delete files meanwhile.
    let too_big = ((free >> 20) + 1024).min(65536);
    if too_big << 20 <= free {
        eprintln!("skipped: more than 64 GiB free here");
    } else {
        let r = record(
            &[
                os("--ring-mb"),
                os(&too_big.to_string()),
                os("--shim"),
                libc.as_os_str(),
                os("--out"),
                out.path().as_os_str(),
                os("--"),
                os("true"),
            ],
            &[],
        );
        let e = one_error_line(&r);
        assert!(e.contains("MiB free"), "{e}");
        assert!(entries_of(out.path()).is_empty(), "nothing left behind");
    }
    let r = record(
        &[
            os("--ring-mb"),
            os("1024"),
            os("--shim"),
            libc.as_os_str(),
            os("--out"),
            out.path().as_os_str(),
            os("--"),
            os("true"),
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("warning: --ring-mb 1024") && r.stderr.contains("stalls"),
        "{}",
        r.stderr
    );
}
