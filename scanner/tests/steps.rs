//! The steps and gaps views on synthetic timelines built in code, with answers worked out by hand.

use causeway_ring::layout::DeviceKind;
use causeway_scanner::analysis::gaps::{self, permille};
use causeway_scanner::analysis::steps::{self, distribution, modes, process_steps, StepOptions};
use causeway_scanner::analysis::views::{ViewOptions, Views};
use causeway_scanner::facts::model::{
    Call, DeviceSpan, Opt64, ProcessTimeline, Range, StreamId, Timeline,
};
use causeway_scanner::read::intern;
use causeway_scanner::util::intervals::{intersection, measure, union};

const T0: u64 = 1_000_000; // keep times away from 0

fn timeline() -> ProcessTimeline {
    ProcessTimeline {
        exe: "/usr/bin/train".into(),
        threads: vec![1, 2],
        backend: "cupti".into(),
        ..ProcessTimeline::empty(42)
    }
}

fn call(tid: u32, api: &str, class: &'static str, b: u64, e: u64, depth: u16) -> Call {
    Call {
        seq: b,
        tid,
        api: intern(api),
        layer: Some(causeway_ring::Layer::Runtime),
        class: Some(causeway_ring::Class::from_name(class).expect("a class name")),
        begin_ns: T0 + b,
        end_ns: Some(T0 + e).into(),
        depth,
        result: 0,
        kernel: None,
        a0: causeway_scanner::facts::handle::Handle::ZERO,
        a1: causeway_scanner::facts::handle::Handle::ZERO,
        flags: 0,
    }
}

fn range(tid: u32, name: &str, b: u64, e: u64, level: u32) -> Range {
    Range {
        tid,
        name: intern(name),
        domain: None,
        begin_ns: T0 + b,
        end_ns: Some(T0 + e),
        level,
        attrs: Default::default(),
    }
}

fn span(kind: &'static str, stream: u64, b: u64, e: u64) -> DeviceSpan {
    DeviceSpan {
        graph_node: causeway_scanner::facts::model::GraphNode::NONE,
        kind: match kind {
            "kernel" => DeviceKind::Kernel,
            "memcpy" => DeviceKind::Memcpy,
            "memset" => DeviceKind::Memset,
            _ => DeviceKind::Graph,
        },
        name: intern(&format!("{kind}@{b}")),
        begin_ns: T0 + b,
        end_ns: T0 + e,
        bound_ns: 0,
        stream: StreamId::Handle(stream).into(),
        call: None.into(),
        bytes: 0,
        queued_ns: None.into(),
        submitted_ns: None.into(),
    }
}

/// Ranges and spans in the order the model keeps them.
fn sorted(mut p: ProcessTimeline) -> ProcessTimeline {
    p.ranges.sort_by_key(|r| (r.begin_ns, r.tid, r.level));
    p.device.sort_by_key(|s| (s.begin_ns, s.end_ns));
    p
}

fn default_steps(p: &ProcessTimeline) -> steps::ProcessSteps {
    process_steps(p, &StepOptions::default())
}

#[test]
fn intervals_union_measure_and_intersect() {
    let u = union(vec![(5, 7), (0, 3), (2, 4), (7, 9), (10, 10)]);
    assert_eq!(u, vec![(0, 4), (5, 9)]);
    assert_eq!(measure(&u), 8);
    assert_eq!(intersection(&u, &union(vec![(3, 6), (8, 20)])), 1 + 1 + 1);
    assert_eq!(intersection(&u, &[]), 0);
}

#[test]
fn one_step_with_overlapping_copy_and_compute() {
    // The brief's example: a 1000 ns step, compute [0,600), copy [300,800).
    let mut p = timeline();
    p.ranges.push(range(1, "step", 0, 1000, 0));
    p.ranges.push(range(1, "step", 2000, 3000, 0));
    p.device.push(span("kernel", 7, 0, 600));
    p.device.push(span("memcpy", 8, 300, 800));
    let s = default_steps(&sorted(p));
    let d = s.steps[0].device.as_ref().unwrap();
    assert_eq!(s.steps[0].wall_ns, 1000);
    assert_eq!(d.busy_ns, 800);
    assert_eq!(d.idle_ns, 200);
    assert_eq!(d.copy_ns, 500);
    assert_eq!(d.compute_ns, 600);
    assert_eq!(d.overlap_ns, 300);
    assert_eq!(d.copy_compute_overlap, Some(0.6));
    assert_eq!(d.spans, 2);
    // The second step has no device work: all idle, overlap undefined.
    let d1 = s.steps[1].device.as_ref().unwrap();
    assert_eq!((d1.busy_ns, d1.idle_ns, d1.spans), (0, 1000, 0));
    assert_eq!(d1.copy_compute_overlap, None);
    let dev = s.summary.as_ref().unwrap().device.as_ref().unwrap();
    // The ratio is summarized over the one step where it is defined.
    let r = dev.copy_compute_overlap.unwrap();
    assert_eq!((r.steps, r.min, r.max), (1, 0.6, 0.6));
}

