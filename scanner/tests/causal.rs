//! The causal graph and `why` on timelines built in code, one cause injected at a known place each:
//! a host gap before a launch, a cross-stream event wait, an unrelated kernel hogging the device, a
//! lost event record, a reused event handle, a sync waiting for a long kernel, a slow step. The
//! answers — cause, chain, completeness — are worked out by hand.

use causeway_scanner::analysis::causal::graph::{EdgeKind, Evidence, Graph, Node};
use causeway_scanner::analysis::causal::why::{why, Target, SLACK_NS};
use causeway_scanner::facts::handle::Handle;
use causeway_scanner::facts::model::{
    Call, DeviceSpan, ProcessTimeline, Range, StreamId, Timeline,
};
use causeway_scanner::read::intern;

const TID: u32 = 7;
const A: u64 = 0xa000;
const B: u64 = 0xb000;
const E: u64 = 0xe000;

/// A process built call by call: sequence numbers follow the order calls are added.
struct P {
    p: ProcessTimeline,
}

impl P {
    fn new() -> P {
        P {
            p: ProcessTimeline {
                threads: vec![TID],
                backend: "cupti".into(),
                ..ProcessTimeline::empty(42)
            },
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        api: &str,
        class: &'static str,
        b: u64,
        e: u64,
        stream: Option<u64>,
        handle: Option<u64>,
    ) -> u64 {
        let seq = self.p.calls.len() as u64 * 2; // sequence numbers need not be dense
        let c = Call {
            seq,
            tid: TID,
            api: intern(api),
            layer: Some(causeway_ring::Layer::Runtime),
            class: Some(causeway_ring::Class::from_name(class).expect("a class name")),
            begin_ns: b,
            end_ns: Some(e).into(),
            depth: 0,
            result: 0,
            kernel: None,
            a0: Handle::of(stream.unwrap_or(0)),
            a1: Handle::of(handle.unwrap_or(0)),
            flags: 0,
        };
        // The class says which arguments a call has: a fixture that gives others is a mistake.
        assert_eq!(
            (c.stream(), c.handle()),
            (stream, handle),
            "{api} ({class})"
        );
        self.p.calls.push(c);
        seq
    }

    /// A launch on `stream` over [b, b+100] whose kernel `name` ran over [k0, k1].
    fn launch(&mut self, stream: u64, b: u64, name: &str, k0: u64, k1: u64) -> u64 {
        let seq = self.call("cudaLaunchKernel", "launch", b, b + 100, Some(stream), None);
        self.p.device.push(DeviceSpan {
            graph_node: causeway_scanner::facts::model::GraphNode::NONE,
            kind: causeway_ring::layout::DeviceKind::Kernel,
            name: intern(name),
            begin_ns: k0,
            end_ns: k1,
            bound_ns: 0,
            stream: StreamId::Handle(stream).into(),
            call: Some(seq).into(),
            bytes: 0,
            queued_ns: None.into(),
            submitted_ns: None.into(),
        });
        seq
    }

    /// A graph launch of exec `exec` on stream `A` over [1000, 1100], the topology it was instantiated
    /// with (kernel nodes, edges between node indices), and its node executions (node, name, start,
    /// end) on `A`.
    fn graph(
        &mut self,
        exec: u64,
        kernels: &[(u32, &str)],
        edges: &[(u32, u32)],
        runs: &[(u32, &str, u64, u64)],
    ) -> u64 {
        use causeway_scanner::facts::model::GraphTopology;
        let seq = self.call(
            "cudaGraphLaunch",
            "graph_launch",
            1_000,
            1_100,
            Some(A),
            Some(exec),
        );
        self.p.graph_topologies.push(GraphTopology {
            seq: 0,
            exec,
            kernels: kernels.iter().map(|&(k, n)| (k, Some(intern(n)))).collect(),
            edges: edges.to_vec(),
            incomplete: false,
        });
        for &(k, name, b, e) in runs {
            self.p.device.push(DeviceSpan {
                graph_node: causeway_scanner::facts::model::GraphNode::index(
                    u16::try_from(k).unwrap(),
                ),
                kind: causeway_ring::layout::DeviceKind::Kernel,
                name: intern(name),
                begin_ns: b,
                end_ns: e,
                bound_ns: 0,
                stream: StreamId::Handle(A).into(),
                call: Some(seq).into(),
                bytes: 0,
                queued_ns: None.into(),
                submitted_ns: None.into(),
            });
        }
        seq
    }

    fn record(&mut self, event: u64, stream: u64, b: u64) -> u64 {
        self.call(
            "cudaEventRecord",
            "event_record",
            b,
            b + 50,
            Some(stream),
            Some(event),
        )
    }

    fn wait(&mut self, stream: u64, event: u64, b: u64) -> u64 {
        self.call(
            "cudaStreamWaitEvent",
            "stream_wait",
            b,
            b + 50,
            Some(stream),
            Some(event),
        )
    }

    fn sync(&mut self, stream: u64, b: u64, e: u64) -> u64 {
        self.call("cudaStreamSynchronize", "sync", b, e, Some(stream), None)
    }

    fn timeline(mut self) -> Timeline {
        self.p.device.sort_by_key(|d| (d.begin_ns, d.end_ns));
        self.p.ranges.sort_by_key(|r| (r.begin_ns, r.tid, r.level));
        Timeline {
            processes: vec![self.p],
        }
    }
}

fn kernel(name: &str, k: usize) -> Target {
    Target::Kernel {
        name: name.into(),
        k: Some(k),
    }
}

/// The process's graph, checked against the exports' cheaper build of its cross-track edges alone:
/// the same edges in the same order (an absent end is numbered differently there); and against the
/// Parquet table's streamed walk, in runs of every length: the same edges and absent nodes, each
/// absent end handed over by its run at the latest.
fn graph(p: &causeway_scanner::facts::model::ProcessTimeline) -> Graph<'_> {
    let g = Graph::build(p);
    for chunk in [1, 2, 3, 1000] {
        let (mut edges, mut absent, mut runs) = (Vec::new(), Vec::new(), Vec::new());
        Graph::edges_streamed(p, None, chunk, &mut |run, new| {
            absent.extend(new);
            for e in &run {
                for n in [e.from(), e.to()] {
                    if let Node::Absent(k) = n {
                        assert!((k as usize) < absent.len(), "absent {k} after its edge");
                    }
                }
            }
            runs.push(run.len());
            edges.extend(run);
        });
        assert!(edges == g.edges, "runs of {chunk}: not the graph's edges");
        assert_eq!(absent, g.absent, "runs of {chunk}");
        let full = runs.len().saturating_sub(1);
        assert!(runs[..full].iter().all(|&n| n == chunk), "{runs:?}");
        assert!(
            runs.last().is_none_or(|&n| (1..=chunk).contains(&n)),
            "{runs:?}"
        );
    }
    let key = |e: &causeway_scanner::analysis::causal::graph::Edge| {
        let n = |n: Node| match n {
            Node::Absent(_) => None,
            n => Some(n),
        };
        (n(e.from()), n(e.to()), e.kind, e.evidence())
    };
    let full: Vec<_> = (g.edges.iter())
        .filter(|e| e.kind.crosses_tracks())
        .map(key)
        .collect();
    let issuers = p.issuers();
    let issued = causeway_scanner::util::groups::Sparse::by_key(p.calls.len(), &issuers);
    let (cross, issued) = Graph::cross_track_edges(p, None, &issuers, issued);
    let cross: Vec<_> = cross.iter().map(key).collect();
    assert_eq!(cross, full);
    // The spans each call issued come back as lent.
    assert!((0..p.calls.len()).all(|i| issued.of(i) == g.spans_of(i)));
    g
}

