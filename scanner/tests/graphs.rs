//! Kernel executions versus launch calls: launches into a capturing stream execute nothing, and a graph
//! launch executes every kernel node of its instantiated graph. Exact counts from synthetic rings.

mod common;

use causeway_ring::layout::{capture_phase, entry_flags, Class, Kind, Layer, Policy};
use causeway_ring::Fields;
use causeway_scanner::analysis::report::{KernelStats, Report, Totals};
use common::*;

const CUDA_LAUNCH: u16 = 1;
const CU_LAUNCH: u16 = 2;
const CUDA_BEGIN: u16 = 3;
const CU_BEGIN: u16 = 4;
// 5 is NVTX_API.
const CUDA_END: u16 = 6;
const CU_END: u16 = 7;
const CUDA_GRAPH_LAUNCH: u16 = 8;
const CU_GRAPH_LAUNCH: u16 = 9;
const CUDA_INSTANTIATE: u16 = 10;
const CU_INSTANTIATE: u16 = 11;
const CUDA_EVENT_RECORD: u16 = 12;
const CUDA_STREAM_WAIT: u16 = 13;
const CUDA_BEGIN_PTSZ: u16 = 14;
const CUDA_LAUNCH_PTSZ: u16 = 15;

const KA: u64 = 0xa00;
const KB: u64 = 0xb00;
const KC: u64 = 0xc00;
const S: u64 = 0x5000;
const T: u64 = 0x6000;
const U: u64 = 0x7000;

/// `cudaErrorStreamCaptureInvalidated`.
const INVALIDATED: i32 = 901;

/// A ring with the capture and graph APIs named, and a clock the calls advance, so each helper call
/// lies after the previous one on its thread.
struct Prog {
    b: RingBuilder,
    t: u64,
}

impl Prog {
    fn new() -> Prog {
        Prog::with(RingBuilder::new(256, Policy::Drop))
    }

    fn with(b: RingBuilder) -> Prog {
        b.api(
            CUDA_LAUNCH,
            "cudaLaunchKernel",
            Layer::Runtime,
            Class::Launch,
        )
        .api(CU_LAUNCH, "cuLaunchKernel", Layer::Driver, Class::Launch)
        .api(
            CUDA_BEGIN,
            "cudaStreamBeginCapture",
            Layer::Runtime,
            Class::Capture,
        )
        .api(
            CU_BEGIN,
            "cuStreamBeginCapture_v2",
            Layer::Driver,
            Class::Capture,
        )
        .api(
            CUDA_END,
            "cudaStreamEndCapture",
            Layer::Runtime,
            Class::Capture,
        )
        .api(CU_END, "cuStreamEndCapture", Layer::Driver, Class::Capture)
        .api(
            CUDA_GRAPH_LAUNCH,
            "cudaGraphLaunch",
            Layer::Runtime,
            Class::GraphLaunch,
        )
        .api(
            CU_GRAPH_LAUNCH,
            "cuGraphLaunch",
            Layer::Driver,
            Class::GraphLaunch,
        )
        .api(
            CUDA_INSTANTIATE,
            "cudaGraphInstantiate",
            Layer::Runtime,
            Class::Graph,
        )
        .api(
            CU_INSTANTIATE,
            "cuGraphInstantiateWithFlags",
            Layer::Driver,
            Class::Graph,
        )
        .api(
            CUDA_EVENT_RECORD,
            "cudaEventRecord",
            Layer::Runtime,
            Class::EventRecord,
        )
        .api(
            CUDA_STREAM_WAIT,
            "cudaStreamWaitEvent",
            Layer::Runtime,
            Class::StreamWait,
        )
        .api(
            CUDA_BEGIN_PTSZ,
            "cudaStreamBeginCapture_ptsz",
            Layer::Runtime,
            Class::Capture,
        )
        .api(
            CUDA_LAUNCH_PTSZ,
            "cudaLaunchKernel_ptsz",
            Layer::Runtime,
            Class::Launch,
        )
        .kernel(KA, "kA")
        .kernel(KB, "kB")
        .kernel(KC, "kC");
        Prog { b, t: 1000 }
    }

    fn next(&mut self) -> u64 {
        self.t += 1000;
        self.t
    }

