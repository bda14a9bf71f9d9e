//! Exact report numbers from synthetic rings written with the real ring writer.

mod common;

use causeway_ring::layout::{counter, flags, hdr, Class, Kind, Layer, Policy};
use causeway_scanner::analysis::report::{ApiStats, KernelStats, RangeStats, Report};
use causeway_scanner::read::capture::Capture;
use causeway_scanner::util::rank::nearest_rank;
use common::*;

fn report_of(b: &RingBuilder) -> Report {
    b.report("report")
}

fn api<'a>(r: &'a Report, name: &str) -> &'a ApiStats {
    r.apis
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no API {name} in {:?}", r.apis))
}

fn kernel<'a>(r: &'a Report, name: &str) -> &'a KernelStats {
    r.kernels
        .iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("no kernel {name} in {:?}", r.kernels))
}

#[test]
fn percentiles_are_nearest_rank() {
    let v: Vec<u64> = (1..=100).collect();
    assert_eq!(nearest_rank(&v, 50), Some(50));
    assert_eq!(nearest_rank(&v, 99), Some(99));
    assert_eq!(nearest_rank(&v, 100), Some(100));
    assert_eq!(nearest_rank(&[7], 50), Some(7));
    assert_eq!(nearest_rank(&[7], 99), Some(7));
    assert_eq!(nearest_rank::<u64>(&[], 50), None);
    // n = 6: p50 is rank ceil(3) = 3, p99 rank ceil(5.94) = 6.
    assert_eq!(nearest_rank(&[30, 40, 100, 100, 200, 300], 50), Some(100));
    assert_eq!(nearest_rank(&[30, 40, 100, 100, 200, 300], 99), Some(300));
    // n = 7: p50 is rank ceil(3.5) = 4 (not an interpolated 3.5th value).
    assert_eq!(nearest_rank(&[20, 50, 60, 80, 81, 82, 100], 50), Some(80));
    // n = 200: p99 is rank 198.
    let v: Vec<u64> = (1..=200).collect();
    assert_eq!(nearest_rank(&v, 99), Some(198));
}

/// A row of thousands of calls takes the bucketed percentile path (`rank`): through the report, the
/// nearest-rank values a sort of the durations gives.
#[test]
fn large_rows_have_exact_percentiles() {
    let b = RingBuilder::new(1 << 14, Policy::Drop);
    b.api(1, "cudaStreamQuery", Layer::Runtime, Class::Other);
    // 10 000 calls of 1..=10 000 ns in a scrambled order (7919 is prime to 10 000), and one of 1 s.
    let n = 10_000u64;
    let mut t = 1_000;
    for d in (0..n).map(|i| (i * 7919) % n + 1).chain([1_000_000_000]) {
        b.call(1, 1, 0, t, t + d, 0, 0).unwrap();
        t += d + 10;
    }
    let r = report_of(&b);
    let q = api(&r, "cudaStreamQuery");
    // n = 10 001: p50 is rank ⌈5000.5⌉ = 5001, p99 rank ⌈9900.99⌉ = 9901.
    assert_eq!(
        (q.calls, q.total_ns, q.p50_ns, q.p99_ns, q.max_ns),
        (
            10_001,
            50_005_000 + 1_000_000_000,
            5_001,
            9_901,
            1_000_000_000
        )
    );
}

#[test]
fn process_accounting() {
    let r = report_of(&scenario());
    assert_eq!(r.processes.len(), 1);
    let p = &r.processes[0];
    assert_eq!((p.pid, p.ppid), (1000, 1));
    assert_eq!(p.exe, "/usr/bin/app");
    assert_eq!(p.host, "testhost");
    assert_eq!(p.level, 2);
    assert_eq!(p.policy, "drop");
    assert_eq!(p.entries, SCENARIO_ENTRIES);
    assert_eq!(p.torn, 1);
    assert_eq!(p.open, 1);
    assert_eq!(p.dropped, 0);
    assert_eq!(p.overwritten, 0);
    assert_eq!(p.threads, 2);
    assert!(!p.disabled);
    assert_eq!(p.counters.len(), counter::NAMES.len());
    assert!(p.counters.values().all(|&v| v == 0));
    assert_eq!(r.totals.entries, SCENARIO_ENTRIES);
    assert_eq!(r.totals.calls, 24);
    assert!(r.warnings.iter().any(|w| w.contains("1 slots torn")));
    assert!(r.warnings.iter().any(|w| w.contains("1 calls still open")));
}