fn edges(w: &causeway_scanner::analysis::causal::why::Why) -> Vec<&str> {
    w.chain.iter().map(|l| l.edge).collect()
}

/// The graph's edges of the timeline's process by the names of their ends (a device interval's
/// name, a call's API), with their kinds.
fn named_edges(t: &Timeline) -> Vec<(String, String, EdgeKind)> {
    let p = &t.processes[0];
    let name = |n: Node| match n {
        Node::Work(j) => p.device[j as usize].name.to_string(),
        Node::Call(i) => p.calls[i as usize].api.to_string(),
        Node::Absent(_) => "absent".into(),
    };
    graph(p)
        .edges
        .iter()
        .map(|e| (name(e.from()), name(e.to()), e.kind))
        .collect()
}

#[test]
fn a_host_gap_before_a_launch_is_the_hosts() {
    let mut p = P::new();
    p.launch(A, 1_000, "k", 1_200, 2_000);
    // The thread does something else for ~0.5 ms before the next launch.
    p.launch(A, 500_000, "k", 500_200, 501_000);
    p.launch(A, 501_100, "k", 501_300, 502_000);
    let t = p.timeline();
    let w = why(&t, &kernel("k", 2)).unwrap();
    assert_eq!(w.cause, "host", "{w:#?}");
    assert!(
        w.detail.contains("made no call for 498900 ns"),
        "{}",
        w.detail
    );
    assert_eq!(edges(&w), ["issue", "program_order"]);
    assert!(w.complete);
    assert_eq!(w.chain[0].delay_ns, 200);
    assert_eq!(w.phases.start_ns, Some(500_200));
    assert_eq!(w.phases.issue_ns, Some(500_000));
    // Launch-to-start latency 200 against a median of 200: not late by that baseline.
    assert_eq!(w.late_ns, Some(0));
}

#[test]
fn a_slow_first_launch_after_a_host_gap_names_both_the_larger_first() {
    let mut p = P::new();
    p.launch(A, 1_000, "k", 1_200, 2_000);
    // 0.5 ms without calls, then a launch call that spends 59 us inside before its kernel starts.
    let seq = p.call(
        "cudaLaunchKernel",
        "launch",
        500_000,
        560_000,
        Some(A),
        None,
    );
    p.p.device.push(DeviceSpan {
        graph_node: causeway_scanner::facts::model::GraphNode::NONE,
        kind: causeway_ring::layout::DeviceKind::Kernel,
        name: intern("first"),
        begin_ns: 559_000,
        end_ns: 570_000,
        bound_ns: 0,
        stream: StreamId::Handle(A).into(),
        call: Some(seq).into(),
        bytes: 0,
        queued_ns: None.into(),
        submitted_ns: None.into(),
    });
    let t = p.timeline();
    let w = why(&t, &kernel("first", 1)).unwrap();
    assert_eq!(w.cause, "host", "{w:#?}");
    let gap = w
        .detail
        .find("made no call for 498900 ns")
        .expect("the gap");
    let inside = w
        .detail
        .find("spent 59000 ns")
        .expect("the time inside the call");
    assert!(gap < inside, "the larger first: {}", w.detail);
    assert_eq!(edges(&w), ["issue", "program_order"]);
}

#[test]
fn a_cross_stream_event_wait_is_a_dependency_and_the_chain_follows_it() {
    let mut p = P::new();
    p.launch(A, 1_000, "long", 1_200, 300_000);
    p.record(E, A, 1_300);
    p.wait(B, E, 1_400);
    p.launch(B, 1_500, "consumer", 300_050, 301_000);
    let t = p.timeline();
    let w = why(&t, &kernel("consumer", 1)).unwrap();
    assert_eq!(w.cause, "dependency", "{w:#?}");
    assert!(w.detail.contains("kernel long"), "{}", w.detail);
    assert_eq!(w.chain[0].edge, "event_wait");
    assert_eq!(w.chain[0].evidence, "explicit");
    assert_eq!(w.chain[0].delay_ns, 50);
    // Then why `long` ran when it did: issued right before (the host's).
    assert_eq!(w.chain[1].edge, "issue");
    assert!(w.complete);
}

#[test]
fn two_independent_streams_close_in_time_are_no_dependency() {
    // Same symptom as above (consumer starts right after `long` ends), no event: the graph has no
    // edge between them, and the wait for the device is the device's.
    let mut p = P::new();
    p.launch(A, 1_000, "long", 1_200, 300_000);
    p.launch(B, 1_500, "consumer", 300_050, 301_000);
    let t = p.timeline();
    let w = why(&t, &kernel("consumer", 1)).unwrap();
    assert_eq!(w.cause, "device", "{w:#?}");
    assert!(w.detail.contains("kernel long"), "{}", w.detail);
    assert_eq!(edges(&w), ["issue"]);
    let g = graph(&t.processes[0]);
    assert!(!g.edges.iter().any(|e| e.kind == EdgeKind::EventWait));
}

