//! The shim and `causeway record` on hostile hosts (issue 20, items 1–3 and 6): a file-size limit
//! smaller than the ring, a capture directory others could swap, secure execution, and signals that
//! must reach the program. The program's result and exit code never change.

use causeway_itests::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn rings_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "cwring"))
                .collect()
        })
        .unwrap_or_default()
}

/// `c` with RLIMIT_FSIZE set to `bytes` in the child before it runs.
fn with_file_limit(c: &mut Command, bytes: u64) {
    // SAFETY: setrlimit is async-signal-safe; the closure touches nothing else.
    unsafe {
        c.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_file_size_limit_below_the_ring_never_kills_the_program() {
    // 2 MiB allowed, 64 MiB asked for: the ring shrinks to fit, and says so.
    let mut c = command("mt_launch", &["2", "5"]);
    with_file_limit(&mut c, 2 << 20);
    let (o, cap) = traced(c, 2, &[("CAUSEWAY_RING_MB", "64")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("ring reduced to") && e.contains("RLIMIT_FSIZE"),
        "{e}"
    );
    assert_eq!(e.matches("causeway:").count(), 1, "one line: {e}");
    let rings = rings_in(&cap);
    assert_eq!(rings.len(), 1);
    assert!(std::fs::metadata(&rings[0]).unwrap().len() <= 2 << 20);
    assert_eq!(launches(&report(&cap), "sleep_0us"), 10);

    // 100 KiB: no ring fits; the program runs as it would, unrecorded.
    let mut c = command("mt_launch", &["2", "5"]);
    with_file_limit(&mut c, 100 << 10);
    let (o, cap) = traced(c, 2, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("no ring fits") && e.contains("passing calls through"),
        "{e}"
    );
    assert!(rings_in(&cap).is_empty());
    assert_eq!(counter(&stdout(&o), "cudaLaunchKernel"), 10);

    // Under `causeway record`, which the limit reaches too.
    let out = scratch("fsize-record");
    let mut c = Command::new(cli());
    c.args(["record", "--ring-mb", "64", "--out"])
        .arg(&out)
        .arg("--")
        .arg(prog("mt_launch"))
        .args(["1", "3"])
        .env("LD_LIBRARY_PATH", ci_build());
    with_file_limit(&mut c, 2 << 20);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("ring reduced to"), "{}", stderr(&o));
}

#[test]
fn the_capture_directory_is_private_whatever_the_umask() {
    let out = scratch("umask");
    let mut c = Command::new(cli());
    c.args(["record", "--ring-mb", "1", "--out"])
        .arg(&out)
        .arg("--")
        .arg(prog("mt_launch"))
        .args(["1", "2"])
        .env("LD_LIBRARY_PATH", ci_build());
    // SAFETY: umask is async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let caps: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(caps.len(), 1);
    assert_eq!(
        std::fs::metadata(&caps[0]).unwrap().mode() & 0o777,
        0o700,
        "capture directory"
    );
    for r in rings_in(&caps[0]) {
        assert_eq!(std::fs::metadata(&r).unwrap().mode() & 0o777, 0o600);
    }
}

/// A private capture directory (`CAUSEWAY_PRIVATE_DIR=1`, as `causeway record` sets) that was swapped
/// for a link to another directory, or loosened, or given away, is refused: nothing is written there
/// or through it, and the program runs unchanged.
#[test]
fn a_swapped_capture_directory_is_refused() {
    let base = scratch("swap");
    let elsewhere = base.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let link = base.join("cw-link");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    let loose = base.join("cw-loose");
    std::fs::create_dir(&loose).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cases = vec![
        (link.clone(), "a symbolic link"),
        (loose.clone(), "open to other users"),
    ];
    let foreign = base.join("cw-foreign");
    if is_root() {
        std::fs::create_dir(&foreign).unwrap();
        std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
        cases.push((foreign.clone(), "owned by another user"));
    }
    for (dir, why) in cases {
        let mut c = command("mt_launch", &["1", "3"]);
        c.env("LD_PRELOAD", shim())
            .env("CAUSEWAY_OUT", &dir)
            .env("CAUSEWAY_PRIVATE_DIR", "1")
            .env("CAUSEWAY_RING_MB", "1");
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("not private") && e.contains(why), "{why}: {e}");
        assert!(rings_in(&dir).is_empty(), "{why}: a ring was written");
        assert_eq!(counter(&stdout(&o), "cudaLaunchKernel"), 3);
    }
    assert!(rings_in(&elsewhere).is_empty());
    // Without the private flag (LD_PRELOAD by hand into a directory of one's choosing), a link is
    // followed as the user asked, and the file itself is still created without following links.
    let (o, _) = traced(command("mt_launch", &["1", "3"]), 2, &[]);
    assert!(o.status.success());
    let mut c = command("mt_launch", &["1", "3"]);
    c.env("LD_PRELOAD", shim())
        .env("CAUSEWAY_OUT", &link)
        .env("CAUSEWAY_RING_MB", "1");
    assert!(c.output().unwrap().status.success());
    assert_eq!(rings_in(&elsewhere).len(), 1);
}

#[test]
fn record_warns_about_an_out_directory_others_control() {
    let out = scratch("exposed");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = Command::new(cli())
        .args(["record", "--ring-mb", "1", "--out"])
        .arg(&out)
        .arg("--")
        .arg(prog("mt_launch"))
        .args(["1", "2"])
        .env("LD_LIBRARY_PATH", ci_build())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("warning:") && e.contains("no sticky bit"), "{e}");
    assert!(e.contains("capture written to"), "{e}");
}

