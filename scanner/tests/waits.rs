//! Host waits: which device work each stream, device and event sync waited for (by stream order and
//! event semantics, never by time), handle generations, nesting, and — at level 3 — how long the
//! device kept the host waiting. Exact numbers from synthetic rings written with the real ring writer.

mod common;

use causeway_ring::layout::{Backend, Class, Layer, Policy};
use causeway_scanner::analysis::report::{Report, Wait, WaitStats};
use common::*;

const LAUNCH: u16 = 1;
const CU_LAUNCH: u16 = 2;
const MEMCPY_ASYNC: u16 = 3;
const STREAM_SYNC: u16 = 4;
// 5 is NVTX_API.
const CU_STREAM_SYNC: u16 = 6;
const DEVICE_SYNC: u16 = 7;
const EVENT_RECORD: u16 = 8;
const EVENT_SYNC: u16 = 9;
const STREAM_DESTROY: u16 = 10;
const STREAM_CREATE: u16 = 11;
const MEMCPY: u16 = 12;
const EVENT_DESTROY: u16 = 13;
const CU_CTX_SYNC: u16 = 14;

const H_GEMM: u64 = 0xa00;
const H_RELU: u64 = 0xb00;
const H_NORM: u64 = 0xc00;
/// Text ids of kernel names as the device backend interns them.
const GEMM: u64 = 100;
const RELU: u64 = 101;

const S1: u64 = 0x5100;
const S2: u64 = 0x5200;
const S3: u64 = 0x5300;
const PER_THREAD: u64 = 2;
const E: u64 = 0xe100;

fn named(b: RingBuilder) -> RingBuilder {
    b.api(LAUNCH, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .api(CU_LAUNCH, "cuLaunchKernel", Layer::Driver, Class::Launch)
        .api(MEMCPY_ASYNC, "cudaMemcpyAsync", Layer::Runtime, Class::Copy)
        .api(
            STREAM_SYNC,
            "cudaStreamSynchronize",
            Layer::Runtime,
            Class::Sync,
        )
        .api(NVTX_API, "nvtxMarkA", Layer::Nvtx, Class::Other)
        .api(
            CU_STREAM_SYNC,
            "cuStreamSynchronize",
            Layer::Driver,
            Class::Sync,
        )
        .api(
            DEVICE_SYNC,
            "cudaDeviceSynchronize",
            Layer::Runtime,
            Class::Sync,
        )
        .api(
            EVENT_RECORD,
            "cudaEventRecord",
            Layer::Runtime,
            Class::EventRecord,
        )
        .api(
            EVENT_SYNC,
            "cudaEventSynchronize",
            Layer::Runtime,
            Class::EventSync,
        )
        .api(
            STREAM_DESTROY,
            "cudaStreamDestroy",
            Layer::Runtime,
            Class::Stream,
        )
        .api(
            STREAM_CREATE,
            "cudaStreamCreate",
            Layer::Runtime,
            Class::Stream,
        )
        .api(MEMCPY, "cudaMemcpy", Layer::Runtime, Class::Copy)
        .api(
            EVENT_DESTROY,
            "cudaEventDestroy",
            Layer::Runtime,
            Class::Event,
        )
        .api(CU_CTX_SYNC, "cuCtxSynchronize", Layer::Driver, Class::Sync)
        .kernel(H_GEMM, "gemm")
        .kernel(H_RELU, "relu")
        .kernel(H_NORM, "norm")
        .text(GEMM, "gemm")
        .text(RELU, "relu");
    b
}

fn ring() -> RingBuilder {
    named(RingBuilder::new(128, Policy::Drop))
}

fn ring3() -> RingBuilder {
    let b = named(RingBuilder::level3(128, Policy::Drop));
    b.w.set_backend(Backend::Cupti);
    b
}

fn report_of(b: &RingBuilder) -> Report {
    b.report("waits")
}

/// A successful runtime launch `[t, t + 10]` of `handle` on `stream`.
fn launch(b: &RingBuilder, t: u64, stream: u64, handle: u64) -> u64 {
    b.call_args(TID, LAUNCH, 0, t, t + 10, 0, [stream, handle, 1])
        .unwrap()
}

/// A successful depth-0 call of `api` `[t0, t1]` with arguments `a`.
fn call(b: &RingBuilder, api: u16, t0: u64, t1: u64, a: [u64; 3]) -> u64 {
    b.call_args(TID, api, 0, t0, t1, 0, a).unwrap()
}

fn stats<'a>(r: &'a Report, name: &str) -> &'a WaitStats {
    r.waits
        .iter()
        .find(|w| w.name == name)
        .unwrap_or_else(|| panic!("no wait {name} in {:?}", r.waits))
}