#[test]
fn an_unrelated_kernel_hogging_the_device_is_the_devices() {
    let mut p = P::new();
    p.launch(A, 1_000, "hog", 1_100, 900_000);
    p.launch(B, 2_000, "victim", 900_100, 901_000);
    p.launch(B, 901_000, "victim", 901_300, 902_000);
    let t = p.timeline();
    let w = why(&t, &kernel("victim", 1)).unwrap();
    assert_eq!(w.cause, "device", "{w:#?}");
    assert!(w.detail.contains("hog"), "{}", w.detail);
    assert!(w.chain[0].delay_ns as u64 > SLACK_NS);
    // Without #K: the execution latest against the baseline is the first one.
    let w2 = why(
        &t,
        &Target::Kernel {
            name: "victim".into(),
            k: None,
        },
    )
    .unwrap();
    assert_eq!(w2.target, "kernel victim#1");
    assert!(w2.late_ns.unwrap() > 0);
}

#[test]
fn a_wait_on_a_lost_record_is_missing_and_the_chain_incomplete() {
    let mut p = P::new();
    // The record of E was overwritten: the ring says so.
    p.p.loss.overwritten = 5;
    p.wait(B, E, 1_000);
    p.launch(B, 1_100, "consumer", 50_000, 51_000);
    let t = p.timeline();
    let w = why(&t, &kernel("consumer", 1)).unwrap();
    assert_eq!(w.cause, "unknown", "{w:#?}");
    assert!(!w.complete);
    assert_eq!(w.chain[0].evidence, "missing");
    assert!(
        w.chain[0].what.contains("not in the capture"),
        "{}",
        w.chain[0].what
    );
    // The same program with a lossless ring: a wait on an event never recorded is a no-op.
    let mut p = P::new();
    p.wait(B, E, 1_000);
    p.launch(B, 1_100, "consumer", 1_250, 2_000);
    let t = p.timeline();
    let w = why(&t, &kernel("consumer", 1)).unwrap();
    assert!(w.complete);
    assert_ne!(w.cause, "unknown");
}

/// With the event's creation in the capture, only a slot torn between the creation and the wait can
/// have held a record: a torn slot elsewhere leaves a never-recorded event's wait a no-op, one in
/// between makes it missing.
#[test]
fn a_lost_record_must_lie_between_the_events_creation_and_the_wait() {
    let build = |torn: u64| {
        let mut p = P::new();
        p.launch(A, 500, "early", 600, 700);
        let created = p.call("cudaEventCreate", "event", 1_000, 1_050, None, Some(E));
        let waited = p.wait(B, E, 1_100);
        p.launch(B, 1_200, "consumer", 1_400, 2_000);
        // Sequence numbers step by 2: an odd one is a slot with no call, here torn.
        p.p.loss.torn = 1;
        p.p.torn_seqs = vec![match torn {
            0 => created - 1, // before the creation
            _ => waited - 1,  // between the creation and the wait
        }];
        p.timeline()
    };
    let t = build(0);
    let g = graph(&t.processes[0]);
    assert!(
        !g.edges.iter().any(|e| e.evidence() == Evidence::Missing),
        "{:?}",
        g.edges
    );
    assert!(why(&t, &kernel("consumer", 1)).unwrap().complete);
    let t = build(1);
    let g = graph(&t.processes[0]);
    assert!(g
        .edges
        .iter()
        .any(|e| e.evidence() == Evidence::Missing && e.kind == EdgeKind::EventWait));
    let w = why(&t, &kernel("consumer", 1)).unwrap();
    assert!(!w.complete);
    assert_eq!(w.cause, "unknown");
}

/// A device that takes 40 µs to start any ready work: 60 µs is its usual latency, not a busy device;
/// 300 µs is busy.
#[test]
fn the_devices_usual_dispatch_latency_is_not_a_busy_device() {
    let run = |late: u64| {
        let mut p = P::new();
        for i in 0..20 {
            let b = 10_000 * i;
            p.launch(A + i, b, "k", b + 100 + 40_000, b + 100 + 40_000 + 1_000);
        }
        // Each on a stream of its own (no stream order). Then one issued at 300 000 (returns at
        // 300 100), started `late` ns later, nothing before it on B.
        p.launch(B, 300_000, "t", 300_100 + late, 300_100 + late + 1_000);
        why(&p.timeline(), &kernel("t", 1)).unwrap().cause
    };
    assert_eq!(run(60_000), "host");
    assert_eq!(run(300_000), "device");
}

/// Work on the legacy default stream orders later work on a blocking stream (inferred: a stream
/// created before the capture may be either), never on one created non-blocking.
#[test]
fn a_non_blocking_stream_is_not_ordered_after_the_legacy_stream() {
    let run = |flags: u32| {
        let mut p = P::new();
        p.call(
            "cudaStreamCreateWithFlags",
            "stream",
            100,
            150,
            None,
            Some(B),
        );
        p.p.calls.last_mut().unwrap().flags = flags;
        p.launch(0, 1_000, "legacy", 1_200, 5_000);
        p.launch(B, 1_300, "k", 5_100, 6_000);
        let t = p.timeline();
        let g = graph(&t.processes[0]);
        g.edges
            .iter()
            .filter(|e| e.kind == EdgeKind::LegacyStream)
            .map(|e| e.evidence())
            .collect::<Vec<_>>()
    };
    assert_eq!(run(0), [Evidence::Inferred { confidence: 0.5 }]);
    assert!(run(1).is_empty());
}