#[test]
fn device_spans_are_clipped_merged_across_streams_and_classified() {
    let mut p = timeline();
    p.ranges.push(range(1, "step", 1000, 2000, 0));
    p.ranges.push(range(1, "step", 3000, 4000, 0));
    // Straddles the step's begin: only [1000,1200) counts.
    p.device.push(span("kernel", 1, 500, 1200));
    // Two streams, overlapping kernels: compute is their union.
    p.device.push(span("kernel", 1, 1300, 1500));
    p.device.push(span("kernel", 2, 1400, 1600));
    // A memset and a graph span: busy only.
    p.device.push(span("memset", 1, 1700, 1750));
    p.device.push(span("graph", 2, 1800, 1900));
    // Straddles the step's end and the next step's begin.
    p.device.push(span("memcpy", 3, 1950, 3100));
    // Entirely between the steps: in neither.
    let mut far = span("kernel", 1, 2200, 2300);
    far.bound_ns = 999;
    p.device.push(far);
    let mut b = span("kernel", 1, 3500, 3600);
    b.bound_ns = 40;
    p.device.push(b);
    let s = default_steps(&sorted(p));
    let d = s.steps[0].device.as_ref().unwrap();
    assert_eq!(d.spans, 6);
    assert_eq!(d.compute_ns, 200 + 300);
    assert_eq!(d.copy_ns, 50);
    assert_eq!(d.busy_ns, 200 + 300 + 50 + 100 + 50);
    assert_eq!(d.idle_ns, 1000 - 700);
    assert_eq!(d.overlap_ns, 0);
    assert_eq!(d.copy_compute_overlap, Some(0.0));
    assert_eq!(d.bound_ns, 0);
    let d1 = s.steps[1].device.as_ref().unwrap();
    assert_eq!((d1.copy_ns, d1.compute_ns, d1.busy_ns), (100, 100, 200));
    assert_eq!(d1.bound_ns, 40);
    // The bound of the span outside every step does not count.
    assert_eq!(
        s.summary
            .as_ref()
            .unwrap()
            .device
            .as_ref()
            .unwrap()
            .bound_ns,
        40
    );
}

#[test]
fn host_time_in_launches_and_syncs_on_the_steps_thread() {
    let mut p = timeline();
    p.ranges.push(range(1, "step", 0, 1000, 0));
    p.ranges.push(range(1, "step", 5000, 5100, 0));
    p.calls = vec![
        // Straddles the step's begin: 30 ns inside.
        call(1, "cudaLaunchKernel", "launch", 0, 0, 0),
        call(1, "cudaMemcpyAsync", "copy", 200, 260, 0),
        // The driver call inside it (depth 1) adds nothing.
        call(1, "cuMemcpyHtoDAsync_v2", "copy", 210, 250, 1),
        call(1, "cudaGraphLaunch", "graph_launch", 300, 310, 0),
        call(1, "cudaMemsetAsync", "memset", 320, 330, 0),
        // Another thread's launch is not this step's.
        call(2, "cudaLaunchKernel", "launch", 400, 600, 0),
        // Not a launch or sync class.
        call(1, "cudaMalloc", "alloc", 600, 650, 0),
        call(1, "cudaStreamSynchronize", "sync", 700, 950, 0),
        // Straddles the step's end: 40 ns inside.
        call(1, "cudaEventSynchronize", "event_sync", 960, 1100, 0),
    ];
    // The first call straddles the begin: [-20, 30) relative to the step.
    p.calls[0].begin_ns = T0 - 20;
    p.calls[0].end_ns = Some(T0 + 30).into();
    let s = default_steps(&sorted(p));
    let st = &s.steps[0];
    assert_eq!(st.launch_ns, 30 + 60 + 10 + 10);
    assert_eq!(st.launch_calls, 4);
    assert_eq!(st.sync_ns, 250 + 40);
    assert_eq!(st.sync_calls, 2);
    assert_eq!(st.other_ns, 1000 - 110 - 290);
    assert_eq!(s.steps[1].launch_ns, 0);
    // No device spans at all: no device figures, and a note says why.
    assert!(st.device.is_none());
    assert!(!s.device_timed);
    assert!(
        s.notes.iter().any(|n| n.contains("level-3")),
        "{:?}",
        s.notes
    );
}

#[test]
fn an_open_call_counts_until_the_steps_end() {
    let mut p = timeline();
    p.ranges.push(range(1, "step", 0, 1000, 0));
    p.ranges.push(range(1, "step", 2000, 3000, 0));
    let mut hung = call(1, "cudaDeviceSynchronize", "sync", 900, 0, 0);
    hung.end_ns = Opt64::NONE;
    p.calls.push(hung);
    let s = default_steps(&sorted(p));
    assert_eq!(s.steps[0].sync_ns, 100);
    assert_eq!(s.steps[1].sync_ns, 1000);
}

