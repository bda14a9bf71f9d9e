//! Level 3 with the `events` backend end to end, against the driver double's simulated device clock
//! (an offset and a drift, `CWD_DEVICE_CLOCK_*`) and its ground truth (`CWD_TRUTH`: the true host time
//! of every kernel and copy it ran). Checked: every launch and copy is timed and tied to its call,
//! captured launches get no events, graph launches are one interval each, and every converted time lies
//! within its stated bound of the truth — which fails if the drift is ignored.

use causeway_itests::*;
use causeway_ring::StrKind;
use causeway_scanner::facts::anchors::{anchored, Anchors};
use causeway_scanner::read::capture::Capture;
use causeway_scanner::read::decode::decode;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// 5000 ppm: far beyond a real crystal, so that ignoring it would miss by milliseconds.
const DRIFT_PPM: &str = "5000";
const OFFSET_NS: &str = "-3000000000";

fn events(
    name: &str,
    args: &[&str],
    extra: &[(&str, &str)],
) -> (std::process::Output, std::path::PathBuf, Value) {
    // Every call timed unless `extra` says otherwise (the default is one step in 16).
    let mut env: Vec<(&str, &str)> = vec![
        ("CAUSEWAY_BACKEND", "events"),
        ("CAUSEWAY_EVENTS_SAMPLE", "1"),
    ];
    env.extend_from_slice(extra);
    let (o, cap) = traced(command(name, args), 3, &env);
    assert!(
        o.status.success(),
        "{name} failed under level 3 events: {}",
        stderr(&o)
    );
    let r = report(&cap);
    (o, cap, r)
}

fn device_row<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["device"]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == name)
        .unwrap_or_else(|| panic!("no device row for {name}: {}", r["device"]))
}

struct Truth {
    kind: String,
    start: f64,
    end: f64,
    name: String,
}

fn truth(path: &Path) -> Vec<Truth> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Truth {
                kind: f[0].into(),
                start: f[2].parse().unwrap(),
                end: f[3].parse().unwrap(),
                name: f.get(4).unwrap_or(&"-").to_string(),
            }
        })
        .collect()
}

