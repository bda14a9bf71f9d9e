//! `causeway compare` end to end on synthetic captures written with the real ring writer, with the
//! answers worked out by hand; and the pairwise-difference percentile against brute force.

#[path = "../../scanner/tests/common/mod.rs"]
mod common;

use causeway_ring::layout::{Backend, Class, Kind, Layer, Policy};
use causeway_scanner::analysis::compare::{figure_row, pairwise_percentile};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const LAUNCH: u16 = 1;
const H_GEMM: u64 = 0xa00;
const H_ONLY: u64 = 0xb00;
const T_STEP: u64 = 10;
const T_GEMM: u64 = 100;
const T_ONLY: u64 = 101;

/// One side: steps "step" of the given walls at 10_000·(i+1); in each a launch of "gemm" lasting
/// `launch_ns` at begin+100 and, at level 3, its kernel interval of `gemm_ns` at begin+200. Step 0
/// also launches `only` (kernel of 50 ns at begin+600). Level 3 uses the cupti backend; level 2 has
/// no device intervals.
fn side(level3: bool, walls: &[u64], launch_ns: u64, gemm_ns: u64, only: &str) -> RingBuilder {
    side_named("step", level3, walls, launch_ns, gemm_ns, only)
}

/// As `side`, with steps named `step`.
fn side_named(
    step: &str,
    level3: bool,
    walls: &[u64],
    launch_ns: u64,
    gemm_ns: u64,
    only: &str,
) -> RingBuilder {
    let b = if level3 {
        RingBuilder::level3(256, Policy::Drop)
    } else {
        RingBuilder::new(256, Policy::Drop)
    };
    b.api(LAUNCH, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .api(NVTX_API, "nvtxRangePushA", Layer::Nvtx, Class::Other)
        .kernel(H_GEMM, "gemm")
        .kernel(H_ONLY, only)
        .text(T_STEP, step)
        .text(T_GEMM, "gemm")
        .text(T_ONLY, only);
    if level3 {
        b.w.set_backend(Backend::Cupti);
    }
    for (i, &wall) in walls.iter().enumerate() {
        let t = 10_000 * (i as u64 + 1);
        b.instant(Kind::RangePush, TID, t, T_STEP, 0, 0);
        let g = b
            .call_args(
                TID,
                LAUNCH,
                0,
                t + 100,
                t + 100 + launch_ns,
                0,
                [7, H_GEMM, 1],
            )
            .unwrap();
        if level3 {
            b.kernel_interval(g, T_GEMM, t + 200, t + 200 + gemm_ns)
                .unwrap();
        }
        if i == 0 {
            let o = b
                .call_args(
                    TID,
                    LAUNCH,
                    0,
                    t + 500,
                    t + 500 + launch_ns,
                    0,
                    [7, H_ONLY, 1],
                )
                .unwrap();
            if level3 {
                b.kernel_interval(o, T_ONLY, t + 600, t + 650).unwrap();
            }
        }
        b.instant(Kind::RangePop, TID, t + wall, 0, 0, 0);
    }
    b
}

fn write(dir: &TempDir, name: &str, b: &RingBuilder) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    b.write_to(&d.join("p1000.cwring"));
    d
}

