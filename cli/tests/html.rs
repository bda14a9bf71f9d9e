//! `causeway html` on synthetic captures written with the real ring writer: the page needs no network,
//! its embedded JSON parses back and agrees with the model (steps, gaps, kernels, timeline items), names
//! from the capture never appear unescaped, and the error contract (one line, exit 2, an existing file
//! kept without --force).
//!
//! `browser_fixture` also writes the captures the headless-browser test (`html_browser.py`) renders, when
//! `CAUSEWAY_HTML_FIXTURE=DIR` is set.

#[path = "../../scanner/tests/common/mod.rs"]
mod common;

use causeway_ring::layout::{Backend, Class, Kind, Layer, Policy};
use causeway_scanner::analysis::gaps::process_gaps;
use causeway_scanner::analysis::steps::{process_steps, StepOptions};
use causeway_scanner::facts::model::{Call, ProcessTimeline, Timeline};
use causeway_scanner::render::html::{self, HtmlOptions, MAX_ITEMS};
use causeway_scanner::{Capture, Report};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const LAUNCH: u16 = 1;
const SYNC: u16 = 7;

pub const EVIL: &str = "<img src=x onerror=alert(1)>";
pub const EVIL_RANGE: &str = "</script><script>alert(2)</script>";
const H_EVIL: u64 = 0xa00;
const H_RELU: u64 = 0xb00;
const T_EVIL: u64 = 100;
const T_RELU: u64 = 101;
const T_STEP: u64 = 10;
const T_SUB: u64 = 11;
const S1: u64 = 0x5000;
const S2: u64 = 0x6000;

/// Step walls (ns): the slowest is step 1.
const WALLS: [u64; 4] = [3000, 5000, 4000, 3500];
const STEPS: usize = WALLS.len();
/// Per step: 2 launches and a sync; a step range and a sub-range; 2 kernels.
const CALLS: usize = 3 * STEPS;
const RANGES: usize = 2 * STEPS;
const SPANS: usize = 2 * STEPS;