/// Every anchored interval of the capture, converted, by what ran: kernel name (from its launch call's
/// function handle) or `memcpy`. Each list holds (start, end, bound) in host ns, sorted by start.
fn converted(cap: &Path) -> HashMap<String, Vec<(f64, f64, f64)>> {
    let c = Capture::open(cap).unwrap();
    let mut out: HashMap<String, Vec<(f64, f64, f64)>> = HashMap::new();
    for ring in c.rings().unwrap() {
        let d = decode(&ring.view);
        let a = Anchors::from_entries(&ring.view.header, d.entries());
        let kernel = |h: u64| {
            ring.view
                .strings
                .iter()
                .find(|s| s.kind == StrKind::Kernel && s.key == h)
                .map(|s| s.text.clone())
        };
        for (_, e) in d.intervals() {
            let (id, o0, o1) = anchored(&e).expect("events intervals are anchored");
            let s = a.convert(id, o0).expect("anchor present");
            let t = a.convert(id, o1).unwrap();
            let call = d
                .entries()
                .iter()
                .find(|x| x.seq == e.a0)
                .expect("issuing call");
            let what = match e.api {
                1 => kernel(call.a1).expect("kernel name"),
                2 => "memcpy".to_string(),
                _ => continue,
            };
            out.entry(what)
                .or_default()
                .push((s.ns, t.ns, s.bound_ns.max(t.bound_ns)));
        }
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

#[test]
fn every_launch_and_copy_is_timed_tied_and_within_its_bound_of_the_truth() {
    let n = 600u64;
    let truth_file = scratch("truth").join("truth.txt");
    let tf = truth_file.display().to_string();
    let (o, cap, r) = events(
        "multistream",
        &[&n.to_string()],
        &[
            ("CWD_TRUTH", tf.as_str()),
            ("CWD_DEVICE_CLOCK_DRIFT_PPM", DRIFT_PPM),
            ("CWD_DEVICE_CLOCK_OFFSET_NS", OFFSET_NS),
        ],
    );
    assert!(!stderr(&o).contains("causeway:"), "{}", stderr(&o));
    let d = &r["device"];
    // Identity: each interval is tied to the call that issued it; nothing left untimed.
    assert_eq!(d["unassociated"]["total"], 0, "{d}");
    assert_eq!(d["associated"], d["intervals"], "{d}");
    assert_eq!(d["not_timed"], 0, "{d}");
    for k in ["sleep_200us", "sleep_300us", "sleep_50us"] {
        assert_eq!(device_row(&r, k)["count"], n, "{k}");
    }
    // Captured launches ran nothing and got no events; each graph launch is one interval.
    for k in ["sleep_20us", "sleep_40us"] {
        assert!(
            !d["kernels"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["name"] == k),
            "captured {k} has a device row: {d}"
        );
    }
    assert_eq!(device_row(&r, "[graph launch]")["count"], 2);
    let h2d = d["copies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "HtoD")
        .unwrap_or_else(|| panic!("no HtoD row: {d}"));
    assert_eq!(h2d["count"], n);
    assert_eq!(h2d["bytes"], n * 1_000_000);

    // The clock model: anchors, measured drift, causality, a stated bound.
    let c = &d["clock"];
    assert_eq!(c["conversion"], "event-anchors", "{c}");
    assert!(c["anchors"].as_u64().unwrap() >= 3, "{c}");
    // Causality: no device end before its call returned (the end event is recorded after it).
    // The measured lower bound on the conversion error never exceeds the stated bound.
    assert_eq!(c["end_checked"], d["intervals"], "{c}");
    let min_gap = c["min_call_end_to_device_end_ns"].as_i64().unwrap();
    assert!(
        -min_gap <= c["bound_ns_max"].as_i64().unwrap(),
        "measured error beyond the bound: {c}"
    );
    // Device clock 5000 ppm fast: the host runs ~4975 ppm slow against it.
    let ppb = c["drift_ppb_median"].as_i64().unwrap();
    assert!(
        (-5_975_000..-3_975_000).contains(&ppb),
        "measured drift {ppb} ppb, {c}"
    );
    let bound_max = c["bound_ns_max"].as_u64().unwrap();
    assert!(bound_max > 0, "{c}");

    // Ground truth: each true kernel/copy has a converted interval within bound of its start and end.
    // Matching by time is fine here: it checks the clock, association was checked above by identity.
    let truth = truth(&truth_file);
    let ran = truth.iter().filter(|t| t.kind != "memset").count() as u64;
    assert_eq!(ran, 3 * n + n + 4, "truth lines");
    // Per kernel, the median device time is the truth's plus what the events add: they bracket the
    // work on its stream, so an idle stream's interval also holds the wait for the host to submit the
    // kernel after the start event (the launch call itself).
    for k in ["sleep_200us", "sleep_300us", "sleep_50us"] {
        let mut d: Vec<u64> = truth
            .iter()
            .filter(|t| t.name == k)
            .map(|t| (t.end - t.start) as u64)
            .collect();
        d.sort_unstable();
        let want = d[(d.len() - 1) / 2] as i64;
        let got = device_row(&r, k)["p50_ns"].as_i64().unwrap();
        assert!(
            got >= want - 5_000 && got - want <= 100_000,
            "{k}: events p50 {got} ns, truth p50 {want} ns"
        );
    }
    // Each true kernel or copy lies inside its interval (the k-th of its name in time order) to within
    // that interval's bound, and a few µs for the double's worker between marker and work. Ignoring
    // the drift would put late intervals off by ~1.5 ms, far outside their bounds.
    let conv = converted(&cap);
    const SLACK_NS: f64 = 5_000.0;
    let mut checked = 0;
    for what in ["sleep_200us", "sleep_300us", "sleep_50us", "memcpy"] {
        let mut want: Vec<&Truth> = truth
            .iter()
            .filter(|t| t.name == what || (what == "memcpy" && t.kind == "memcpy"))
            .collect();
        want.sort_by(|a, b| a.start.total_cmp(&b.start));
        let got = &conv[what];
        assert_eq!(got.len(), want.len(), "{what}");
        for (t, &(s, e, b)) in want.iter().zip(got) {
            assert!(
                s - b <= t.start + SLACK_NS && e + b >= t.end - SLACK_NS,
                "{what} [{}, {}] is not inside [{s:.0}, {e:.0}] ± {b:.0} ({:+.0}, {:+.0})",
                t.start,
                t.end,
                s - t.start,
                e - t.end
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 4 * n);

    // Host waits use the converted device ends: each iteration's sync of B (which waited, through the
    // event, for A's kernel too) knows when its last work ended, and no end is after the sync returned
    // by more than its bound.
    let w = r["waits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "cudaStreamSynchronize")
        .unwrap();
    assert!(w["with_device_times"].as_u64().unwrap() >= n, "{w}");
    assert!(
        w["tail_p50_ns"].as_i64().unwrap() > -(bound_max as i64),
        "{w}"
    );
}

#[test]
fn threads_launching_concurrently_are_each_timed() {
    let (o, _, r) = events("mt_launch", &["4", "50"], &[]);
    let d = &r["device"];
    let launches = calls(&r, "cudaLaunchKernel");
    assert_eq!(launches, 200);
    assert_eq!(d["unassociated"]["total"], 0, "{d}");
    assert_eq!(d["not_timed"], 0, "{d}");
    assert_eq!(device_row(&r, "sleep_0us")["count"], launches);
    let copies: u64 = d["copies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert_eq!(copies, calls(&r, "cudaMemcpyAsync"));
    let c = &d["clock"];
    assert!(
        -c["min_call_end_to_device_end_ns"].as_i64().unwrap()
            <= c["bound_ns_max"].as_i64().unwrap(),
        "measured error beyond the bound: {c}"
    );
    assert_eq!(r["processes"][0]["backend"], "events");
    assert!(!stderr(&o).contains("causeway:"), "{}", stderr(&o));
}

#[test]
fn the_program_computes_the_same_under_the_events_backend() {
    let b = bare(command("semantics", &[]));
    let (t, _, _) = events("semantics", &[], &[]);
    let lines = |o: &std::process::Output| -> Vec<String> {
        stdout(o)
            .lines()
            .filter(|l| !l.starts_with("count "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(b.status.code(), t.status.code());
    assert_eq!(lines(&b), lines(&t));
}

#[test]
fn level_4_times_the_device_only_when_a_backend_is_named() {
    let (_, cap) = traced(command("mt_launch", &["2", "10"]), 4, &[]);
    let r = report(&cap);
    assert_eq!(r["device"]["intervals"], 0, "{}", r["device"]);
    let (_, cap) = traced(
        command("mt_launch", &["2", "10"]),
        4,
        &[
            ("CAUSEWAY_BACKEND", "events"),
            ("CAUSEWAY_EVENTS_SAMPLE", "1"),
        ],
    );
    let r = report(&cap);
    assert_eq!(device_row(&r, "sleep_0us")["count"], 20);
    assert_eq!(r["device"]["unassociated"]["total"], 0, "{}", r["device"]);
}

#[test]
fn sampling_times_a_random_share_of_the_calls_and_says_so() {
    let n = 400u64;
    let (_, _, r) = events(
        "multistream",
        &[&n.to_string()],
        &[("CAUSEWAY_EVENTS_SAMPLE", "4")],
    );
    let d = &r["device"];
    assert_eq!(d["sample_every"], 4, "{d}");
    assert_eq!(d["unassociated"]["total"], 0, "{d}");
    // Each kind of call is sampled, about one in four (binomial: 400 trials, p = 1/4, sd ≈ 8.7).
    for k in ["sleep_200us", "sleep_300us", "sleep_50us"] {
        let c = device_row(&r, k)["count"].as_u64().unwrap();
        assert!((60..=140).contains(&c), "{k}: {c} of {n} timed");
    }
    assert_eq!(r["processes"][0]["sample_every"], 4);
}

#[test]
fn the_timeline_places_each_interval_on_its_calls_stream() {
    use causeway_scanner::facts::model::{StreamId, Timeline};
    let (_, cap, r) = events("multistream", &["30"], &[]);
    let c = Capture::open(&cap).unwrap();
    let t = Timeline::build(&c.rings().unwrap());
    assert_eq!(t.processes.len(), 1);
    let p = &t.processes[0];
    assert_eq!(p.unplaced_device, 0);
    assert_eq!(
        p.device.len() as u64,
        r["device"]["intervals"].as_u64().unwrap()
    );
    // Two user streams: A (copies, sleep_200us, the graph) and B (sleep_300us, sleep_50us).
    let stream_of = |name: &str| -> Vec<StreamId> {
        let mut v: Vec<StreamId> = p
            .device
            .iter()
            .filter(|d| d.name == name)
            .map(|d| d.stream.get())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let a = stream_of("sleep_200us");
    let b = stream_of("sleep_300us");
    assert_eq!(a.len(), 1);
    assert_eq!(b.len(), 1);
    assert_ne!(a, b);
    assert_eq!(stream_of("HtoD"), a);
    assert_eq!(stream_of("sleep_50us"), b);
    assert_eq!(stream_of("[graph launch]"), a);
    // Every span is tied to a call of the timeline, which began before the span ended.
    for d in &p.device {
        let call = p
            .calls
            .iter()
            .find(|c| Some(c.seq) == d.call.get())
            .expect("issuing call");
        assert!(call.begin_ns <= d.end_ns + d.bound_ns, "{d:?} {call:?}");
        assert!(d.begin_ns <= d.end_ns);
    }
    // Calls carry names, classes and end times.
    let launches = p
        .calls
        .iter()
        .filter(|c| c.api == "cudaLaunchKernel")
        .count();
    assert_eq!(launches, 3 * 30 + 2);
    assert!(p.calls.iter().all(|c| c.end_ns.is_some()));
    assert!(p
        .calls
        .iter()
        .filter(|c| c.class == Some(causeway_ring::Class::Launch))
        .all(|c| c.kernel.is_some()));
}

/// With NVTX steps, sampling times whole steps: one in N outermost ranges, every device-work call in
/// it and none outside, so a timed step's copy/compute overlap can be measured (calls sampled one by
/// one would leave almost no step with both its copy and its kernel timed).
#[test]
fn sampling_with_nvtx_steps_times_whole_steps() {
    use causeway_scanner::facts::model::Timeline;
    let steps = 64;
    let (_, cap, r) = events(
        "overlap_prog",
        &[
            "a",
            "--steps",
            &steps.to_string(),
            "--kernel-us",
            "200",
            "--copy-mib",
            "1",
        ],
        &[("CAUSEWAY_EVENTS_SAMPLE", "4")],
    );
    let p0 = &r["processes"][0];
    assert_eq!(p0["sample_every"], 4, "{p0}");
    assert_eq!(p0["step_sampled"], true, "{p0}");
    assert_eq!(r["device"]["step_sampled"], true);
    assert_eq!(r["device"]["unassociated"]["total"], 0, "{}", r["device"]);
    let t = Timeline::build(&Capture::open(&cap).unwrap().rings().unwrap());
    let p = &t.processes[0];
    let timed: std::collections::HashSet<u64> =
        p.device.iter().filter_map(|d| d.call.get()).collect();
    let (mut whole, mut none) = (0, 0);
    for range in p.ranges.iter().filter(|x| x.level == 0) {
        let end = range.end_ns.expect("closed range");
        // The outermost device-work calls made inside the range.
        let work: Vec<u64> = p
            .calls
            .iter()
            .filter(|c| c.depth == 0 && c.begin_ns >= range.begin_ns && c.begin_ns <= end)
            .filter(|c| {
                matches!(
                    c.class,
                    Some(causeway_ring::Class::Launch | causeway_ring::Class::Copy)
                )
            })
            .map(|c| c.seq)
            .collect();
        assert_eq!(work.len(), 2, "{range:?}");
        let n = work.iter().filter(|s| timed.contains(s)).count();
        match n {
            0 => none += 1,
            2 => whole += 1,
            _ => panic!("step {range:?} timed in part: {n} of 2"),
        }
    }
    // 66 ranges (2 warm-up, 64 steps), each opening a timed window with p = 1/4 (sd ≈ 3.5).
    assert_eq!(whole + none, steps + 2);
    assert!(
        (6..=30).contains(&whole),
        "{whole} of {} steps timed",
        whole + none
    );
    // No call outside a range was timed.
    let in_ranges = p.device.len() as u64;
    assert_eq!(in_ranges, 2 * whole as u64);
    let o = std::process::Command::new(cli())
        .arg("report")
        .arg(&cap)
        .output()
        .expect("spawn causeway");
    assert!(stdout(&o).contains("one in 4 steps"), "{}", stdout(&o));
}
