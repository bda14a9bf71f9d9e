//! Running a plan: one directory per run under the experiment's directory, the program's stdout and
//! stderr kept there (`stdout.txt`, `stderr.txt`), and the process timed from spawn to exit. The caller
//! builds each arm's command — program, arguments and environment — so this module knows nothing of
//! the shim.

use crate::plan::{Arm, PlannedRun};
use serde::Serialize;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

/// What one run did.
#[derive(Debug, Clone, Serialize)]
pub struct RunRecord {
    pub round: usize,
    pub arm: Arm,
    /// The run's directory: its capture (instrumented and control arms), `stdout.txt`, `stderr.txt`.
    pub dir: PathBuf,
    /// Spawn to exit, host monotonic clock.
    pub wall_ns: u64,
    /// The exit code (128 + S for a death by signal S).
    pub exit: i32,
}

/// Why a plan could not be carried out, worded for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError(pub String);

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The last non-empty line of a file (for error messages), if any.
fn last_line(path: &Path) -> Option<String> {
    let text = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&text);
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.chars().take(300).collect())
}

/// The dispositions of SIGINT and SIGQUIT before the first run in flight ignored them, and how many
/// runs are in flight: dispositions are per process, so plans running at once (threads, tests) must
/// not put the old ones back while another run still waits.
static INTERRUPTS: Mutex<(usize, [libc::sighandler_t; 2])> = Mutex::new((0, [0; 2]));

/// Ignores SIGINT and SIGQUIT in this process; returns the dispositions to give a child.
fn ignore_interrupts() -> [libc::sighandler_t; 2] {
    let mut g = INTERRUPTS.lock().unwrap_or_else(|e| e.into_inner());
    if g.0 == 0 {
        // SAFETY: installing SIG_IGN has no preconditions; the previous handlers are kept to be put
        // back when the last run in flight ends.
        g.1 = unsafe {
            [
                libc::signal(libc::SIGINT, libc::SIG_IGN),
                libc::signal(libc::SIGQUIT, libc::SIG_IGN),
            ]
        };
    }
    g.0 += 1;
    g.1
}

fn restore_interrupts() {
    let mut g = INTERRUPTS.lock().unwrap_or_else(|e| e.into_inner());
    g.0 = g.0.saturating_sub(1);
    if g.0 == 0 {
        for (sig, h) in [libc::SIGINT, libc::SIGQUIT].into_iter().zip(g.1) {
            if h != libc::SIG_ERR {
                // SAFETY: re-installs a disposition `ignore_interrupts` replaced.
                unsafe { libc::signal(sig, h) };
            }
        }
    }
}