    /// One depth-0 call on thread `TID`.
    fn call(&mut self, api: u16, a: [u64; 3], result: i32) {
        let t = self.next();
        self.b
            .call_args(TID, api, 0, t, t + 500, result, a)
            .unwrap();
    }

    /// A runtime call containing the driver call it makes, both returning `result`, on thread `TID`.
    fn nested(&mut self, rt: u16, drv: u16, a: [u64; 3], result: i32) {
        let t = self.next();
        let r = self.b.open_args(TID, rt, 0, t, a).unwrap();
        self.b
            .call_args(TID, drv, 1, t + 100, t + 400, result, a)
            .unwrap();
        self.b.w.end(r, t + 500, result);
    }

    /// A runtime call recorded through CUPTI's runtime callback (a statically linked cudart): the entry
    /// carries no arguments; the driver call inside it (hooked) does.
    fn via_callback(&mut self, rt: u16, drv: u16, a: [u64; 3], result: i32) {
        let t = self.next();
        let f = Fields {
            t_begin: t,
            tid: TID,
            api: rt,
            kind: Kind::Call as u8,
            flags: entry_flags::VIA_CUPTI_CALLBACK,
            ..Fields::default()
        };
        let r = self.b.w.begin(&f).unwrap();
        self.b
            .call_args(TID, drv, 1, t + 100, t + 400, result, a)
            .unwrap();
        self.b.w.end(r, t + 500, result);
    }

    /// cudaLaunchKernel of `f` on `stream`, containing its cuLaunchKernel.
    fn launch(&mut self, stream: u64, f: u64, result: i32) {
        self.nested(CUDA_LAUNCH, CU_LAUNCH, [stream, f, 1], result);
    }

    fn begin(&mut self, stream: u64, result: i32) {
        self.nested(
            CUDA_BEGIN,
            CU_BEGIN,
            [stream, 0, capture_phase::BEGIN],
            result,
        );
    }

    fn end(&mut self, stream: u64, result: i32) {
        self.nested(CUDA_END, CU_END, [stream, 0, capture_phase::END], result);
    }

    /// cudaGraphLaunch of `exec` on `stream` (runtime only, as when it reaches the driver unhooked).
    fn graph_launch(&mut self, exec: u64, stream: u64, result: i32) {
        self.call(CUDA_GRAPH_LAUNCH, [stream, exec, 0], result);
    }

    /// The graph-node entries of one instantiation of `exec`.
    fn nodes(&mut self, exec: u64, funcs: &[u64]) {
        for (i, &f) in funcs.iter().enumerate() {
            let t = self.next();
            self.b
                .graph_node(TID, t, exec, f, i as u32, funcs.len() as u32);
        }
    }

    /// A cudaGraphInstantiate of `exec` as the shim records it: the nested cuGraphInstantiateWithFlags
    /// writes the node list, then the runtime hook writes it again after its own call.
    fn instantiate(&mut self, exec: u64, funcs: &[u64]) {
        let t = self.next();
        let r = self
            .b
            .open_args(TID, CUDA_INSTANTIATE, 0, t, [0, 0x9000, 0])
            .unwrap();
        self.b
            .call_args(TID, CU_INSTANTIATE, 1, t + 100, t + 400, 0, [0, 0x9000, 0])
            .unwrap();
        self.nodes(exec, funcs);
        self.b.w.end(r, self.t + 500, 0);
        self.nodes(exec, funcs);
    }

    fn report(&self) -> Report {
        self.b.report("graphs")
    }
}

fn kernel<'a>(r: &'a Report, name: &str) -> &'a KernelStats {
    r.kernels
        .iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("no kernel {name} in {:?}", r.kernels))
}

/// (launches, direct, via_graph, captured, failed, open) of kernel `name`.
fn counts(r: &Report, name: &str) -> (u64, u64, u64, u64, u64, u64) {
    let k = kernel(r, name);
    (
        k.launches,
        k.direct,
        k.via_graph,
        k.captured,
        k.failed,
        k.open,
    )
}

