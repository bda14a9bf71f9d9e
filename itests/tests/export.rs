//! `causeway export` on captures of real programs run under the shim against the C doubles: every call,
//! NVTX range and device span of the capture's timeline is in both formats, at its exact times, tied to
//! its call by a flow, on tracks that nest (the checks shared with the scanner's own export tests).

#[path = "../../cli/tests/export_check/mod.rs"]
mod export_check;

use causeway_itests::*;
use causeway_scanner::export::perfetto::proto::Value;
use causeway_scanner::facts::model::{ProcessTimeline, Timeline};
use causeway_scanner::read::capture::Capture;
use export_check::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn export(format: &str, cap: &Path) -> PathBuf {
    let out = cap.join(format!("trace.{format}"));
    let o = Command::new(cli())
        .args(["export", "--format", format, "-o"])
        .arg(&out)
        .arg(cap)
        .output()
        .expect("spawn causeway");
    assert!(o.status.success(), "export failed: {}", stderr(&o));
    assert!(
        stderr(&o).starts_with(&format!("causeway: wrote {}", out.display())),
        "{}",
        stderr(&o)
    );
    out
}

/// Runs `name` at level 3 with the events backend and small rings (these programs record a few hundred
/// entries); returns the capture directory.
fn capture(name: &str, args: &[&str]) -> PathBuf {
    let (o, cap) = traced(
        command(name, args),
        3,
        &[
            ("CAUSEWAY_BACKEND", "events"),
            ("CAUSEWAY_EVENTS_SAMPLE", "1"),
            ("CAUSEWAY_RING_MB", "1"),
        ],
    );
    assert!(o.status.success(), "{name}: {}", stderr(&o));
    cap
}

fn timeline(cap: &Path) -> Timeline {
    Timeline::build(&Capture::open(cap).unwrap().rings().unwrap())
}

/// Calls' (begin, end) as the timeline has them (all calls of these programs return).
fn call_times(p: &ProcessTimeline) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = p
        .calls
        .iter()
        .map(|c| (c.begin_ns, c.end_ns.get().expect("returned")))
        .collect();
    v.sort();
    v
}

fn tied(p: &ProcessTimeline) -> usize {
    p.device
        .iter()
        .filter(|d| {
            d.call
                .get()
                .is_some_and(|s| p.calls.iter().any(|c| c.seq == s))
        })
        .count()
}

/// Track name without the overlap suffix.
fn base(n: &str) -> String {
    n.split(" (overlap ").next().unwrap().to_string()
}

fn check_both(cap: &Path) -> (Timeline, PerfettoStats, ChromeStats) {
    let t = timeline(cap);
    let drawn: Vec<&ProcessTimeline> = t
        .processes
        .iter()
        .filter(|p| !(p.calls.is_empty() && p.ranges.is_empty() && p.device.is_empty()))
        .collect();
    let calls: usize = drawn.iter().map(|p| p.calls.len()).sum();
    let ranges: usize = drawn.iter().map(|p| p.ranges.len()).sum();
    let marks: usize = drawn.iter().map(|p| p.marks.len()).sum();
    let spans: usize = drawn.iter().map(|p| p.device.len()).sum();
    let flows: usize = drawn.iter().map(|p| tied(p)).sum();

    let pf = check_perfetto(&std::fs::read(export("perfetto", cap)).unwrap());
    assert_eq!(pf.host.len(), calls + ranges);
    assert_eq!(pf.device.len(), spans);
    assert_eq!(pf.flows.len(), flows);
    assert_eq!(pf.instants.len(), marks + drawn.len());
    let (_, ch) = check_chrome(&std::fs::read_to_string(export("chrome", cap)).unwrap());
    assert_same_args(&pf, &ch);
    assert_eq!(ch.host.len(), calls + ranges);
    assert_eq!(ch.device.len(), spans);
    assert_eq!(ch.flows.len(), flows);
    assert_eq!(ch.instants.len(), marks);

    // Exact times: every call of the timeline, in both formats.
    let want: Vec<(u64, u64)> = drawn.iter().flat_map(|p| call_times(p)).collect();
    let mut want = want;
    want.sort();
    let mut got: Vec<(u64, u64)> = pf
        .host
        .iter()
        .filter(|s| s.categories[0] != "nvtx")
        .map(|s| (s.begin, s.end))
        .collect();
    got.sort();
    assert_eq!(got, want, "perfetto call times");
    let mut got: Vec<(u64, u64)> = ch
        .host
        .iter()
        .filter(|x| x.cat != "nvtx")
        .map(|x| (x.ts, x.ts + x.dur))
        .collect();
    got.sort();
    assert_eq!(got, want, "chrome call times");
    // One device track per stream of the timeline (plus overlap tracks where spans overlap).
    let streams: BTreeSet<String> = drawn
        .iter()
        .flat_map(|p| p.device.iter().map(|d| p.stream_label(&d.stream.get())))
        .collect();
    let tracks: BTreeSet<String> = pf.device_tracks.iter().map(|n| base(n)).collect();
    assert_eq!(tracks, streams);
    assert_eq!(
        pf.device_tracks
            .iter()
            .filter(|n| !n.contains("(overlap"))
            .count(),
        streams.len()
    );
    (t, pf, ch)
}