#[test]
fn regions_are_the_sub_ranges_of_the_steps_thread_by_depth() {
    let mut p = timeline();
    p.ranges = vec![
        range(1, "step", 0, 1000, 0),
        range(1, "fwd", 100, 400, 1),
        range(1, "kernel", 150, 200, 2),
        range(1, "bwd", 400, 900, 1),
        range(1, "fwd", 920, 980, 1),
        // Another thread's range inside the window is not a region.
        range(2, "loader", 100, 900, 0),
        range(1, "step", 2000, 2500, 0),
        range(1, "bwd", 2100, 2200, 1),
    ];
    let s = default_steps(&sorted(p));
    let r = &s.steps[0].regions;
    let get = |n: &str| r.iter().find(|x| x.name == n).unwrap();
    assert_eq!(r.len(), 3, "{r:?}");
    assert_eq!(
        (get("fwd").depth, get("fwd").count, get("fwd").ns),
        (1, 2, 360)
    );
    assert_eq!((get("bwd").depth, get("bwd").ns), (1, 500));
    assert_eq!((get("kernel").depth, get("kernel").ns), (2, 50));
    // Depth first, then time: bwd, fwd, kernel.
    let order: Vec<&str> = r.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(order, ["bwd", "fwd", "kernel"]);
    assert_eq!(s.steps[0].outside_regions_ns, 1000 - 300 - 500 - 60);
    assert_eq!(s.steps[1].outside_regions_ns, 400);
    // Across steps: per-step time with 0 where absent.
    let fwd = s.regions.iter().find(|x| x.name == "fwd").unwrap();
    assert_eq!(fwd.steps, 1);
    assert_eq!((fwd.ns.min, fwd.ns.max, fwd.ns.total), (0, 360, 360));
    let bwd = s.regions.iter().find(|x| x.name == "bwd").unwrap();
    assert_eq!((bwd.steps, bwd.ns.min, bwd.ns.max), (2, 100, 500));
    // The chosen range is the level-0 one on thread 1 (2 steps), not the loader (1).
    assert_eq!(s.selection.as_ref().unwrap().count, 2);
}

#[test]
fn the_default_step_is_the_most_repeated_outermost_range_earliest_on_ties() {
    let mut p = timeline();
    p.ranges.push(range(1, "init", 0, 10, 0));
    for i in 0..3u64 {
        let b = 100 + i * 1000;
        p.ranges.push(range(1, "eval", b + 600, b + 700, 0));
        p.ranges.push(range(1, "step", b, b + 500, 0));
        // More frequent, but nested: never the default.
        for j in 0..4 {
            p.ranges
                .push(range(1, "inner", b + 10 + j * 10, b + 15 + j * 10, 1));
        }
    }
    // An open step is counted apart.
    let mut open = range(1, "step", 9000, 0, 0);
    open.end_ns = None;
    p.ranges.push(open);
    let p = sorted(p);
    let s = default_steps(&p);
    let sel = s.selection.as_ref().unwrap();
    // step: 3 closed (+1 open) ties eval's 3 and began first.
    assert_eq!(sel.name, "step");
    assert_eq!(sel.rule, "most-repeated-level-0");
    assert_eq!(sel.count, 3);
    assert_eq!(s.open, 1);
    let ru = sel.runner_up.as_ref().unwrap();
    assert_eq!((ru.name.as_str(), ru.count), ("eval", 3));
    assert!(sel.reason.contains("tie"), "{}", sel.reason);
    assert_eq!(s.steps.len(), 3);
    assert_eq!(s.steps[2].begin_ns, T0 + 2100);

    // --range picks any level.
    let o = StepOptions {
        range: Some("inner".into()),
        domain: None,
    };
    let s = process_steps(&p, &o);
    assert_eq!(s.steps.len(), 12);
    assert_eq!(s.selection.as_ref().unwrap().rule, "range-option");

    // A domain restricts both forms.
    let o = StepOptions {
        range: Some("step".into()),
        domain: Some("other".into()),
    };
    let s = process_steps(&p, &o);
    assert!(s.selection.is_none());
    assert!(s.notes[0].starts_with("no steps"), "{:?}", s.notes);
}

#[test]
fn domains_are_part_of_the_choice() {
    let mut p = timeline();
    for i in 0..3u64 {
        let mut r = range(1, "iter", i * 100, i * 100 + 50, 0);
        r.domain = Some(causeway_scanner::read::intern("trainer"));
        p.ranges.push(r);
    }
    for i in 0..2u64 {
        p.ranges
            .push(range(1, "iter", 1000 + i * 100, 1050 + i * 100, 0));
    }
    let p = sorted(p);
    let s = default_steps(&p);
    let sel = s.selection.as_ref().unwrap();
    assert_eq!((sel.domain.as_deref(), sel.count), (Some("trainer"), 3));
    assert_eq!(sel.runner_up.as_ref().unwrap().domain, None);
    // --range without --domain takes the name in every domain.
    let s = process_steps(
        &p,
        &StepOptions {
            range: Some("iter".into()),
            domain: None,
        },
    );
    assert_eq!(s.steps.len(), 5);
}

#[test]
fn no_repeating_range_means_no_steps_and_says_so() {
    let mut p = timeline();
    p.ranges.push(range(1, "once", 0, 10, 0));
    p.ranges.push(range(1, "twice-nested", 2, 3, 1));
    p.ranges.push(range(1, "twice-nested", 4, 5, 1));
    let s = default_steps(&sorted(p));
    assert!(s.selection.is_none());
    assert!(s.steps.is_empty());
    assert!(s.summary.is_none());
    assert!(s.notes[0].contains("repeats"), "{:?}", s.notes);
}