/// (launches, failed_launches, graph_launches, graph_launches_unresolved, captured_launches).
fn totals(t: &Totals) -> (u64, u64, u64, u64, u64) {
    (
        t.launches,
        t.failed_launches,
        t.graph_launches,
        t.graph_launches_unresolved,
        t.captured_launches,
    )
}

fn calls(r: &Report, name: &str) -> u64 {
    r.apis
        .iter()
        .find(|a| a.name == name)
        .map_or(0, |a| a.calls)
}

#[test]
fn launches_into_a_capturing_stream_are_captured_not_executed() {
    let mut p = Prog::new();
    p.launch(S, KA, 0); // before the capture: direct
    p.begin(S, 0); // cudaStreamBeginCapture containing cuStreamBeginCapture_v2: both set, harmless
    p.launch(S, KA, 0); // captured (a runtime→driver pair: one captured launch)
    p.call(CU_LAUNCH, [S, KA, 1], 0); // a driver launch on S: captured too
    p.launch(T, KA, 0); // another stream during the capture: direct
    p.launch(S, KB, 0); // captured
    p.launch(S, KA, 700); // failed while capturing: a failure, not a capture
    p.end(S, 0); // both layers clear the stream
    p.launch(S, KA, 0); // after the capture: direct
    p.begin(T, 1); // a begin that failed does not start a capture
    p.launch(T, KB, 0); // so this is direct
    let r = p.report();
    // kA: direct before, on T, after = 3; captured 2; failed 1.
    assert_eq!(counts(&r, "kA"), (3, 3, 0, 2, 1, 0));
    // kB: captured 1 on S, direct 1 on T after the failed begin.
    assert_eq!(counts(&r, "kB"), (1, 1, 0, 1, 0, 0));
    assert_eq!(totals(&r.totals), (4, 1, 0, 0, 3));
    // Launch calls are unchanged as API statistics: 7 runtime launches, 8 driver launches.
    assert_eq!(calls(&r, "cudaLaunchKernel"), 7);
    assert_eq!(calls(&r, "cuLaunchKernel"), 8);
}

#[test]
fn an_invalidated_capture_ends_but_other_failed_ends_do_not() {
    let mut p = Prog::new();
    p.begin(S, 0);
    p.end(S, 1); // a failed end (not "invalidated"): the stream is still capturing
    p.launch(S, KA, 0); // captured
    p.end(S, INVALIDATED); // the capture ends, with no graph
    p.launch(S, KA, 0); // direct
    let r = p.report();
    assert_eq!(counts(&r, "kA"), (1, 1, 0, 1, 0, 0));
}

#[test]
fn streams_that_join_a_capture_through_events_are_captured() {
    let mut p = Prog::new();
    let (e1, e2, e3) = (0xe1, 0xe2, 0xe3);
    p.call(CUDA_EVENT_RECORD, [U, e3, 0], 0); // e3 recorded outside any capture
    p.begin(S, 0);
    p.call(CUDA_EVENT_RECORD, [S, e1, 0], 0); // fork: e1 is recorded in the capture
    p.call(CUDA_STREAM_WAIT, [T, e1, 0], 0); // T joins S's capture
    p.launch(T, KA, 0); // captured
    p.call(CUDA_STREAM_WAIT, [U, e3, 0], 0); // U waits on an uncaptured event: U stays out
    p.launch(U, KA, 0); // direct
    p.call(CUDA_EVENT_RECORD, [T, e2, 0], 0); // join back
    p.call(CUDA_STREAM_WAIT, [S, e2, 0], 0);
    p.end(S, 0); // ends the capture for T too
    p.launch(T, KA, 0); // direct
    p.call(CUDA_STREAM_WAIT, [U, e1, 0], 0); // e1 belonged to the ended capture: U does not join
    p.launch(U, KA, 0); // direct
    let r = p.report();
    assert_eq!(counts(&r, "kA"), (3, 3, 0, 1, 0, 0));
}