/// Removes a file when dropped (the shim copied into a trusted library directory).
struct Remove(PathBuf);
impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A setuid-root program run by an ordinary user, with the shim where the loader honours it under
/// secure execution (a system library directory, the library itself setuid): the shim must pass
/// everything through and write nothing where that user's CAUSEWAY_OUT points. Needs root to set it
/// up; skipped (said on stderr) otherwise, and where setuid has no effect (a nosuid mount).
#[test]
fn secure_execution_writes_nothing() {
    if !is_root() {
        eprintln!("skipped: setting up a setuid program needs root");
        return;
    }
    let libdir = [
        "/usr/lib/x86_64-linux-gnu",
        "/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
    ]
    .into_iter()
    .map(Path::new)
    .find(|d| d.is_dir());
    let Some(libdir) = libdir else {
        eprintln!("skipped: no system library directory");
        return;
    };
    let name = format!("libcauseway-secure-test-{}.so", std::process::id());
    let lib = libdir.join(&name);
    if std::fs::copy(shim(), &lib).is_err() {
        eprintln!("skipped: {} is not writable", libdir.display());
        return;
    }
    let _lib = Remove(lib.clone());
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let dir = scratch("secure");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = dir.join("secure_prog");
    std::fs::copy(prog("secure_prog"), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o4755)).unwrap();
    // Where the ordinary user points the capture: a directory anyone may write.
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let mut c = Command::new(&exe);
    c.env_clear()
        .env("LD_PRELOAD", &name)
        .env("CAUSEWAY_OUT", &out)
        .env("CAUSEWAY_LEVEL", "2")
        .env("CAUSEWAY_RING_MB", "1");
    // SAFETY: setgid/setuid are async-signal-safe; dropping to nobody before exec.
    unsafe {
        c.pre_exec(|| {
            if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    if !s.contains("euid=0 secure=1") {
        eprintln!("skipped: the setuid bit had no effect here ({s:?}: a nosuid mount?)");
        return;
    }
    assert!(
        rings_in(&out).is_empty(),
        "a ring was written under secure execution"
    );
    assert!(!stderr(&o).contains("causeway"), "{}", stderr(&o));
    // The same library, not under secure execution, does write (so the test sees the shim load).
    let o = Command::new(prog("secure_prog"))
        .env_clear()
        .env("LD_PRELOAD", &name)
        .env("CAUSEWAY_OUT", &out)
        .env("CAUSEWAY_LEVEL", "2")
        .env("CAUSEWAY_RING_MB", "1")
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(rings_in(&out).len(), 1, "the shim did not load at all");
}

/// SIGTERM and SIGHUP sent to `causeway record` reach the program, and record exits as the program
/// did (128 + the signal), instead of dying at once and leaving the program running as an orphan.
#[test]
fn record_passes_termination_on_to_the_program() {
    for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let out = scratch("sigterm");
        let mut child = Command::new(cli())
            .args(["record", "--level", "1", "--ring-mb", "1", "--out"])
            .arg(&out)
            .args(["--", "sleep", "30"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Until the program runs under the shim (its ring exists).
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_secs(10) {
            let caps: Vec<PathBuf> = std::fs::read_dir(&out)
                .map(|d| d.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
            if caps.iter().any(|c| !rings_in(c).is_empty()) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let t1 = std::time::Instant::now();
        let st = child.wait().unwrap();
        assert!(t1.elapsed() < std::time::Duration::from_secs(10));
        assert_eq!(st.code(), Some(code), "signal {sig}: {st:?}");
        let mut e = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut e).unwrap();
        assert!(
            e.contains("killed by signal") && e.contains("capture written to"),
            "{e}"
        );
    }
}

/// Level 1 records thread lifecycle: a thread that makes hooked calls is known even though its calls
/// are not recorded at that level (issue 20: a 3-thread program reported 1 thread).
#[test]
fn level_1_knows_every_thread_that_calls_cuda() {
    let (o, cap) = traced(
        command("mt_launch", &["3", "4"]),
        1,
        &[("CAUSEWAY_RING_MB", "1")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r = report(&cap);
    let p = &r["processes"][0];
    assert_eq!(p["threads"], 4, "main and 3 launching threads: {p}");
    assert_eq!(calls(&r, "cudaLaunchKernel"), 0, "level 1 records no calls");
}

/// A process that execs keeps its pid and writes a second ring: every exported table carries the
/// ring's key, which tells them apart (issue 20: the processes table repeated pids and joins
/// duplicated rows).
#[test]
fn a_process_that_execs_has_two_rings_told_apart_by_their_key() {
    let out = scratch("exec");
    let o = Command::new(cli())
        .args(["record", "--level", "1", "--ring-mb", "1", "--out"])
        .arg(&out)
        .args(["--", "sh", "-c", "exec sh -c true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let cap = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(
        rings_in(&cap).len(),
        2,
        "one ring before the exec, one after"
    );
    let pq = scratch("exec-pq").join("pq");
    let o = Command::new(cli())
        .args(["export", "--format", "parquet", "-o"])
        .arg(&pq)
        .arg(&cap)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let r = report(&cap);
    let ps = r["processes"].as_array().unwrap();
    assert_eq!(ps.len(), 2);
    assert_eq!(ps[0]["pid"], ps[1]["pid"], "exec keeps the pid");
    assert_ne!(ps[0]["ring"], ps[1]["ring"], "the ring keys differ");
    for p in ps {
        let file = Path::new(p["file"].as_str().unwrap());
        assert_eq!(
            format!("{}.cwring", p["ring"].as_str().unwrap()),
            file.file_name().unwrap().to_string_lossy()
        );
    }
    assert!(pq.join("processes.parquet").exists());
}

/// A program that closes every descriptor it did not open (as daemons do) and opens its own file gets
/// the number the shim's ring had: the shim's first recorded call must not grow that file (it did:
/// 6 bytes became 71 MB), and still reserves its ring, through the file opened again.
#[test]
fn the_programs_own_files_are_never_touched_by_the_ring() {
    let dir = scratch("fd-reuse");
    let own = dir.join("own.txt");
    let c = command("fd_hostile", &["reuse", own.to_str().unwrap()]);
    let (o, cap) = traced(c, 2, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).ends_with("size 6\n"), "{}", stdout(&o));
    assert_eq!(std::fs::read(&own).unwrap(), b"hello\n");
    assert!(!stderr(&o).contains("causeway:"), "{}", stderr(&o));
    let r = report(&cap);
    assert_eq!(r["processes"][0]["disabled"], false, "{r}");
    assert!(r["processes"][0]["entries"].as_u64().unwrap() >= 3, "{r}");
}

/// A fork while another thread makes the process's first recorded call (the shim reserving its ring)
/// must not leave the child waiting for a lock no thread of it holds (it spun forever).
#[test]
fn a_fork_during_the_first_recorded_call_does_not_hang_the_child() {
    for usec in ["0", "1000", "4000"] {
        let base = command("fd_hostile", &["fork", usec]);
        let mut c = Command::new("timeout");
        c.arg("60").arg(base.get_program()).args(base.get_args());
        for (k, v) in base.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        let (o, cap) = traced(c, 2, &[]);
        assert_eq!(o.status.code(), Some(0), "{usec} us: {}", stderr(&o));
        assert_eq!(stdout(&o), "child exit 0\n", "{usec} us");
        // The program and its fork child each have a ring (and `timeout` one or two of its own).
        let r = report(&cap);
        let ours = (r["processes"].as_array().unwrap().iter())
            .filter(|p| p["exe"].as_str().unwrap_or("").ends_with("/fd_hostile"))
            .count();
        assert_eq!(ours, 2, "{usec} us: {r}");
        let _ = std::fs::remove_dir_all(&cap);
    }
}

/// `record` exits as the program did even when its own lines cannot be written (stderr on a full
/// disk: it panicked, exit 101), and its parent directories are private whatever the umask.
#[test]
fn record_keeps_the_programs_exit_code_when_stderr_fails_and_makes_private_parents() {
    let out = scratch("stderr-full").join("a").join("b");
    let st = Command::new(cli())
        .args(["record", "--level", "1", "--ring-mb", "1", "--out"])
        .arg(&out)
        .args(["--", "sh", "-c", "exit 3"])
        .stderr(std::fs::File::create("/dev/full").unwrap())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(3));
    let mut c = Command::new(cli());
    c.args(["record", "--level", "1", "--ring-mb", "1", "--out"])
        .arg(out.join("c").join("d"))
        .args(["--", "true"]);
    // SAFETY: umask is async-signal-safe; the closure touches nothing else.
    unsafe {
        c.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for d in [out.join("c"), out.join("c").join("d")] {
        let mode = std::fs::metadata(&d).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", d.display());
    }
    assert!(
        !stderr(&o).contains("can be written by other users"),
        "{}",
        stderr(&o)
    );
}

/// An output reached through a symbolic link another user could have planted (in a directory of
/// theirs, pointing where root can write and they cannot) is refused by `record`, by the shim under a
/// plain `CAUSEWAY_OUT`, and by `export`; nothing is written where the link leads. A relative
/// `CAUSEWAY_OUT` means the same directory to every child, wherever it runs.
#[test]
fn outputs_through_a_link_someone_else_planted_are_refused() {
    if !is_root() {
        eprintln!("skipped: needs root to own a link as another user");
        return;
    }
    let base = scratch("planted");
    let theirs = base.join("theirs");
    let secret = base.join("secret");
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::create_dir_all(&secret).unwrap();
    let link = theirs.join("caps");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let c = std::ffi::CString::new(link.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: lchown on a path of our own scratch directory.
    assert_eq!(unsafe { libc::lchown(c.as_ptr(), 65534, 65534) }, 0);
    let o = Command::new(cli())
        .args(["record", "--level", "1", "--ring-mb", "1", "--out"])
        .arg(&link)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("owned by uid 65534"), "{}", stderr(&o));
    let (o, _) = traced(
        command("mt_launch", &["1", "2"]),
        2,
        &[("CAUSEWAY_OUT", link.to_str().unwrap())],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("owned by uid 65534") && stderr(&o).contains("passing calls through"),
        "{}",
        stderr(&o)
    );
    let (_, cap) = traced(command("mt_launch", &["1", "2"]), 2, &[]);
    let o = Command::new(cli())
        .args(["export", "--format", "chrome", "-o"])
        .arg(link.join("t.json"))
        .arg(&cap)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("owned by uid 65534"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&secret).unwrap().count(), 0);

    // Relative: resolved against where the program started, for it and its children.
    let here = base.join("here");
    std::fs::create_dir_all(here.join("rel")).unwrap();
    std::fs::create_dir_all(here.join("sub")).unwrap();
    let mut c = Command::new("sh");
    c.args(["-c", "cd sub && exec true"])
        .current_dir(&here)
        .env_remove("LD_PRELOAD");
    let (o, _) = traced(c, 1, &[("CAUSEWAY_OUT", "rel")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(rings_in(&here.join("rel")).len(), 2, "sh and true");
}

/// Two copies of the shim in one process (two installs; a shim already in LD_PRELOAD when `record`
/// adds its own): the one loaded first records, the other passes calls on and says so, so nothing
/// is counted twice (each copy recorded every call: two rings, 200 launches of 100).
#[test]
fn a_second_copy_of_the_shim_stays_out_of_the_way() {
    let copy = scratch("shim-copy").join("libcauseway.so");
    std::fs::copy(shim(), &copy).unwrap();
    let preload = format!("{}:{}", shim().display(), copy.display());
    let (o, cap) = traced(
        command("mt_launch", &["2", "50"]),
        2,
        &[("LD_PRELOAD", preload.as_str())],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "another copy of the shim is loaded before this one ({})",
            shim().display()
        )),
        "{e}"
    );
    assert_eq!(rings_in(&cap).len(), 1);
    assert_eq!(launches(&report(&cap), "sleep_0us"), 100);
    assert_eq!(counter(&stdout(&o), "cudaLaunchKernel"), 100);
}