#[test]
fn summary_slowest_and_distribution() {
    let mut p = timeline();
    // Walls 100, 200, …, 1000 ns, in a shuffled order of time.
    let walls = [300u64, 1000, 100, 700, 500, 200, 900, 400, 800, 600];
    let mut at = 0;
    for w in walls {
        p.ranges.push(range(1, "step", at, at + w, 0));
        at += w + 50;
    }
    let s = default_steps(&sorted(p));
    let sum = s.summary.as_ref().unwrap();
    assert_eq!(sum.steps, 10);
    assert_eq!(
        (
            sum.wall_ns.min,
            sum.wall_ns.median,
            sum.wall_ns.p99,
            sum.wall_ns.max
        ),
        (100, 500, 1000, 1000)
    );
    assert_eq!(sum.wall_ns.total, 5500);
    // The five longest, longest first, as indices in time order.
    assert_eq!(s.slowest, vec![1, 6, 8, 3, 9]);
    let d = s.distribution.as_ref().unwrap();
    // Bins of 90 ns from 100: each wall in its own bin (900 in [820, 910), 1000 in the closed last one).
    assert_eq!(
        d.edges_ns,
        vec![100, 190, 280, 370, 460, 550, 640, 730, 820, 910, 1000]
    );
    assert_eq!(d.counts, vec![1; 10]);
    // Ten bins of one step each: no bin holds 2 steps, so no mode.
    assert_eq!(d.modes, 0);
    assert_eq!(d.p99_over_p50, Some(2.0));
}

#[test]
fn ties_among_the_slowest_keep_time_order() {
    let mut p = timeline();
    for i in 0..7u64 {
        p.ranges.push(range(1, "step", i * 1000, i * 1000 + 100, 0));
    }
    let s = default_steps(&sorted(p));
    assert_eq!(s.slowest, vec![0, 1, 2, 3, 4]);
    let d = s.distribution.as_ref().unwrap();
    // All equal: one bin holds them all.
    assert_eq!(d.counts[0], 7);
    assert_eq!(d.edges_ns, vec![100; 11]);
    assert_eq!(d.modes, 1);
}

#[test]
fn bimodal_step_times_have_two_modes() {
    let walls: Vec<u64> = std::iter::repeat_n(10_000, 50)
        .chain(std::iter::repeat_n(20_000, 50))
        .collect();
    let d = distribution(&walls);
    assert_eq!(d.counts, vec![50, 0, 0, 0, 0, 0, 0, 0, 0, 50]);
    assert_eq!((d.modes, d.mode_bins.clone()), (2, vec![0, 9]));
    assert_eq!((d.p50_ns, d.p99_ns), (10_000, 20_000));
    assert_eq!(d.p99_over_p50, Some(2.0));
}

#[test]
fn the_mode_rule() {
    // A shoulder (28) whose dip (25) is more than half its height is not a mode; the lone value in the
    // last bin is too small (1 < 5% of 100).
    assert_eq!(modes(&[1, 3, 10, 30, 25, 28, 2, 0, 0, 1], 100), vec![3]);
    // The same shoulder with a deep dip is one.
    assert_eq!(
        modes(&[1, 3, 10, 30, 5, 28, 2, 0, 0, 21], 100),
        vec![3, 5, 9]
    );
    // A plateau is one peak; equal peaks are both modes.
    assert_eq!(modes(&[0, 4, 4, 0, 0, 0, 0, 4, 0, 0], 12), vec![1, 7]);
    // One step in a bin is not a mode when there are others.
    assert_eq!(modes(&[7, 0, 0, 0, 0, 0, 0, 0, 0, 1], 8), vec![0]);
    assert_eq!(modes(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0], 1), vec![0]);
    assert!(modes(&[0; 10], 0).is_empty());
}

#[test]
fn gaps_per_stream_and_for_all_streams() {
    let mut p = timeline();
    // Stream A: [0,100) [150,200) [200,300) → gaps 50, 0.
    p.device.push(span("kernel", 0xa, 0, 100));
    p.device.push(span("kernel", 0xa, 150, 200));
    p.device.push(span("memcpy", 0xa, 200, 300));
    // Stream B: [120,180) [400,500) → gap 220.
    p.device.push(span("kernel", 0xb, 120, 180));
    p.device.push(span("kernel", 0xb, 400, 500));
    let p = sorted(p);
    let g = gaps::process_gaps(&p);
    assert!(g.device_timed);
    let all = &g.tracks[0];
    assert_eq!(all.track, "all streams");
    // All streams: [0,100) gap 20 [120,180) overlapped by [150,200) (30 ns), [200,300) gap 0 (reach 200),
    // gap 100, [400,500).
    assert_eq!(all.spans, 5);
    assert_eq!(all.gaps.count, 3);
    assert_eq!((all.overlaps, all.overlap_ns), (1, 30));
    assert_eq!(
        (all.gaps.p50_ns, all.gaps.max_ns, all.gaps.total_ns),
        (20, 100, 120)
    );
    let a = &g.tracks[1];
    assert_eq!(a.stream, Some(StreamId::Handle(0xa)));
    assert_eq!((a.gaps.count, a.gaps.max_ns, a.gaps.p50_ns), (2, 50, 0));
    assert_eq!(a.overlaps, 0);
    let b = &g.tracks[2];
    assert_eq!((b.gaps.count, b.gaps.max_ns), (1, 220));
    // The largest gaps of all streams, longest first; the zero gap is not one.
    assert_eq!(g.largest.len(), 2);
    assert_eq!(
        (g.largest[0].begin_ns, g.largest[0].gap_ns),
        (T0 + 300, 100)
    );
    assert_eq!(g.largest[0].before.name, "memcpy@200");
    assert_eq!(g.largest[0].after.name, "kernel@400");
    assert_eq!((g.largest[1].begin_ns, g.largest[1].gap_ns), (T0 + 100, 20));
}