#[test]
fn the_per_thread_default_stream_is_per_thread() {
    let mut p = Prog::new();
    let call = |p: &mut Prog, tid: u32, api: u16, a0: u64, f: u64, flags: u8| {
        let t = p.next();
        let seq =
            p.b.w
                .begin(&Fields {
                    t_begin: t,
                    tid,
                    api,
                    kind: Kind::Call as u8,
                    flags,
                    a0,
                    a1: f,
                    a2: if api == CUDA_BEGIN_PTSZ {
                        capture_phase::BEGIN
                    } else {
                        1
                    },
                    ..Fields::default()
                })
                .unwrap();
        p.b.w.end(seq, t + 500, 0);
    };
    let ptsz = entry_flags::PER_THREAD;
    // cudaStreamBeginCapture_ptsz(0) on thread 1 captures thread 1's per-thread default stream.
    call(&mut p, TID, CUDA_BEGIN_PTSZ, 0, 0, ptsz);
    // cudaStreamPerThread (handle 2) on thread 1: captured.
    call(&mut p, TID, CUDA_LAUNCH, 2, KA, 0);
    // Stream 0 through a _ptsz entry point on thread 1: the same stream, captured.
    call(&mut p, TID, CUDA_LAUNCH_PTSZ, 0, KA, ptsz);
    // Thread 2's per-thread default stream is another stream: direct.
    call(&mut p, TID2, CUDA_LAUNCH_PTSZ, 0, KA, ptsz);
    call(&mut p, TID2, CUDA_LAUNCH, 2, KA, 0);
    // Stream 0 without the flag is the legacy default stream: direct.
    call(&mut p, TID, CUDA_LAUNCH, 0, KA, 0);
    let r = p.report();
    assert_eq!(counts(&r, "kA"), (3, 3, 0, 2, 0, 0));
}

#[test]
fn graph_launches_execute_every_kernel_node() {
    let mut p = Prog::new();
    let e = 0xe000;
    p.launch(S, KA, 0); // one direct kA
    p.instantiate(e, &[KA, KB, KA]); // 3 kernel nodes, two of kA
                                     // 5 graph launches of E:
    p.nested(CUDA_GRAPH_LAUNCH, CU_GRAPH_LAUNCH, [S, e, 0], 0); // 1: a runtime→driver pair, once
    p.graph_launch(e, S, 0); // 2
    p.call(CU_GRAPH_LAUNCH, [S, e, 0], 0); // 3: a driver graph launch of its own
    p.nested(CUDA_GRAPH_LAUNCH, CU_GRAPH_LAUNCH, [S, e, 0], 400); // 4: failed: runs nothing
    p.graph_launch(e, T, 0); // 5
                             // A graph launch that never returned runs nothing that the report can vouch for.
    let t = p.next();
    p.b.open_args(TID, CUDA_GRAPH_LAUNCH, 0, t, [S, e, 0])
        .unwrap();
    let r = p.report();
    // 4 successful launches × (kA twice, kB once); kA also has its direct launch.
    assert_eq!(counts(&r, "kA"), (9, 1, 8, 0, 0, 0));
    assert_eq!(counts(&r, "kB"), (4, 0, 4, 0, 0, 0));
    assert_eq!(r.kernels[0].name, "kA");
    assert_eq!(totals(&r.totals), (13, 0, 4, 0, 0));
    // The calls themselves: 1, 2, 4 and the open one are runtime calls; 1, 3 and 4 reach the driver.
    assert_eq!(calls(&r, "cudaGraphLaunch"), 5);
    assert_eq!(calls(&r, "cuGraphLaunch"), 3);
    // Graph-node entries are not calls.
    assert_eq!(r.totals.calls, 2 + 2 + 8);
}

#[test]
fn a_reinstantiation_that_reuses_the_exec_handle_replaces_its_nodes() {
    let mut p = Prog::new();
    let (e, f) = (0xe000, 0xf000);
    p.instantiate(e, &[KA, KB]);
    p.instantiate(f, &[KC]);
    p.graph_launch(e, S, 0);
    p.graph_launch(e, S, 0);
    p.graph_launch(f, S, 0);
    // E destroyed and its handle reused for a graph of one kC node.
    p.instantiate(e, &[KC]);
    p.graph_launch(e, S, 0);
    p.graph_launch(e, S, 0);
    p.graph_launch(e, S, 0);
    let r = p.report();
    assert_eq!(counts(&r, "kA"), (2, 0, 2, 0, 0, 0));
    assert_eq!(counts(&r, "kB"), (2, 0, 2, 0, 0, 0));
    // 3 launches of the new E + 1 of F.
    assert_eq!(counts(&r, "kC"), (4, 0, 4, 0, 0, 0));
    assert_eq!(totals(&r.totals), (8, 0, 6, 0, 0));
}