/// A: walls 1000/1100/1200, launches 50 ns, gemm 100 ns, "relu" only here.
/// B: walls 1500/1600/1700, launches 70 ns, gemm 300 ns, "softmax" only here.
fn pair(dir: &TempDir, b_level3: bool) -> (PathBuf, PathBuf) {
    let a = write(dir, "a", &side(true, &[1000, 1100, 1200], 50, 100, "relu"));
    let b = write(
        dir,
        "b",
        &side(b_level3, &[1500, 1600, 1700], 70, 300, "softmax"),
    );
    (a, b)
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn compare(args: &[&str]) -> Run {
    let o = causeway().arg("compare").args(args).output().unwrap();
    Run {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

fn json(a: &Path, b: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    args.push(a.to_str().unwrap());
    args.push(b.to_str().unwrap());
    let r = compare(&args);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

fn figure<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["steps"]["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["figure"] == name)
        .unwrap_or_else(|| panic!("no figure {name}"))
}

fn row<'a>(v: &'a Value, table: &str, name: &str) -> &'a Value {
    let rows = match table {
        "kernels" => &v["kernels"]["rows"],
        _ => &v[table],
    };
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no {table} row {name}"))
}

const VERDICTS: [&str; 4] = ["faster", "slower", "regression", "improvement"];

fn no_verdicts(s: &str) {
    let l = s.to_lowercase();
    for w in VERDICTS {
        assert!(!l.contains(w), "verdict word {w:?} in output:\n{s}");
    }
}

#[test]
fn step_figures_with_median_difference_and_spread() {
    let dir = TempDir::new("compare-steps");
    let (a, b) = pair(&dir, true);
    let v = json(&a, &b, &[]);
    assert_eq!(v["warnings"].as_array().unwrap().len(), 0, "{v:#}");
    assert_eq!(v["steps"]["rule"], "most-repeated-level-0");
    assert_eq!(v["a"]["steps"], 3);
    assert_eq!(v["a"]["step_ranges"][0], "step");
    let w = figure(&v, "wall_ns");
    assert_eq!(w["unit"], "ns");
    assert_eq!(
        w["a"],
        serde_json::json!({"n": 3, "min": 1000, "median": 1100, "max": 1200})
    );
    assert_eq!(
        w["b"],
        serde_json::json!({"n": 3, "min": 1500, "median": 1600, "max": 1700})
    );
    assert_eq!(w["median_diff"], 500);
    // Pairwise differences 300,400,400,500,500,500,600,600,700: nearest-rank p5 = 1st, p95 = 9th.
    assert_eq!(w["spread"], serde_json::json!({"p5": 300, "p95": 700}));
    // Launch time per step: A 100 (two launches) / 50 / 50; B 140 / 70 / 70.
    let l = figure(&v, "launch_ns");
    assert_eq!(
        (l["a"]["median"].as_i64(), l["b"]["median"].as_i64()),
        (Some(50), Some(70))
    );
    assert_eq!(l["median_diff"], 20);
    assert_eq!(l["spread"], serde_json::json!({"p5": -30, "p95": 90}));
    // Device compute per step: A 150/100/100, B 350/300/300.
    let c = figure(&v, "device.compute_ns");
    assert_eq!(c["median_diff"], 200);
    assert_eq!(c["a"]["n"], 3);
    // No copies: the overlap ratio is defined nowhere.
    let r = figure(&v, "device.copy_compute_overlap");
    assert!(r["a"].is_null() && r["median_diff"].is_null() && r["spread"].is_null());
}

#[test]
fn kernels_and_apis_with_names_on_one_side() {
    let dir = TempDir::new("compare-kernels");
    let (a, b) = pair(&dir, true);
    let v = json(&a, &b, &[]);
    assert_eq!(v["kernels"]["source"], "device");
    let rows = v["kernels"]["rows"].as_array().unwrap();
    // |total diff|: gemm 900-300 = 600, softmax 50, relu 50 (ties by name).
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["gemm", "relu", "softmax"]);
    let g = row(&v, "kernels", "gemm");
    assert_eq!(g["present"], "both");
    assert_eq!(
        (g["count_a"].as_u64(), g["count_b"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(
        (g["p50_ns_a"].as_u64(), g["p50_ns_b"].as_u64()),
        (Some(100), Some(300))
    );
    assert_eq!(g["p50_diff"], 200);
    assert_eq!(g["total_diff"], 600);
    let relu = row(&v, "kernels", "relu");
    assert_eq!(relu["present"], "a-only");
    assert_eq!(relu["count_b"], 0);
    assert!(relu["p50_ns_b"].is_null() && relu["p50_diff"].is_null());
    assert_eq!(relu["total_diff"], -50);
    assert_eq!(row(&v, "kernels", "softmax")["present"], "b-only");
    let api = row(&v, "apis", "cudaLaunchKernel");
    assert_eq!(
        (api["calls_a"].as_u64(), api["calls_b"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(
        (api["p50_ns_a"].as_u64(), api["p50_ns_b"].as_u64()),
        (Some(50), Some(70))
    );
    assert_eq!(api["p50_diff"], 20);

    // The text form lists the same rows and says where each name is.
    let r = compare(&[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let line = |name: &str| {
        r.stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no line {name}:\n{}", r.stdout))
            .to_string()
    };
    assert!(line("relu").contains("a-only"), "{}", r.stdout);
    assert!(line("softmax").contains("b-only"), "{}", r.stdout);
    assert!(line("wall_ns").contains("+500 ns"), "{}", r.stdout);
    assert!(line("wall_ns").contains("+300 ns..+700 ns"), "{}", r.stdout);
    assert!(!r.stdout.contains("warning"), "{}", r.stdout);
}

#[test]
fn differing_backends_and_levels_are_warned_and_kernels_fall_back_to_launches() {
    let dir = TempDir::new("compare-backends");
    let (a, b) = pair(&dir, false);
    let v = json(&a, &b, &[]);
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("backends differ (A: cupti, B: none)")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("levels differ (A: 3, B: 2)")),
        "{warnings:?}"
    );
    assert_eq!(v["a"]["backends"][0], "cupti");
    assert_eq!(v["b"]["levels"][0], 2);
    assert_eq!(v["kernels"]["source"], "launches");
    let g = row(&v, "kernels", "gemm");
    assert_eq!(
        (g["count_a"].as_u64(), g["count_b"].as_u64()),
        (Some(3), Some(3))
    );
    assert!(g["total_diff"].is_null() && g["p50_ns_a"].is_null());
    // Device figures: A has them, B does not.
    let busy = figure(&v, "device.busy_ns");
    assert_eq!(busy["a"]["n"], 3);
    assert!(busy["b"].is_null() && busy["median_diff"].is_null());
    // Host figures still compare.
    assert_eq!(figure(&v, "wall_ns")["median_diff"], 500);

    let r = compare(&[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("warning: backends differ") && r.stdout.contains("not like for like"),
        "{}",
        r.stdout
    );
}

#[test]
fn range_option_and_sides_without_steps() {
    let dir = TempDir::new("compare-range");
    let (a, b) = pair(&dir, true);
    let v = json(&a, &b, &["--range", "step"]);
    assert_eq!(v["steps"]["rule"], "range-option");
    assert_eq!(figure(&v, "wall_ns")["median_diff"], 500);

    // A range that one side lacks: that side has no steps, and the comparison says so.
    let iters = write(
        &dir,
        "iters",
        &side_named("iter", true, &[1500, 1600, 1700], 70, 300, "softmax"),
    );
    let v = json(&a, &iters, &["--range", "step"]);
    let warnings = v["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("B has no steps")),
        "{warnings:?}"
    );
    assert!(!warnings
        .iter()
        .any(|w| w.as_str().unwrap().starts_with("A has no steps")));
    let w = figure(&v, "wall_ns");
    assert!(w["b"].is_null() && w["median_diff"].is_null());
    assert!(!w["a"].is_null());
    // Kernels and APIs do not depend on steps.
    assert_eq!(row(&v, "kernels", "gemm")["total_diff"], 600);
    let r = compare(&[
        "--range",
        "step",
        a.to_str().unwrap(),
        iters.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("B has no steps"), "{}", r.stdout);

    // A range neither side has is a mistake: exit 2, naming the ranges each side does have.
    for args in [
        vec!["--range", "absent"],
        vec!["--json", "--range", "absent"],
    ] {
        let mut args = args;
        args.extend([a.to_str().unwrap(), iters.to_str().unwrap()]);
        let r = compare(&args);
        assert_eq!(r.code, Some(2), "{}", r.stderr);
        assert!(r.stdout.is_empty(), "{}", r.stdout);
        assert!(
            r.stderr
                .contains("no NVTX range \"absent\"; the capture's ranges: \"step\" (3x)")
                && r.stderr.contains("\"iter\" (3x)"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn no_verdict_words_in_text_or_json() {
    let dir = TempDir::new("compare-words");
    for b_level3 in [true, false] {
        let (a, b) = pair(&dir, b_level3);
        let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
        for args in [
            vec![a, b],
            vec![b, a],
            vec!["--json", a, b],
            vec!["--json", b, a],
            vec!["--range", "absent", a, b],
            vec!["--json", "--range", "absent", a, b],
        ] {
            let r = compare(&args);
            let want = if args.contains(&"absent") { 2 } else { 0 };
            assert_eq!(r.code, Some(want), "{}", r.stderr);
            no_verdicts(&r.stdout);
            no_verdicts(&r.stderr);
        }
    }
    let help = causeway().args(["compare", "--help"]).output().unwrap();
    no_verdicts(&String::from_utf8_lossy(&help.stdout));
}

#[test]
fn a_missing_capture_is_one_line_exit_2_naming_it() {
    let dir = TempDir::new("compare-errors");
    let (a, _) = pair(&dir, true);
    let missing = dir.join("nope");
    for args in [
        [a.to_str().unwrap(), missing.to_str().unwrap()],
        [missing.to_str().unwrap(), a.to_str().unwrap()],
    ] {
        for json in [false, true] {
            let mut v: Vec<&str> = if json { vec!["--json"] } else { vec![] };
            v.extend_from_slice(&args);
            let r = compare(&v);
            assert_eq!(r.code, Some(2), "{}", r.stderr);
            assert!(r.stdout.is_empty(), "{}", r.stdout);
            assert_eq!(
                r.stderr,
                format!(
                    "causeway: error: {}: no such file or directory\n",
                    missing.display()
                )
            );
        }
    }
    // A damaged ring is named too.
    let bad = dir.join("bad.cwring");
    std::fs::write(&bad, b"not a ring at all, just some bytes").unwrap();
    let r = compare(&[a.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(r.code, Some(2));
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with(&format!("causeway: error: {}: ", bad.display())),
        "{}",
        r.stderr
    );
}

/// Brute force: every pairwise difference, sorted, nearest rank.
fn brute(a: &[i64], b: &[i64], p: u64) -> Option<i64> {
    let mut d: Vec<i64> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| y - x))
        .collect();
    d.sort_unstable();
    let n = d.len() as u64;
    if n == 0 {
        return None;
    }
    Some(d[((p * n).div_ceil(100).clamp(1, n) - 1) as usize])
}

#[test]
fn pairwise_percentile_matches_brute_force() {
    let mut x: u64 = 0x1234_5678;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((x >> 33) % 5000) as i64
    };
    for (na, nb) in [(1, 1), (1, 7), (5, 3), (20, 31), (64, 64), (0, 3), (3, 0)] {
        let mut a: Vec<i64> = (0..na).map(|_| next()).collect();
        let mut b: Vec<i64> = (0..nb).map(|_| next() - 1000).collect();
        a.sort_unstable();
        b.sort_unstable();
        for p in [1, 5, 50, 95, 99, 100] {
            assert_eq!(
                pairwise_percentile(&a, &b, p),
                brute(&a, &b, p),
                "na {na} nb {nb} p {p}"
            );
        }
    }
    // The doc comment's example, through the row builder.
    let r = figure_row(
        "wall_ns",
        "ns",
        vec![1200, 1000, 1100],
        vec![1700, 1500, 1600],
    );
    assert_eq!(r.median_diff, Some(500));
    let s = r.spread.unwrap();
    assert_eq!((s.p5, s.p95), (300, 700));
}