#[test]
fn a_span_inside_a_longer_one_does_not_open_a_gap() {
    let mut p = timeline();
    p.device.push(span("kernel", 1, 0, 1000));
    p.device.push(span("kernel", 2, 100, 200));
    p.device.push(span("kernel", 3, 1100, 1200));
    let g = gaps::process_gaps(&sorted(p));
    let all = &g.tracks[0];
    // Measured from the latest end (1000), not from the inner span's end (200).
    assert_eq!((all.gaps.count, all.gaps.max_ns), (1, 100));
    assert_eq!((all.overlaps, all.overlap_ns), (1, 100));
}

#[test]
fn the_host_activity_in_a_large_gap() {
    let mut p = timeline();
    p.device.push(span("kernel", 1, 0, 100));
    let mut late = span("kernel", 1, 1000, 1100);
    late.bound_ns = 7;
    p.device.push(late);
    p.calls = vec![
        call(7, "cudaStreamSynchronize", "sync", 50, 300, 0),
        // Nested: not listed.
        call(7, "cuStreamSynchronize", "sync", 60, 290, 1),
        call(8, "cudaLaunchKernel", "launch", 950, 1020, 0),
        // Before the gap.
        call(7, "cudaLaunchKernel", "launch", 10, 20, 0),
        // Overlaps the other thread's sync: the union counts it once.
        call(8, "cudaMemcpyAsync", "copy", 250, 400, 0),
    ];
    p.ranges.push(range(7, "dataload", 310, 890, 0));
    p.ranges.push(range(7, "outer", 0, 2000, 0));
    let g = gaps::process_gaps(&sorted(p));
    assert_eq!(g.largest.len(), 1);
    let gap = &g.largest[0];
    assert_eq!((gap.gap_ns, gap.bound_ns), (900, 7));
    assert_eq!(gap.calls_total, 3);
    let listed: Vec<(&str, u32, u64)> = gap
        .calls
        .iter()
        .map(|c| (c.api.as_str(), c.tid, c.in_gap_ns))
        .collect();
    assert_eq!(
        listed,
        [
            ("cudaStreamSynchronize", 7, 200),
            ("cudaMemcpyAsync", 8, 150),
            ("cudaLaunchKernel", 8, 50)
        ]
    );
    assert_eq!(gap.calls[0].duration_ns, Some(250));
    // [100,400) ∪ [950,1000) inside the gap.
    assert_eq!(gap.host_in_calls_ns, 300 + 50);
    assert_eq!(gap.ranges_total, 2);
    assert_eq!(
        (gap.ranges[0].name.as_str(), gap.ranges[0].in_gap_ns),
        ("outer", 900)
    );
    assert_eq!(
        (gap.ranges[1].name.as_str(), gap.ranges[1].in_gap_ns),
        ("dataload", 580)
    );
}

#[test]
fn permille_is_nearest_rank() {
    let v: Vec<u64> = (1..=1000).collect();
    assert_eq!(permille(&v, 500), 500);
    assert_eq!(permille(&v, 990), 990);
    assert_eq!(permille(&v, 999), 999);
    let v: Vec<u64> = (1..=10).collect();
    assert_eq!(permille(&v, 999), 10);
    assert_eq!(permille(&v, 500), 5);
    assert_eq!(permille(&[], 500), 0);
}

#[test]
fn without_device_spans_the_gaps_view_says_so() {
    let g = gaps::process_gaps(&timeline());
    assert!(!g.device_timed);
    assert!(g.largest.is_empty());
    assert_eq!(g.tracks[0].spans, 0);
    assert!(g.notes[0].contains("level-3"));
}