#[test]
fn api_statistics_are_exact() {
    let r = report_of(&scenario());
    let names: Vec<&str> = r.apis.iter().map(|a| a.name.as_str()).collect();
    // Sorted by total time; NVTX and lifecycle instants are not API calls.
    assert_eq!(
        names,
        [
            "cudaMemcpy",
            "cudaLaunchKernel",
            "cuLaunchKernel",
            "cuStreamSynchronize"
        ]
    );
    let m = api(&r, "cudaMemcpy");
    assert_eq!(
        (m.calls, m.errors, m.open, m.total_ns, m.p50_ns, m.p99_ns, m.max_ns),
        (10, 0, 0, 5500, 500, 1000, 1000)
    );
    assert_eq!((m.layer.as_str(), m.class.as_str()), ("runtime", "copy"));
    // Durations 100, 200, 300, 40, 30, 100 → sorted 30 40 100 100 200 300.
    let l = api(&r, "cudaLaunchKernel");
    assert_eq!(
        (l.calls, l.errors, l.open, l.total_ns, l.p50_ns, l.p99_ns, l.max_ns),
        (6, 1, 0, 770, 100, 300, 300)
    );
    // Durations 80 ×3, 50, 20, 100, 60 → sorted 20 50 60 80 80 80 100.
    let d = api(&r, "cuLaunchKernel");
    assert_eq!(
        (d.calls, d.errors, d.open, d.total_ns, d.p50_ns, d.p99_ns, d.max_ns),
        (7, 1, 0, 470, 80, 100, 100)
    );
    assert_eq!((d.layer.as_str(), d.class.as_str()), ("driver", "launch"));
    let s = api(&r, "cuStreamSynchronize");
    assert_eq!(
        (s.calls, s.errors, s.open, s.total_ns, s.p50_ns, s.p99_ns, s.max_ns),
        (1, 0, 1, 0, 0, 0, 0)
    );
}

#[test]
fn launches_are_counted_once_at_the_outermost_layer() {
    let r = report_of(&scenario());
    // vecAdd: 3 runtime→driver pairs named by their driver child, the driver launch whose runtime
    // parent had already returned, and thread 2's driver launch = 5; the failed pair is 1 failure.
    let v = kernel(&r, "vecAdd");
    assert_eq!((v.launches, v.failed, v.open), (5, 1, 0));
    assert_eq!(
        (kernel(&r, "direct").launches, kernel(&r, "direct").failed),
        (1, 0)
    );
    assert_eq!(kernel(&r, "<unknown handle 0x999>").launches, 1);
    assert_eq!(kernel(&r, "<unknown handle 0x500>").launches, 1);
    assert_eq!(r.kernels.len(), 4);
    assert_eq!(r.kernels[0].name, "vecAdd");
    assert_eq!((r.totals.launches, r.totals.failed_launches), (8, 1));
    // 13 launch-class call entries in the ring, 9 launches after pairing (8 good + 1 failed).
    let entries: u64 = ["cudaLaunchKernel", "cuLaunchKernel"]
        .iter()
        .map(|n| api(&r, n).calls)
        .sum();
    assert_eq!(entries, 13);
}