/// Work on the legacy default stream follows the latest item of every other blocking stream, in issue
/// order (streams the capture saw no creation of: inferred); a device-wide sync waits for every
/// stream's last item, the legacy stream's too, and for nothing older.
#[test]
fn legacy_work_follows_every_blocking_streams_latest_item_and_a_device_sync_waits_for_all() {
    const C: u64 = 0xc000;
    let mut p = P::new();
    p.launch(C, 1_000, "c1", 1_200, 2_000);
    p.launch(B, 1_100, "b1", 1_300, 2_100);
    p.launch(C, 1_200, "c2", 2_000, 2_500);
    let legacy = p.launch(0, 1_300, "l", 2_600, 3_000);
    p.launch(A, 1_400, "a1", 3_000, 3_500);
    let sync = p.call("cudaDeviceSynchronize", "sync", 1_500, 3_600, Some(0), None);
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    let work = |name: &str| {
        let j = t.processes[0].device.iter().position(|d| d.name == name);
        Node::work(j.expect("the kernel's interval"))
    };
    let legacy_call = g.call_of_seq(legacy).expect("the legacy launch");
    let into_legacy: Vec<(Node, EdgeKind)> = g
        .preds(work("l"))
        .map(|e| (e.from(), e.kind))
        .filter(|&(_, k)| k == EdgeKind::LegacyStream)
        .collect();
    // b1 was issued before c2: issue order, not map order.
    assert_eq!(
        into_legacy,
        [
            (work("b1"), EdgeKind::LegacyStream),
            (work("c2"), EdgeKind::LegacyStream)
        ]
    );
    assert!(g
        .preds(work("l"))
        .any(|e| e.from() == Node::call(legacy_call)));
    // a1, on a blocking stream with nothing before it, follows the legacy stream's item.
    assert!(g
        .preds(work("a1"))
        .any(|e| e.from() == work("l") && e.kind == EdgeKind::LegacyStream));
    let mut waited: Vec<Node> = g
        .preds(Node::call(g.call_of_seq(sync).expect("the sync")))
        .filter(|e| e.kind == EdgeKind::HostWait)
        .map(|e| e.from())
        .collect();
    waited.sort();
    let mut want = vec![work("b1"), work("c2"), work("l"), work("a1")];
    want.sort();
    assert_eq!(waited, want);
}

/// A later legacy item follows only the blocking streams given work since the legacy stream's last
/// item: older items are ordered before it through that item. With a stream per launch and the
/// legacy stream between them, the legacy edges grow as the launches, not as launches × streams
/// (which, with streams only synchronized, also made the walk quadratic).
#[test]
fn a_legacy_item_follows_only_the_streams_given_work_since_the_last_one() {
    let mut p = P::new();
    p.launch(A, 1_000, "a1", 1_100, 1_200);
    p.launch(B, 1_100, "b1", 1_200, 1_300);
    p.launch(0, 1_200, "l1", 1_300, 1_400);
    p.launch(B, 1_300, "b2", 1_400, 1_500);
    p.launch(0, 1_400, "l2", 1_500, 1_600);
    p.launch(0, 1_500, "l3", 1_600, 1_700);
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    let work = |name: &str| {
        let j = t.processes[0].device.iter().position(|d| d.name == name);
        Node::work(j.expect("the kernel's interval"))
    };
    let legacy_preds = |name: &str| -> Vec<Node> {
        (g.preds(work(name)))
            .filter(|e| e.kind == EdgeKind::LegacyStream)
            .map(|e| e.from())
            .collect()
    };
    assert_eq!(legacy_preds("l1"), [work("a1"), work("b1")]);
    assert_eq!(legacy_preds("l2"), [work("b2")], "a1 is ordered through l1");
    assert!(legacy_preds("l3").is_empty(), "nothing new since l2");

    // 500 rounds: a launch on a stream of its own, a sync on another stream never launched on,
    // then a legacy launch.
    let mut p = P::new();
    let n = 500u64;
    for r in 0..n {
        let b = 10_000 + r * 1_000;
        p.launch(0x10_0000 + r, b, "own", b + 100, b + 200);
        p.sync(0x20_0000 + r, b + 200, b + 300);
        p.launch(0, b + 300, "legacy", b + 400, b + 500);
    }
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    let legacy = (g.edges.iter())
        .filter(|e| e.kind == EdgeKind::LegacyStream)
        .count() as u64;
    // Each legacy launch follows the one stream launched since the last; each stream's launch
    // follows the legacy item before it (the first has none).
    assert_eq!(legacy, n + (n - 1));
}

/// How many edges of `kind` end at the call with sequence number `seq`.
fn preds_of(g: &Graph, seq: u64, kind: EdgeKind) -> usize {
    let i = g.call_of_seq(seq).expect("the call");
    g.preds(Node::call(i)).filter(|e| e.kind == kind).count()
}

/// How many host-wait edges the process's graph has.
fn host_waits(p: P) -> u64 {
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    (g.edges.iter())
        .filter(|e| e.kind == EdgeKind::HostWait)
        .count() as u64
}

/// A device-wide wait waits for every stream's last item issued since its thread's last device-wide
/// wait (older ones are ordered before it through that wait); another thread's first one waits for
/// them all. With a stream per step and a device sync per step, the waits' edges grow as the steps.
#[test]
fn a_device_wide_wait_waits_for_what_was_issued_since_its_threads_last_one() {
    let mut p = P::new();
    p.launch(A, 1_000, "a1", 1_100, 1_200);
    p.launch(B, 1_100, "b1", 1_200, 1_300);
    let s1 = p.call("cudaDeviceSynchronize", "sync", 1_300, 1_400, Some(0), None);
    p.launch(B, 1_400, "b2", 1_500, 1_600);
    let s2 = p.call("cudaDeviceSynchronize", "sync", 1_500, 1_700, Some(0), None);
    let s3 = p.call("cudaDeviceSynchronize", "sync", 1_550, 1_700, Some(0), None);
    p.p.calls.last_mut().unwrap().tid = TID + 1;
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    let work = |name: &str| {
        let j = t.processes[0].device.iter().position(|d| d.name == name);
        Node::work(j.expect("the kernel's interval"))
    };
    let waited = |seq: u64| -> Vec<Node> {
        let i = g.call_of_seq(seq).expect("the sync");
        (g.preds(Node::call(i)))
            .filter(|e| e.kind == EdgeKind::HostWait)
            .map(|e| e.from())
            .collect()
    };
    assert_eq!(waited(s1), [work("a1"), work("b1")]);
    assert_eq!(waited(s2), [work("b2")], "a1 is ordered through s1");
    assert_eq!(
        waited(s3),
        [work("a1"), work("b2")],
        "another thread's first"
    );

    let mut p = P::new();
    let n = 500u64;
    for r in 0..n {
        let b = 10_000 + r * 1_000;
        p.launch(0x10_0000 + r, b, "own", b + 100, b + 200);
        p.call(
            "cudaDeviceSynchronize",
            "sync",
            b + 200,
            b + 300,
            Some(0),
            None,
        );
    }
    assert_eq!(host_waits(p), n);
}