#[test]
fn a_multistream_capture_exports_every_call_span_and_flow_in_both_formats() {
    let n = 30usize;
    let cap = capture("multistream", &[&n.to_string()]);
    let (t, pf, ch) = check_both(&cap);
    let p = &t.processes[0];
    assert_eq!(p.unplaced_device, 0);
    // Every interval is tied to its call: one flow per span.
    assert_eq!(pf.flows.len(), p.device.len());
    assert_eq!(ch.flows.len(), p.device.len());
    // Two user streams (A: copies, sleep_200us, the graph; B: sleep_300us, sleep_50us).
    let tracks: BTreeSet<String> = pf.device_tracks.iter().map(|n| base(n)).collect();
    assert_eq!(tracks.len(), 2, "{tracks:?}");
    for (k, count) in [
        ("sleep_200us", n),
        ("sleep_300us", n),
        ("sleep_50us", n),
        ("HtoD", n),
        ("[graph launch]", 2),
    ] {
        assert_eq!(
            pf.device.iter().filter(|s| s.name == k).count(),
            count,
            "{k}"
        );
        assert_eq!(
            ch.device.iter().filter(|x| x.name == k).count(),
            count,
            "{k}"
        );
    }
    // Each kernel's flow starts at a launch naming that kernel, and the span carries its bound.
    for (call, span) in &pf.flows {
        if span.categories[0] == "kernel" {
            assert_eq!(call.name, "cudaLaunchKernel");
            assert_eq!(
                call.args.get("kernel"),
                Some(&Value::String(span.name.clone()))
            );
        }
        assert!(matches!(span.args.get("bound_ns"), Some(Value::Uint(_))));
    }
    // The causal graph's cross-track dependencies are flows too, the same in both formats: B waits
    // on A's event each iteration, and the host waits for the work its syncs cover.
    let graph = causeway_scanner::analysis::causal::graph::Graph::build(p);
    let cross = graph
        .edges
        .iter()
        .filter(|e| {
            use causeway_scanner::analysis::causal::graph::Node;
            e.kind.crosses_tracks() && !matches!(e.from(), Node::Absent(_))
        })
        .count();
    assert!(cross > 0);
    assert_eq!(pf.deps.len(), cross);
    assert_eq!(ch.deps.len(), cross);
    let waits = ch.deps.iter().filter(|d| d.2 == "event_wait").count();
    assert!(waits >= n, "{waits} event-wait flows for {n} iterations");
    assert!(ch.deps.iter().all(|d| d.3
        == format!(
            "dependency,{}",
            if d.2 == "legacy_stream" {
                "inferred"
            } else {
                "explicit"
            }
        )));
    assert_eq!(
        pf.deps
            .iter()
            .filter(|d| d.2 == "event_wait (explicit)")
            .count(),
        waits
    );
    let info = pf
        .instants
        .iter()
        .find(|i| i.1 == "causeway capture")
        .unwrap();
    assert_eq!(info.3.get("backend"), Some(&Value::String("events".into())));
    let bound = p.device.iter().map(|d| d.bound_ns).max().unwrap();
    assert!(bound > 0, "events intervals have a conversion bound");
    assert_eq!(info.3.get("clock_bound_max_ns"), Some(&Value::Uint(bound)));
}

