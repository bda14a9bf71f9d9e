//! Level 3: device intervals tied to the calls that issued them (by sequence number, never by time),
//! device time per kernel and per copy kind, launch→start latency, and the clock/causality check.
//! Exact numbers from synthetic rings written with the real ring writer.

#[path = "../../scanner/tests/common/mod.rs"]
mod common;

use causeway_ring::layout::{counter, Backend, Class, Kind, Layer, Policy};
use causeway_scanner::analysis::report::{
    DeviceCopyStats, DeviceKernelStats, KernelStats, Report, Unassociated,
};
use causeway_scanner::facts::device::{backend_name, copy_kind_name};
use causeway_scanner::util::rank::percentiles;
use common::*;
use std::path::Path;

const LAUNCH: u16 = 1;
const CU_LAUNCH: u16 = 2;
const MEMCPY: u16 = 3;
const MEMSET: u16 = 4;
// 5 is NVTX_API.
const GRAPH_LAUNCH: u16 = 6;
const SYNC: u16 = 7;
const INSTANTIATE: u16 = 8;

/// Text ids of kernel names as the backend interns them.
const GEMM: u64 = 100;
const RELU: u64 = 101;
const FOREIGN: u64 = 102;
/// Function handles of the same kernels as launch calls name them.
const H_GEMM: u64 = 0xa00;
const H_RELU: u64 = 0xb00;

const S: u64 = 0x5000;
const EXEC: u64 = 0xe0e0;

fn named(b: RingBuilder) -> RingBuilder {
    b.api(LAUNCH, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .api(CU_LAUNCH, "cuLaunchKernel", Layer::Driver, Class::Launch)
        .api(MEMCPY, "cudaMemcpyAsync", Layer::Runtime, Class::Copy)
        .api(MEMSET, "cudaMemsetAsync", Layer::Runtime, Class::Memset)
        .api(NVTX_API, "nvtxMarkA", Layer::Nvtx, Class::Other)
        .api(
            GRAPH_LAUNCH,
            "cudaGraphLaunch",
            Layer::Runtime,
            Class::GraphLaunch,
        )
        .api(SYNC, "cudaStreamSynchronize", Layer::Runtime, Class::Sync)
        .api(
            INSTANTIATE,
            "cudaGraphInstantiate",
            Layer::Runtime,
            Class::Graph,
        )
        .kernel(H_GEMM, "gemm")
        .kernel(H_RELU, "relu")
        .text(GEMM, "gemm")
        .text(RELU, "relu")
        .text(FOREIGN, "cublasForeignKernel");
    b.w.set_backend(Backend::Cupti);
    b
}

fn ring() -> RingBuilder {
    named(RingBuilder::level3(64, Policy::Drop))
}

fn report_of(b: &RingBuilder) -> Report {
    b.report("device")
}

fn launch(b: &RingBuilder, t0: u64, handle: u64) -> u64 {
    b.call_args(TID, LAUNCH, 0, t0, t0 + 100, 0, [S, handle, 1])
        .unwrap()
}

fn dev_kernel<'a>(r: &'a Report, name: &str) -> &'a DeviceKernelStats {
    r.device
        .kernels
        .iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("no device kernel {name} in {:?}", r.device.kernels))
}

fn kernel<'a>(r: &'a Report, name: &str) -> &'a KernelStats {
    r.kernels
        .iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("no kernel {name} in {:?}", r.kernels))
}

