//! `causeway control` end to end on the doubles: `overlap_prog` (a copy on one stream overlapping a
//! kernel on another by construction, or everything on one stream) under the shim, with the driver
//! double's `CWD_TIMING_EVENTS_SERIALIZE=1` (timing events make the copy engine wait for compute: the
//! Intel behaviour) or with free events. The harness must flag the overlap claim exactly when the
//! instrument created the serialisation.

use causeway_itests::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

/// One experiment at a time: the doubles' streams are threads that sleep, and several programs at once
/// on a small machine stretch each other's steps.
static RUNNING: Mutex<()> = Mutex::new(());

const STEPS: &str = "6";
const RUNS: &str = "3";

/// `causeway control --runs 3 --ring-mb 2 ARGS -- overlap_prog MODE --steps 6` with a 20 ms kernel and
/// a 200 MiB (21 ms) copy per step (long against the scheduling noise of a loaded machine), with `env`
/// added.
fn control<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
    mode: &str,
    env: &[(&str, &str)],
) -> (Output, std::path::PathBuf) {
    let _one = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    let out = scratch("control");
    let mut c = Command::new(cli());
    c.arg("control")
        .args(["--runs", RUNS, "--ring-mb", "2", "--out"])
        .arg(&out)
        .args(args)
        .arg("--")
        .arg(prog("overlap_prog"))
        .args([
            mode,
            "--steps",
            STEPS,
            "--kernel-us",
            "20000",
            "--copy-mib",
            "200",
        ])
        .env("LD_LIBRARY_PATH", ci_build())
        .env_remove("LD_PRELOAD")
        .env_remove("CWD_TIMING_EVENTS_SERIALIZE");
    for (k, _) in std::env::vars() {
        if k.starts_with("CAUSEWAY_") {
            c.env_remove(k);
        }
    }
    for (k, v) in env {
        c.env(k, v);
    }
    (c.output().expect("spawn causeway"), out)
}

fn json(o: &Output) -> Value {
    assert!(o.status.success(), "causeway control failed: {}", stderr(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

fn claim<'a>(r: &'a Value, id: &str) -> &'a Value {
    r["claims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no claim {id}: {r}"))
}

