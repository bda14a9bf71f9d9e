//! `causeway export` end to end on a synthetic level-3 capture written with the real ring writer: both
//! formats decoded and checked (structure, counts, exact times, flows, nesting, names), and the error
//! contract (one line, exit 2, nothing written).

#[path = "../../scanner/tests/common/mod.rs"]
mod common;
mod export_check;

use causeway_ring::layout::{hdr, Backend, Class, ClockKind, Kind, Layer, Policy};
use causeway_scanner::export::perfetto::proto::{self, Value};
use common::*;
use export_check::*;
use prost::Message;
use std::path::{Path, PathBuf};

const LAUNCH: u16 = 1;
const MEMCPY: u16 = 3;
const SYNC: u16 = 7;

const EVIL: &str = "<img src=x onerror=alert(1)>";
const H_EVIL: u64 = 0xa00;
const H_RELU: u64 = 0xb00;
const T_EVIL: u64 = 100;
const T_RELU: u64 = 101;
const T_STEP: u64 = 10;
const T_OPEN: u64 = 11;
const T_MARK: u64 = 12;
const T_DOM: u64 = 13;
const T_A: u64 = 14;
const T_B: u64 = 15;
const T_CROSS: u64 = 16;

const S1: u64 = 0x5000;
const S2: u64 = 0x6000;