#[test]
fn nvtx_ranges_pair_by_thread_domain_and_id() {
    let r = report_of(&scenario());
    assert_eq!(
        r.ranges,
        vec![
            RangeStats {
                name: "step".into(),
                domain: None,
                count: 2,
                open: 1,
                total_ns: 4000,
                max_ns: 3000
            },
            RangeStats {
                name: "load".into(),
                domain: Some("mydomain".into()),
                count: 1,
                open: 0,
                total_ns: 700,
                max_ns: 700
            },
            RangeStats {
                name: "load".into(),
                domain: None,
                count: 1,
                open: 0,
                total_ns: 500,
                max_ns: 500
            },
        ]
    );
    assert_eq!(r.totals.unmatched_range_ends, 1);
    assert_eq!(r.marks.len(), 1);
    assert_eq!((r.marks[0].name.as_str(), r.marks[0].count), ("step", 1));
}

#[test]
fn drop_policy_overflow_is_counted() {
    let b = RingBuilder::new(8, Policy::Drop);
    b.api(3, "cudaMemcpy", Layer::Runtime, Class::Copy);
    let mut kept = 0;
    for i in 0..12u64 {
        if b.call(TID, 3, 0, 1000 * i, 1000 * i + 10 * (i + 1), 0, 0)
            .is_some()
        {
            kept += 1;
        }
    }
    assert_eq!(kept, 8);
    let r = report_of(&b);
    let p = &r.processes[0];
    assert_eq!(
        (p.entries, p.dropped, p.torn, p.open, p.overwritten),
        (8, 4, 0, 0, 0)
    );
    let m = api(&r, "cudaMemcpy");
    // The first 8 survive: durations 10..=80.
    assert_eq!((m.calls, m.total_ns, m.p50_ns, m.max_ns), (8, 360, 40, 80));
    assert!(r.warnings.iter().any(|w| w.contains("4 entries dropped")));
}

#[test]
fn overwrite_policy_keeps_the_newest() {
    let b = RingBuilder::new(8, Policy::Overwrite);
    b.api(3, "cudaMemcpy", Layer::Runtime, Class::Copy);
    // A call that is lapped while open: its end finds the slot taken and is counted as lost.
    let lapped = b.open(TID, 3, 0, 0, 0).unwrap();
    for i in 0..19u64 {
        let t = 1000 * (i + 1);
        b.call(TID, 3, 0, t, t + i + 1, 0, 0).unwrap();
    }
    b.w.end(lapped, 999_999, 0);
    let r = report_of(&b);
    let p = &r.processes[0];
    assert_eq!(p.policy, "overwrite");
    assert_eq!(
        (p.entries, p.overwritten, p.dropped, p.torn, p.open),
        (8, 12, 0, 0, 0)
    );
    assert_eq!(p.counters["end_lost"], 1);
    // The last 8 of durations 1..=19 survive: 12..=19.
    let m = api(&r, "cudaMemcpy");
    assert_eq!(
        (m.calls, m.total_ns, m.p50_ns, m.p99_ns, m.max_ns),
        (8, 124, 15, 19, 19)
    );
    assert!(r.warnings.iter().any(|w| w.contains("end_lost=1")));
}

#[test]
fn overwrite_window_with_a_torn_newest_slot() {
    let mut b = RingBuilder::new(8, Policy::Overwrite);
    b.api(3, "cudaMemcpy", Layer::Runtime, Class::Copy);
    for i in 0..10u64 {
        b.call(TID, 3, 0, 100 * i, 100 * i + 5, 0, 0).unwrap();
    }
    // Seq 10 reserves the slot that seq 2 held; never committed, it is torn, and seq 2 is gone.
    b.torn();
    let r = report_of(&b);
    let p = &r.processes[0];
    assert_eq!((p.entries, p.torn, p.overwritten), (7, 1, 3));
    assert_eq!(api(&r, "cudaMemcpy").calls, 7);
}

#[test]
fn errors_count_only_completed_calls() {
    let b = RingBuilder::new(16, Policy::Drop);
    b.api(4, "cuStreamQuery", Layer::Driver, Class::Query);
    b.call(TID, 4, 0, 0, 10, 600, 0).unwrap();
    b.call(TID, 4, 0, 20, 30, 0, 0).unwrap();
    b.call(TID, 4, 0, 40, 50, -1, 0).unwrap();
    b.open(TID, 4, 0, 60, 0).unwrap();
    let r = report_of(&b);
    let q = api(&r, "cuStreamQuery");
    assert_eq!((q.calls, q.errors, q.open, q.total_ns), (4, 2, 1, 30));
}