#[test]
fn a_graph_launch_of_an_unknown_exec_is_unresolved() {
    let mut p = Prog::new();
    p.graph_launch(0xdead, S, 0);
    p.graph_launch(0xdead, S, 5); // failed: not a graph launch that ran
    let r = p.report();
    assert!(r.kernels.is_empty(), "{:?}", r.kernels);
    assert_eq!(totals(&r.totals), (0, 0, 1, 1, 0));
    let text = causeway_scanner::render::text::render(&r);
    assert!(
        text.contains("(1 of them with unknown kernels, not counted)"),
        "{text}"
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("1 of 1 graph launches ran graphs whose kernel nodes are not")),
        "{:?}",
        r.warnings
    );
    // An explicitly empty node list (ordinal 0 of 0: a graph with no kernel nodes) resolves its
    // launches to nothing.
    let t = p.next();
    p.b.graph_node(TID, t, 0xe0e0, 0, 0, 0);
    p.graph_launch(0xe0e0, S, 0);
    let r = p.report();
    assert!(r.kernels.is_empty(), "{:?}", r.kernels);
    assert_eq!(totals(&r.totals), (0, 0, 2, 1, 0));
}

#[test]
fn a_node_list_missing_entries_counts_what_it_has_and_is_unresolved() {
    let mut p = Prog::new();
    let e = 0xe000;
    // Ordinal 0 of 3 was lost (say, overwritten): ordinals 1 and 2 remain.
    let t = p.next();
    p.b.graph_node(TID, t, e, KB, 1, 3);
    p.b.graph_node(TID, t + 1, e, KC, 2, 3);
    // A contradictory entry (ordinal past the count) is ignored.
    p.b.graph_node(TID, t + 2, e, KA, 7, 3);
    p.graph_launch(e, S, 0);
    let r = p.report();
    assert_eq!(counts(&r, "kB"), (1, 0, 1, 0, 0, 0));
    assert_eq!(counts(&r, "kC"), (1, 0, 1, 0, 0, 0));
    assert_eq!(r.kernels.len(), 2);
    assert_eq!(totals(&r.totals), (2, 0, 1, 1, 0));
    // A full instantiation of the same handle, with the same node count, replaces the partial list
    // from its ordinal 0 on: resolved again, and nothing of the old list is left.
    p.nodes(e, &[KA, KA, KA]);
    p.graph_launch(e, S, 0);
    let r = p.report();
    assert_eq!(counts(&r, "kA"), (3, 0, 3, 0, 0, 0));
    assert_eq!(counts(&r, "kB"), (1, 0, 1, 0, 0, 0));
    assert_eq!(counts(&r, "kC"), (1, 0, 1, 0, 0, 0));
    assert_eq!(totals(&r.totals), (5, 0, 2, 1, 0));
    // An ordinal the list already holds starts a new list too (this instantiation's ordinal 0 was
    // lost): only kB, and unresolved.
    let t = p.next();
    p.b.graph_node(TID, t, e, KB, 1, 3);
    p.graph_launch(e, S, 0);
    let r = p.report();
    assert_eq!(counts(&r, "kA"), (3, 0, 3, 0, 0, 0));
    assert_eq!(counts(&r, "kB"), (2, 0, 2, 0, 0, 0));
    assert_eq!(totals(&r.totals), (6, 0, 3, 2, 0));
}

#[test]
fn a_graph_launched_into_a_capturing_stream_runs_nothing() {
    let mut p = Prog::new();
    let e = 0xe000;
    p.instantiate(e, &[KA]);
    p.begin(S, 0);
    p.graph_launch(e, S, 0); // becomes a child graph node of the captured graph
    p.graph_launch(e, T, 0); // another stream: runs
    p.end(S, 0);
    let r = p.report();
    assert_eq!(counts(&r, "kA"), (1, 0, 1, 0, 0, 0));
    assert_eq!(totals(&r.totals), (1, 0, 1, 0, 0));
}