fn run_report(args: &[&str], capture: &Path) -> (String, String) {
    let o = causeway()
        .arg("report")
        .args(args)
        .arg(capture)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

#[test]
fn association_is_by_identity_and_each_reason_is_counted() {
    let b = ring();
    let l = launch(&b, 1000, H_GEMM);
    let c = b
        .call_args(TID, MEMCPY, 0, 2000, 2100, 0, [S, 4096, 1])
        .unwrap();
    let m = b
        .call_args(TID, MEMSET, 0, 3000, 3100, 0, [S, 256, 0])
        .unwrap();
    let s = b.call_args(TID, SYNC, 0, 4000, 9000, 0, [S, 0, 0]).unwrap();
    b.instant(Kind::Mark, TID, 4500, GEMM, 0, 0);
    let mark = s + 1;
    let mut b = b;
    let torn = b.torn();
    // Associated: a kernel, a copy and a memset with their own calls.
    let own = b.kernel_interval(l, GEMM, 5000, 6000).unwrap();
    b.copy_interval(c, 1, 4096, 5100, 5200).unwrap();
    b.memset_interval(m, 256, 5300, 5400).unwrap();
    // No call: work the backend could tie to nothing (a library's own launch). Its kernel still
    // counts as observed, in a row of its own.
    b.device(Dev::kernel(0, FOREIGN, 6000, 6100).no_call())
        .unwrap();
    // Not in the capture: a sequence number never handed out, and a torn slot.
    b.kernel_interval(10_000, GEMM, 6200, 6300).unwrap();
    b.kernel_interval(torn, GEMM, 6400, 6500).unwrap();
    // Wrong class: a sync call, an NVTX mark, and another device interval.
    b.kernel_interval(s, GEMM, 6600, 6700).unwrap();
    b.kernel_interval(mark, GEMM, 6800, 6900).unwrap();
    b.kernel_interval(own, GEMM, 7000, 7100).unwrap();
    let r = report_of(&b);
    let p = &r.processes[0];
    assert_eq!(p.backend, "cupti");
    assert_eq!(p.level, 3);
    assert_eq!(p.device_intervals, 9);
    assert_eq!(p.associated, 3);
    let expect = Unassociated {
        total: 6,
        no_call: 1,
        call_not_in_capture: 2,
        wrong_class: 3,
    };
    assert_eq!(p.unassociated, expect);
    assert_eq!(p.unconverted, 0);
    // The backend's thread is not a thread of the program.
    assert_eq!(p.threads, 1);
    assert_eq!(r.device.intervals, 9);
    assert_eq!(r.device.associated, 3);
    assert_eq!(r.device.unassociated, expect);
    // Only the associated interval has a latency: 5000 − 1000.
    let g = dev_kernel(&r, "gemm");
    assert_eq!((g.count, g.latency_count), (6, 1));
    assert_eq!(
        (g.latency_p50_ns, g.latency_p99_ns),
        (Some(4000), Some(4000))
    );
    assert_eq!(r.device.clock.checked, 3);
    // The memset: 5300 − 3000.
    assert_eq!(r.device.clock.min_launch_to_start_ns, Some(2300));
    // Requested vs observed: one launch of gemm, six gemm intervals; the foreign kernel ran once
    // and was never launched through a traced call.
    assert_eq!(
        (kernel(&r, "gemm").launches, kernel(&r, "gemm").device_count),
        (1, Some(6))
    );
    let f = kernel(&r, "cublasForeignKernel");
    assert_eq!((f.launches, f.device_count), (0, Some(1)));
    // Device intervals are not calls.
    assert_eq!(r.totals.calls, 4);
    assert!(r.warnings.iter().any(|w| w.contains(
        "6 of 9 device intervals are not tied to a call in the capture (1 with no call, 2 whose call is not in the capture, 3 naming a call of another class)"
    )));
}

#[test]
fn overwritten_calls_leave_their_intervals_unassociated() {
    let b = named(RingBuilder::level3(8, Policy::Overwrite));
    let first = launch(&b, 1000, H_GEMM);
    assert_eq!(first, 0);
    for i in 1..=10u64 {
        launch(&b, 1000 + 1000 * i, H_GEMM);
    }
    // head 11 + 2 intervals = 13: the window is [5, 13), so call 0 is gone and call 9 is live.
    b.kernel_interval(first, GEMM, 20_000, 20_100).unwrap();
    b.kernel_interval(9, GEMM, 20_200, 20_300).unwrap();
    let r = report_of(&b);
    let p = &r.processes[0];
    assert_eq!(p.overwritten, 5);
    assert_eq!((p.device_intervals, p.associated), (2, 1));
    assert_eq!(p.unassociated.call_not_in_capture, 1);
    assert_eq!(p.unassociated.total, 1);
    // 20_200 − call 9's begin (10_000).
    assert_eq!(r.device.clock.min_launch_to_start_ns, Some(10_200));
}

#[test]
fn a_graph_launch_owns_all_its_kernel_intervals() {
    let b = ring();
    let inst = b
        .call_args(TID, INSTANTIATE, 0, 100, 900, 0, [0, EXEC, 0])
        .unwrap();
    let _ = inst;
    for (i, f) in [H_GEMM, H_RELU, H_GEMM].into_iter().enumerate() {
        b.graph_node(TID, 900, EXEC, f, i as u32, 3);
    }
    let g = b
        .call_args(TID, GRAPH_LAUNCH, 0, 10_000, 10_200, 0, [S, EXEC, 0])
        .unwrap();
    // Three kernels, all carrying the graph launch's sequence number.
    b.kernel_interval(g, GEMM, 14_000, 15_000).unwrap();
    b.kernel_interval(g, RELU, 16_000, 16_500).unwrap();
    b.kernel_interval(g, GEMM, 18_000, 19_000).unwrap();
    let r = report_of(&b);
    assert_eq!(r.totals.graph_launches, 1);
    assert_eq!((r.device.intervals, r.device.associated), (3, 3));
    assert_eq!(r.device.unassociated.total, 0);
    // Latencies from the graph launch call's begin: gemm 4000 and 8000, relu 6000.
    assert_eq!(
        dev_kernel(&r, "gemm"),
        &DeviceKernelStats {
            name: "gemm".into(),
            symbol: "gemm".into(),
            count: 2,
            total_ns: 2000,
            p50_ns: 1000,
            p99_ns: 1000,
            max_ns: 1000,
            latency_count: 2,
            latency_p50_ns: Some(4000),
            latency_p99_ns: Some(8000),
        }
    );
    let relu = dev_kernel(&r, "relu");
    assert_eq!((relu.count, relu.total_ns), (1, 500));
    assert_eq!(
        (relu.latency_p50_ns, relu.latency_p99_ns),
        (Some(6000), Some(6000))
    );
    // Executions requested (graph nodes) match executions observed.
    let k = kernel(&r, "gemm");
    assert_eq!((k.launches, k.via_graph, k.device_count), (2, 2, Some(2)));
    let k = kernel(&r, "relu");
    assert_eq!((k.launches, k.via_graph, k.device_count), (1, 1, Some(1)));
    let c = &r.device.clock;
    assert_eq!((c.checked, c.before_call), (3, 0));
    assert_eq!(c.min_launch_to_start_ns, Some(4000));
}

/// Ten gemm launches on a TSC ring at 2 ticks per ns: kernel i runs 100·(i+1) ns and starts
/// 1000·(i+1) ns after its call began, so device time and latency go through the tick conversion.
#[test]
fn per_kernel_device_time_and_latency_on_known_numbers() {
    let mut b = named(RingBuilder::level3_tsc(64, 2_000_000_000));
    let t = |ns: u64| 1_000_000 + 2 * ns; // ns since the anchor → ticks
    let mut first = 0;
    for i in 0..10u64 {
        let begin = t(100_000 * i);
        let call = b
            .call_args(TID, LAUNCH, 0, begin, begin + 100, 0, [S, H_GEMM, 1])
            .unwrap();
        if i == 0 {
            first = call;
        }
        let start = begin + 2 * 1000 * (i + 1);
        b.kernel_interval(call, GEMM, start, start + 2 * 100 * (i + 1))
            .unwrap();
    }
    // One more gemm interval in the backend's own clock, tied to the first call: its duration (3000,
    // not converted: it is not in ticks) counts; its start does not.
    let foreign = 1_700_000_000_000_000_000;
    b.device(Dev::kernel(first, GEMM, foreign, foreign + 3000).unconverted())
        .unwrap();
    b.set_anchors(
        [1_000_000, 5_000_000, 0],
        [1_000_000 + 2_000_000_000, 5_000_000 + 1_000_000_000, 0],
    );
    let r = report_of(&b);
    // Durations 100, 200, …, 1000 and 3000: n = 11, p50 rank 6 = 600, p99 rank 11 = 3000.
    // Latencies 1000, …, 10000: n = 10, p50 rank 5 = 5000, p99 rank 10 = 10000.
    assert_eq!(
        dev_kernel(&r, "gemm"),
        &DeviceKernelStats {
            name: "gemm".into(),
            symbol: "gemm".into(),
            count: 11,
            total_ns: 5500 + 3000,
            p50_ns: 600,
            p99_ns: 3000,
            max_ns: 3000,
            latency_count: 10,
            latency_p50_ns: Some(5000),
            latency_p99_ns: Some(10_000),
        }
    );
    let p = &r.processes[0];
    assert_eq!(
        (p.device_intervals, p.associated, p.unconverted),
        (11, 11, 1)
    );
    let c = &r.device.clock;
    assert_eq!(c.conversion, "mixed");
    assert_eq!((c.converted, c.unconverted), (10, 1));
    assert_eq!((c.checked, c.before_call), (10, 0));
    assert_eq!(c.min_launch_to_start_ns, Some(1000));
    assert_eq!(r.device.unconverted, 1);
    assert!(r.warnings.iter().any(|w| w
        .contains("1 of 11 device intervals are not on the host clock (no timestamp callback)")));
    assert_eq!(kernel(&r, "gemm").device_count, Some(11));
}

#[test]
fn copies_and_memsets_by_kind() {
    let b = ring();
    let c = b
        .call_args(TID, MEMCPY, 0, 1000, 1100, 0, [S, 0, 1])
        .unwrap();
    let m = b
        .call_args(TID, MEMSET, 0, 2000, 2100, 0, [S, 0, 0])
        .unwrap();
    let at = |d: u64| (10_000, 10_000 + d);
    for (kind, bytes, dur) in [
        (1u16, 1000u64, 100u64),
        (1, 3000, 300),
        (2, 500, 50),
        (8, 2048, 20),
        (10, 1, 10),
        (0, 7, 5),
        (42, 9, 5),
    ] {
        let (t0, t1) = at(dur);
        b.copy_interval(c, kind, bytes, t0, t1).unwrap();
    }
    for (bytes, dur) in [(64u64, 30u64), (128, 60)] {
        let (t0, t1) = at(dur);
        b.memset_interval(m, bytes, t0, t1).unwrap();
    }
    // A device kind this scanner does not know: counted, not tabulated.
    let unknown = b.w.begin(&causeway_ring::Fields {
        t_begin: 10,
        tid: DEVICE_TID,
        api: 9,
        kind: Kind::DeviceInterval as u8,
        flags: causeway_ring::layout::entry_flags::HOST_CLOCK,
        a0: c,
        ..Default::default()
    });
    b.w.end(unknown.unwrap(), 20, 0);
    let r = report_of(&b);
    let row = |kind: &str, count, bytes, total_ns, p50_ns, p99_ns, max_ns| DeviceCopyStats {
        kind: kind.into(),
        count,
        bytes,
        total_ns,
        p50_ns,
        p99_ns,
        max_ns,
    };
    assert_eq!(
        r.device.copies,
        vec![
            row("HtoD", 2, 4000, 400, 100, 300, 300),
            row("memset", 2, 192, 90, 30, 60, 60),
            row("DtoH", 1, 500, 50, 50, 50, 50),
            row("DtoD", 1, 2048, 20, 20, 20, 20),
            row("PtoP", 1, 1, 10, 10, 10, 10),
            row("kind 42", 1, 9, 5, 5, 5, 5),
            row("unknown", 1, 7, 5, 5, 5, 5),
        ]
    );
    assert_eq!(r.device.unknown_kind, 1);
    assert_eq!(r.device.intervals, 10);
    assert_eq!(r.device.associated, 10);
    assert!(r.device.kernels.is_empty());
    let names: Vec<String> = (0..=11).map(copy_kind_name).collect();
    assert_eq!(
        names,
        [
            "unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH",
            "PtoP", "kind 11"
        ]
    );
}

#[test]
fn unconverted_intervals_give_durations_only() {
    let b = ring();
    let l = launch(&b, 1000, H_GEMM);
    let c = b
        .call_args(TID, MEMCPY, 0, 2000, 2100, 0, [S, 64, 1])
        .unwrap();
    let far = 9_000_000_000_000;
    b.device(Dev::kernel(l, GEMM, far, far + 700).unconverted())
        .unwrap();
    b.device(Dev::kernel(l, GEMM, far + 1000, far + 1300).unconverted())
        .unwrap();
    b.device(Dev {
        kind: causeway_ring::DeviceKind::Memcpy,
        copy_kind: 2,
        a1: 64,
        ..Dev::kernel(c, 0, far + 2000, far + 2040).unconverted()
    })
    .unwrap();
    let r = report_of(&b);
    let p = &r.processes[0];
    assert_eq!((p.device_intervals, p.associated, p.unconverted), (3, 3, 3));
    let c = &r.device.clock;
    assert_eq!(c.conversion, "unconverted");
    assert_eq!((c.converted, c.unconverted, c.checked), (0, 3, 0));
    assert_eq!(c.min_launch_to_start_ns, None);
    let g = dev_kernel(&r, "gemm");
    assert_eq!(
        (g.count, g.total_ns, g.p50_ns, g.max_ns),
        (2, 1000, 300, 700)
    );
    assert_eq!(
        (g.latency_count, g.latency_p50_ns, g.latency_p99_ns),
        (0, None, None)
    );
    assert_eq!(r.device.copies[0].kind, "DtoH");
    assert_eq!(r.device.copies[0].total_ns, 40);
    // The human report says what it could not do.
    let dir = TempDir::new("unconv");
    b.write_to(&dir.join("x.cwring"));
    let (out, _) = run_report(&[], dir.path());
    assert!(out.contains(
        "clock: unconverted: the 3 device intervals are in the backend's own clock (no timestamp callback); durations only, no start times or latencies"
    ), "{out}");
    assert!(out.contains(
        "causality: not checked (no device interval both tied to its call and on the host clock)"
    ));
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("DEVICE KERNELS"))
        .unwrap();
    assert!(
        lines[at].ends_with("; not measurable: unconverted clock)"),
        "{}",
        lines[at]
    );
    let row: Vec<&str> = lines[at + 2]
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    // count, total, p50, p99, max, and no launch→start latency.
    assert_eq!(
        row,
        ["2", "1.00 us", "300 ns", "700 ns", "700 ns", "-", "-", "gemm"]
    );
}