/// The listed wait of sync call `seq`.
fn wait(r: &Report, seq: u64) -> &Wait {
    r.longest_waits
        .iter()
        .find(|w| w.seq == seq)
        .unwrap_or_else(|| panic!("no wait seq {seq} in {:?}", r.longest_waits))
}

fn kernels(w: &Wait) -> Vec<&str> {
    w.kernels.iter().map(String::as_str).collect()
}

#[test]
fn a_stream_sync_covers_only_its_own_streams_work() {
    let b = ring();
    launch(&b, 100, S1, H_GEMM);
    launch(&b, 200, S2, H_RELU);
    launch(&b, 300, S1, H_RELU);
    call(&b, MEMCPY_ASYNC, 400, 410, [S1, 4096, 1]);
    let s1 = call(&b, STREAM_SYNC, 1000, 5000, [S1, 0, 0]);
    let s2 = call(&b, STREAM_SYNC, 6000, 6100, [S2, 0, 0]);
    // S1 again: its work was covered by the first sync.
    let again = call(&b, STREAM_SYNC, 7000, 7050, [S1, 0, 0]);
    let r = report_of(&b);
    assert_eq!(r.waits.len(), 1);
    assert_eq!(
        stats(&r, "cudaStreamSynchronize"),
        &WaitStats {
            name: "cudaStreamSynchronize".into(),
            count: 3,
            empty: 1,
            blocked_total_ns: 4000 + 100 + 50,
            blocked_p50_ns: 100,
            blocked_p99_ns: 4000,
            work_items: 3 + 1,
            with_device_times: 0,
            waited_p50_ns: None,
            tail_p50_ns: None,
        }
    );
    let w = wait(&r, s1);
    assert_eq!((w.work_items, w.blocked_ns), (3, 4000));
    assert_eq!(kernels(w), ["gemm", "relu"]);
    assert_eq!((w.waited_on_device_ns, w.tail_ns), (None, None));
    let w = wait(&r, s2);
    assert_eq!((w.work_items, kernels(w)), (1, vec!["relu"]));
    assert_eq!(wait(&r, again).work_items, 0);
    // Longest first.
    let order: Vec<u64> = r.longest_waits.iter().map(|w| w.seq).collect();
    assert_eq!(order, [s1, s2, again]);
}

#[test]
fn a_device_sync_covers_all_streams_but_not_work_issued_after_it_began() {
    let b = ring();
    launch(&b, 100, S1, H_GEMM);
    launch(&b, 200, S2, H_RELU);
    launch(&b, 300, PER_THREAD, H_NORM);
    call(&b, MEMCPY_ASYNC, 400, 410, [S3, 4096, 1]);
    // A synchronous copy has finished when it returns: not pending work.
    call(&b, MEMCPY, 500, 600, [0, 4096, 1]);
    let dev = b.open_args(TID, DEVICE_SYNC, 0, 1000, [0, 0, 0]).unwrap();
    // Issued on another thread while the device sync was blocked: not covered by it.
    b.call_args(TID2, LAUNCH, 0, 1500, 1510, 0, [S1, H_RELU, 1])
        .unwrap();
    b.w.end(dev, 3000, 0);
    let s1 = call(&b, STREAM_SYNC, 4000, 4100, [S1, 0, 0]);
    // Everything is covered now.
    let ctx = call(&b, CU_CTX_SYNC, 5000, 5020, [0, 0, 0]);
    let r = report_of(&b);
    let w = wait(&r, dev);
    assert_eq!((w.work_items, w.blocked_ns), (4, 2000));
    assert_eq!(kernels(w), ["gemm", "relu", "norm"]);
    let w = wait(&r, s1);
    assert_eq!((w.work_items, kernels(w)), (1, vec!["relu"]));
    assert_eq!(wait(&r, ctx).work_items, 0);
    let d = stats(&r, "cudaDeviceSynchronize");
    assert_eq!((d.count, d.empty, d.work_items), (1, 0, 4));
    let c = stats(&r, "cuCtxSynchronize");
    assert_eq!((c.count, c.empty, c.work_items), (1, 1, 0));
}