#[test]
fn calls_without_an_api_record_are_named_by_id() {
    let b = RingBuilder::new(16, Policy::Drop);
    b.call(TID, 42, 0, 0, 10, 0, 0).unwrap();
    let r = report_of(&b);
    let a = api(&r, "<api 42>");
    assert_eq!((a.calls, a.layer.as_str()), (1, "unknown"));
    assert!(r.kernels.is_empty());
}

#[test]
fn runtime_record_name_wins_over_child() {
    let b = RingBuilder::new(16, Policy::Drop);
    b.api(1, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .api(2, "cuLaunchKernel", Layer::Driver, Class::Launch)
        .kernel(0x500, "fromRuntime")
        .kernel(0xd00, "fromDriver");
    let r0 = b.open(TID, 1, 0, 0, 0x500).unwrap();
    b.call(TID, 2, 1, 1, 2, 0, 0xd00).unwrap();
    b.w.end(r0, 3, 0);
    // An open runtime launch with a completed driver child: counted once, as open.
    let r1 = b.open(TID, 1, 0, 10, 0x500).unwrap();
    b.call(TID, 2, 1, 11, 12, 0, 0xd00).unwrap();
    let _ = r1;
    let r = report_of(&b);
    // No capture and no graphs: every completed launch is a direct one (launches = direct).
    assert_eq!(
        r.kernels,
        vec![KernelStats {
            name: "fromRuntime".into(),
            symbol: "fromRuntime".into(),
            launches: 1,
            direct: 1,
            via_graph: 0,
            captured: 0,
            failed: 0,
            open: 1,
            device_count: None,
        }]
    );
}

#[test]
fn disabled_shim_is_reported_with_its_notice() {
    let b = RingBuilder::new(16, Policy::Drop);
    b.w.set_flag(flags::DISABLED);
    b.w.notice(b"cuGetProcAddress returned an unknown variant");
    b.w.bump(counter::NAMES_MISSED);
    let r = report_of(&b);
    let p = &r.processes[0];
    assert!(p.disabled);
    assert_eq!(
        p.notice.as_deref(),
        Some("cuGetProcAddress returned an unknown variant")
    );
    assert_eq!(p.counters["names_missed"], 1);
    assert!(r.warnings.iter().any(|w| w.contains("disabled itself")
        && w.contains("cuGetProcAddress returned an unknown variant")));
}

#[test]
fn processes_merge_by_api_name_not_id() {
    let dir = TempDir::new("multi");
    let a = RingBuilder::with(16, Policy::Drop, 2000, 1);
    a.api(3, "cudaMemcpy", Layer::Runtime, Class::Copy);
    a.call(TID, 3, 0, 0, 100, 0, 0).unwrap();
    a.write_to(&dir.join("a.cwring"));
    let b = RingBuilder::with(16, Policy::Drop, 2001, 2000);
    b.api(7, "cudaMemcpy", Layer::Runtime, Class::Copy).api(
        3,
        "cudaFree",
        Layer::Runtime,
        Class::Free,
    );
    b.call(TID, 7, 0, 0, 300, 0, 0).unwrap();
    b.call(TID, 3, 0, 400, 401, 0, 0).unwrap();
    b.write_to(&dir.join("b.cwring"));
    std::fs::write(dir.join("notes.txt"), "not a ring").unwrap();
    let r = Report::from_path(dir.path()).unwrap();
    let pids: Vec<u32> = r.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, [2000, 2001]);
    let m = api(&r, "cudaMemcpy");
    assert_eq!(
        (m.calls, m.total_ns, m.p50_ns, m.max_ns),
        (2, 400, 100, 300)
    );
    assert_eq!(api(&r, "cudaFree").calls, 1);
}

