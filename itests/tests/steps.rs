//! `causeway report --steps --gaps` end to end: `steps_prog` (NVTX steps, a copy overlapping a kernel on
//! a second stream, one slow step, host-only "dataload" between steps) at level 3 with the CUPTI double,
//! checked against the driver double's ground truth (`CWD_TRUTH`: the true host time of every kernel and
//! copy it ran).

use causeway_itests::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

const N: u64 = 8;
const SLOW: u64 = 3;
/// CUPTI-double times bracket the truth times (a clock read apart at each edge, more if the thread is
/// preempted between the two reads) and go through the ring's tick conversion: a device figure of a step
/// is at least the truth's (less a few ticks of rounding) and at most this much more.
const TOLERANCE_NS: u64 = 50_000;
const ROUNDING_NS: u64 = 2_000;

/// One recording at a time: the doubles' streams are threads that sleep, and on a small machine several
/// programs at once stretch each other's device times by milliseconds.
static RECORDING: Mutex<()> = Mutex::new(());

/// The level-3 CUPTI capture the tests share, and its truth file.
fn cupti_capture() -> &'static (PathBuf, PathBuf) {
    static CAP: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    CAP.get_or_init(|| record(&[]))
}

fn record(extra: &[(&str, &str)]) -> (PathBuf, PathBuf) {
    let _one = RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let truth = scratch("steps-truth").join("truth.txt");
    let tf = truth.display().to_string();
    let lib = prog("libcupti.so.13").display().to_string();
    let mut env: Vec<(&str, &str)> = vec![("CAUSEWAY_CUPTI", lib.as_str()), ("CWD_TRUTH", &tf)];
    env.extend_from_slice(extra);
    let (o, cap) = traced(
        command("steps_prog", &[&N.to_string(), &SLOW.to_string()]),
        3,
        &env,
    );
    assert!(o.status.success(), "steps_prog failed: {}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("steps_prog steps={N} slow={SLOW}")),
        "{}",
        stdout(&o)
    );
    (cap, truth)
}

fn views(cap: &Path, args: &[&str]) -> std::process::Output {
    Command::new(cli())
        .arg("report")
        .args(args)
        .arg(cap)
        .output()
        .expect("spawn causeway")
}