/// A context event records every stream's last item, and a host wait on it waits for them; a later
/// host wait of the same thread on another context event waits only for the streams given work since
/// (older items precede it through the first wait), another thread's first for them all; a stream's
/// waits likewise, by stream. Work issued after a record is not waited for. With a stream per launch
/// and a record and wait every step, the waits' edges grow as the steps (they grew as steps ×
/// streams, out of memory at 300 k entries).
#[test]
fn a_context_event_waits_for_every_streams_last_item_then_only_for_what_is_new() {
    const C: u64 = 0xc000;
    const D: u64 = 0xd000;
    const E2: u64 = 0xe200;
    let mut p = P::new();
    let ctx_record = |p: &mut P, e: u64, b: u64| {
        p.call(
            "cuCtxRecordEvent",
            "ctx_event_record",
            b,
            b + 50,
            None,
            Some(e),
        )
    };
    let host_wait = |p: &mut P, e: u64, b: u64| {
        p.call("cuEventSynchronize", "event_sync", b, b + 50, None, Some(e))
    };
    p.launch(A, 1_000, "a1", 1_100, 1_200);
    p.launch(B, 1_100, "b1", 1_200, 1_300);
    ctx_record(&mut p, E, 1_200);
    p.launch(B, 1_300, "b2", 1_400, 1_500);
    let w1 = host_wait(&mut p, E, 1_400);
    p.wait(D, E, 1_450);
    p.launch(D, 1_500, "d1", 1_600, 1_700);
    p.launch(C, 1_600, "c1", 1_700, 1_800);
    ctx_record(&mut p, E2, 1_700);
    let w2 = host_wait(&mut p, E2, 1_800);
    let w3 = host_wait(&mut p, E2, 1_850);
    p.p.calls.last_mut().unwrap().tid = TID + 1;
    p.wait(D, E2, 1_900);
    p.launch(D, 2_000, "d2", 2_100, 2_200);
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    let work = |name: &str| {
        let j = t.processes[0].device.iter().position(|d| d.name == name);
        Node::work(j.expect("the kernel's interval"))
    };
    let preds = |n: Node, kind: EdgeKind| -> Vec<Node> {
        (g.preds(n))
            .filter(|e| e.kind == kind)
            .map(|e| e.from())
            .collect()
    };
    let waited = |seq: u64| preds(Node::call(g.call_of_seq(seq).unwrap()), EdgeKind::HostWait);
    assert_eq!(
        waited(w1),
        [work("a1"), work("b1")],
        "b2 came after the record"
    );
    assert_eq!(
        waited(w2),
        [work("b2"), work("d1"), work("c1")],
        "a1 is ordered through w1"
    );
    assert_eq!(
        waited(w3),
        [work("a1"), work("b2"), work("d1"), work("c1")],
        "another thread's first"
    );
    let context = |name: &str| preds(work(name), EdgeKind::ContextEvent);
    assert_eq!(context("d1"), [work("a1"), work("b1")]);
    assert_eq!(
        context("d2"),
        [work("b2"), work("d1"), work("c1")],
        "a1 and b1 precede d1 through D's first wait"
    );

    // A wait on a context event recorded before the thread's last device-wide wait: nothing new.
    let mut p = P::new();
    p.launch(A, 1_000, "a1", 1_100, 1_200);
    ctx_record(&mut p, E, 1_200);
    p.launch(B, 1_300, "b1", 1_400, 1_500);
    p.call("cudaDeviceSynchronize", "sync", 1_500, 1_600, Some(0), None);
    let w = host_wait(&mut p, E, 1_700);
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    assert_eq!(
        preds_of(&g, w, EdgeKind::HostWait),
        0,
        "a1 precedes it through the device sync"
    );

    // Many items on few streams: each stream's latest before the record, found by stream.
    let mut p = P::new();
    for k in 0..20u64 {
        let name = format!("{}{k}", if k % 2 == 0 { "a" } else { "b" });
        p.launch(
            if k % 2 == 0 { A } else { B },
            1_000 + k * 100,
            &name,
            1_100,
            1_200,
        );
    }
    ctx_record(&mut p, E, 3_000);
    p.launch(A, 3_100, "a20", 3_200, 3_300);
    let w = host_wait(&mut p, E, 3_200);
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    let names: Vec<&str> = (g.preds(Node::call(g.call_of_seq(w).unwrap())))
        .filter(|e| e.kind == EdgeKind::HostWait)
        .map(|e| match e.from() {
            Node::Work(j) => t.processes[0].device[j as usize].name.as_str(),
            _ => "?",
        })
        .collect();
    assert_eq!(names, ["a18", "b19"]);

    let mut p = P::new();
    let n = 500u64;
    for r in 0..n {
        let b = 10_000 + r * 1_000;
        p.launch(0x10_0000 + r, b, "own", b + 100, b + 200);
        ctx_record(&mut p, E, b + 200);
        host_wait(&mut p, E, b + 300);
    }
    assert_eq!(host_waits(p), n);
}

/// A stream destroyed and created again at the same handle is a new stream: its first work item
/// follows nothing of the old one (and the legacy stream's order is untouched).
#[test]
fn a_reused_stream_handle_starts_a_new_stream_order() {
    let mut p = P::new();
    p.launch(B, 1_000, "old", 1_200, 2_000);
    p.call("cudaStreamDestroy", "stream", 2_100, 2_150, None, Some(B));
    p.call("cudaStreamCreate", "stream", 2_200, 2_250, None, Some(B));
    p.launch(B, 2_300, "new", 2_500, 3_000);
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    assert!(
        !g.edges.iter().any(|e| e.kind == EdgeKind::StreamOrder),
        "{:?}",
        g.edges
    );
    // Without the destroy, the same handle is the same stream.
    let mut p = P::new();
    p.launch(B, 1_000, "old", 1_200, 2_000);
    p.launch(B, 2_300, "new", 2_500, 3_000);
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    assert_eq!(
        g.edges
            .iter()
            .filter(|e| e.kind == EdgeKind::StreamOrder)
            .count(),
        1
    );
}