#[test]
fn a_single_ring_file_is_a_capture() {
    let dir = TempDir::new("single");
    let b = scenario();
    let path = dir.join("whatever.bin");
    b.write_to(&path);
    let c = Capture::open(&path).unwrap();
    assert_eq!(c.files.len(), 1);
    let r = Report::from_path(&path).unwrap();
    assert_eq!(r.totals.entries, SCENARIO_ENTRIES);
}

#[test]
fn json_has_the_promised_fields() {
    let r = report_of(&scenario());
    let v: serde_json::Value = serde_json::to_value(&r).unwrap();
    let p = &v["processes"][0];
    for k in [
        "pid",
        "entries",
        "dropped",
        "torn",
        "open",
        "overwritten",
        "disabled",
        "counters",
    ] {
        assert!(!p[k].is_null(), "processes[0].{k} missing");
    }
    let a = &v["apis"][0];
    for k in [
        "name", "calls", "errors", "total_ns", "p50_ns", "p99_ns", "max_ns",
    ] {
        assert!(!a[k].is_null(), "apis[0].{k} missing");
    }
    assert_eq!(v["kernels"][0]["name"], "vecAdd");
    assert_eq!(v["kernels"][0]["launches"], 5);
    assert!(v["ranges"].is_array());
}

#[test]
fn untraced_driver_lookups_are_listed_by_name() {
    let b = RingBuilder::new(64, Policy::Drop);
    b.text(7, "cuStreamDestroy").text(8, "cuMemcpyHtoD");
    b.instant(causeway_ring::Kind::ProcUnmatched, 1, 10, 7, 2000, 0);
    b.instant(causeway_ring::Kind::ProcUnmatched, 1, 11, 7, 2000, 0);
    b.instant(causeway_ring::Kind::ProcUnmatched, 2, 12, 8, 3000, 2);
    let r = report_of(&b);
    let got: Vec<(&str, u64)> = r
        .unmatched_lookups
        .iter()
        .map(|u| (u.name.as_str(), u.count))
        .collect();
    assert_eq!(got, vec![("cuMemcpyHtoD", 1), ("cuStreamDestroy", 2)]);
    // Per process too.
    let per: Vec<(&str, u64)> = r.processes[0]
        .untraced
        .iter()
        .map(|u| (u.name.as_str(), u.count))
        .collect();
    assert_eq!(per, got);
    // They are lookups, not calls.
    assert_eq!(r.totals.calls, 0);
    let text = causeway_scanner::render::text::render(&r);
    assert!(
        text.contains("UNTRACED ENTRY POINTS") && text.contains("cuStreamDestroy"),
        "{text}"
    );
}

#[test]
fn torn_slots_in_several_decode_chunks_lose_nothing_else() {
    // Decoding works in chunks of 65536 slots written in place; torn slots in different chunks must
    // leave every other entry, in order, with its own values.
    let mut b = RingBuilder::new(1 << 18, Policy::Drop);
    b.api(3, "cudaMemcpy", Layer::Runtime, Class::Copy);
    let n = 200_000u64;
    let mut torn = 0;
    for i in 0..n {
        if i % 70_001 == 5 {
            b.torn();
            torn += 1;
        } else {
            b.call(TID, 3, 0, 10 * i, 10 * i + 1 + i % 3, 0, 0).unwrap();
        }
    }
    let r = report_of(&b);
    let p = &r.processes[0];
    assert_eq!((p.entries, p.torn), (n - torn, torn));
    let m = api(&r, "cudaMemcpy");
    assert_eq!(m.calls, n - torn);
    let want: u64 = (0..n).filter(|i| i % 70_001 != 5).map(|i| 1 + i % 3).sum();
    assert_eq!(m.total_ns, want);
}

#[test]
fn threads_are_counted_by_id_whatever_their_low_bits() {
    // Ids 3, 67 and 131 share a slot of the thread set's small table; 3 returns after the others.
    let b = RingBuilder::new(64, Policy::Drop);
    b.api(3, "cudaMemcpy", Layer::Runtime, Class::Copy);
    for (k, tid) in [3u32, 67, 131, 3, 67].into_iter().enumerate() {
        let t = 10 * k as u64;
        b.call(tid, 3, 0, t, t + 5, 0, 0).unwrap();
    }
    let r = report_of(&b);
    assert_eq!(r.processes[0].threads, 3);
}