fn views_json(cap: &Path, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    let o = views(cap, &a);
    assert!(o.status.success(), "causeway report failed: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&o)))
}

/// (kind, start, end) of every piece of work the driver double ran.
fn truth(path: &Path) -> Vec<(String, u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].to_string(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

/// Length of the union of `iv` clipped to [lo, hi), by a plain sweep over the sorted edges.
fn covered(iv: &[(u64, u64)], lo: u64, hi: u64) -> u64 {
    let mut edges: Vec<(u64, i32)> = Vec::new();
    for &(b, e) in iv {
        let (b, e) = (b.max(lo), e.min(hi));
        if e > b {
            edges.push((b, 1));
            edges.push((e, -1));
        }
    }
    edges.sort();
    let (mut depth, mut last, mut total) = (0, 0, 0);
    for (t, d) in edges {
        if depth > 0 {
            total += t - last;
        }
        depth += d;
        last = t;
    }
    total
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Unions of spans that contain the truth's contain the truth's union (and intersection): the report
/// can only be larger.
fn near(what: &str, got: u64, want: u64) {
    assert!(
        got + ROUNDING_NS >= want && got <= want + TOLERANCE_NS,
        "{what}: report {got} ns, truth {want} ns"
    );
}

#[test]
fn steps_match_the_programs_structure_and_the_device_truth() {
    let (cap, truth_file) = cupti_capture();
    let r = views_json(cap, &["--steps"]);
    assert!(r.get("gaps").is_none());
    let procs = r["steps"].as_array().unwrap();
    assert_eq!(procs.len(), 1, "{r}");
    let p = &procs[0];
    let sel = &p["selection"];
    assert_eq!(sel["name"], "step");
    assert_eq!(sel["rule"], "most-repeated-level-0");
    assert_eq!(u(&sel["count"]), N);
    // "dataload" also repeats at level 0, once less.
    assert_eq!(sel["runner_up"]["name"], "dataload");
    assert_eq!(u(&sel["runner_up"]["count"]), N - 1);
    assert_eq!(p["device_timed"], true);
    assert_eq!(p["backend"], "cupti");

    let work = truth(truth_file);
    let of = |kind: &str| -> Vec<(u64, u64)> {
        work.iter()
            .filter(|w| w.0 == kind)
            .map(|w| (w.1, w.2))
            .collect()
    };
    let (copies, kernels) = (of("memcpy"), of("kernel"));
    let all: Vec<(u64, u64)> = work.iter().map(|w| (w.1, w.2)).collect();
    assert_eq!(copies.len() as u64, N);

    let steps = p["steps"].as_array().unwrap();
    assert_eq!(steps.len() as u64, N);
    for (i, s) in steps.iter().enumerate() {
        let (lo, hi) = (u(&s["begin_ns"]), u(&s["end_ns"]));
        let wall = u(&s["wall_ns"]);
        assert_eq!(wall, hi - lo);
        // Host: 3 launch-class calls (4 in the slow step), 2 syncs, all on the step's thread.
        let launches = if i as u64 == SLOW { 4 } else { 3 };
        assert_eq!(u(&s["launch_calls"]), launches, "step {i}: {s}");
        assert_eq!(u(&s["sync_calls"]), 2, "step {i}: {s}");
        let (l, y, o) = (u(&s["launch_ns"]), u(&s["sync_ns"]), u(&s["other_ns"]));
        assert_eq!(l + y + o, wall);
        // Regions: the three sub-ranges, once each, directly inside the step.
        let region = |n: &str| -> &Value {
            s["regions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == n)
                .unwrap_or_else(|| panic!("step {i} has no region {n}: {s}"))
        };
        for n in ["h2d", "compute", "wait"] {
            assert_eq!(u(&region(n)["depth"]), 1);
            assert_eq!(u(&region(n)["count"]), 1);
        }
        assert_eq!(s["regions"].as_array().unwrap().len(), 3);
        // The syncs happen inside "wait", the launches inside "h2d" and "compute".
        assert!(u(&region("wait")["ns"]) >= y, "step {i}: {s}");
        assert!(
            u(&region("h2d")["ns"]) + u(&region("compute")["ns"]) >= l,
            "step {i}: {s}"
        );
        let regions_sum: u64 = ["h2d", "compute", "wait"]
            .iter()
            .map(|n| u(&region(n)["ns"]))
            .sum();
        assert_eq!(u(&s["outside_regions_ns"]), wall - regions_sum);

        // Device: the report's unions against the truth's, in the same window.
        let d = &s["device"];
        let copy = covered(&copies, lo, hi);
        let compute = covered(&kernels, lo, hi);
        let busy = covered(&all, lo, hi);
        let both: Vec<(u64, u64)> = copies
            .iter()
            .flat_map(|c| {
                kernels
                    .iter()
                    .map(move |k| (c.0.max(k.0), c.1.min(k.1)))
                    .filter(|x| x.1 > x.0)
            })
            .collect();
        let overlap = covered(&both, lo, hi);
        near(&format!("step {i} copy"), u(&d["copy_ns"]), copy);
        near(&format!("step {i} compute"), u(&d["compute_ns"]), compute);
        near(&format!("step {i} busy"), u(&d["busy_ns"]), busy);
        near(&format!("step {i} overlap"), u(&d["overlap_ns"]), overlap);
        assert_eq!(u(&d["idle_ns"]), wall - u(&d["busy_ns"]));
        assert_eq!(u(&d["bound_ns"]), 0, "CUPTI times are on the host clock");
        // The copy (100 us at 10 GB/s) and the kernels ran inside the step, which waited for them.
        assert!(u(&d["copy_ns"]) >= 100_000, "step {i}: {d}");
        let min_compute = if i as u64 == SLOW {
            10_200_000
        } else {
            200_000
        };
        assert!(u(&d["compute_ns"]) >= min_compute, "step {i}: {d}");
        let ratio = d["copy_compute_overlap"].as_f64().unwrap();
        let want = u(&d["overlap_ns"]) as f64 / u(&d["copy_ns"]).min(u(&d["compute_ns"])) as f64;
        assert!((ratio - want).abs() < 1e-9, "step {i}: {d}");
    }

    // Across steps, recomputed here from the steps' wall times. (Which step is slowest is not asserted
    // beyond the slow step being among the five: on a busy machine the doubles' sleeping streams can
    // stall another step for as long.)
    let walls: Vec<u64> = steps.iter().map(|s| u(&s["wall_ns"])).collect();
    let mut by_wall: Vec<usize> = (0..walls.len()).collect();
    by_wall.sort_by(|&a, &b| walls[b].cmp(&walls[a]).then(a.cmp(&b)));
    let slowest: Vec<usize> = p["slowest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| u(v) as usize)
        .collect();
    assert_eq!(slowest, by_wall[..5]);
    assert!(slowest.contains(&(SLOW as usize)), "{slowest:?} {walls:?}");
    let mut sorted = walls.clone();
    sorted.sort_unstable();
    let (min, max) = (sorted[0], sorted[walls.len() - 1]);
    let sum = &p["summary"];
    assert_eq!(u(&sum["wall_ns"]["min"]), min);
    assert_eq!(u(&sum["wall_ns"]["max"]), max);
    // Nearest rank of 8 values: the median is the 4th, p99 the 8th.
    assert_eq!(u(&sum["wall_ns"]["median"]), sorted[3]);
    assert_eq!(u(&sum["wall_ns"]["p99"]), max);
    assert_eq!(u(&sum["wall_ns"]["total"]), walls.iter().sum::<u64>());
    assert_eq!(u(&sum["device"]["bound_ns"]), 0);
    let dist = &p["distribution"];
    let counts: Vec<u64> = dist["counts"].as_array().unwrap().iter().map(u).collect();
    let mut want = vec![0u64; 10];
    for w in &walls {
        // Bin i holds min + i·(max − min)/10 <= w < min + (i + 1)·(max − min)/10; the last is closed.
        let i = ((w - min) as f64 * 10.0 / (max - min) as f64).floor() as usize;
        want[i.min(9)] += 1;
    }
    assert_eq!(counts, want, "{dist}");
    let ratio = dist["p99_over_p50"].as_f64().unwrap();
    assert!(
        (ratio - max as f64 / sorted[3] as f64).abs() < 1e-9,
        "{dist}"
    );
    // Region summary: each region in every step.
    for r in p["regions"].as_array().unwrap() {
        assert_eq!(u(&r["steps"]), N, "{r}");
    }
}

#[test]
fn launch_gaps_find_the_host_only_dataload_between_steps() {
    let (cap, _) = cupti_capture();
    let r = views_json(cap, &["--gaps"]);
    assert!(r.get("steps").is_none());
    let g = &r["gaps"][0];
    let tracks = g["tracks"].as_array().unwrap();
    // All streams, then the two streams of the program.
    assert_eq!(tracks.len(), 3, "{g}");
    assert_eq!(tracks[0]["track"], "all streams");
    // N copies, N + 1 sleep_100us (warm-up), N sleep_200us, 1 sleep_1000us.
    assert_eq!(u(&tracks[0]["spans"]), 3 * N + 2);
    assert_eq!(u(&tracks[1]["spans"]) + u(&tracks[2]["spans"]), 3 * N + 2);
    for t in tracks {
        let gaps = &t["gaps"];
        assert_eq!(
            u(&gaps["count"]) + u(&t["overlaps"]) + 1,
            u(&t["spans"]),
            "{t}"
        );
        assert!(u(&gaps["p50_ns"]) <= u(&gaps["p99_ns"]));
        assert!(u(&gaps["p99_ns"]) <= u(&gaps["p999_ns"]));
        assert!(u(&gaps["p999_ns"]) <= u(&gaps["max_ns"]));
    }
    // The N - 1 = 7 "dataload" pauses (20 ms of host sleep, no CUDA call, every stream drained) are gaps
    // of all streams of at least 20 ms, so the 5 largest are at least that long; those that hold a
    // dataload hold all of it.
    let largest = g["largest"].as_array().unwrap();
    assert_eq!(largest.len(), 5);
    let mut prev = u64::MAX;
    let mut with_dataload = 0;
    for gap in largest {
        let ns = u(&gap["gap_ns"]);
        assert!(ns <= prev, "not longest first: {g}");
        prev = ns;
        assert!(ns >= 20_000_000, "{gap}");
        let Some(dl) = gap["ranges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "dataload")
        else {
            // A stall of the doubles' stream threads on a busy machine.
            continue;
        };
        with_dataload += 1;
        let dl_ns = u(&dl["end_ns"]) - u(&dl["begin_ns"]);
        assert_eq!(u(&dl["in_gap_ns"]), dl_ns, "{gap}");
        assert!(ns >= dl_ns);
        // Around it: the previous step's syncs returning and the next step's copy being issued.
        let apis: Vec<&str> = gap["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["api"].as_str().unwrap())
            .collect();
        assert!(apis.contains(&"cudaMemcpyAsync"), "{gap}");
        assert!(apis.contains(&"cudaStreamSynchronize"), "{gap}");
        // The host sat in CUDA calls for little of it: the dataload sleep is outside any call.
        assert!(u(&gap["host_in_calls_ns"]) <= ns - dl_ns, "{gap}");
    }
    assert!(with_dataload >= 3, "{g}");
}

#[test]
fn range_and_domain_options_and_the_text_form() {
    let (cap, _) = cupti_capture();
    // --range picks nested ranges too.
    let r = views_json(cap, &["--steps", "--range", "compute"]);
    let p = &r["steps"][0];
    assert_eq!(p["selection"]["rule"], "range-option");
    assert_eq!(u(&p["selection"]["count"]), N);
    // A domain with no such range: a mistake (exit 2) naming the ranges the capture has.
    let o = views(
        cap,
        &["--json", "--steps", "--range", "step", "--domain", "nope"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    let e = stderr(&o);
    assert!(
        e.contains("no NVTX range \"step\" in domain \"nope\"; the capture's ranges: ")
            && e.contains("\"step\" (8x)"),
        "{e}"
    );
    // --range without --steps is a usage error.
    let o = views(cap, &["--range", "step"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // The tables.
    let o = views(cap, &["--steps", "--gaps"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for want in [
        "STEPS  process",
        "the outermost (level-0) range seen most often: \"step\"",
        "copy/compute overlap",
        "SLOWEST STEPS",
        "STEP TIME DISTRIBUTION",
        "LAUNCH GAPS",
        "LARGEST GAPS",
        "range \"dataload\"",
    ] {
        assert!(text.contains(want), "missing {want:?}:\n{text}");
    }
}

#[test]
fn the_events_backend_states_its_bound() {
    let (cap, _) = record(&[
        ("CAUSEWAY_BACKEND", "events"),
        ("CAUSEWAY_EVENTS_SAMPLE", "1"),
    ]);
    let r = views_json(&cap, &["--steps", "--gaps"]);
    let p = &r["steps"][0];
    assert_eq!(p["backend"], "events");
    assert_eq!(u(&p["selection"]["count"]), N);
    let bound = u(&p["summary"]["device"]["bound_ns"]);
    let step_bounds: Vec<u64> = p["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| u(&s["device"]["bound_ns"]))
        .collect();
    assert_eq!(bound, *step_bounds.iter().max().unwrap());
    assert!(
        p["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("events backend")),
        "{p}"
    );
    let g = &r["gaps"][0];
    assert!(u(&g["tracks"][0]["bound_ns"]) >= bound);
}