fn mark(r: &Value, id: &str) -> String {
    claim(r, id)["mark"].as_str().unwrap().to_string()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

const SERIALIZE: (&str, &str) = ("CWD_TIMING_EVENTS_SERIALIZE", "1");

/// Level 3 with events timing every call (six steps per run leave too few for one step in 16), the
/// durations arm taking CUPTI from the double, and `more`.
fn events_args(more: &[&str]) -> Vec<String> {
    let lib = prog("libcupti.so.13").display().to_string();
    let mut v: Vec<String> = [
        "--level",
        "3",
        "--backend",
        "events",
        "--sample",
        "1",
        "--cupti",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(lib);
    v.extend(more.iter().map(|s| s.to_string()));
    v
}

/// Attempts of an experiment that a loaded machine may leave unresolved (below).
const ATTEMPTS: usize = 5;

/// Whether the experiment itself says it was too noisy to mark claim `c`: its control runs disagree
/// (one run whose steps were stretched by other programs on the machine gets a bound near 0 and a
/// longer step time), or its resolution is coarser than half the gap the experiment exists to tell
/// apart (serialised 0 against overlapped 1 for the overlap figures, a doubled step for the step
/// time). Seen in CI and on the 2-CPU VM with busy loops beside the test (with four, 3 of 5 runs
/// failed before these attempts: control medians 0.31 / 0.55 / 0.95, "this experiment resolves
/// 0.80"), never on a quiet one, where the overlap resolves 0.1–0.35. An instrument that really hid
/// the serialisation still fails: it is marked "holds" on a quiet run, which resolves it, and after
/// every attempt on a loud one.
fn unresolved(c: &Value) -> bool {
    // No figures (not tested): not noise; the assertions below say what is wrong.
    let (Some(min), Some(med), Some(max)) = (
        c["control"]["min"].as_f64(),
        c["control"]["median"].as_f64(),
        c["control"]["max"].as_f64(),
    ) else {
        return false;
    };
    let gap = if c["unit"] == "ratio" { 1.0 } else { med };
    let coarse = c["effect"]["resolution"]
        .as_f64()
        .is_some_and(|r| r > 0.5 * gap);
    max - min > 0.3 * gap || coarse
}

/// The claims the serialising events must make fail.
const SERIALISED: [&str; 3] = ["copy_compute_overlap", "stream_concurrency", "step_time"];

/// `control(args, "a", [SERIALIZE])` with `--json` until every claim in [`SERIALISED`] is marked "does
/// not survive" or one the experiment resolved is not, at most [`ATTEMPTS`] times.
fn serialised_experiment(args: &[String]) -> (Output, Value, std::path::PathBuf) {
    let mut attempt = 1;
    loop {
        let (o, out) = control(args, "a", &[SERIALIZE]);
        let r = json(&o);
        let missed: Vec<&Value> = SERIALISED
            .iter()
            .map(|id| claim(&r, id))
            .filter(|c| c["mark"] != "does-not-survive")
            .collect();
        if missed.is_empty() || attempt == ATTEMPTS || !missed.iter().all(|c| unresolved(c)) {
            return (o, r, out);
        }
        eprintln!("attempt {attempt}: the experiment did not resolve, trying again: {missed:?}");
        attempt += 1;
    }
}

#[test]
fn events_that_make_the_copy_engine_wait_are_flagged() {
    let (o, r, out) = serialised_experiment(&events_args(&["--json"]));
    let ov = claim(&r, "copy_compute_overlap");
    assert_eq!(ov["mark"], "does-not-survive", "{ov}");
    assert!(f(&ov["instrumented"]["max"]) < 0.2, "{ov}");
    assert!(
        f(&ov["control"]["min"]) > f(&ov["instrumented"]["max"]),
        "{ov}"
    );
    assert_eq!(ov["control_is"], "lower-bound");
    assert_eq!(mark(&r, "stream_concurrency"), "does-not-survive");
    // The instrument doubled the step: a 21 ms copy after a 20 ms kernel instead of beside it.
    assert_eq!(mark(&r, "step_time"), "does-not-survive");
    assert!(
        f(&r["step_time_ratio"]["min"]) > 1.5,
        "{}",
        r["step_time_ratio"]
    );
    assert_eq!(r["instrumented"]["backend"], "events");
    assert_eq!(r["control"]["backend"], "none");
    assert_eq!(r["control"]["level"], 2);
    assert_eq!(r["pairing"], "step-index");
    assert_eq!(r["assumptions"].as_array().unwrap().len(), 3);

    // Interleaved, and every run's capture kept where the report says.
    let runs = r["runs"].as_array().unwrap();
    let order: Vec<&str> = runs.iter().map(|x| x["arm"].as_str().unwrap()).collect();
    assert_eq!(
        order,
        [
            "instrumented",
            "control",
            "durations",
            "instrumented",
            "control",
            "durations",
            "instrumented",
            "control",
            "durations"
        ]
    );
    // The bounds' busy times are the CUPTI arm's, which the serialising events do not touch.
    assert_eq!(r["busy_times_from"], "durations");
    assert_eq!(r["durations"]["backend"], "cupti");
    assert_eq!(r["sample_every"], 1);
    assert!(f(&ov["effect"]["resolution"]) > 0.0, "{ov}");
    assert!(f(&ov["effect"]["low"]) > 0.0, "{ov}");
    let dir = Path::new(r["out_dir"].as_str().unwrap());
    assert!(dir.starts_with(std::fs::canonicalize(&out).unwrap()));
    for x in runs {
        let d = Path::new(x["dir"].as_str().unwrap());
        assert!(d.starts_with(dir));
        assert!(
            stdout_of(d).starts_with("overlap mode=a "),
            "{}",
            d.display()
        );
        let rep = report(d);
        assert_eq!(process_sum(&rep, "dropped"), 0);
        let level = rep["processes"][0]["level"].as_u64().unwrap();
        match x["arm"].as_str().unwrap() {
            "instrumented" | "durations" => {
                assert_eq!(level, 3);
                assert!(process_sum(&rep, "device_intervals") > 0);
            }
            _ => {
                assert_eq!(level, 2);
                assert_eq!(process_sum(&rep, "device_intervals"), 0);
            }
        }
    }
    assert!(stderr(&o).contains(&format!(
        "causeway: captures of every run in {}",
        dir.display()
    )));
}

fn stdout_of(d: &Path) -> String {
    std::fs::read_to_string(d.join("stdout.txt")).unwrap()
}

/// Most instrumented runs of a claim overlap: the median of the per-run figures, not the least of
/// them (one run of the doubles' timed work can be starved on a loaded 2-CPU machine: 0.59 once in
/// CI, with a median of 1.00); an instrument that serialised the work puts every run near 0.
fn assert_most_runs_overlap(ov: &Value) {
    assert!(f(&ov["instrumented"]["median"]) > 0.8, "{ov}");
}

#[test]
fn free_events_hold_under_control() {
    let (o, _) = control(&events_args(&["--json"]), "a", &[]);
    let r = json(&o);
    let ov = claim(&r, "copy_compute_overlap");
    assert_eq!(ov["mark"], "holds", "{ov}");
    assert_most_runs_overlap(ov);
    assert_eq!(mark(&r, "stream_concurrency"), "holds");
}

#[test]
fn cupti_is_not_affected_by_the_serialising_events() {
    let lib = prog("libcupti.so.13").display().to_string();
    let (o, _) = control(
        &[
            "--level",
            "3",
            "--backend",
            "cupti",
            "--cupti",
            &lib,
            "--json",
        ],
        "a",
        &[SERIALIZE],
    );
    let r = json(&o);
    assert_eq!(r["instrumented"]["backend"], "cupti");
    let ov = claim(&r, "copy_compute_overlap");
    assert_eq!(ov["mark"], "holds", "{ov}");
    assert_most_runs_overlap(ov);
}

#[test]
fn true_serialisation_is_not_flagged() {
    // One stream: serialised by construction, whatever the events do.
    let (o, _) = control(&events_args(&["--json"]), "b", &[SERIALIZE]);
    let r = json(&o);
    let ov = claim(&r, "copy_compute_overlap");
    assert_eq!(ov["mark"], "holds", "{ov}");
    assert_eq!(f(&ov["instrumented"]["max"]), 0.0, "{ov}");
    let sc = claim(&r, "stream_concurrency");
    assert_eq!(sc["mark"], "not-tested", "{sc}");
    assert!(sc["compared"].as_str().unwrap().contains("two streams"));
    // A dependency between two streams (event wait): serialised too, and not flagged.
    let (o, _) = control(&events_args(&["--json"]), "c", &[SERIALIZE]);
    let r = json(&o);
    assert_eq!(mark(&r, "stream_concurrency"), "holds");
    assert_eq!(
        f(&claim(&r, "stream_concurrency")["instrumented"]["max"]),
        0.0
    );
    assert_eq!(mark(&r, "copy_compute_overlap"), "not-tested");
}

#[test]
fn text_names_every_claim_its_mark_and_never_a_speed() {
    // Whether the marks are right is the JSON tests' business; this one needs a "does not survive" to
    // see how it is written, and a loaded machine can leave an experiment too noisy to mark anything
    // (`serialised_experiment`): then it is run again.
    let mut attempt = 1;
    let o = loop {
        let (o, _) = control(&events_args(&["--bare"]), "a", &[SERIALIZE]);
        assert!(o.status.success(), "{}", stderr(&o));
        if stdout(&o).contains("does not survive the control") || attempt == ATTEMPTS {
            break o;
        }
        eprintln!(
            "attempt {attempt}: nothing was marked, trying again:\n{}",
            stdout(&o)
        );
        attempt += 1;
    };
    let text = stdout(&o);
    for want in [
        "interleaved (instrumented, control, durations, bare per round)",
        "RESOLVES",
        "copy/compute overlap",
        "stream concurrency",
        "process time",
        "does not survive the control",
        ">= ",
        "ASSUMPTIONS",
        "captures: ",
    ] {
        assert!(text.contains(want), "no {want:?} in:\n{text}");
    }
    // One explanation line per claim.
    assert!(text.lines().filter(|l| l.starts_with("  - ")).count() >= 4);
    let lower = format!("{text}{}", stderr(&o)).to_lowercase();
    for word in ["faster", "slower", "speedup", "speed-up", "regress"] {
        assert!(!lower.contains(word), "{word:?} in:\n{text}");
    }
}

#[test]
fn clear_errors() {
    let _one = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    let out = scratch("control-err");
    let run = |args: &[&str]| {
        Command::new(cli())
            .arg("control")
            .arg("--out")
            .arg(&out)
            .args(args)
            .env("LD_LIBRARY_PATH", ci_build())
            .output()
            .expect("spawn causeway")
    };
    let o = run(&["--runs", "1", "--", "/nonexistent/no-such-program"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot run /nonexistent/no-such-program: command not found"),
        "{}",
        stderr(&o)
    );
    // Nothing ran: no experiment folder is left behind.
    let left: Vec<_> = std::fs::read_dir(&out)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
    // No NVTX steps: said, with the run that had none.
    let mt = prog("mt_launch").display().to_string();
    let o = run(&[
        "--runs",
        "3",
        "--level",
        "2",
        "--ring-mb",
        "2",
        "--",
        &mt,
        "1",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("no steps in") && e.contains("NVTX"), "{e}");
    // Said after the first round, not after all three.
    let runs: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .map(|r| r.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !runs.is_empty() && runs.iter().all(|r| r.starts_with("r01-")),
        "{runs:?}"
    );
    let o = run(&["--runs", "0", "--", &mt]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--runs 0"), "{}", stderr(&o));
    let o = run(&["--control-level", "3", "--", &mt]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no device timing"), "{}", stderr(&o));
    // A failing program stops the experiment and says where its stderr is.
    let ex = prog("exitcode").display().to_string();
    let o = run(&[
        "--runs",
        "2",
        "--level",
        "2",
        "--ring-mb",
        "2",
        "--",
        &ex,
        "3",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("r01-instrumented") && e.contains("exited with code 3"),
        "{e}"
    );
}