#[test]
fn an_event_sync_covers_work_before_the_record_on_the_records_stream_only() {
    let b = ring();
    launch(&b, 100, S1, H_GEMM);
    launch(&b, 200, S2, H_RELU);
    call(&b, EVENT_RECORD, 300, 310, [S1, E, 0]);
    launch(&b, 400, S1, H_NORM);
    let e1 = call(&b, EVENT_SYNC, 1000, 2000, [0, E, 0]);
    // The latest completed record wins: now E marks S2's work.
    call(&b, EVENT_RECORD, 2100, 2110, [S2, E, 0]);
    // A record that never returned is not the latest record.
    b.open_args(TID2, EVENT_RECORD, 0, 2150, [S1, E, 0])
        .unwrap();
    let e2 = call(&b, EVENT_SYNC, 2200, 2500, [0, E, 0]);
    let s1 = call(&b, STREAM_SYNC, 3000, 3300, [S1, 0, 0]);
    let s2 = call(&b, STREAM_SYNC, 4000, 4010, [S2, 0, 0]);
    let r = report_of(&b);
    let w = wait(&r, e1);
    assert_eq!((w.work_items, kernels(w)), (1, vec!["gemm"]));
    let w = wait(&r, e2);
    assert_eq!((w.work_items, kernels(w)), (1, vec!["relu"]));
    let w = wait(&r, s1);
    assert_eq!((w.work_items, kernels(w)), (1, vec!["norm"]));
    assert_eq!(wait(&r, s2).work_items, 0);
    let e = stats(&r, "cudaEventSynchronize");
    assert_eq!((e.count, e.empty, e.work_items), (2, 0, 2));
    assert_eq!(e.blocked_total_ns, 1000 + 300);
    let s = stats(&r, "cudaStreamSynchronize");
    assert_eq!((s.count, s.empty, s.work_items), (2, 1, 1));
}

#[test]
fn a_destroyed_and_reused_handle_does_not_mix_generations() {
    let b = ring();
    launch(&b, 100, S1, H_GEMM);
    call(&b, EVENT_RECORD, 150, 160, [S1, E, 0]);
    call(&b, STREAM_DESTROY, 200, 210, [S1, 0, 0]);
    call(&b, EVENT_DESTROY, 220, 230, [0, E, 0]);
    // The handles come back from the next creates (the shim does not see the out-pointer).
    call(&b, STREAM_CREATE, 300, 310, [0, 0, 0]);
    launch(&b, 400, S1, H_RELU);
    let s1 = call(&b, STREAM_SYNC, 1000, 1100, [S1, 0, 0]);
    // E's record was of its old generation: the new E was never recorded.
    let ev = call(&b, EVENT_SYNC, 1200, 1210, [0, E, 0]);
    // The old generation's work is still pending on the device: a device sync covers it.
    let dev = call(&b, DEVICE_SYNC, 2000, 2500, [0, 0, 0]);
    let r = report_of(&b);
    let w = wait(&r, s1);
    assert_eq!((w.work_items, kernels(w)), (1, vec!["relu"]));
    assert_eq!(wait(&r, ev).work_items, 0);
    let w = wait(&r, dev);
    assert_eq!((w.work_items, kernels(w)), (1, vec!["gemm"]));
    assert_eq!(stats(&r, "cudaEventSynchronize").empty, 1);
}