#[test]
fn causality_counts_intervals_that_start_before_their_call() {
    let b = ring();
    for k in 0..5u64 {
        let t0 = 100_000 + 10_000 * k;
        let call = launch(&b, t0, H_GEMM);
        // The third starts 2 us before its call began: impossible unless the clocks disagree.
        let start = if k == 2 { t0 - 2000 } else { t0 + 3000 };
        b.kernel_interval(call, GEMM, start, start + 500).unwrap();
    }
    let r = report_of(&b);
    let c = &r.device.clock;
    assert_eq!(c.conversion, "cupti-timestamp-callback");
    assert_eq!((c.checked, c.before_call), (5, 1));
    assert_eq!(c.min_launch_to_start_ns, Some(-2000));
    // Latencies −2000, 3000 ×4: p50 rank 3 = 3000.
    let g = dev_kernel(&r, "gemm");
    assert_eq!(g.latency_p50_ns, Some(3000));
    assert!(r.warnings.iter().any(|w| w
        == "1 of 5 device intervals start before the call that issued them (min launch→start -2000 ns): the device clock conversion is off by at least 2000 ns"));
    let dir = TempDir::new("causal");
    b.write_to(&dir.join("x.cwring"));
    let (out, err) = run_report(&[], dir.path());
    assert!(out.lines().any(|l| l
        == "causality: 1 of 5 intervals start before their call; min launch→start -2.00 us: the clock conversion is off by at least 2.00 us"), "{out}");
    assert!(err.contains("the device clock conversion is off by at least 2000 ns"));
}