/// A Level Zero list or Unified Runtime queue created unordered: no stream order between its items,
/// only around barriers; events named in the calls (`EventLink`) order work across streams and host
/// waits.
#[test]
fn unordered_streams_follow_barriers_and_event_links() {
    use causeway_scanner::facts::model::EventLink;
    let mut p = P::new();
    p.call("zeCommandListCreate", "stream", 10, 20, None, Some(A));
    p.p.calls.last_mut().unwrap().flags = causeway_ring::layout::stream_flags::UNORDERED as u32;
    let k1 = p.launch(A, 100, "k1", 200, 900);
    p.launch(A, 300, "k2", 250, 800);
    p.call(
        "zeCommandListAppendBarrier",
        "stream_op",
        400,
        450,
        Some(A),
        None,
    );
    p.launch(A, 500, "k3", 950, 1_500);
    // On B, in order: w waits for the event k1 signalled.
    let w = p.launch(B, 600, "w", 1_000, 1_200);
    let wait = p.call("urEventWait", "event_sync", 1_300, 1_400, None, Some(0xe1));
    p.p.event_links = vec![
        EventLink {
            call: k1,
            event: 0xe1,
            signals: true,
        },
        EventLink {
            call: w,
            event: 0xe1,
            signals: false,
        },
        EventLink {
            call: wait,
            event: 0xe1,
            signals: false,
        },
    ];
    let t = p.timeline();
    let mut got: Vec<(String, String, EdgeKind)> = named_edges(&t)
        .into_iter()
        .filter(|e| !matches!(e.2, EdgeKind::ProgramOrder | EdgeKind::Issue))
        .collect();
    got.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    let want = [
        ("k1", "urEventWait", EdgeKind::HostWait),
        ("k1", "w", EdgeKind::EventWait),
        ("k1", "zeCommandListAppendBarrier", EdgeKind::StreamOrder),
        ("k2", "zeCommandListAppendBarrier", EdgeKind::StreamOrder),
        ("zeCommandListAppendBarrier", "k3", EdgeKind::StreamOrder),
    ];
    let want: Vec<(String, String, EdgeKind)> = want
        .iter()
        .map(|&(a, b, k)| (a.to_string(), b.to_string(), k))
        .collect();
    let mut want = want;
    want.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    assert_eq!(got, want);
}