#[test]
fn capture_then_graph_launch_counts_like_a_profiler() {
    // The usual pattern: capture a few launches, instantiate, replay the graph 10 times.
    let mut p = Prog::new();
    let e = 0xe000;
    p.launch(S, KA, 0); // warm-up: direct
    p.begin(S, 0);
    p.launch(S, KA, 0);
    p.launch(S, KB, 0);
    p.end(S, 0);
    p.instantiate(e, &[KA, KB]);
    for _ in 0..10 {
        p.graph_launch(e, S, 0);
    }
    let r = p.report();
    // A profiler sees kA 11 times (1 + 10 replays) and kB 10 times; the captured launches ran nothing.
    assert_eq!(counts(&r, "kA"), (11, 1, 10, 1, 0, 0));
    assert_eq!(counts(&r, "kB"), (10, 0, 10, 1, 0, 0));
    assert_eq!(totals(&r.totals), (21, 0, 10, 0, 2));
    let text = causeway_scanner::render::text::render(&r);
    assert!(
        text.contains("launches are kernel executions: 1 direct + 20 as nodes of 10 graph launches; 2 launches captured into graphs ran nothing"),
        "{text}"
    );
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.ends_with(" kA"))
        .unwrap()
        .split_whitespace()
        .collect();
    // launches, direct, graph, captured, failed, open, kernel.
    assert_eq!(row, ["11", "1", "10", "1", "0", "0", "kA"]);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(
        v["kernels"][0],
        serde_json::json!({"name": "kA", "symbol": "kA", "launches": 11, "direct": 1, "via_graph": 10,
            "captured": 1, "failed": 0, "open": 0})
    );
    for k in [
        "graph_launches",
        "graph_launches_unresolved",
        "captured_launches",
    ] {
        assert!(v["totals"][k].is_u64(), "totals.{k} missing");
    }
}

#[test]
fn graphs_and_captures_are_per_process() {
    let dir = TempDir::new("graphs-procs");
    let e = 0xe000;
    let mut a = Prog::with(RingBuilder::with(256, Policy::Drop, 3000, 1));
    a.instantiate(e, &[KA]);
    a.begin(S, 0); // never ended in this process
    a.graph_launch(e, T, 0);
    a.b.write_to(&dir.join("a.cwring"));
    let mut b = Prog::with(RingBuilder::with(256, Policy::Drop, 3001, 1));
    // Same handles in another process: E was never instantiated here, and S is not capturing.
    b.graph_launch(e, T, 0);
    b.launch(S, KA, 0);
    b.b.write_to(&dir.join("b.cwring"));
    let r = Report::from_path(dir.path()).unwrap();
    assert_eq!(counts(&r, "kA"), (2, 1, 1, 0, 0, 0));
    assert_eq!(totals(&r.totals), (2, 0, 2, 1, 0));
}

#[test]
fn calls_recorded_through_cuptis_callback_take_their_arguments_from_the_driver_call() {
    // Static cudart at level 3: the runtime entries come from CUPTI's callback without arguments; the
    // stream, kernel and exec handle are those of the driver call nested in each.
    let mut p = Prog::new();
    let e = 0xe000;
    p.via_callback(CUDA_LAUNCH, CU_LAUNCH, [S, KA, 1], 0); // direct
    p.begin(S, 0);
    p.via_callback(CUDA_LAUNCH, CU_LAUNCH, [S, KA, 1], 0); // captured on S
    p.via_callback(CUDA_LAUNCH, CU_LAUNCH, [S, KB, 1], 0);
    p.end(S, 0);
    p.instantiate(e, &[KA, KB]);
    for _ in 0..5 {
        p.via_callback(CUDA_GRAPH_LAUNCH, CU_GRAPH_LAUNCH, [S, e, 0], 0);
    }
    let r = p.report();
    assert_eq!(counts(&r, "kA"), (6, 1, 5, 1, 0, 0));
    assert_eq!(counts(&r, "kB"), (5, 0, 5, 1, 0, 0));
    assert_eq!(r.totals.graph_launches, 5);
    assert_eq!(r.totals.graph_launches_unresolved, 0);
}