/// Two processes with device intervals, through the CLI: every new field is in the JSON.
#[test]
fn json_has_the_device_fields() {
    let dir = TempDir::new("devjson");
    for (n, pid) in [(0u64, 1000u32), (1, 1001)] {
        let b = named(RingBuilder::custom(
            64,
            Policy::Drop,
            pid,
            1,
            3,
            causeway_ring::ClockKind::Monotonic,
            1_000_000_000,
        ));
        let l = launch(&b, 1000, H_GEMM);
        b.kernel_interval(l, GEMM, 4000 + n * 1000, 5000 + n * 1000)
            .unwrap();
        let c = b
            .call_args(TID, MEMCPY, 0, 6000, 6100, 0, [S, 4096, 1])
            .unwrap();
        b.copy_interval(c, 1, 4096, 7000, 7250).unwrap();
        b.device(Dev::kernel(0, GEMM, 8000, 8100).no_call())
            .unwrap();
        b.w.bump(counter::DEVICE_DROPPED);
        b.write_to(&dir.join(&format!("p{pid}.cwring")));
    }
    let (out, _) = run_report(&["--json"], dir.path());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let p = &v["processes"][0];
    assert_eq!(p["backend"], "cupti");
    assert_eq!(p["device_intervals"], 3);
    assert_eq!(p["associated"], 2);
    assert_eq!(
        p["unassociated"],
        serde_json::json!({"total": 1, "no_call": 1, "call_not_in_capture": 0, "wrong_class": 0})
    );
    assert_eq!(p["device_dropped"], 1);
    assert_eq!(p["unconverted"], 0);
    assert_eq!(p["counters"]["device_dropped"], 1);
    let d = &v["device"];
    assert_eq!(d["intervals"], 6);
    assert_eq!(d["associated"], 4);
    assert_eq!(d["unassociated"]["total"], 2);
    assert_eq!(d["unassociated"]["no_call"], 2);
    assert_eq!(d["unconverted"], 0);
    assert_eq!(d["dropped"], 2);
    assert_eq!(d["unknown_kind"], 0);
    assert_eq!(d["untimed"], 0);
    assert_eq!(
        d["clock"],
        serde_json::json!({"conversion": "cupti-timestamp-callback", "converted": 6,
            "anchored": 0, "anchors": 0, "bound_ns_p50": null, "bound_ns_max": null,
            "anchor_half_width_ns_min": null, "anchor_half_width_ns_max": null,
            "drift_ppb_median": null, "drift_assumed": 0,
            "unconverted": 0, "checked": 4, "before_call": 0, "min_launch_to_start_ns": 1000,
            "end_checked": 0, "end_before_call_end": 0, "min_call_end_to_device_end_ns": null})
    );
    // gemm: durations 1000, 1000, 100, 100; latencies 3000 and 4000 (two processes).
    assert_eq!(
        d["kernels"][0],
        serde_json::json!({"name": "gemm", "symbol": "gemm", "count": 4, "total_ns": 2200, "p50_ns": 100,
            "p99_ns": 1000, "max_ns": 1000, "latency_count": 2, "latency_p50_ns": 3000,
            "latency_p99_ns": 4000})
    );
    assert_eq!(
        d["copies"][0],
        serde_json::json!({"kind": "HtoD", "count": 2, "bytes": 8192, "total_ns": 500,
            "p50_ns": 250, "p99_ns": 250, "max_ns": 250})
    );
    assert_eq!(v["kernels"][0]["name"], "gemm");
    assert_eq!(v["kernels"][0]["launches"], 2);
    assert_eq!(v["kernels"][0]["device_count"], 4);
}