/// An event recorded on an unordered stream captures its backlog as it was then: work appended
/// after the record, before the wait, is not waited for (records share the backlog, by length).
#[test]
fn an_unordered_streams_record_captures_its_backlog_at_the_record() {
    let mut p = P::new();
    p.call("zeCommandListCreate", "stream", 10, 20, None, Some(A));
    p.p.calls.last_mut().unwrap().flags = causeway_ring::layout::stream_flags::UNORDERED as u32;
    p.launch(A, 100, "k1", 200, 900);
    p.launch(A, 150, "k2", 250, 800);
    p.call(
        "zeCommandListAppendSignalEvent",
        "event_record",
        200,
        210,
        Some(A),
        Some(0xe1),
    );
    p.launch(A, 300, "k3", 950, 1_500);
    p.call(
        "zeCommandListAppendSignalEvent",
        "event_record",
        400,
        410,
        Some(A),
        Some(0xe2),
    );
    p.call(
        "zeEventHostSynchronize",
        "event_sync",
        500,
        1_000,
        None,
        Some(0xe1),
    );
    p.call(
        "zeEventHostSynchronize",
        "event_sync",
        1_100,
        1_600,
        None,
        Some(0xe2),
    );
    let t = p.timeline();
    let mut got: Vec<(String, String)> = named_edges(&t)
        .into_iter()
        .filter(|e| e.2 == EdgeKind::HostWait)
        .map(|e| (e.0, e.1))
        .collect();
    got.sort();
    let want: Vec<(String, String)> = [
        ("k1", "zeEventHostSynchronize"),
        ("k1", "zeEventHostSynchronize"),
        ("k2", "zeEventHostSynchronize"),
        ("k2", "zeEventHostSynchronize"),
        ("k3", "zeEventHostSynchronize"),
    ]
    .iter()
    .map(|&(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(got, want, "e1: k1, k2; e2: k1, k2, k3");
}

/// Found by review: a wait on several events waits for all of them; the event a UR wait enqueue
/// signals covers what it waited for; a barrier with a wait list waits for those events only; a
/// sync of an unordered stream completes it (later syncs do not wait for earlier work again); a
/// released UR queue at a reused handle starts a new stream order.
#[test]
fn event_lists_barriers_syncs_and_releases_on_intel_streams() {
    use causeway_scanner::facts::model::EventLink;
    const C: u64 = 0xc000;
    const UNORDERED: u32 = causeway_ring::layout::stream_flags::UNORDERED as u32;
    let link = |call, event, signals| EventLink {
        call,
        event,
        signals,
    };
    let mut p = P::new();
    let k1 = p.launch(A, 100, "k1", 200, 900);
    let k2 = p.launch(B, 110, "k2", 210, 950);
    let w = p.call(
        "zeCommandListAppendWaitOnEvents",
        "stream_wait",
        300,
        310,
        Some(C),
        Some(0xe1),
    );
    p.launch(C, 400, "k3", 1_000, 1_100);
    // UR: wait for e1, signal e3; a host wait on e3.
    let uw = p.call(
        "urEnqueueEventsWait",
        "stream_wait",
        500,
        510,
        Some(B),
        Some(0xe1),
    );
    let hw = p.call("urEventWait", "event_sync", 520, 1_200, None, Some(0xe3));
    // Unordered D: k4, then a barrier that waits for e2 only, then k5.
    p.call("zeCommandListCreate", "stream", 10, 20, None, Some(0xd000));
    p.p.calls.last_mut().unwrap().flags = UNORDERED;
    p.launch(0xd000, 600, "k4", 1_300, 1_400);
    let bar = p.call(
        "zeCommandListAppendBarrier",
        "stream_op",
        610,
        620,
        Some(0xd000),
        None,
    );
    p.launch(0xd000, 630, "k5", 1_500, 1_600);
    p.p.event_links = vec![
        link(k1, 0xe1, true),
        link(k2, 0xe2, true),
        link(w, 0xe1, false),
        link(w, 0xe2, false),
        link(uw, 0xe1, false),
        link(uw, 0xe3, true),
        link(hw, 0xe3, false),
        link(bar, 0xe2, false),
    ];
    p.p.event_links.sort_by_key(|l| l.call);
    let named = named_edges(&p.timeline());
    let has = |from: &str, to: &str, kind: EdgeKind| {
        named
            .iter()
            .any(|e| e.0 == from && e.1 == to && e.2 == kind)
    };
    assert!(has("k1", "k3", EdgeKind::EventWait) && has("k2", "k3", EdgeKind::EventWait));
    // e3 covers k2 (the queue's earlier work) and k1 (what the wait waited for).
    assert!(has("k1", "urEventWait", EdgeKind::HostWait));
    assert!(has("k2", "urEventWait", EdgeKind::HostWait));
    assert!(has("k2", "zeCommandListAppendBarrier", EdgeKind::EventWait));
    assert!(!has(
        "k4",
        "zeCommandListAppendBarrier",
        EdgeKind::StreamOrder
    ));
    assert!(has(
        "zeCommandListAppendBarrier",
        "k5",
        EdgeKind::StreamOrder
    ));

    // Syncs of an unordered queue: N enqueue+finish pairs give N host-wait edges, not N²/2.
    let mut p = P::new();
    p.call("urQueueCreate", "stream", 10, 20, None, Some(A));
    p.p.calls.last_mut().unwrap().flags = UNORDERED;
    for i in 0..50 {
        let b = 100 + i * 100;
        p.launch(A, b, "k", b + 10, b + 20);
        p.call("urQueueFinish", "sync", b + 30, b + 40, Some(A), None);
    }
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    let waits = g
        .edges
        .iter()
        .filter(|e| e.kind == EdgeKind::HostWait)
        .count();
    assert_eq!(waits, 50);

    // A released queue whose handle comes back is a new stream.
    let mut p = P::new();
    p.launch(B, 100, "old", 200, 300);
    p.call("urQueueRelease", "stream", 400, 410, None, Some(B));
    p.call("urQueueCreate", "stream", 420, 430, None, Some(B));
    p.launch(B, 500, "new", 600, 700);
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    assert!(
        !g.edges.iter().any(|e| e.kind == EdgeKind::StreamOrder),
        "{:?}",
        g.edges
    );
}

#[test]
fn device_work_whose_call_was_lost_is_missing() {
    let mut p = P::new();
    p.launch(A, 1_000, "k", 1_200, 2_000);
    p.p.device[0].call = Some(999_999).into();
    let t = p.timeline();
    let w = why(&t, &kernel("k", 1)).unwrap();
    assert_eq!(w.cause, "unknown");
    assert!(!w.complete);
    let g = graph(&t.processes[0]);
    assert!(g
        .preds(Node::Work(0))
        .any(|e| e.evidence() == Evidence::Missing));
}

#[test]
fn a_reused_event_handle_never_explains_a_wait_in_its_next_lifetime() {
    let mut p = P::new();
    p.launch(A, 1_000, "long", 1_200, 300_000);
    p.record(E, A, 1_300);
    p.call("cudaEventDestroy", "event", 1_400, 1_450, None, Some(E));
    p.call("cudaEventCreate", "event", 1_500, 1_550, None, Some(0));
    // Same handle, new event, never recorded: the wait is a no-op.
    p.wait(B, E, 1_600);
    p.launch(B, 1_700, "consumer", 1_900, 2_500);
    let t = p.timeline();
    let g = graph(&t.processes[0]);
    assert!(!g.edges.iter().any(|e| e.kind == EdgeKind::EventWait));
    let w = why(&t, &kernel("consumer", 1)).unwrap();
    assert!(!edges(&w).contains(&"event_wait"), "{w:#?}");
    // Recorded again in the new lifetime: now it is the edge.
    let mut p = P::new();
    p.launch(A, 1_000, "long", 1_200, 300_000);
    p.record(E, A, 1_300);
    p.call("cudaEventDestroy", "event", 1_400, 1_450, None, Some(E));
    p.launch(A, 1_500, "second", 300_100, 400_000);
    p.record(E, A, 1_600);
    p.wait(B, E, 1_700);
    p.launch(B, 1_800, "consumer", 400_020, 401_000);
    let t = p.timeline();
    let w = why(&t, &kernel("consumer", 1)).unwrap();
    assert_eq!(w.cause, "dependency");
    assert!(w.detail.contains("second"), "{}", w.detail);
}

#[test]
fn a_sync_waited_for_the_kernel_before_it_on_its_stream() {
    let mut p = P::new();
    p.launch(A, 1_000, "short", 1_200, 2_000);
    p.launch(A, 2_100, "long", 2_300, 800_000);
    let s = p.sync(A, 2_500, 800_010);
    let t = p.timeline();
    let w = why(&t, &Target::Call { pid: 42, seq: s }).unwrap();
    assert_eq!(w.cause, "dependency", "{w:#?}");
    assert!(w.detail.contains("kernel long"), "{}", w.detail);
    assert_eq!(w.chain[0].edge, "host_wait");
    assert_eq!(w.chain[0].delay_ns, 10);
    assert!(w.complete);
    let e = why(
        &t,
        &Target::Call {
            pid: 42,
            seq: 12345,
        },
    )
    .unwrap_err();
    assert!(e.contains("no call with sequence number 12345"), "{e}");
    let e = why(&t, &Target::Call { pid: 7, seq: s }).unwrap_err();
    assert_eq!(e, "no process 7 in the capture (its pids: 42)");
}

#[test]
fn the_slowest_step_names_the_work_its_end_waited_for() {
    let mut p = P::new();
    for (i, k1) in [(0u64, 10_000u64), (1, 400_000), (2, 10_000)] {
        let b = 1_000_000 * (i + 1);
        p.p.ranges.push(Range {
            tid: TID,
            name: intern("step"),
            domain: None,
            begin_ns: b,
            end_ns: Some(b + k1 + 1_000),
            level: 0,
            attrs: Default::default(),
        });
        p.launch(A, b + 100, &format!("k{i}"), b + 300, b + k1);
        p.sync(A, b + 500, b + k1 + 20);
    }
    let t = p.timeline();
    let w = why(
        &t,
        &Target::Step {
            index: None,
            range: None,
        },
    )
    .unwrap();
    assert!(w.target.starts_with("step 1"), "{}", w.target);
    assert_eq!(w.cause, "dependency", "{w:#?}");
    assert!(w.detail.contains("kernel k1"), "{}", w.detail);
    assert!(w.late_ns.unwrap() > 300_000);
    let e = why(
        &t,
        &Target::Step {
            index: Some(9),
            range: None,
        },
    )
    .unwrap_err();
    assert!(e.contains("no step 9"), "{e}");
}

#[test]
fn targets_parse_and_say_what_is_wrong() {
    assert_eq!(
        Target::kernel("gemm#3").unwrap(),
        Target::Kernel {
            name: "gemm".into(),
            k: Some(3)
        }
    );
    assert_eq!(
        Target::kernel("a#b").unwrap(),
        Target::Kernel {
            name: "a#b".into(),
            k: None
        }
    );
    assert!(Target::kernel("gemm#0").unwrap_err().contains("from #1"));
    assert_eq!(
        Target::call("12:34").unwrap(),
        Target::Call { pid: 12, seq: 34 }
    );
    assert!(Target::call("1234").unwrap_err().contains("PID:SEQ"));
    assert!(Target::call("x:1").unwrap_err().contains("process id"));
}

/// A graph launch whose topology the shim recorded at instantiation: nodes 0 `ga` → {1 `gb`,
/// 2 `gc`} → 3 `gd` → 4 (an empty node, no work) → 5 `ge`. Each execution names its node; `gc`
/// runs long, so `ge` waits on `gd`, which waited on `gc`. `drop` leaves node `drop`'s execution
/// out; `rename` gives node 1's execution another kernel's name.
fn graph_launch(drop: Option<u32>, rename: bool) -> Timeline {
    let mut p = P::new();
    p.launch(A, 0, "before", 100, 900);
    let runs: Vec<(u32, &str, u64, u64)> = [
        (0, "ga", 1_200, 2_000),
        (1, if rename { "other" } else { "gb" }, 2_100, 3_000),
        (2, "gc", 2_100, 90_000),
        (3, "gd", 90_100, 91_000),
        (5, "ge", 91_100, 92_000),
    ]
    .into_iter()
    .filter(|r| Some(r.0) != drop)
    .collect();
    p.graph(
        0x6e0,
        &[(0, "ga"), (1, "gb"), (2, "gc"), (3, "gd"), (5, "ge")],
        &[(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 5)],
        &runs,
    );
    p.timeline()
}

#[test]
fn a_graphs_nodes_wait_for_the_nodes_they_depend_on() {
    let t = graph_launch(None, false);
    let mut got: Vec<(String, String)> = named_edges(&t)
        .into_iter()
        .filter(|e| e.2 == EdgeKind::GraphEdge)
        .map(|(a, b, _)| (a, b))
        .collect();
    got.sort();
    let want = [
        ("ga", "gb"),
        ("ga", "gc"),
        ("gb", "gd"),
        ("gc", "gd"),
        ("gd", "ge"),
    ];
    assert_eq!(
        got,
        want.map(|(a, b)| (a.to_string(), b.to_string())),
        "through the empty node 4, ge waits for gd"
    );
    let p = &t.processes[0];
    let g = graph(p);
    assert!(g
        .edges
        .iter()
        .filter(|e| e.kind == EdgeKind::GraphEdge)
        .all(|e| e.evidence() == Evidence::Explicit));
    // Why did ge start at 91.1 us, 90 us after its launch? It waited for gd, which waited for gc.
    let w = why(&t, &kernel("ge", 1)).unwrap();
    assert_eq!(w.cause, "dependency", "{w:#?}");
    assert!(w.detail.contains("gd"), "{}", w.detail);
    assert!(w.complete);
    let whats: Vec<&str> = w.chain.iter().map(|l| l.what.as_str()).collect();
    assert!(
        whats[0].contains("gd") && whats[1].contains("gc"),
        "{whats:?}"
    );
    assert_eq!(&edges(&w)[..2], ["graph_edge", "graph_edge"]);
}

#[test]
fn a_graph_nodes_lost_execution_makes_its_dependents_chain_incomplete() {
    let t = graph_launch(Some(2), false);
    let w = why(&t, &kernel("gd", 1)).unwrap();
    assert!(!w.complete, "{w:#?}");
    assert_eq!(w.cause, "unknown");
    assert!(w
        .chain
        .iter()
        .any(|l| l.evidence == "missing" && l.edge == "graph_edge"));
    assert!(w.detail.contains("graph node 2"), "{}", w.detail);
}

/// A damaged ring's graph edges in a cycle (a CUDA graph has none): the chain stops where it comes
/// back to an item already on it, incomplete, and says so (it went round the cycle to its length
/// limit, with a negative delay on each turn, and called itself complete).
#[test]
fn a_cycle_of_graph_edges_ends_the_chain_incomplete() {
    let mut p = P::new();
    p.launch(A, 0, "before", 100, 900);
    let runs = [
        (0, "ca", 1_200, 2_000),
        (1, "cb", 2_100, 3_000),
        (2, "cc", 3_100, 4_000),
    ];
    p.graph(
        0x6e1,
        &[(0, "ca"), (1, "cb"), (2, "cc")],
        &[(0, 1), (1, 2), (2, 0)],
        &runs,
    );
    let t = p.timeline();
    let w = why(&t, &kernel("cc", 1)).unwrap();
    assert!(!w.complete, "{w:#?}");
    let last = w.chain.last().unwrap();
    assert_eq!((last.edge, last.evidence), ("cycle", "missing"), "{w:#?}");
    assert!(
        last.what.starts_with("a cycle back to kernel c"),
        "{}",
        last.what
    );
    assert!(w.chain.len() <= 4, "{w:#?}");
}

#[test]
fn a_topology_whose_names_disagree_with_the_executions_orders_nothing() {
    let t = graph_launch(None, true);
    assert!(
        !named_edges(&t).iter().any(|e| e.2 == EdgeKind::GraphEdge),
        "a numbering that is not the recorded one must not invent dependencies"
    );
}

/// Every root node of a graph launch waits for what the launch waits for (the work before it on its
/// stream), not only the first to start: here `before` runs long, and both roots of the graph (`ra`,
/// and `rb`, which starts later) start after it.
#[test]
fn each_root_node_of_a_graph_waits_for_the_work_before_the_launch() {
    let mut p = P::new();
    p.launch(A, 0, "before", 100, 50_000);
    p.graph(
        0x6e1,
        &[(0, "ra"), (1, "rb"), (2, "rc")],
        &[(0, 2), (1, 2)],
        &[
            (0, "ra", 50_100, 51_000),
            (1, "rb", 90_000, 91_000),
            (2, "rc", 91_100, 92_000),
        ],
    );
    let t = p.timeline();
    let stream_order: Vec<(String, String)> = named_edges(&t)
        .into_iter()
        .filter(|e| e.2 == EdgeKind::StreamOrder)
        .map(|(a, b, _)| (a, b))
        .collect();
    for root in ["ra", "rb"] {
        assert!(
            stream_order.contains(&("before".to_string(), root.to_string())),
            "{root}: {stream_order:?}"
        );
    }
    assert!(
        !stream_order.iter().any(|(_, b)| b == "rc"),
        "rc waits for its graph predecessors only: {stream_order:?}"
    );
}