#[test]
fn a_runtime_sync_containing_its_driver_sync_is_one_wait() {
    let b = ring();
    // A runtime launch containing its driver launch: one work item.
    let l = b.open_args(TID, LAUNCH, 0, 100, [S1, H_GEMM, 1]).unwrap();
    b.call_args(TID, CU_LAUNCH, 1, 105, 115, 0, [S1, H_GEMM, 1])
        .unwrap();
    b.w.end(l, 120, 0);
    let s = b.open_args(TID, STREAM_SYNC, 0, 1000, [S1, 0, 0]).unwrap();
    b.call_args(TID, CU_STREAM_SYNC, 1, 1010, 1990, 0, [S1, 0, 0])
        .unwrap();
    b.w.end(s, 2000, 0);
    // A driver sync called directly is a wait of its own (nothing pending).
    let direct = call(&b, CU_STREAM_SYNC, 3000, 3040, [S1, 0, 0]);
    let r = report_of(&b);
    let rt = stats(&r, "cudaStreamSynchronize");
    assert_eq!((rt.count, rt.work_items, rt.blocked_total_ns), (1, 1, 1000));
    let w = wait(&r, s);
    assert_eq!((w.work_items, kernels(w)), (1, vec!["gemm"]));
    let drv = stats(&r, "cuStreamSynchronize");
    assert_eq!(
        (drv.count, drv.empty, drv.work_items, drv.blocked_total_ns),
        (1, 1, 0, 40)
    );
    assert_eq!(wait(&r, direct).work_items, 0);
    assert_eq!(r.longest_waits.len(), 2);
}

#[test]
fn device_intervals_give_waited_and_tail_exactly() {
    let b = ring3();
    let a = launch(&b, 100, S1, H_GEMM);
    let c = launch(&b, 200, S1, H_RELU);
    let s = call(&b, STREAM_SYNC, 1000, 5000, [S1, 0, 0]);
    b.kernel_interval(a, GEMM, 300, 2000).unwrap();
    b.kernel_interval(c, RELU, 2000, 4200).unwrap();
    // Work that finished before the sync began: waited 0, tail = the whole call.
    let d = launch(&b, 6000, S1, H_GEMM);
    b.kernel_interval(d, GEMM, 6100, 6500).unwrap();
    let early = call(&b, STREAM_SYNC, 7000, 7600, [S1, 0, 0]);
    // An item without a device interval: the last device end is unknown.
    launch(&b, 8000, S1, H_RELU);
    let unknown = call(&b, STREAM_SYNC, 9000, 9100, [S1, 0, 0]);
    let r = report_of(&b);
    let w = wait(&r, s);
    assert_eq!(w.work_items, 2);
    // Last device end 4200: waited 4200 − 1000, tail 5000 − 4200.
    assert_eq!((w.waited_on_device_ns, w.tail_ns), (Some(3200), Some(800)));
    assert_eq!(kernels(w), ["gemm", "relu"]);
    let w = wait(&r, early);
    assert_eq!((w.waited_on_device_ns, w.tail_ns), (Some(0), Some(600)));
    let w = wait(&r, unknown);
    assert_eq!(w.work_items, 1);
    assert_eq!((w.waited_on_device_ns, w.tail_ns), (None, None));
    assert_eq!(
        stats(&r, "cudaStreamSynchronize"),
        &WaitStats {
            name: "cudaStreamSynchronize".into(),
            count: 3,
            empty: 0,
            blocked_total_ns: 4000 + 600 + 100,
            blocked_p50_ns: 600,
            blocked_p99_ns: 4000,
            work_items: 4,
            with_device_times: 2,
            // Nearest rank of two values: the smaller (waited 0 and 3200; tails 600 and 800).
            waited_p50_ns: Some(0),
            tail_p50_ns: Some(600),
        }
    );
}

#[test]
fn a_call_with_several_intervals_waits_for_the_latest_end_in_any_order() {
    // One launch, three intervals recorded out of time order (a graph's kernels, or a kernel and
    // its re-timed copy): the wait ends with the latest, whichever interval was written last.
    let b = ring3();
    let a = launch(&b, 100, S1, H_GEMM);
    let c = launch(&b, 150, S1, H_RELU);
    let s = call(&b, STREAM_SYNC, 1000, 5000, [S1, 0, 0]);
    b.kernel_interval(c, RELU, 2500, 2600).unwrap();
    b.kernel_interval(a, GEMM, 300, 3900).unwrap();
    b.kernel_interval(a, GEMM, 300, 1200).unwrap();
    b.kernel_interval(a, GEMM, 300, 2000).unwrap();
    let r = report_of(&b);
    let w = wait(&r, s);
    assert_eq!(w.work_items, 2);
    // Last device end 3900 (the first of a's intervals written): waited 2900, tail 1100.
    assert_eq!((w.waited_on_device_ns, w.tail_ns), (Some(2900), Some(1100)));
}