/// Without device intervals the report is what it was at level 2: no `device_count`, an empty
/// `device` section, and no DEVICE tables.
#[test]
fn level_2_reports_have_no_device_figures() {
    let dir = TempDir::new("nodev");
    scenario().write_to(&dir.join("x.cwring"));
    let (out, _) = run_report(&["--json"], dir.path());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["kernels"][0].get("device_count").is_none());
    assert_eq!(v["processes"][0]["backend"], "none");
    assert_eq!(v["processes"][0]["device_intervals"], 0);
    assert_eq!(v["device"]["intervals"], 0);
    assert_eq!(v["device"]["clock"]["conversion"], "none");
    assert_eq!(
        v["device"]["clock"]["min_launch_to_start_ns"],
        serde_json::Value::Null
    );
    assert_eq!(v["device"]["kernels"], serde_json::json!([]));
    let (out, _) = run_report(&[], dir.path());
    assert!(!out.contains("DEVICE"), "{out}");
    assert!(!out.contains("backend"), "{out}");
}

#[test]
fn human_report_has_the_device_section() {
    let dir = TempDir::new("devhuman");
    let b = ring();
    for k in 0..2u64 {
        let t0 = 10_000 * (k + 1);
        let l = launch(&b, t0, H_GEMM);
        b.kernel_interval(l, GEMM, t0 + 3000 + 1000 * k, t0 + 4000 + 1000 * k)
            .unwrap();
    }
    let c = b
        .call_args(TID, MEMCPY, 0, 50_000, 50_100, 0, [S, 4096, 1])
        .unwrap();
    b.copy_interval(c, 1, 4096, 60_000, 60_250).unwrap();
    b.w.bump(counter::DEVICE_DROPPED);
    b.w.bump(counter::DEVICE_DROPPED);
    b.write_to(&dir.join("x.cwring"));
    let (out, _) = run_report(&[], dir.path());
    let lines: Vec<&str> = out.lines().collect();
    for want in [
        "DEVICE (level 3: when the work ran on the device)",
        "clock: all 3 device intervals put on the host clock by CUPTI's timestamp callback (cupti-timestamp-callback)",
        "causality: 0 of 3 intervals start before their call; min launch→start 3.00 us",
        "intervals: 3 (3 tied to their call; 0 unassociated: 0 no call, 0 call not in capture, 0 wrong class); 2 dropped by the backend",
        "DEVICE COPIES AND MEMSETS (by total device time)",
        "(launches = executions requested; device = executions observed on the device)",
    ] {
        assert!(lines.contains(&want), "missing {want:?}:\n{out}");
    }
    assert!(lines.iter().any(
        |l| l.starts_with("DEVICE KERNELS (by total device time; start = launch→start latency")
    ));
    let cells = |suffix: &str, skip_head: &str| -> Vec<String> {
        let at = lines.iter().position(|l| l.starts_with(skip_head)).unwrap();
        lines[at..]
            .iter()
            .find(|l| l.ends_with(suffix))
            .unwrap()
            .split("  ")
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect()
    };
    // Launch side: launches, direct, graph, captured, failed, open, device, kernel.
    assert_eq!(
        cells("gemm", "KERNELS"),
        ["2", "2", "0", "0", "0", "0", "2", "gemm"]
    );
    // Device side: count, total, p50, p99, max, start p50, start p99, kernel.
    assert_eq!(
        cells("gemm", "DEVICE KERNELS"),
        ["2", "2.00 us", "1.00 us", "1.00 us", "1.00 us", "3.00 us", "4.00 us", "gemm"]
    );
    let at = lines
        .iter()
        .position(|l| l.starts_with("DEVICE COPIES"))
        .unwrap();
    let htod: Vec<&str> = lines[at + 2].split_whitespace().collect();
    assert_eq!(
        htod,
        ["HtoD", "1", "4.00", "KiB", "250", "ns", "250", "ns", "250", "ns", "250", "ns"]
    );
    // The processes table gains the device columns.
    let head = lines
        .iter()
        .position(|l| l.trim_start().starts_with("pid "))
        .unwrap();
    assert!(lines[head].contains("backend  device  unassoc  dev-dropped  unconv"));
    let row: Vec<&str> = lines[head + 1].split_whitespace().collect();
    assert_eq!(&row[10..15], ["cupti", "3", "0", "2", "0"]);
}