#[test]
fn views_serialize_only_what_was_asked_for() {
    let mut p = timeline();
    p.ranges.push(range(1, "step", 0, 1000, 0));
    p.ranges.push(range(1, "step", 2000, 3000, 0));
    p.device.push(span("kernel", 1, 0, 600));
    let t = Timeline {
        processes: vec![sorted(p)],
    };
    let v = Views::build(
        "cap",
        &t,
        &ViewOptions {
            steps: Some(StepOptions::default()),
            gaps: false,
        },
    );
    let j = serde_json::to_value(&v).unwrap();
    assert!(j.get("gaps").is_none());
    let p0 = &j["steps"][0];
    assert_eq!(p0["selection"]["name"], "step");
    assert_eq!(p0["steps"][0]["device"]["busy_ns"], 600);
    assert_eq!(
        p0["steps"][0]["device"]["copy_compute_overlap"],
        serde_json::Value::Null
    );
    assert_eq!(p0["summary"]["wall_ns"]["median"], 1000);
    assert_eq!(p0["distribution"]["counts"].as_array().unwrap().len(), 10);
    let v = Views::build(
        "cap",
        &t,
        &ViewOptions {
            steps: None,
            gaps: true,
        },
    );
    let j = serde_json::to_value(&v).unwrap();
    assert!(j.get("steps").is_none());
    assert_eq!(j["gaps"][0]["tracks"][0]["track"], "all streams");
    // The text form names the chosen range and the figures.
    let text = causeway_scanner::render::text::render_views(&Views::build(
        "cap",
        &t,
        &ViewOptions {
            steps: Some(StepOptions::default()),
            gaps: true,
        },
    ));
    for want in [
        "STEPS",
        "\"step\"",
        "device busy",
        "SLOWEST STEPS",
        "LAUNCH GAPS",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
}

/// `call_index_near` finds what a binary search finds, from any hint: every present sequence number
/// at its index, every absent one (between, before, after the calls) not at all.
#[test]
fn a_call_is_found_near_a_hint_as_a_binary_search_finds_it() {
    for n in [0usize, 1, 2, 3, 7, 64, 200] {
        let mut p = timeline();
        // Sequence numbers 10, 13, 16, …: gaps between them are absent numbers.
        p.calls = (0..n)
            .map(|i| {
                call(
                    1,
                    "cudaLaunchKernel",
                    "launch",
                    10 + 3 * i as u64,
                    11 + 3 * i as u64,
                    0,
                )
            })
            .collect();
        let top = 10 + 3 * n as u64 + 5;
        for seq in 0..top {
            let want = p.calls.binary_search_by_key(&seq, |c| c.seq).ok();
            for hint in [0, 1, n / 2, n.saturating_sub(1), n, n + 10, usize::MAX] {
                assert_eq!(
                    p.call_index_near(seq, hint),
                    want,
                    "n {n} seq {seq} hint {hint}"
                );
            }
        }
    }
}

/// A small deterministic generator for the randomised checks below.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = (self.0.wrapping_mul(6364136223846793005)).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// The device figures of a window as the definitions say, from every span: clip the overlapping
/// ones, merge, measure.
fn device_by_definition(spans: &[DeviceSpan], lo: u64, hi: u64) -> (u64, u64, u64, u64, u64, u64) {
    let over: Vec<&DeviceSpan> = (spans.iter())
        .filter(|s| {
            s.begin_ns < hi && (s.end_ns > lo || (s.end_ns == lo && s.begin_ns == lo && lo < hi))
        })
        .collect();
    let clipped = |k: Option<DeviceKind>| {
        let v = (over.iter())
            .filter(|s| k.is_none_or(|k| s.kind == k))
            .map(|s| (s.begin_ns.max(lo), s.end_ns.min(hi)))
            .collect();
        union(v)
    };
    let (all, copy, kern) = (
        clipped(None),
        clipped(Some(DeviceKind::Memcpy)),
        clipped(Some(DeviceKind::Kernel)),
    );
    let bound = over.iter().map(|s| s.bound_ns).max().unwrap_or(0);
    (
        over.len() as u64,
        measure(&all),
        measure(&copy),
        measure(&kern),
        intersection(&copy, &kern),
        bound,
    )
}

#[test]
fn device_windows_match_the_definition_on_random_spans() {
    let mut g = Lcg(3);
    for round in 0..72 {
        // Past 4 096 spans begun in a window, the view measures merged lists instead of the spans;
        // past 4 096 still running at its start too (rounds of 20 000 long spans, which all
        // overlap: their count comes from the sorted ends, their bound from as few as it takes).
        let n = [0, 1, 5, 40, 300, 6000][round % 6];
        let long = round >= 60;
        let n = if long { 20_000 } else { n };
        // Round 7, 17, …: one span ends before it begins (a damaged capture).
        let inverted = round % 10 == 7;
        // Some long rounds with every bound 0, some with one large bound among many.
        let flat = long && round % 3 == 0;
        let mut spans: Vec<DeviceSpan> = (0..n)
            .map(|k| {
                let kind = ["kernel", "memcpy", "memset", "graph"][g.next(4) as usize];
                let b = g.next(2000);
                let len = match (long, g.next(6)) {
                    (_, 0) => 0,
                    (true, _) => g.next(2500),
                    (false, _) => g.next(300),
                };
                let mut s = span(kind, g.next(3), b, b + len);
                if inverted && k == n / 2 {
                    s.end_ns = s.begin_ns.saturating_sub(50);
                }
                s.bound_ns = match (flat, long) {
                    (true, _) => 0,
                    (false, true) => (k == n / 3) as u64 * 1000 + g.next(3),
                    (false, false) => g.next(100),
                };
                s
            })
            .collect();
        spans.sort_by_key(|s| (s.begin_ns, s.end_ns));
        let idx = steps::SpanIndex::new(&spans);
        for _ in 0..80 {
            let lo = T0 + g.next(2400);
            let hi = lo + [0, 1, g.next(50), g.next(2500)][g.next(4) as usize];
            let d = steps::device_window(&idx, lo, hi);
            let got = (
                d.spans,
                d.busy_ns,
                d.copy_ns,
                d.compute_ns,
                d.overlap_ns,
                d.bound_ns,
            );
            assert_eq!(
                got,
                device_by_definition(&spans, lo, hi),
                "round {round} window {lo}..{hi}"
            );
            assert_eq!(d.idle_ns, (hi - lo).saturating_sub(d.busy_ns));
        }
    }
}

/// Sub-range depths (1 + how many other sub-ranges of the step enclose it) and launch figures as
/// the definitions say, against the view, on random ranges — properly nested or not — and on calls
/// of one thread that do or do not overlap (a damaged capture).
#[test]
fn step_regions_and_calls_match_the_definition_on_random_ranges() {
    let mut g = Lcg(5);
    for round in 0..40 {
        let mut p = timeline();
        let nested = round % 2 == 0;
        // Properly nested: a chain of "s" ranges, each inside the last, with "a"/"b" ranges among
        // them; otherwise any intervals.
        let mut at = 0u64;
        let mut until = 5000u64;
        for k in 0..30u64 {
            let (b, e) = if nested {
                // Shared begins and ends too (a range ending with the one around it).
                at += g.next(3) * g.next(40);
                until -= g.next(3) * g.next(40);
                (at, until.max(at))
            } else {
                let b = g.next(4000);
                (b, b + g.next(1500))
            };
            let name = if k % 3 == 0 {
                "s"
            } else if k % 3 == 1 {
                "a"
            } else {
                "b"
            };
            p.ranges.push(range(1, name, b, e, 0));
        }
        let overlapping_calls = round % 4 == 1;
        let mut t = 0;
        for _ in 0..50 {
            let b = if overlapping_calls {
                g.next(5000)
            } else {
                t + g.next(60)
            };
            let e = b + g.next(80);
            t = e;
            p.calls.push(call(1, "cudaLaunchKernel", "launch", b, e, 0));
        }
        let p = sorted(p);
        let o = StepOptions {
            range: Some("s".into()),
            domain: None,
        };
        let s = process_steps(&p, &o);
        let mut launches: Vec<(u64, u64)> = p
            .calls
            .iter()
            .map(|c| (c.begin_ns, c.end_ns.get().unwrap()))
            .collect();
        launches.sort_unstable();
        let mut seen: std::collections::HashMap<(u64, u64), usize> = Default::default();
        for st in &s.steps {
            let (lo, hi) = (st.begin_ns, st.end_ns);
            // The step's range: of the "s" ranges with these times, the one as many steps along.
            let nth = seen.entry((lo, hi)).or_default();
            let me = (p.ranges.iter().enumerate())
                .filter(|(_, r)| r.name == "s" && r.begin_ns == lo && r.end_ns == Some(hi))
                .nth(*nth)
                .unwrap()
                .0;
            *nth += 1;
            let mut inside: Vec<(u64, u64, usize)> = (p.ranges.iter().enumerate())
                .filter(|&(i, r)| {
                    let e = r.end_ns.unwrap();
                    i != me
                        && r.begin_ns >= lo
                        && e <= hi
                        && ((r.begin_ns, e) != (lo, hi) || i > me)
                })
                .map(|(i, r)| (r.begin_ns, r.end_ns.unwrap(), i))
                .collect();
            inside.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
            let mut stack: Vec<(u64, u64)> = Vec::new();
            let mut want: std::collections::BTreeMap<&str, (u32, u64)> = Default::default();
            for &(b, e, i) in &inside {
                while stack.last().is_some_and(|t| t.1 <= b && t.1 < e) {
                    stack.pop();
                }
                let depth = 1 + stack.iter().filter(|t| t.0 <= b && t.1 >= e).count() as u32;
                stack.push((b, e));
                let w = want.entry(p.ranges[i].name.as_str()).or_insert((depth, 0));
                w.0 = w.0.min(depth);
                w.1 += 1;
            }
            let got: std::collections::BTreeMap<&str, (u32, u64)> = st
                .regions
                .iter()
                .map(|r| (r.name.as_str(), (r.depth, r.count)))
                .collect();
            assert_eq!(got, want, "round {round} step {lo}..{hi}");
            // Launch time: the union of the clipped launches, and how many overlap.
            let parts: Vec<(u64, u64)> = (launches.iter())
                .filter(|&&(b, e)| b < hi && e > lo)
                .map(|&(b, e)| (b.max(lo), e.min(hi)))
                .collect();
            if !overlapping_calls {
                assert_eq!(
                    (st.launch_ns, st.launch_calls),
                    (measure(&union(parts.clone())), parts.len() as u64)
                );
            }
        }
    }
}

/// A step's launch or sync figures by their definition: the union of the calls of `class` that
/// `keep` keeps, clipped to [lo, hi), and how many of them overlap it.
fn clipped_calls(
    p: &ProcessTimeline,
    keep: impl Fn(&Call) -> bool,
    class: &str,
    lo: u64,
    hi: u64,
) -> (u64, u64) {
    let parts: Vec<(u64, u64)> = (p.calls.iter())
        .filter(|c| keep(c) && c.class.map(|k| k.name()) == Some(class))
        .map(|c| (c.begin_ns, c.end_ns.get().unwrap()))
        .filter(|&(b, e)| b < hi && e > lo)
        .map(|(b, e)| (b.max(lo), e.min(hi)))
        .collect();
    (measure(&union(parts.clone())), parts.len() as u64)
}

/// Steps holding many calls (past 4 096, measured by running totals) and few, nested: launch
/// and sync time and counts as the definitions say (the union of the clipped calls).
#[test]
fn long_steps_measure_their_calls_as_the_definition_says() {
    let mut g = Lcg(9);
    let mut p = timeline();
    let mut t = 0;
    for k in 0..20_000u64 {
        let b = t + g.next(6);
        let e = b + 1 + g.next(10);
        t = e;
        let class = if k % 3 == 0 { "sync" } else { "launch" };
        p.calls.push(call(1, "cudaCall", class, b, e, 0));
    }
    for k in 0..35u64 {
        let (b, e) = (k * 1_500 + g.next(7), 120_000 - k * 1_500 - g.next(7));
        p.ranges.push(range(1, "s", b, e, k as u32));
    }
    let p = sorted(p);
    let o = StepOptions {
        range: Some("s".into()),
        domain: None,
    };
    let s = process_steps(&p, &o);
    assert_eq!(s.steps.len(), 35);
    let by_class = |class: &str, lo: u64, hi: u64| clipped_calls(&p, |_| true, class, lo, hi);
    for st in &s.steps {
        let (lo, hi) = (st.begin_ns, st.end_ns);
        assert_eq!(
            (st.launch_ns, st.launch_calls),
            by_class("launch", lo, hi),
            "{lo}..{hi}"
        );
        assert_eq!(
            (st.sync_ns, st.sync_calls),
            by_class("sync", lo, hi),
            "{lo}..{hi}"
        );
    }
}

/// Calls of three threads, in runs that cross the chunks the per-thread pass reads on every
/// thread (65 536 calls), nested ones among them: each step's launch and sync time and counts are
/// its own thread's depth-0 calls', as the definitions say.
#[test]
fn calls_read_in_chunks_are_each_threads_own() {
    let mut g = Lcg(13);
    let mut p = timeline();
    p.threads = vec![1, 2, 3];
    let mut at = [0u64; 3];
    for k in 0..150_000u64 {
        // Runs of 1 000 calls a thread.
        let t = (k / 1_000 % 3) as usize;
        let b = at[t] + g.next(6);
        let e = b + 1 + g.next(10);
        at[t] = e;
        let class = if k % 3 == 0 { "sync" } else { "launch" };
        let depth = u16::from(k % 7 == 0);
        p.calls
            .push(call(t as u32 + 1, "cudaCall", class, b, e, depth));
    }
    for (t, &end) in at.iter().enumerate() {
        for k in 0..12 {
            let (b, e) = (k * end / 12, (k + 1) * end / 12 - 1);
            p.ranges.push(range(t as u32 + 1, "s", b, e, 0));
        }
    }
    p.calls.sort_by_key(|c| (c.begin_ns, c.tid));
    let p = sorted(p);
    let o = StepOptions {
        range: Some("s".into()),
        domain: None,
    };
    let s = process_steps(&p, &o);
    assert_eq!(s.steps.len(), 36);
    let of = |tid: u32, class: &str, lo: u64, hi: u64| {
        clipped_calls(&p, |c| c.tid == tid && c.depth == 0, class, lo, hi)
    };
    for st in &s.steps {
        let (lo, hi) = (st.begin_ns, st.end_ns);
        let launch = of(st.tid, "launch", lo, hi);
        assert!(launch.1 > 1_000, "{launch:?}");
        assert_eq!((st.launch_ns, st.launch_calls), launch, "{lo}..{hi}");
        let sync = of(st.tid, "sync", lo, hi);
        assert_eq!((st.sync_ns, st.sync_calls), sync, "{lo}..{hi}");
    }
}

/// Long and short windows measured at once on a pool of several threads: each gets the figures its
/// definition gives, and every round ends. The first long one makes the merged lists (`Unions`,
/// once, inside a `OnceLock`); were any part of that made on the pool, the worker making it could
/// take up another long window while it waits for a part a short window's worker took, and wait on
/// the lock it holds. That order of events is rare, and this test does not force it (a parallel
/// `RangeMax` passed it in five runs); `RangeMax::new` is made on one thread for that reason.
#[test]
fn long_windows_measured_side_by_side_do_not_wait_on_each_other() {
    use rayon::prelude::*;
    let spans: Vec<DeviceSpan> = (0..200_000u64)
        .map(|k| {
            span(
                ["kernel", "memcpy"][(k % 2) as usize],
                k % 3,
                k * 2,
                k * 2 + 3,
            )
        })
        .collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        let mut busy = Vec::new();
        for _ in 0..20 {
            let idx = steps::SpanIndex::new(&spans);
            let windows: Vec<u64> = pool.install(|| {
                (0..256u64)
                    .into_par_iter()
                    .map(|k| {
                        // Short windows between the long ones: their workers are free to help.
                        let lo = T0 + k * 1_000;
                        let len = if k.is_multiple_of(2) { 20_000 } else { 100 };
                        steps::device_window(&idx, lo, lo + len).busy_ns
                    })
                    .collect()
            });
            busy.push(windows);
        }
        let _ = tx.send(busy);
    });
    let busy = rx.recv_timeout(std::time::Duration::from_secs(60)).expect(
        "every round within a minute (a window waiting on the lock its own worker holds hangs)",
    );
    // A long window holds 10 000 spans (past 4 096: measured from the merged lists), a short one
    // 50, back to back.
    for windows in busy {
        let want = |k: usize| if k.is_multiple_of(2) { 20_000 } else { 100 };
        assert!(
            windows.iter().enumerate().all(|(k, &b)| b == want(k)),
            "{windows:?}"
        );
    }
}