#[test]
fn a_head_at_the_end_of_the_sequence_space_reads_as_torn_slots_not_a_panic() {
    // A corrupt header puts the overwrite window's end 3 short of u64::MAX: the slots hold other
    // numbers, so all 8 are torn, open ring or closed (a chunk's end once overflowed here).
    let mut b = RingBuilder::new(8, Policy::Overwrite);
    b.api(3, "cudaMemcpy", Layer::Runtime, Class::Copy);
    for i in 0..8 {
        b.call(TID, 3, 0, 10 * i, 10 * i + 5, 0, 0).unwrap();
    }
    let head = (u64::MAX - 3).to_le_bytes();
    b.bytes_mut()[hdr::HEAD..hdr::HEAD + 8].copy_from_slice(&head);
    let r = report_of(&b);
    let p = &r.processes[0];
    assert_eq!((p.entries, p.torn), (0, 8));
}

#[test]
fn a_wrapped_window_of_several_decode_chunks_reads_the_same_in_place_and_copied() {
    // An overwrite ring of 2^17 slots (two decode chunks) written twice over: the window wraps
    // around the slot array. `report_of` checks the closed ring (read in place, its lists built
    // chunk by chunk) against the open one (copied).
    let b = RingBuilder::level3(1 << 17, Policy::Overwrite);
    b.text(9, "step");
    b.text(10, "gemm");
    b.api(1, "cudaLaunchKernel", Layer::Runtime, Class::Launch);
    b.api(2, "cuLaunchKernel", Layer::Driver, Class::Launch);
    b.api(4, "cudaStreamSynchronize", Layer::Runtime, Class::Sync);
    b.kernel(0x100, "gemm");
    b.kernel(0x200, "relu");
    let mut t = 0;
    for i in 0..100_000u64 {
        let h = if i % 3 == 0 { 0x100 } else { 0x200 };
        let tid = 1 + (i % 4) as u32;
        let rt = b.call_args(tid, 1, 0, t, t + 10, 0, [7, 0, 0]).unwrap();
        b.call_args(tid, 2, 1, t + 2, t + 8, 0, [7, h, 0]).unwrap();
        // Device intervals and NVTX marks: what decode lists apart from the calls, per chunk.
        if i % 2 == 0 {
            b.kernel_interval(rt, 10, t + 12, t + 30).unwrap();
        }
        if i % 16 == 0 {
            b.instant(Kind::Mark, tid, t + 1, 9, 0, 0);
        }
        if i % 64 == 63 {
            b.call_args(tid, 4, 0, t + 11, t + 40, 0, [7, 0, 0])
                .unwrap();
        }
        t += 50;
    }
    let r = report_of(&b);
    let p = &r.processes[0];
    assert_eq!(p.entries, 1 << 17);
    assert!(p.overwritten > 0);
    assert_eq!(p.threads, 4);
    // Every runtime launch whose driver launch is in the window names its kernel; the window may
    // start between the two halves of one pair (an orphan driver launch counts as an outermost one).
    let launches: u64 = r.kernels.iter().map(|k| k.launches).sum();
    assert!(launches > 49_000 && launches < 52_000, "{launches}");
    assert!(r.kernels.iter().any(|k| k.name == "gemm"));
    assert!(r.device.intervals > 24_000, "{}", r.device.intervals);
    assert!(r.marks.iter().any(|m| m.name == "step" && m.count > 3_000));
}