#[test]
fn nvtx_ranges_of_a_real_program_are_on_their_threads() {
    let cap = capture("nvtx_prog", &[]);
    let (t, pf, ch) = check_both(&cap);
    let p = &t.processes[0];
    assert!(p.ranges.len() >= 15, "{}", p.ranges.len());
    for name in ["step", "forward", "kernel"] {
        assert_eq!(pf.host.iter().filter(|s| s.name == name).count(), 5);
        assert_eq!(ch.host.iter().filter(|x| x.name == name).count(), 5);
    }
    // The program's ranges enclose its launches on one thread: nothing needs an overlap track.
    assert!(
        pf.host.iter().all(|s| !s.track_name.contains("(overlap")),
        "{:?}",
        pf.host
            .iter()
            .filter(|s| s.track_name.contains("overlap"))
            .collect::<Vec<_>>()
    );
    let kernel = pf.host.iter().find(|s| s.name == "kernel").unwrap();
    assert!(pf
        .host
        .iter()
        .any(|s| s.categories[0] == "launch" && s.begin >= kernel.begin && s.end <= kernel.end));
    let _ = std::fs::remove_dir_all(&cap);
}

/// A stream named through NVTX is its track's name and its spans' `stream` argument in the Chrome
/// export (and its label in the timeline); a range's category, colour and payload are its arguments.
#[test]
fn nvtx_stream_names_and_payloads_reach_the_exports() {
    let cap = capture("nvtx_full", &[]);
    let (t, _pf, _ch) = check_both(&cap);
    // check_both wrote the exports beside the capture.
    let text = std::fs::read_to_string(cap.join("trace.chrome")).unwrap();
    let p = &t.processes[0];
    let labels: BTreeSet<String> = p
        .device
        .iter()
        .map(|d| p.stream_label(&d.stream.get()))
        .collect();
    assert_eq!(labels.len(), 2, "{labels:?}");
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("cw_named_stream (stream 0x")),
        "{labels:?}"
    );
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("cw_wide_stream (stream 0x")),
        "{labels:?}"
    );
    let (root, _) = check_chrome(&text);
    let events = root["traceEvents"].as_array().unwrap();
    let tracks: BTreeSet<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    for l in &labels {
        assert!(tracks.contains(l.as_str()), "{l} in {tracks:?}");
        assert!(
            events
                .iter()
                .any(|e| e["cat"] == "kernel" && e["args"]["stream"] == l.as_str()),
            "a kernel on {l}"
        );
    }
    let arg = |name: &str| {
        events
            .iter()
            .find(|e| e["name"] == name && e["cat"] == "nvtx")
            .unwrap_or_else(|| panic!("{name}"))["args"]
            .clone()
    };
    let r = arg("cw_payload_range");
    assert_eq!(r["payload"], 42);
    assert_eq!(r["payload_type"], "u64");
    assert_eq!(r["category"], "cw_category");
    assert_eq!(r["color"], "#ff00aa00");
    assert_eq!(arg("cw_start_ex")["payload"], -5);
    assert_eq!(arg("cw_mark_double")["payload"], 2.5);
    assert_eq!(arg("cw_domain_push")["payload"], 0.5);
    let m = arg("cw_domain_mark");
    assert_eq!(
        (m["payload"].clone(), m["category"].clone()),
        (
            serde_json::json!(-7),
            serde_json::json!("cw_domain_category")
        )
    );
    assert_eq!(arg("cw_registered")["payload_type"], "ext");
    assert!(arg("cw_push_a").get("payload").is_none());
    let _ = std::fs::remove_dir_all(&cap);
}