#[test]
fn backend_names_and_signed_percentiles() {
    assert_eq!(backend_name(0), "none");
    assert_eq!(backend_name(1), "cupti");
    assert_eq!(backend_name(2), "events");
    assert_eq!(backend_name(7), "unknown(7)");
    assert_eq!(percentiles::<i64, 1>(&mut [], [50]), [None]);
    assert_eq!(
        percentiles(&mut [3i64, -5, 2, 1], [50, 99]),
        [Some(1), Some(3)]
    );
    assert_eq!(percentiles(&mut [-5i64], [99]), [Some(-5)]);
    let b = ring();
    b.w.set_backend(Backend::Events);
    let r = report_of(&b);
    assert_eq!(r.processes[0].backend, "events");
    assert_eq!(r.device.intervals, 0);
}

/// A time of 0 is the backend saying it could not time the work: the interval is an execution and is
/// tied to its call, but it has no device time and no latency (it must not look like a kernel that
/// started at the epoch, long before its call).
#[test]
fn untimed_intervals_count_without_times() {
    let b = ring();
    let l = launch(&b, 10_000, H_GEMM);
    b.kernel_interval(l, GEMM, 13_000, 14_000).unwrap();
    b.kernel_interval(l, GEMM, 0, 0).unwrap();
    b.kernel_interval(l, GEMM, 0, 15_000).unwrap();
    b.kernel_interval(l, GEMM, 16_000, 0).unwrap();
    let c = b
        .call_args(TID, MEMCPY, 0, 20_000, 20_100, 0, [S, 64, 1])
        .unwrap();
    b.copy_interval(c, 2, 64, 0, 0).unwrap();
    let r = report_of(&b);
    assert_eq!((r.device.intervals, r.device.associated), (5, 5));
    assert_eq!(r.device.untimed, 4);
    let g = dev_kernel(&r, "gemm");
    assert_eq!((g.count, g.total_ns, g.max_ns), (4, 1000, 1000));
    assert_eq!((g.latency_count, g.latency_p50_ns), (1, Some(3000)));
    let c = &r.device.clock;
    assert_eq!((c.checked, c.before_call), (1, 0));
    assert_eq!(c.min_launch_to_start_ns, Some(3000));
    assert_eq!(kernel(&r, "gemm").device_count, Some(4));
    let copy = &r.device.copies[0];
    assert_eq!(
        (copy.kind.as_str(), copy.count, copy.bytes, copy.total_ns),
        ("DtoH", 1, 64, 0)
    );
}