#[test]
fn a_ring_written_to_after_it_was_read_in_place_says_so() {
    // A closed ring is read in place; if a writer still reserves a slot (a process still exiting),
    // the head word moves and the reader knows to read it again from a copy.
    use causeway_scanner::read::decode::{analysed, decode, decode_copy, Entries};
    use std::os::unix::fs::FileExt;
    let b = RingBuilder::new(64, Policy::Drop);
    b.api(3, "cudaMemcpy", Layer::Runtime, Class::Copy);
    for i in 0..5 {
        b.call(TID, 3, 0, 10 * i, 10 * i + 5, 0, 0).unwrap();
    }
    b.w.set_flag(flags::CLOSED);
    let dir = TempDir::new("unchanged");
    let path = dir.join("x.cwring");
    b.write_to(&path);
    let cap = Capture::open(&path).unwrap();
    let rings = cap.rings().unwrap();
    let d = decode(&rings[0].view);
    assert!(matches!(d.entries(), Entries::Mapped(_)));
    assert!(d.unchanged());
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(&6u64.to_le_bytes(), hdr::HEAD as u64)
        .unwrap();
    assert!(!d.unchanged());
    let c = decode_copy(&rings[0].view);
    assert!(matches!(c.entries(), Entries::Copied(_)));
    assert!(c.unchanged());
    assert_eq!(c.live, 5);

    // `analysed` runs the analysis again, on a copy, when the head moves while it runs.
    file.write_all_at(&5u64.to_le_bytes(), hdr::HEAD as u64)
        .unwrap();
    let cap = Capture::open(&path).unwrap();
    let rings = cap.rings().unwrap();
    let runs = std::cell::RefCell::new(Vec::new());
    let live = analysed(&rings[0].view, |d| {
        let mapped = matches!(d.entries(), Entries::Mapped(_));
        if mapped {
            file.write_all_at(&6u64.to_le_bytes(), hdr::HEAD as u64)
                .unwrap();
        }
        runs.borrow_mut().push(mapped);
        d.live
    });
    assert_eq!(*runs.borrow(), [true, false]);
    assert_eq!(live, 5);
}

#[test]
fn entries_of_an_unknown_kind_are_counted_not_dropped_silently() {
    // A newer shim's kind byte (or a corrupt one): counted per process, in place and copied alike.
    let mut b = RingBuilder::new(64, Policy::Drop);
    b.api(3, "cudaMemcpy", Layer::Runtime, Class::Copy);
    for i in 0..4 {
        b.call(TID, 3, 0, 10 * i, 10 * i + 5, 0, 0).unwrap();
    }
    let off = b.slot_offset(2) + causeway_ring::layout::ent::KIND;
    b.bytes_mut()[off] = 200;
    let r = report_of(&b);
    let p = &r.processes[0];
    assert_eq!((p.entries, p.unknown_kind), (4, 1));
    assert_eq!(api(&r, "cudaMemcpy").calls, 3);
}

#[test]
fn work_tokens_are_summarised_per_process_from_both_forms() {
    use causeway_scanner::facts::tokens::Summary;
    let b = RingBuilder::new(256, Policy::Drop);
    b.text(1, "causeway.token")
        .text(2, "other")
        .text(3, "handoff 200")
        .text(4, "req");
    b.api(3, "cudaMemcpy", Layer::Runtime, Class::Copy);
    // The ABI: 100 begins generation 2, hands off to 200 and ends; 200 accepts and never ends.
    b.token(Kind::TokenBegin, 100, 10, 7, 8, 2, 0);
    b.call(100, 3, 0, 11, 12, 0, 0).unwrap();
    b.token(Kind::TokenHandoff, 100, 13, 7, 8, 2, 200);
    b.token(Kind::TokenEnd, 100, 14, 7, 8, 2, 0);
    b.token(Kind::TokenAccept, 200, 15, 7, 8, 2, 0);
    // NVTX in the token domain: 300's range is token (0, 9, 1), with a handoff mark inside.
    b.nvtx_with_payload(Kind::RangePush, 300, 20, [4, 1, 0], 9, 1);
    b.nvtx_with_payload(Kind::Mark, 300, 21, [3, 1, 0], 9, 1);
    b.instant(Kind::RangePop, 300, 22, 0, 1, 0);
    // NVTX elsewhere, payloads and all: no tokens.
    b.nvtx_with_payload(Kind::RangePush, 300, 30, [4, 2, 0], 9, 1);
    b.instant(Kind::RangePop, 300, 31, 0, 2, 0);
    b.nvtx_with_payload(Kind::RangeStart, 400, 32, [4, 0, 5], 9, 1);
    b.instant(Kind::RangeEnd, 400, 33, 0, 0, 5);
    b.nvtx_with_payload(Kind::Mark, 400, 34, [3, 0, 0], 9, 1);
    let r = report_of(&b);
    let p = &r.processes[0];
    assert_eq!(p.unknown_kind, 0);
    assert_eq!(
        p.tokens,
        Some(Summary {
            tokens: 2,
            spans: 3,
            open_spans: 1,
            handoffs: 2,
            accepted: 1,
            unmatched_ends: 0,
            unmatched_accepts: 0,
            nvtx_without_token: 0,
        })
    );
    let json = serde_json::to_value(p).unwrap();
    assert_eq!(json["tokens"]["handoffs"], 2);
}