#[test]
fn a_sync_with_nothing_pending_is_empty() {
    let b = ring();
    let s = call(&b, STREAM_SYNC, 100, 200, [S1, 0, 0]);
    let dev = call(&b, DEVICE_SYNC, 300, 350, [0, 0, 0]);
    // An event never recorded.
    let ev = call(&b, EVENT_SYNC, 400, 410, [0, E, 0]);
    // A failed launch issued nothing.
    b.call_args(TID, LAUNCH, 0, 500, 510, 98, [S1, H_GEMM, 1])
        .unwrap();
    let after = call(&b, STREAM_SYNC, 600, 700, [S1, 0, 0]);
    // A sync that failed or never returned is no wait.
    launch(&b, 800, S2, H_RELU);
    b.call_args(TID, STREAM_SYNC, 0, 900, 950, 700, [S2, 0, 0])
        .unwrap();
    b.open_args(TID, STREAM_SYNC, 0, 1000, [S2, 0, 0]).unwrap();
    let r = report_of(&b);
    for seq in [s, dev, ev, after] {
        let w = wait(&r, seq);
        assert_eq!((w.work_items, w.kernels.len()), (0, 0), "{w:?}");
        assert_eq!((w.waited_on_device_ns, w.tail_ns), (None, None));
    }
    let st = stats(&r, "cudaStreamSynchronize");
    assert_eq!((st.count, st.empty, st.work_items), (2, 2, 0));
    assert_eq!(stats(&r, "cudaDeviceSynchronize").empty, 1);
    assert_eq!(stats(&r, "cudaEventSynchronize").empty, 1);
    assert_eq!(r.longest_waits.len(), 4);
}

#[test]
fn waits_appear_in_json_and_text() {
    let b = ring();
    launch(&b, 100, S1, H_GEMM);
    call(&b, STREAM_SYNC, 1000, 2000, [S1, 0, 0]);
    let r = report_of(&b);
    let v = serde_json::to_value(&r).unwrap();
    let w = &v["waits"][0];
    assert_eq!(w["name"], "cudaStreamSynchronize");
    assert_eq!(w["count"], 1);
    assert_eq!(w["work_items"], 1);
    assert_eq!(w["waited_p50_ns"], serde_json::Value::Null);
    assert_eq!(
        v["longest_waits"][0]["kernels"],
        serde_json::json!(["gemm"])
    );
    let text = causeway_scanner::render::text::render(&r);
    assert!(text.contains("HOST WAITS"), "{text}");
    assert!(text.contains("LONGEST WAITS"), "{text}");
}

/// The waits read an events-backend (anchored) interval's end through its anchor, alike on every
/// schedule (`report_of` compares them; on one thread such an interval makes the device pass go
/// apart from the decoder's walk). An anchored interval whose anchor is not in the capture has no
/// end: the wait's device figures are unknown.
#[test]
fn anchored_intervals_give_waits_their_converted_end() {
    let b = ring3();
    b.anchor(1, 0, 900, 1100, causeway_ring::layout::NO_ELAPSED)
        .unwrap();
    let a = launch(&b, 1000, S1, H_GEMM);
    // Device ns 1500..2500 after the anchor, whose midpoint is host ns 1000: ends at 3500.
    b.anchored_kernel(a, 1, 1500, 2500).unwrap();
    let s = call(&b, STREAM_SYNC, 3000, 9000, [S1, 0, 0]);
    let c = launch(&b, 10_000, S1, H_GEMM);
    b.anchored_kernel(c, 7, 100, 200).unwrap();
    let lost = call(&b, STREAM_SYNC, 10_100, 10_900, [S1, 0, 0]);
    let r = report_of(&b);
    let w = wait(&r, s);
    assert_eq!(w.work_items, 1);
    assert_eq!((w.waited_on_device_ns, w.tail_ns), (Some(500), Some(5500)));
    let w = wait(&r, lost);
    assert_eq!(w.work_items, 1);
    assert_eq!((w.waited_on_device_ns, w.tail_ns), (None, None));
}