/// Four "step" ranges on thread 1, step k beginning at 10 000·(k+1): inside each (b = its begin) a
/// sub-range named `EVIL_RANGE` [b+50, b+1600], launches of EVIL on S1 [b+100, b+200] (kernel
/// [b+300, b+1300]) and relu on S2 [b+250, b+300] (kernel [b+400, b+900]), and a sync [b+400, b+1500].
fn capture() -> RingBuilder {
    let b = RingBuilder::level3(128, Policy::Drop);
    b.api(LAUNCH, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .api(SYNC, "cudaStreamSynchronize", Layer::Runtime, Class::Sync)
        .api(NVTX_API, "nvtxRangePushA", Layer::Nvtx, Class::Other)
        .kernel(H_EVIL, EVIL)
        .kernel(H_RELU, "relu")
        .text(T_EVIL, EVIL)
        .text(T_RELU, "relu")
        .text(T_STEP, "step")
        .text(T_SUB, EVIL_RANGE);
    b.w.set_backend(Backend::Cupti);
    for (k, wall) in WALLS.iter().enumerate() {
        let t = 10_000 * (k as u64 + 1);
        b.instant(Kind::RangePush, TID, t, T_STEP, 0, 0);
        b.instant(Kind::RangePush, TID, t + 50, T_SUB, 0, 0);
        let evil = b
            .call_args(TID, LAUNCH, 0, t + 100, t + 200, 0, [S1, H_EVIL, 1])
            .unwrap();
        let relu = b
            .call_args(TID, LAUNCH, 0, t + 250, t + 300, 0, [S2, H_RELU, 1])
            .unwrap();
        b.call_args(TID, SYNC, 0, t + 400, t + 1500, 0, [S1, 0, 0])
            .unwrap();
        b.instant(Kind::RangePop, TID, t + 1600, 0, 0, 0);
        b.instant(Kind::RangePop, TID, t + wall, 0, 0, 0);
        b.kernel_interval(evil, T_EVIL, t + 300, t + 1300).unwrap();
        b.device(Dev {
            stream: 8,
            ..Dev::kernel(relu, T_RELU, t + 400, t + 900)
        })
        .unwrap();
    }
    b
}

/// Level 2, no NVTX ranges: launches of EVIL only.
fn capture_without_steps() -> RingBuilder {
    let b = RingBuilder::new(64, Policy::Drop);
    b.api(LAUNCH, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .kernel(H_EVIL, EVIL);
    for k in 0..5u64 {
        b.call_args(TID, LAUNCH, 0, 1000 * k, 1000 * k + 100, 0, [S1, H_EVIL, 1])
            .unwrap();
    }
    b
}

fn written(dir: &Path, name: &str, b: &RingBuilder) -> PathBuf {
    let cap = dir.join(name);
    std::fs::create_dir_all(&cap).unwrap();
    b.write_to(&cap.join("p.cwring"));
    cap
}

struct Run {
    code: Option<i32>,
    stderr: String,
}

fn run(args: &[&str]) -> Run {
    let o = causeway().arg("html").args(args).output().unwrap();
    assert!(o.stdout.is_empty(), "nothing on stdout");
    Run {
        code: o.status.code(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

fn html_ok(cap: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = extra.to_vec();
    args.extend(["-o", out.to_str().unwrap(), cap.to_str().unwrap()]);
    let r = run(&args);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.starts_with("causeway: wrote "), "{}", r.stderr);
    std::fs::read_to_string(out).unwrap()
}

const OPEN: &str = "<script type=\"application/json\" id=\"causeway-data\">";

/// The embedded JSON, parsed.
fn data(page: &str) -> Value {
    let at = page.find(OPEN).expect("the data block") + OPEN.len();
    let len = page[at..].find("</script>").expect("its end");
    serde_json::from_str(&page[at..at + len]).expect("the data parses")
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

/// Checks shared by every page: no network reference, names only escaped, one data block.
fn check_page(page: &str) {
    assert!(page.starts_with("<!DOCTYPE html>"));
    for bad in [
        "http://", "https://", "//cdn", "@import", "src=\"", "href=\"",
    ] {
        assert!(!page.contains(bad), "the page references {bad}");
    }
    // Neither hostile name appears raw: only the template's own two script elements close.
    assert!(!page.contains("<img"), "a raw <img");
    assert_eq!(page.matches("</script>").count(), 2);
    assert_eq!(page.matches("<script").count(), 2);
    assert_eq!(page.matches(OPEN).count(), 1);
    assert!(!page.contains("CAUSEWAY_DATA") && !page.contains("/*CAUSEWAY_"));
}

#[test]
fn the_page_is_self_contained_and_its_data_matches_the_model() {
    let dir = TempDir::new("html-page");
    let cap = written(dir.path(), "cap", &capture());
    let out = dir.join("r.html");
    let page = html_ok(&cap, &out, &[]);
    check_page(&page);
    assert!(page.contains("\\u003cimg src=x onerror=alert(1)\\u003e"));
    assert!(page.contains("\\u003c/script\\u003e\\u003cscript\\u003ealert(2)"));
    let d = data(&page);

    // The model, built independently.
    let c = Capture::open(&cap).unwrap();
    let rings = c.rings().unwrap();
    let t = Timeline::build(&rings);
    let p = &t.processes[0];
    assert_eq!(
        (p.calls.len(), p.ranges.len(), p.device.len()),
        (CALLS, RANGES, SPANS)
    );
    let ps = process_steps(p, &StepOptions::default());
    assert_eq!(ps.steps.len(), STEPS);

    assert_eq!(d["capture"], cap.display().to_string());
    assert_eq!(d["pid"], 1000);
    assert_eq!(d["processes"].as_array().unwrap().len(), 1);
    assert_eq!(d["processes"][0]["level"], 3);
    assert_eq!(d["processes"][0]["backend"], "cupti");
    assert_eq!(d["clock"]["conversion"], "cupti-timestamp-callback");
    assert_eq!(d["device"]["intervals"], SPANS as u64);
    assert_eq!(d["device"]["unassociated"], 0);

    // Steps: in order, the same figures as `report --steps`.
    let steps = d["steps"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), STEPS);
    let t0 = u(&d["timeline"]["t0_ns"]);
    assert_eq!(t0, 10_000);
    for (s, m) in steps.iter().zip(&ps.steps) {
        assert_eq!(u(&s["wall_ns"]), m.wall_ns);
        assert_eq!(u(&s["launch_ns"]), m.launch_ns);
        assert_eq!(u(&s["sync_ns"]), m.sync_ns);
        assert_eq!(u(&s["other_ns"]), m.other_ns);
        assert_eq!(u(&s["begin_ns"]) + t0, m.begin_ns);
        assert_eq!(u(&s["busy_ns"]), m.device.as_ref().unwrap().busy_ns);
        assert_eq!(s["embedded"], true);
    }
    assert_eq!(
        steps.iter().map(|s| u(&s["wall_ns"])).collect::<Vec<_>>(),
        WALLS
    );
    assert_eq!(d["steps"]["slowest"], 1);
    let w = ps.summary.as_ref().unwrap().wall_ns;
    assert_eq!(
        d["steps"]["wall"],
        serde_json::json!([w.min, w.median, w.p99, w.max])
    );
    assert_eq!(d["steps"]["device_timed"], true);

    // Gaps: those of `report --gaps`, all streams.
    let g = process_gaps(p);
    let all = &g.tracks[0];
    assert_eq!(all.track, "all streams");
    assert_eq!(u(&d["gaps"]["count"]), all.gaps.count);
    assert_eq!(u(&d["gaps"]["p50_ns"]), all.gaps.p50_ns);
    assert_eq!(u(&d["gaps"]["p99_ns"]), all.gaps.p99_ns);
    assert_eq!(u(&d["gaps"]["p999_ns"]), all.gaps.p999_ns);
    assert_eq!(u(&d["gaps"]["max_ns"]), all.gaps.max_ns);
    assert_eq!(u(&d["gaps"]["overlaps"]), all.overlaps);
    let binned: u64 = d["gaps"]["bins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| u(&b[1]))
        .sum::<u64>()
        + u(&d["gaps"]["zero"]);
    assert_eq!(binned, all.gaps.count);
    // Gaps of 8700 ns between steps: bin 13 ([8192, 16384)).
    assert!(d["gaps"]["bins"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b[0] == 13 && u(&b[1]) > 0));

    // Kernels: the report's device section.
    let r = Report::build(&cap.display().to_string(), &rings);
    let k = &d["kernels"];
    assert_eq!(k["source"], "device");
    let rows = k["rows"].as_array().unwrap();
    assert_eq!(rows.len(), r.device.kernels.len());
    assert_eq!(rows[0]["name"], EVIL);
    assert_eq!(u(&rows[0]["count"]), STEPS as u64);
    assert_eq!(u(&rows[0]["total_ns"]), 1000 * STEPS as u64);
    assert_eq!(u(&rows[0]["p50_ns"]), 1000);
    assert_eq!(rows[1]["name"], "relu");
    assert_eq!(u(&rows[1]["p99_ns"]), 500);

    // Timeline: every item embedded, on a thread lane and two stream lanes.
    let tl = &d["timeline"];
    let items = tl["items"].as_array().unwrap();
    assert_eq!(items.len(), CALLS + RANGES + SPANS);
    assert_eq!(u(&tl["total"]), items.len() as u64);
    assert_eq!(tl["left_out"], 0);
    let lanes = tl["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 3);
    assert_eq!(lanes[0]["label"], "thread 1");
    assert_eq!(lanes[0]["rows"], 3, "two range levels, then calls");
    let names = tl["names"].as_array().unwrap();
    let kind_count = |kind: u64| items.iter().filter(|i| u(&i[5]) == kind).count();
    assert_eq!(kind_count(0), CALLS);
    assert_eq!(kind_count(1), RANGES);
    assert_eq!(kind_count(2), SPANS);
    assert!(names.iter().any(|n| n == EVIL));
    assert!(names.iter().any(|n| n == EVIL_RANGE));
    assert!(names
        .iter()
        .any(|n| n.as_str() == Some(&format!("cudaLaunchKernel \u{2192} {EVIL}"))));
    for i in items {
        assert!(u(&i[3]) >= u(&i[2]));
        assert!(u(&i[3]) <= u(&tl["end_ns"]));
    }
}

#[test]
fn range_picks_the_steps_and_a_capture_without_steps_shows_everything() {
    let dir = TempDir::new("html-range");
    let cap = written(dir.path(), "cap", &capture());
    let page = html_ok(&cap, &dir.join("r.html"), &["--range", EVIL_RANGE]);
    check_page(&page);
    let d = data(&page);
    assert_eq!(d["steps"]["steps"].as_array().unwrap().len(), STEPS);
    assert_eq!(d["steps"]["steps"][0]["wall_ns"], 1550);
    assert!(d["steps"]["selection"]
        .as_str()
        .unwrap()
        .contains("--range"));

    // A range the capture does not have is a mistake: exit 2, the ranges it has, no page.
    let none = dir.join("none.html");
    let r = run(&[
        "--range",
        "nope",
        "-o",
        none.to_str().unwrap(),
        cap.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("no NVTX range \"nope\"; the capture's ranges: ")
            && r.stderr.contains("\"step\" (4x)"),
        "{}",
        r.stderr
    );
    assert!(!none.exists());

    let cap2 = written(dir.path(), "cap2", &capture_without_steps());
    let page = html_ok(&cap2, &dir.join("l2.html"), &[]);
    check_page(&page);
    let d = data(&page);
    assert!(d["steps"]["steps"].as_array().unwrap().is_empty());
    assert_eq!(d["steps"]["slowest"], Value::Null);
    assert_eq!(d["kernels"]["source"], "launches");
    assert_eq!(d["kernels"]["rows"][0]["name"], EVIL);
    assert_eq!(d["kernels"]["rows"][0]["count"], 5);
    assert_eq!(d["kernels"]["rows"][0]["total_ns"], Value::Null);
    assert_eq!(d["gaps"]["count"], 0);
    assert_eq!(d["clock"]["conversion"], "none");
    assert_eq!(d["timeline"]["items"].as_array().unwrap().len(), 5);
}

fn call(i: u64) -> Call {
    Call {
        seq: i,
        tid: 1,
        api: causeway_scanner::read::intern("cudaLaunchKernel"),
        layer: Some(causeway_ring::Layer::Runtime),
        class: Some(causeway_ring::Class::Launch),
        begin_ns: 1000 + 10 * i,
        end_ns: Some(1005 + 10 * i).into(),
        depth: 0,
        result: 0,
        kernel: None,
        a0: causeway_scanner::facts::handle::Handle::ZERO,
        a1: causeway_scanner::facts::handle::Handle::ZERO,
        flags: 0,
    }
}

#[test]
fn the_timeline_is_capped_and_says_how_much_was_left_out() {
    let n = MAX_ITEMS as u64 + 123;
    let t = Timeline {
        processes: vec![ProcessTimeline {
            exe: "x".into(),
            threads: vec![1],
            calls: (0..n).map(call).collect(),
            ..ProcessTimeline::empty(7)
        }],
    };
    let r = Report::build("x", &[]);
    let p = html::page("x", &r, &t, &HtmlOptions::default());
    assert_eq!(p.timeline.items.len(), MAX_ITEMS);
    assert_eq!(p.timeline.left_out, 123);
    assert_eq!(p.timeline.total, n);
    // The first items in time order are the ones kept.
    assert_eq!(
        p.timeline.items.last().unwrap()[2],
        10 * (MAX_ITEMS as u64 - 1)
    );
    let page = html::render(&p).unwrap();
    check_page(&page);
    assert_eq!(data(&page)["timeline"]["left_out"], 123);
}

#[test]
fn script_json_escapes_what_could_end_the_script() {
    let s = html::script_json(&serde_json::json!({"k": "</script><!--&\u{2028}"})).unwrap();
    assert_eq!(s, r#"{"k":"\u003c/script\u003e\u003c!--\u0026\u2028"}"#);
    let back: Value = serde_json::from_str(&s).unwrap();
    assert_eq!(back["k"], "</script><!--&\u{2028}");
}

/// Asserts the one-line error contract; returns the message.
fn fails(args: &[&str]) -> String {
    let r = run(args);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "one line: {:?}", r.stderr);
    assert!(r.stderr.starts_with("causeway: error: "), "{}", r.stderr);
    r.stderr.trim_end().to_string()
}

#[test]
fn errors_are_one_line_exit_2_and_an_existing_file_needs_force() {
    let dir = TempDir::new("html-errors");
    let cap = written(dir.path(), "cap", &capture());
    let out = dir.join("r.html");
    let o = out.to_str().unwrap();
    let missing = dir.join("nope");
    assert_eq!(
        fails(&["-o", o, missing.to_str().unwrap()]),
        format!(
            "causeway: error: {}: no such file or directory",
            missing.display()
        )
    );
    assert!(!out.exists());
    let bad = dir.join("bad.cwring");
    std::fs::write(&bad, b"not a ring at all, just some bytes").unwrap();
    let msg = fails(&["-o", o, bad.to_str().unwrap()]);
    assert!(msg.starts_with(&format!("causeway: error: {}: ", bad.display())));
    assert!(!out.exists());

    std::fs::write(&out, "keep me").unwrap();
    assert_eq!(
        fails(&["-o", o, cap.to_str().unwrap()]),
        format!(
            "causeway: error: {}: already exists (pass --force to overwrite it)",
            out.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me");
    let page = html_ok(&cap, &out, &["--force"]);
    check_page(&page);
    let msg = fails(&["-o", dir.path().to_str().unwrap(), cap.to_str().unwrap()]);
    assert!(msg.contains("is a directory"), "{msg}");
    let ring = cap.join("p.cwring");
    let msg = fails(&[
        "--force",
        "-o",
        ring.to_str().unwrap(),
        cap.to_str().unwrap(),
    ]);
    assert!(msg.contains("is a ring of the capture"), "{msg}");
    // No temporary file is left.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["bad.cwring", "cap", "r.html"]);
}

/// The captures `html_browser.py` renders: `DIR/steps` (this file's capture) and `DIR/nosteps`.
#[test]
fn browser_fixture() {
    let Some(dir) = std::env::var_os("CAUSEWAY_HTML_FIXTURE") else {
        return;
    };
    let dir = PathBuf::from(dir);
    written(&dir, "steps", &capture());
    written(&dir, "nosteps", &capture_without_steps());
}