#[test]
fn a_process_that_only_recorded_tokens_recorded_something() {
    let b = RingBuilder::new(64, Policy::Drop);
    b.token(Kind::TokenBegin, 100, 10, 0, 1, 0, 0);
    let r = report_of(&b);
    let p = &r.processes[0];
    assert!(!p.recorded_nothing);
    assert_eq!(p.tokens.as_ref().map(|t| t.open_spans), Some(1));
}

#[test]
fn a_process_without_tokens_has_no_tokens_key() {
    let b = RingBuilder::new(64, Policy::Drop);
    b.text(2, "other");
    b.api(3, "cudaMemcpy", Layer::Runtime, Class::Copy);
    b.call(100, 3, 0, 11, 12, 0, 0).unwrap();
    b.nvtx_with_payload(Kind::RangePush, 300, 30, [0, 2, 0], 9, 1);
    b.instant(Kind::RangePop, 300, 31, 0, 2, 0);
    let r = report_of(&b);
    assert_eq!(r.processes[0].tokens, None);
    let json = serde_json::to_value(&r.processes[0]).unwrap();
    assert!(json.get("tokens").is_none());
}

/// Device spans are placed in parts on every thread (65 536 intervals a part) and closed up where a
/// part's intervals had no host time: the timeline's spans are those of one pass over the intervals,
/// stably sorted by (start, end), whatever the parts.
#[test]
fn device_spans_built_in_parts_are_one_pass_sorted() {
    use causeway_scanner::facts::model::Timeline;
    let n: u64 = 150_000;
    let b = RingBuilder::level3(1 << 18, Policy::Drop);
    for k in 0..16u64 {
        b.text(100 + k, &format!("k{k}"));
    }
    // Times in descending blocks (sorting moves spans across parts); every 7th without host time;
    // every 5th the same times as the one before (ties keep interval order).
    let mut want: Vec<(u64, u64, String)> = Vec::new();
    let mut last = (0, 0);
    for i in 0..n {
        let (t0, t1) = if i % 5 == 4 {
            last
        } else {
            let t0 = 1_000_000 + (n - i / 1000 * 1000) * 10 + (i % 1000);
            (t0, t0 + 5 + i % 3)
        };
        last = (t0, t1);
        let mut d = Dev::kernel(0, 100 + i % 16, t0, t1).no_call();
        if i % 7 == 6 {
            d = d.unconverted();
        } else {
            want.push((t0, t1, format!("k{}", i % 16)));
        }
        b.device(d).unwrap();
    }
    want.sort_by_key(|w| (w.0, w.1));
    let dir = TempDir::new("parts");
    let path = dir.join("p.cwring");
    b.write_to(&path);
    let cap = Capture::open(&path).unwrap();
    let t = Timeline::build(&cap.rings().unwrap());
    let p = &t.processes[0];
    assert_eq!(p.unplaced_device, n / 7);
    let got: Vec<(u64, u64, String)> = (p.device.iter())
        .map(|d| (d.begin_ns, d.end_ns, d.name.to_string()))
        .collect();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "spans differ from one sorted pass");
}