/// Runs `plan` in order under `out` (which must exist). `command(arm, dir)` gives the command of a run
/// whose directory is `dir` (created before the call); stdin is /dev/null and stdout/stderr go to
/// `dir/stdout.txt` and `dir/stderr.txt`. `progress` is called after each run with its position.
/// Stops at the first run that cannot start or exits with a non-zero code (a failing program makes
/// every comparison meaningless), naming the run and its stderr.
pub fn run_plan(
    plan: &[PlannedRun],
    out: &Path,
    mut command: impl FnMut(Arm, &Path) -> Result<Command, String>,
    mut progress: impl FnMut(usize, &PlannedRun, &RunRecord),
) -> Result<Vec<RunRecord>, RunError> {
    let mut done = Vec::with_capacity(plan.len());
    for (i, p) in plan.iter().enumerate() {
        let dir = out.join(p.dir_name());
        // Private (0700, 0600): the run's capture goes in here, and the shim refuses a capture
        // directory others could have swapped.
        causeway_ring::private::create_dir(&dir)
            .map_err(|e| RunError(format!("cannot create {}: {e}", dir.display())))?;
        let mut cmd = command(p.arm, &dir).map_err(RunError)?;
        let file = |name: &str| {
            causeway_ring::private::create_file(&dir.join(name), false)
                .map_err(|e| RunError(format!("cannot create {}: {e}", dir.join(name).display())))
        };
        cmd.stdin(Stdio::null())
            .stdout(file("stdout.txt")?)
            .stderr(file("stderr.txt")?);
        let program = cmd.get_program().to_string_lossy().into_owned();
        let t0 = Instant::now();
        // Ctrl-C and Ctrl-\ reach the whole foreground group: while a run is in flight the harness
        // ignores them, so the run ends (as the program decides) and the experiment stops saying where
        // its runs are, as `causeway record` does. They are ignored before the spawn (a child could
        // signal at once), and the child gets the dispositions the harness had.
        let theirs = ignore_interrupts();
        // SAFETY: the closure runs in the forked child before exec and calls only `signal`, which
        // is async-signal-safe; it touches no memory of the parent's.
        unsafe {
            cmd.pre_exec(move || {
                libc::signal(libc::SIGINT, theirs[0]);
                libc::signal(libc::SIGQUIT, theirs[1]);
                Ok(())
            });
        }
        let forwarding = crate::signals::forward();
        let spawned = cmd.spawn();
        let status = match spawned {
            Ok(mut child) => {
                forwarding.child(child.id());
                let waited = child.wait();
                drop(forwarding);
                restore_interrupts();
                waited.map_err(|e| {
                    RunError(format!("run {}: waiting for {program}: {e}", p.dir_name()))
                })?
            }
            Err(e) => {
                restore_interrupts();
                let why = match e.kind() {
                    std::io::ErrorKind::NotFound => "command not found".to_string(),
                    std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                    _ => e.to_string(),
                };
                return Err(RunError(format!("cannot run {program}: {why}")));
            }
        };
        let wall_ns = t0.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        let exit = match (status.code(), status.signal()) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            _ => 1,
        };
        let rec = RunRecord {
            round: p.round,
            arm: p.arm,
            dir: dir.clone(),
            wall_ns,
            exit,
        };
        progress(i, p, &rec);
        if exit != 0 {
            let err = dir.join("stderr.txt");
            let tail = last_line(&err)
                .map(|l| format!(": {l}"))
                .unwrap_or_default();
            return Err(RunError(format!(
                "run {} ({} arm, round {}): {program} exited with code {exit}; its stderr is {}{tail}",
                p.dir_name(),
                p.arm.name(),
                p.round,
                err.display()
            )));
        }
        done.push(rec);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::interleave;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cw-control-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn runs_in_order_with_output_kept() {
        let out = scratch("order");
        let plan = interleave(&[Arm::Instrumented, Arm::Control], 2);
        let mut seen = Vec::new();
        let recs = run_plan(
            &plan,
            &out,
            |arm, _dir| {
                let mut c = Command::new("sh");
                c.arg("-c").arg(format!("echo {}", arm.name()));
                Ok(c)
            },
            |i, p, _| seen.push((i, p.dir_name())),
        )
        .unwrap();
        assert_eq!(recs.len(), 4);
        assert_eq!(seen[3], (3, "r02-control".to_string()));
        let text = std::fs::read_to_string(out.join("r02-instrumented/stdout.txt")).unwrap();
        assert_eq!(text, "instrumented\n");
        assert!(recs.iter().all(|r| r.exit == 0 && r.wall_ns > 0));
        let _ = std::fs::remove_dir_all(&out);
    }

    /// Ctrl-C reaches the harness too: while a run is in flight it must survive it (this test process
    /// would die of the SIGINT otherwise), let the run end, and stop with where the runs are.
    #[test]
    fn an_interrupt_during_a_run_ends_the_run_not_the_harness() {
        let out = scratch("sigint");
        let plan = interleave(&[Arm::Instrumented], 2);
        let err = run_plan(
            &plan,
            &out,
            |_, _| {
                let mut c = Command::new("sh");
                // The interrupt a terminal sends to the foreground group, here to the harness alone.
                c.arg("-c").arg("kill -INT $PPID; sleep 0.2; exit 130");
                Ok(c)
            },
            |_, _, _| {},
        )
        .unwrap_err();
        assert!(err.0.contains("exited with code 130"), "{}", err.0);
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn a_failing_run_stops_the_plan_and_says_where_to_look() {
        let out = scratch("fail");
        let plan = interleave(&[Arm::Instrumented, Arm::Control], 3);
        let mut n = 0;
        let err = run_plan(
            &plan,
            &out,
            |arm, _| {
                let mut c = Command::new("sh");
                let code = if arm == Arm::Control { 3 } else { 0 };
                c.arg("-c").arg(format!("echo oops >&2; exit {code}"));
                Ok(c)
            },
            |_, _, _| n += 1,
        )
        .unwrap_err();
        assert_eq!(n, 2, "stops right after the failing run");
        assert!(err.0.contains("r01-control"), "{err}");
        assert!(err.0.contains("exited with code 3"), "{err}");
        assert!(err.0.ends_with(": oops"), "{err}");
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn a_missing_command_is_named() {
        let out = scratch("missing");
        let plan = interleave(&[Arm::Bare], 1);
        let err = run_plan(
            &plan,
            &out,
            |_, _| Ok(Command::new("/nonexistent/cw-no-such-program")),
            |_, _, _| {},
        )
        .unwrap_err();
        assert_eq!(
            err.0,
            "cannot run /nonexistent/cw-no-such-program: command not found"
        );
        let _ = std::fs::remove_dir_all(&out);
    }
}