/// An events-backend kernel (device offsets from an anchor) is converted through the anchors on
/// every schedule: on one thread the device intervals ride along the decoder's walk, before the
/// anchors are read, and must be read apart when one needs them (`report()` compares the
/// schedules).
#[test]
fn anchored_intervals_are_converted_on_every_schedule() {
    let b = ring();
    b.anchor(1, 0, 900, 1100, causeway_ring::layout::NO_ELAPSED)
        .unwrap();
    let l = launch(&b, 1000, H_GEMM);
    // 1500..2500 device ns after the anchor, whose midpoint is the launch's begin.
    b.anchored_kernel(l, 1, 1500, 2500).unwrap();
    b.call_args(TID, SYNC, 0, 4000, 9000, 0, [S, 0, 0]).unwrap();
    let r = report_of(&b);
    assert_eq!((r.device.clock.anchored, r.device.clock.anchors), (1, 1));
    let k = dev_kernel(&r, "gemm");
    assert_eq!((k.count, k.total_ns), (1, 1000));
    assert_eq!(k.latency_p50_ns, Some(1500));
}

/// An interval written before the call it names (only a corrupt capture has one) is associated
/// with it alike on every schedule: on one thread the device pass is then made apart from the
/// decoder's walk, which has not checked that call yet when it reads the interval.
#[test]
fn an_interval_naming_a_later_call_reports_alike_on_every_schedule() {
    let b = ring();
    let l0 = launch(&b, 1000, H_GEMM);
    let own = b.kernel_interval(l0 + 2, GEMM, 5000, 6000).unwrap();
    let l1 = launch(&b, 1200, H_GEMM);
    assert_eq!(l1, own + 1);
    let r = report_of(&b);
    assert_eq!(r.device.associated, 1);
    assert_eq!(dev_kernel(&r, "gemm").latency_p50_ns, Some(3800));
}