/// The capture every test here uses (pid 1000; times in ns):
///
/// thread 1: range "step" [1000, 4100] holding launches of EVIL on S1 [2000, 2100] (kernel
/// [2500, 3500]), relu on S2 [2200, 2300] (kernel [2600, 3000]), relu on S1 [2460, 2470] (kernel
/// [3400, 3650]: crosses both neighbours on S1, so S1 gets an overlap track), a copy on S1
/// [2400, 2450] (4096 bytes HtoD [3600, 3700]) and a sync [2500, 4000]; a start/end range "cross"
/// [2050, 2150] that begins inside the EVIL launch and ends after it (ended by thread 2): an overlap
/// track; a mark `<b>mark</b>` at 4200; a range "open" from 4300 never closed, and a sync from 4400 that
/// never returns.
/// thread 2: a launch of relu on S2 [5000, 5100] (kernel [5200, 5300]); a kernel at [5400, 5500] tied to
/// no call, on the backend's stream 9; ranges "A" (domain 0) [6000, 6200] and "B" (domain "dom")
/// [6100, 6300], which interleave: B goes on an overlap track. The last timestamp is 6300.
fn capture() -> RingBuilder {
    let b = RingBuilder::level3(64, Policy::Drop);
    b.api(LAUNCH, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .api(MEMCPY, "cudaMemcpyAsync", Layer::Runtime, Class::Copy)
        .api(SYNC, "cudaStreamSynchronize", Layer::Runtime, Class::Sync)
        .api(NVTX_API, "nvtxRangePushA", Layer::Nvtx, Class::Other)
        .kernel(H_EVIL, EVIL)
        .kernel(H_RELU, "relu")
        .text(T_EVIL, EVIL)
        .text(T_RELU, "relu")
        .text(T_STEP, "step")
        .text(T_OPEN, "open")
        .text(T_MARK, "<b>mark</b>")
        .text(T_DOM, "dom")
        .text(T_A, "A")
        .text(T_B, "B")
        .text(T_CROSS, "cross");
    b.w.set_backend(Backend::Cupti);
    b.instant(Kind::RangePush, TID, 1000, T_STEP, 0, 0);
    let evil = b
        .call_args(TID, LAUNCH, 0, 2000, 2100, 0, [S1, H_EVIL, 1])
        .unwrap();
    b.instant(Kind::RangeStart, TID, 2050, T_CROSS, 0, 42);
    b.instant(Kind::RangeEnd, TID2, 2150, 0, 0, 42);
    let relu = b
        .call_args(TID, LAUNCH, 0, 2200, 2300, 0, [S2, H_RELU, 1])
        .unwrap();
    let copy = b
        .call_args(TID, MEMCPY, 0, 2400, 2450, 0, [S1, 0, 4096])
        .unwrap();
    let relu_s1 = b
        .call_args(TID, LAUNCH, 0, 2460, 2470, 0, [S1, H_RELU, 1])
        .unwrap();
    b.call_args(TID, SYNC, 0, 2500, 4000, 0, [S1, 0, 0])
        .unwrap();
    b.instant(Kind::RangePop, TID, 4100, 0, 0, 0);
    b.instant(Kind::Mark, TID, 4200, T_MARK, 0, 0);
    b.instant(Kind::RangePush, TID, 4300, T_OPEN, 0, 0);
    b.open_args(TID, SYNC, 0, 4400, [S1, 0, 0]).unwrap();
    let relu2 = b
        .call_args(TID2, LAUNCH, 0, 5000, 5100, 0, [S2, H_RELU, 1])
        .unwrap();
    b.instant(Kind::RangePush, TID2, 6000, T_A, 0, 0);
    b.instant(Kind::RangePush, TID2, 6100, T_B, T_DOM, 0);
    b.instant(Kind::RangePop, TID2, 6200, 0, 0, 0);
    b.instant(Kind::RangePop, TID2, 6300, 0, T_DOM, 0);

    b.kernel_interval(evil, T_EVIL, 2500, 3500).unwrap();
    b.device(Dev {
        stream: 8,
        ..Dev::kernel(relu, T_RELU, 2600, 3000)
    })
    .unwrap();
    b.copy_interval(copy, 1, 4096, 3600, 3700).unwrap();
    b.kernel_interval(relu_s1, T_RELU, 3400, 3650).unwrap();
    b.kernel_interval(relu2, T_RELU, 5200, 5300).unwrap();
    b.device(Dev {
        stream: 9,
        ..Dev::kernel(0, T_RELU, 5400, 5500).no_call()
    })
    .unwrap();
    b
}

const CALLS: usize = 7;
const RANGES: usize = 5;
const SPANS: usize = 6;
const FLOWS: usize = 5;
const LAST: u64 = 6300;

struct Run {
    code: Option<i32>,
    stderr: String,
}

fn export(args: &[&str]) -> Run {
    let o = causeway().arg("export").args(args).output().unwrap();
    assert!(o.stdout.is_empty(), "nothing on stdout");
    Run {
        code: o.status.code(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

fn export_ok(format: &str, cap: &Path, out: &Path) -> Run {
    let r = export(&[
        "--format",
        format,
        "-o",
        out.to_str().unwrap(),
        cap.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    r
}

fn written(dir: &TempDir) -> PathBuf {
    let cap = dir.join("cap");
    std::fs::create_dir(&cap).unwrap();
    capture().write_to(&cap.join("p.cwring"));
    cap
}

fn uint(v: Option<&Value>) -> u64 {
    match v {
        Some(Value::Uint(u)) => *u,
        other => panic!("not a uint: {other:?}"),
    }
}

#[test]
fn perfetto_trace_has_every_call_range_span_and_flow() {
    let dir = TempDir::new("export-pf");
    let cap = written(&dir);
    let out = dir.join("t.pftrace");
    let r = export_ok("perfetto", &cap, &out);
    assert!(
        r.stderr.contains(&format!(
            "{CALLS} calls, {RANGES} NVTX ranges, 1 marks, {SPANS} device spans, {FLOWS} call->device flows"
        )),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("3 extra track(s)"), "{}", r.stderr);
    let st = check_perfetto(&std::fs::read(&out).unwrap());

    // Tracks: one process, two threads, one track per stream (+ the overlaps made above).
    assert_eq!(st.process_tracks, [(1000, "app".to_string())]);
    assert_eq!(
        st.thread_tracks
            .iter()
            .map(|t| (t.0, t.1))
            .collect::<Vec<_>>(),
        [(1000, TID as i32), (1000, TID2 as i32)]
    );
    assert_eq!(
        st.device_tracks,
        [
            "stream 0x5000",
            "stream 0x5000 (overlap 1)",
            "stream 0x6000",
            "device stream 9"
        ]
    );
    // One slice pair per call and range on the host tracks, per span on the device tracks.
    assert_eq!(st.host.len(), CALLS + RANGES);
    assert_eq!(st.device.len(), SPANS);
    assert_eq!(st.flows.len(), FLOWS);
    // Instants: the mark and the capture's own.
    assert_eq!(st.instants.len(), 2);
    let mark = st.instants.iter().find(|i| i.1 == "<b>mark</b>").unwrap();
    assert_eq!((mark.0.as_str(), mark.2), ("thread 1", 4200));
    let info = st
        .instants
        .iter()
        .find(|i| i.1 == "causeway capture")
        .unwrap();
    assert_eq!(info.2, 1000, "at the process's first timestamp");
    assert_eq!(info.3.get("backend"), Some(&Value::String("cupti".into())));
    assert_eq!(uint(info.3.get("clock_bound_max_ns")), 0);
    assert_eq!(uint(info.3.get("unplaced_device_intervals")), 0);
    assert_eq!(
        info.3.get("capture"),
        Some(&Value::String(cap.display().to_string()))
    );

    // Exact times and the hostile name, verbatim.
    let evil = st.device.iter().find(|s| s.name == EVIL).unwrap();
    assert_eq!((evil.begin, evil.end), (2500, 3500));
    assert_eq!(evil.track_name, "stream 0x5000");
    assert_eq!(evil.categories, ["kernel"]);
    let launch = st
        .host
        .iter()
        .find(|s| s.args.get("kernel") == Some(&Value::String(EVIL.into())))
        .unwrap();
    assert_eq!(
        (launch.name.as_str(), launch.begin, launch.end),
        ("cudaLaunchKernel", 2000, 2100)
    );
    assert_eq!(launch.categories, ["launch"]);
    assert_eq!(launch.args.get("stream"), Some(&Value::Pointer(S1)));
    assert_eq!(launch.track_name, "thread 1");
    // The flow joins exactly that launch and that kernel.
    let f = st.flows.iter().find(|f| f.1.name == EVIL).unwrap();
    assert_eq!((f.0.begin, f.0.track_name.as_str()), (2000, "thread 1"));
    // The copy carries its bytes; the untied kernel has no flow and sits on the backend's stream.
    let copy = st.device.iter().find(|s| s.name == "HtoD").unwrap();
    assert_eq!(uint(copy.args.get("bytes")), 4096);
    assert_eq!(copy.categories, ["memcpy"]);
    let untied = st
        .device
        .iter()
        .find(|s| s.track_name == "device stream 9")
        .unwrap();
    assert!(untied.flows.is_empty() && !untied.args.contains_key("call_seq"));
    // Overlaps: the crossing range and the interleaved range moved; the calls stayed on their thread.
    let cross = st.host.iter().find(|s| s.name == "cross").unwrap();
    assert_eq!(cross.track_name, "thread 1 (overlap 1)");
    let b = st.host.iter().find(|s| s.name == "B").unwrap();
    assert_eq!(b.track_name, "thread 2 (overlap 1)");
    assert_eq!(b.args.get("domain"), Some(&Value::String("dom".into())));
    assert!(st
        .host
        .iter()
        .filter(|s| s.categories[0] != "nvtx")
        .all(|s| s.track_name == "thread 1" || s.track_name == "thread 2"));
    // Open things end at the last timestamp and say so.
    let open: Vec<&PSlice> = st
        .host
        .iter()
        .filter(|s| s.args.contains_key("open"))
        .collect();
    assert_eq!(open.len(), 2);
    for s in open {
        assert_eq!(s.end, LAST, "{s:?}");
        assert_eq!(s.args.get("open"), Some(&Value::Bool(true)));
    }
}

/// A call that issued several spans (a graph launch's kernels) has a flow to each: in Chrome one
/// binding on the call, ended on each of its spans and on no other; in Perfetto a flow per span. Two
/// processes with the same calls keep their flows apart (each numbers its calls from 0).
#[test]
fn a_call_with_several_spans_has_a_flow_to_each() {
    let dir = TempDir::new("export-fanout");
    let cap = dir.join("cap");
    std::fs::create_dir(&cap).unwrap();
    for pid in [1000, 2000] {
        let b = RingBuilder::custom(
            64,
            Policy::Drop,
            pid,
            1,
            3,
            ClockKind::Monotonic,
            1_000_000_000,
        );
        b.api(LAUNCH, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
            .kernel(H_RELU, "relu")
            .text(T_RELU, "relu");
        b.w.set_backend(Backend::Cupti);
        let many = (b.call_args(TID, LAUNCH, 0, 1000, 1100, 0, [S1, H_RELU, 1])).unwrap();
        let one = (b.call_args(TID, LAUNCH, 0, 1200, 1300, 0, [S1, H_RELU, 1])).unwrap();
        for (call, at) in [(many, 1500), (many, 1700), (one, 1800), (many, 1900)] {
            b.kernel_interval(call, T_RELU, at, at + 50).unwrap();
        }
        b.write_to(&cap.join(format!("p{pid}.cwring")));
    }

    let out = dir.join("t.json");
    let r = export_ok("chrome", &cap, &out);
    assert!(r.stderr.contains("8 call->device flows"), "{}", r.stderr);
    let (_, st) = check_chrome(&std::fs::read_to_string(&out).unwrap());
    let ends = |pid: u64, call_ts: u64| -> Vec<u64> {
        let mut v: Vec<u64> = (st.flows.iter())
            .filter(|f| f.0.pid == pid && f.0.ts == call_ts)
            .map(|f| f.1.ts)
            .collect();
        v.sort();
        v
    };
    assert_eq!(st.flows.len(), 8);
    for pid in [1000, 2000] {
        assert_eq!(ends(pid, 1000), [1500, 1700, 1900], "pid {pid}");
        assert_eq!(ends(pid, 1200), [1800], "pid {pid}");
    }

    let out = dir.join("t.pftrace");
    export_ok("perfetto", &cap, &out);
    assert_eq!(check_perfetto(&std::fs::read(&out).unwrap()).flows.len(), 8);
}

/// Rings of two machines in one directory with the same pid: a viewer would merge their tracks, so
/// the later host's process is shown under a pid of its own (the same for its two rings: a process
/// that execs writes two), named with its pid and host; the report says so.
#[test]
fn processes_of_two_hosts_with_one_pid_are_told_apart() {
    let dir = TempDir::new("export-dup-pid");
    let cap = dir.join("cap");
    std::fs::create_dir(&cap).unwrap();
    for (file, host, t) in [
        ("a1", "hostA", 1000),
        ("a2", "hostA", 3000),
        ("b", "hostB", 2000),
    ] {
        let at = (3, ClockKind::Monotonic, 1_000_000_000);
        let mut b = RingBuilder::with_strings(64, STRINGS, Policy::Drop, 77, 1, at);
        b.api(LAUNCH, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
            .kernel(H_RELU, "relu")
            .text(T_RELU, "relu");
        let call = (b.call_args(TID, LAUNCH, 0, t, t + 100, 0, [S1, H_RELU, 1])).unwrap();
        b.kernel_interval(call, T_RELU, t + 200, t + 300).unwrap();
        let h = b.bytes_mut();
        h[hdr::HOST..hdr::HOST + 64].fill(0);
        h[hdr::HOST..hdr::HOST + host.len()].copy_from_slice(host.as_bytes());
        h[hdr::HOST_LEN..hdr::HOST_LEN + 4].copy_from_slice(&(host.len() as u32).to_le_bytes());
        b.write_to(&cap.join(format!("{file}.cwring")));
    }
    let out = dir.join("t.json");
    export_ok("chrome", &cap, &out);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let names: Vec<(u64, &str)> = (ev.iter())
        .filter(|e| e["name"] == "process_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    let other = causeway_scanner::export::SHOWN_PID_BASE as u64;
    let app = "app (pid 77)";
    // In file order: a1, a2 (hostA), b (hostB).
    assert_eq!(
        names,
        [(77, app), (77, app), (other, "app (pid 77 on hostB)")]
    );
    let launches = |pid: u64| {
        (ev.iter())
            .filter(|e| e["pid"] == pid && e["name"] == "cudaLaunchKernel")
            .count()
    };
    assert_eq!((launches(77), launches(other)), (2, 1));
    let shown: Vec<&serde_json::Value> = (v["metadata"]["processes"].as_array().unwrap().iter())
        .map(|p| &p["shown_pid"])
        .collect();
    assert_eq!(
        shown,
        [
            &serde_json::Value::Null,
            &serde_json::Value::Null,
            &other.into()
        ]
    );

    let out = dir.join("t.pftrace");
    export_ok("perfetto", &cap, &out);
    let st = check_perfetto(&std::fs::read(&out).unwrap());
    let hb = "app (pid 77 on hostB)".to_string();
    let want = [
        (77, "app".to_string()),
        (77, "app".to_string()),
        (other as i32, hb),
    ];
    assert_eq!(st.process_tracks, want);

    let o = causeway().arg("report").arg(&cap).output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("pid 77 is the pid of processes on 2 hosts (hostA, hostB)"),
        "{e}"
    );
}

#[test]
fn chrome_trace_has_every_call_range_span_and_flow() {
    let dir = TempDir::new("export-chrome");
    let cap = written(&dir);
    let out = dir.join("t.json");
    export_ok("chrome", &cap, &out);
    let text = std::fs::read_to_string(&out).unwrap();
    // The hostile names never appear as markup, but parse back verbatim.
    assert!(!text.contains("<img") && !text.contains("<b>"), "{text}");
    let (root, st) = check_chrome(&text);
    assert_eq!(
        st.processes.values().collect::<Vec<_>>(),
        ["app (pid 1000)"]
    );
    assert_eq!(st.host.len(), CALLS + RANGES);
    assert_eq!(st.device.len(), SPANS);
    assert_eq!(st.flows.len(), FLOWS);
    assert_eq!(st.instants.len(), 1);
    assert_eq!(st.instants[0].name, "<b>mark</b>");
    assert_eq!(st.instants[0].ts, 4200);
    let evil = st.device.iter().find(|x| x.name == EVIL).unwrap();
    assert_eq!((evil.ts, evil.dur), (2500, 1000));
    assert_eq!(evil.thread, "stream 0x5000");
    assert_eq!(evil.cat, "kernel");
    assert_eq!(evil.args["bound_ns"], 0);
    assert!(evil.tid >= 1 << 30, "synthetic tid");
    let f = st.flows.iter().find(|f| f.1.name == EVIL).unwrap();
    assert_eq!(
        (f.0.name.as_str(), f.0.ts, f.0.tid),
        ("cudaLaunchKernel", 2000, TID as u64)
    );
    assert_eq!(f.0.args["kernel"], EVIL);
    assert_eq!(f.0.args["stream"], "0x5000");
    let copy = st.device.iter().find(|x| x.name == "HtoD").unwrap();
    assert_eq!(copy.args["bytes"], 4096);
    // Times keep every nanosecond: microseconds with three decimals, exactly.
    assert!(text.contains("\"ts\":2.500,\"dur\":1.000"), "{text}");
    // Open slices run to the last timestamp.
    let open: Vec<&CEvent> = st.host.iter().filter(|x| x.args["open"] == true).collect();
    assert_eq!(open.len(), 2);
    assert!(open.iter().all(|x| x.ts + x.dur == LAST));
    // Device tracks: one per stream, plus S1's overlap.
    let mut dev: Vec<&str> = st
        .threads
        .values()
        .map(|t| t.0.as_str())
        .filter(|n| !n.contains("thread"))
        .collect();
    dev.sort();
    assert_eq!(
        dev,
        [
            "device stream 9",
            "stream 0x5000",
            "stream 0x5000 (overlap 1)",
            "stream 0x6000"
        ]
    );
    // Metadata: the capture, the clock, and per process the backend and the bound.
    let m = &root["metadata"];
    assert_eq!(m["capture"], cap.display().to_string());
    assert_eq!(m["clock"], "CLOCK_MONOTONIC");
    assert_eq!(m["processes"][0]["pid"], 1000);
    assert_eq!(m["processes"][0]["backend"], "cupti");
    assert_eq!(m["processes"][0]["clock_bound_max_ns"], 0);
    assert_eq!(m["processes"][0]["unplaced_device_intervals"], 0);
}

#[test]
fn the_bound_and_unplaced_intervals_travel_with_the_file() {
    // Events-backend style: intervals not on the host clock are left out and counted.
    let dir = TempDir::new("export-unplaced");
    let cap = dir.join("cap");
    std::fs::create_dir(&cap).unwrap();
    let b = capture();
    b.device(Dev::kernel(0, T_RELU, 7000, 7100).no_call().unconverted())
        .unwrap();
    b.write_to(&cap.join("p.cwring"));
    let json = dir.join("t.json");
    let pf = dir.join("t.pftrace");
    let r = export_ok("chrome", &cap, &json);
    assert!(
        r.stderr
            .contains("warning: 1 device interval(s) have no host time"),
        "{}",
        r.stderr
    );
    export_ok("perfetto", &cap, &pf);
    let (root, st) = check_chrome(&std::fs::read_to_string(&json).unwrap());
    assert_eq!(st.device.len(), SPANS);
    assert_eq!(
        root["metadata"]["processes"][0]["unplaced_device_intervals"],
        1
    );
    let p = check_perfetto(&std::fs::read(&pf).unwrap());
    let info = p
        .instants
        .iter()
        .find(|i| i.1 == "causeway capture")
        .unwrap();
    assert_eq!(uint(info.3.get("unplaced_device_intervals")), 1);
}

/// Expected protobuf wire content: per field, its number and value.
enum W {
    /// A varint.
    V(u64),
    /// A fixed64.
    F(u64),
    /// Length-delimited bytes (a string).
    B(&'static str),
    /// A nested message.
    M(Vec<(u32, W)>),
}

fn varint(b: &[u8], i: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let x = b[*i];
        *i += 1;
        v |= ((x & 0x7f) as u64) << shift;
        if x & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

/// Parses `bytes` as protobuf wire format (by hand, not through prost) and compares it with `want`,
/// field numbers and wire types included, regardless of field order.
fn wire_eq(bytes: &[u8], want: &[(u32, W)], at: &str) {
    let mut got: Vec<(u32, u8, u64, &[u8])> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let key = varint(bytes, &mut i);
        let (field, wt) = ((key >> 3) as u32, (key & 7) as u8);
        match wt {
            0 => got.push((field, 0, varint(bytes, &mut i), &[])),
            1 => {
                let v = u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
                i += 8;
                got.push((field, 1, v, &[]));
            }
            2 => {
                let n = varint(bytes, &mut i) as usize;
                got.push((field, 2, 0, &bytes[i..i + n]));
                i += n;
            }
            _ => panic!("{at}: wire type {wt}"),
        }
    }
    got.sort_by_key(|g| g.0);
    let mut want: Vec<&(u32, W)> = want.iter().collect();
    want.sort_by_key(|w| w.0);
    assert_eq!(
        got.iter().map(|g| g.0).collect::<Vec<_>>(),
        want.iter().map(|w| w.0).collect::<Vec<_>>(),
        "{at}: field numbers"
    );
    for (g, (field, w)) in got.iter().zip(want) {
        let at = format!("{at}.{field}");
        match w {
            W::V(v) => assert_eq!((g.1, g.2), (0, *v), "{at}"),
            W::F(v) => assert_eq!((g.1, g.2), (1, *v), "{at}"),
            W::B(s) => assert_eq!((g.1, g.3), (2, s.as_bytes()), "{at}"),
            W::M(sub) => {
                assert_eq!(g.1, 2, "{at}");
                wire_eq(g.3, sub, &at);
            }
        }
    }
}

#[test]
fn the_perfetto_wire_bytes_use_perfettos_field_numbers() {
    // Expected fields from protos/perfetto/trace/{trace,trace_packet,clock_snapshot}.proto and
    // track_event/{track_event,track_descriptor,process_descriptor,thread_descriptor,
    // debug_annotation}.proto. Decoding with the export's own structs could not catch a wrong number;
    // this hand parser does.
    use W::*;
    let p = proto::TracePacket {
        timestamp: Some(5),
        timestamp_clock_id: Some(3),
        trusted_packet_sequence_id: Some(1),
        data: Some(proto::Data::TrackEvent(proto::TrackEvent {
            r#type: Some(proto::Type::SliceBegin as i32),
            track_uuid: Some(2),
            name: Some("k".into()),
            categories: vec!["c".into()],
            flow_ids: vec![7, 8],
            debug_annotations: vec![
                proto::DebugAnnotation {
                    name_iid: None,
                    name: Some("n".into()),
                    value: Some(Value::Pointer(9)),
                },
                proto::DebugAnnotation {
                    name_iid: None,
                    name: Some("i".into()),
                    value: Some(Value::Int(-1)),
                },
                proto::DebugAnnotation {
                    name_iid: None,
                    name: Some("u".into()),
                    value: Some(Value::Uint(1)),
                },
                proto::DebugAnnotation {
                    name_iid: None,
                    name: Some("s".into()),
                    value: Some(Value::String("v".into())),
                },
                proto::DebugAnnotation {
                    name_iid: None,
                    name: Some("b".into()),
                    value: Some(Value::Bool(true)),
                },
            ],
            ..Default::default()
        })),
        ..Default::default()
    };
    let want = [(
        1, // Trace.packet
        M(vec![
            (8, V(5)),  // timestamp
            (58, V(3)), // timestamp_clock_id
            (10, V(1)), // trusted_packet_sequence_id
            (
                11, // track_event
                M(vec![
                    (9, V(1)),    // type = TYPE_SLICE_BEGIN
                    (11, V(2)),   // track_uuid
                    (23, B("k")), // name
                    (22, B("c")), // categories
                    (47, F(7)),   // flow_ids: fixed64, one field each (proto2, not packed)
                    (47, F(8)),
                    (4, M(vec![(10, B("n")), (7, V(9))])), // debug_annotations: name, pointer_value
                    (4, M(vec![(10, B("i")), (4, V(u64::MAX))])), // int_value (int64 -1)
                    (4, M(vec![(10, B("u")), (3, V(1))])), // uint_value
                    (4, M(vec![(10, B("s")), (6, B("v"))])), // string_value
                    (4, M(vec![(10, B("b")), (2, V(1))])), // bool_value
                ]),
            ),
        ]),
    )];
    wire_eq(
        &proto::Trace { packet: vec![p] }.encode_to_vec(),
        &want,
        "trace",
    );

    let d = proto::TracePacket {
        trusted_packet_sequence_id: Some(1),
        data: Some(proto::Data::TrackDescriptor(proto::TrackDescriptor {
            uuid: Some(1),
            name: Some("s".into()),
            parent_uuid: Some(4),
            thread: Some(proto::ThreadDescriptor {
                pid: Some(2),
                tid: Some(3),
                thread_name: Some("t".into()),
            }),
            process: Some(proto::ProcessDescriptor {
                pid: Some(2),
                process_name: Some("p".into()),
            }),
        })),
        ..Default::default()
    };
    let want = [
        (10, V(1)),
        (
            60, // track_descriptor
            M(vec![
                (1, V(1)),                                       // uuid
                (2, B("s")),                                     // name
                (5, V(4)),                                       // parent_uuid
                (3, M(vec![(1, V(2)), (6, B("p"))])),            // process: pid, process_name
                (4, M(vec![(1, V(2)), (2, V(3)), (5, B("t"))])), // thread: pid, tid, thread_name
            ]),
        ),
    ];
    wire_eq(&d.encode_to_vec(), &want, "descriptor");

    let c = proto::TracePacket {
        sequence_flags: Some(1),
        data: Some(proto::Data::ClockSnapshot(proto::ClockSnapshot {
            clocks: vec![proto::Clock {
                clock_id: Some(3),
                timestamp: Some(6),
                is_incremental: None,
                unit_multiplier_ns: None,
            }],
            primary_trace_clock: Some(3),
        })),
        ..Default::default()
    };
    let want = [
        (13, V(1)), // sequence_flags
        (
            6, // clock_snapshot
            M(vec![
                (1, M(vec![(1, V(3)), (2, V(6))])), // clocks: clock_id, timestamp
                (2, V(3)),                          // primary_trace_clock
            ]),
        ),
    ];
    wire_eq(&c.encode_to_vec(), &want, "clock");

    // A track's first packet: incremental clock, sequence defaults, interned strings; protos:
    // clock_snapshot.proto (is_incremental = 3, unit_multiplier_ns = 4), trace_packet.proto
    // (interned_data = 12, trace_packet_defaults = 59), trace_packet_defaults.proto
    // (timestamp_clock_id = 58, track_event_defaults = 11), track_event.proto (TrackEventDefaults
    // track_uuid = 11; TrackEvent name_iid = 10, category_iids = 3), interned_data.proto
    // (event_categories = 1, event_names = 2, debug_annotation_names = 3,
    // debug_annotation_string_values = 29; entries iid = 1, name/str = 2), debug_annotation.proto
    // (name_iid = 1, string_value_iid = 17).
    let s = |iid: u64, n: &str| proto::Interned {
        iid: Some(iid),
        name: Some(n.into()),
    };
    let f = proto::TracePacket {
        interned_data: Some(proto::InternedData {
            event_categories: vec![s(1, "c")],
            event_names: vec![s(2, "n")],
            debug_annotation_names: vec![s(3, "a")],
            debug_annotation_string_values: vec![s(4, "v")],
        }),
        trace_packet_defaults: Some(proto::TracePacketDefaults {
            timestamp_clock_id: Some(64),
            track_event_defaults: Some(proto::TrackEventDefaults {
                track_uuid: Some(7),
            }),
        }),
        data: Some(proto::Data::ClockSnapshot(proto::ClockSnapshot {
            clocks: vec![proto::Clock {
                clock_id: Some(64),
                timestamp: Some(6),
                is_incremental: Some(true),
                unit_multiplier_ns: Some(1),
            }],
            primary_trace_clock: None,
        })),
        ..Default::default()
    };
    let want = [
        (
            12,
            M(vec![
                (1, M(vec![(1, V(1)), (2, B("c"))])),
                (2, M(vec![(1, V(2)), (2, B("n"))])),
                (3, M(vec![(1, V(3)), (2, B("a"))])),
                (29, M(vec![(1, V(4)), (2, B("v"))])),
            ]),
        ),
        (59, M(vec![(58, V(64)), (11, M(vec![(11, V(7))]))])),
        (
            6,
            M(vec![(
                1,
                M(vec![(1, V(64)), (2, V(6)), (3, V(1)), (4, V(1))]),
            )]),
        ),
    ];
    wire_eq(&f.encode_to_vec(), &want, "sequence setup");
    let e = proto::TrackEvent {
        name_iid: Some(2),
        category_iids: vec![1],
        debug_annotations: vec![proto::DebugAnnotation {
            name_iid: Some(3),
            name: None,
            value: Some(Value::StringIid(4)),
        }],
        ..Default::default()
    };
    let want = [(4, M(vec![(1, V(3)), (17, V(4))])), (3, V(1)), (10, V(2))];
    wire_eq(&e.encode_to_vec(), &want, "interned event");
}

#[test]
fn an_existing_output_is_replaced_only_with_force() {
    let dir = TempDir::new("export-force");
    let cap = written(&dir);
    let out = dir.join("t.json");
    std::fs::write(&out, "keep me").unwrap();
    let args = [
        "--format",
        "chrome",
        "-o",
        out.to_str().unwrap(),
        cap.to_str().unwrap(),
    ];
    let r = export(&args);
    assert_eq!(r.code, Some(2));
    assert_eq!(
        r.stderr,
        format!(
            "causeway: error: {}: already exists (pass --force to overwrite it)\n",
            out.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me");
    let mut forced = args.to_vec();
    forced.insert(0, "--force");
    let r = export(&forced);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    check_chrome(&std::fs::read_to_string(&out).unwrap());
    // No temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

/// Asserts the one-line error contract; returns the message.
fn fails(args: &[&str]) -> String {
    let r = export(args);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "one line: {:?}", r.stderr);
    assert!(r.stderr.starts_with("causeway: error: "), "{}", r.stderr);
    r.stderr.trim_end().to_string()
}

#[test]
fn errors_are_one_line_exit_2_and_write_nothing() {
    let dir = TempDir::new("export-errors");
    let cap = written(&dir);
    let out = dir.join("t.pftrace");
    let o = out.to_str().unwrap();
    let missing = dir.join("nope");
    assert_eq!(
        fails(&["--format", "perfetto", "-o", o, missing.to_str().unwrap()]),
        format!(
            "causeway: error: {}: no such file or directory",
            missing.display()
        )
    );
    // A damaged ring: named, and no output (nor temporary file) appears.
    let bad = dir.join("bad.cwring");
    std::fs::write(&bad, b"not a ring at all, just some bytes").unwrap();
    let msg = fails(&["--format", "chrome", "-o", o, bad.to_str().unwrap()]);
    assert!(
        msg.starts_with(&format!("causeway: error: {}: ", bad.display())),
        "{msg}"
    );
    // -o naming a directory, or a ring of the capture itself (even with --force).
    let msg = fails(&[
        "--format",
        "chrome",
        "-o",
        dir.path().to_str().unwrap(),
        cap.to_str().unwrap(),
    ]);
    assert!(msg.contains("is a directory"), "{msg}");
    // A ring the capture leaves out (`q`: never created completely) is its own all the same.
    let empty = cap.join("q.cwring");
    std::fs::write(&empty, b"").unwrap();
    for ring in [cap.join("p.cwring"), empty.clone()] {
        let before = std::fs::read(&ring).unwrap();
        let msg = fails(&[
            "--force",
            "--format",
            "chrome",
            "-o",
            ring.to_str().unwrap(),
            cap.to_str().unwrap(),
        ]);
        assert!(msg.contains("is a ring of the capture"), "{msg}");
        assert_eq!(std::fs::read(&ring).unwrap(), before);
    }
    std::fs::remove_file(&empty).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["bad.cwring", "cap"]);
}

#[test]
fn format_and_output_are_checked_by_the_parser() {
    let dir = TempDir::new("export-usage");
    let cap = written(&dir);
    let c = cap.to_str().unwrap();
    let o = dir.join("t").to_str().unwrap().to_string();
    let r = export(&["--format", "svg", "-o", &o, c]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("invalid value 'svg'"), "{}", r.stderr);
    assert!(r.stderr.contains("chrome") && r.stderr.contains("perfetto"));
    let r = export(&["--format", "chrome", c]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("--output"), "{}", r.stderr);
    let r = export(&["-o", &o, c]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("--format"), "{}", r.stderr);
    assert!(!Path::new(&o).exists());
}

#[test]
fn a_single_ring_file_exports_like_its_directory() {
    let dir = TempDir::new("export-ring");
    let cap = written(&dir);
    let a = dir.join("a.pftrace");
    let b = dir.join("b.pftrace");
    export_ok("perfetto", &cap, &a);
    export_ok("perfetto", &cap.join("p.cwring"), &b);
    let (a, b) = (
        check_perfetto(&std::fs::read(&a).unwrap()),
        check_perfetto(&std::fs::read(&b).unwrap()),
    );
    assert_eq!(a.host.len(), b.host.len());
    assert_eq!(a.device.len(), b.device.len());
    assert_eq!(a.flows.len(), b.flows.len());
}

/// `CAUSEWAY_STAGES` prints each stage of an export once, in order, with its time and memory, and
/// leaves the output as it is; unset or empty, nothing is printed.
#[test]
fn stages_are_printed_in_order_only_when_asked() {
    let dir = TempDir::new("export-stages");
    let cap = written(&dir);
    let stages = |env: Option<&str>, format: &str, out: &Path| -> Vec<String> {
        let mut c = causeway();
        c.env_remove("CAUSEWAY_STAGES");
        if let Some(v) = env {
            c.env("CAUSEWAY_STAGES", v);
        }
        let o = c
            .args(["export", "--format", format, "-o"])
            .arg(out)
            .arg(&cap)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        (err.lines())
            .filter_map(|l| l.strip_prefix("causeway: stage "))
            .map(|l| {
                let (name, rest) = l.split_once(": ").unwrap();
                let (ms, rest) = rest.split_once(" ms, cpu ").unwrap();
                assert!(ms.parse::<f64>().unwrap() >= 0.0, "{l}");
                let (cpu, rest) = rest.split_once(" ms, resident ").unwrap();
                assert!(cpu.parse::<f64>().unwrap() >= 0.0, "{l}");
                assert!(rest.contains(" MB, peak since the last stage ") && rest.ends_with(" MB"));
                name.to_string()
            })
            .collect()
    };
    let quiet = dir.join("quiet.pftrace");
    assert!(stages(None, "perfetto", &quiet).is_empty());
    assert!(stages(Some(""), "perfetto", &dir.join("empty.pftrace")).is_empty());
    let loud = dir.join("loud.pftrace");
    assert_eq!(
        stages(Some("1"), "perfetto", &loud),
        ["begin", "timeline", "tokens", "layout", "written", "synced"]
    );
    assert_eq!(
        std::fs::read(&quiet).unwrap(),
        std::fs::read(&loud).unwrap()
    );
    let mut parquet = stages(Some("1"), "parquet", &dir.join("pq"));
    assert_eq!(parquet[..3], ["begin", "timeline", "tokens"]);
    // The walk ends before the table it feeds does.
    let at = |s: &str| parquet.iter().position(|p| p == s);
    assert!(at("walk") < at("edges"), "{parquet:?}");
    parquet.drain(..3);
    parquet.sort();
    let mut tables: Vec<&str> = causeway_scanner::export::parquet::TABLES.to_vec();
    tables.extend(causeway_scanner::export::parquet::GRAPH_TABLES);
    // ... and the end of the causal graph's walk, which feeds the `edges` table.
    tables.push("walk");
    tables.sort();
    assert_eq!(parquet, tables);
}
