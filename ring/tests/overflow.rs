//! A full ring: the drop policy keeps exactly the first `capacity` reservations and counts the rest; the
//! overwrite policy keeps exactly the last `capacity`, and the reader tells live slots from stale ones.

mod common;

use causeway_ring::layout::{counter, ent, stamp};
use causeway_ring::{Fields, Policy, Slot, Writer};
use common::*;
use std::sync::Barrier;

const CAP: u64 = 1024;
const TOTAL: u64 = 5000;
const THREADS: u64 = 4;
const PER_THREAD: u64 = TOTAL / THREADS;

/// Each of THREADS threads writes PER_THREAD entries (begin + end, a0 = thread, a1 = counter) and returns
/// what `begin` answered for each counter.
///
/// With `lockstep`, the threads meet at a barrier after every `CAP / THREADS` entries, so no writer can be
/// lapped while it is inside `begin`/`end` and the outcome is exact. Without it the threads run free: a
/// writer preempted for a whole lap loses its entry (counted) but never mixes it into a newer one.
fn write_from_threads(w: Writer, lockstep: bool) -> Vec<Vec<Option<u64>>> {
    let barrier = Barrier::new(THREADS as usize);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    let tid = gettid();
                    barrier.wait();
                    (0..PER_THREAD)
                        .map(|c| {
                            if lockstep && c > 0 && c % (CAP / THREADS) == 0 {
                                barrier.wait();
                            }
                            let seq = w.begin(&fields_for(t, c, tid, c))?;
                            if c % 7 == 0 {
                                std::thread::yield_now();
                            }
                            w.end(seq, c + 1, result_for(c));
                            Some(seq)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn check_entry(e: &causeway_ring::Entry, seq: u64) {
    assert_eq!(e.seq, seq);
    assert!(e.done, "seq {seq} still open");
    assert_eq!(e.a2, checksum(e.a0, e.a1), "seq {seq}: fields mixed up");
    assert_eq!(e.api, 1 + e.a0 as u16);
    assert_eq!((e.t_begin, e.t_end), (e.a1, e.a1 + 1));
    assert_eq!(e.result, result_for(e.a1));
    assert_eq!(e.depth, (e.a1 % 3) as u16);
}

#[test]
fn drop_policy_keeps_the_first_reservations_from_four_threads() {
    let ring = MemRing::new(&params(CAP, 256, Policy::Drop));
    let got = write_from_threads(ring.writer, false);
    let bytes = ring.snapshot();
    let v = parse(&bytes);
    let h = &v.header;
    assert_eq!(h.head, TOTAL);
    assert_eq!(h.dropped, TOTAL - CAP);
    assert_eq!(v.window(), (0, CAP));

    // What the writers were told: per thread a run of slots, then only drops (a full ring stays full),
    // and the slots handed out are exactly 0..CAP, each once.
    let mut owner = vec![None; CAP as usize];
    let mut kept = 0;
    for (t, seqs) in got.iter().enumerate() {
        let n = seqs.iter().take_while(|s| s.is_some()).count();
        assert!(
            seqs[n..].iter().all(|s| s.is_none()),
            "thread {t} got a slot after a drop"
        );
        for (c, s) in seqs[..n].iter().enumerate() {
            let s = s.unwrap();
            assert!(s < CAP, "thread {t} was given slot {s} past capacity");
            assert!(owner[s as usize].is_none(), "slot {s} handed out twice");
            owner[s as usize] = Some((t as u64, c as u64));
        }
        kept += n as u64;
    }
    assert_eq!(kept, CAP);
    assert_eq!(TOTAL - kept, h.dropped);

    // What the reader sees: every slot live and complete, holding exactly the entry its writer put there.
    let (mut live, mut torn) = (0, 0);
    for s in 0..CAP {
        match v.read(s) {
            Slot::Entry(e) => {
                check_entry(&e, s);
                assert_eq!(Some((e.a0, e.a1)), owner[s as usize], "slot {s}");
                live += 1;
            }
            Slot::Torn => torn += 1,
        }
    }
    assert_eq!((live, torn), (CAP, 0));
}

#[test]
fn drop_policy_single_thread_is_exact() {
    let ring = MemRing::new(&params(CAP, 256, Policy::Drop));
    let w = ring.writer;
    for c in 0..TOTAL {
        let f = fields_for(0, c, 1, c);
        if c % 2 == 0 {
            let r = w.begin(&f);
            assert_eq!(r, (c < CAP).then_some(c));
            if let Some(s) = r {
                w.end(s, c + 1, result_for(c));
            }
        } else {
            w.instant(&Fields { t_begin: c, ..f }, result_for(c));
        }
    }
    let bytes = ring.snapshot();
    let v = parse(&bytes);
    assert_eq!((v.header.head, v.header.dropped), (TOTAL, TOTAL - CAP));
    for s in 0..CAP {
        match v.read(s) {
            Slot::Entry(e) => {
                assert_eq!((e.a0, e.a1), (0, s));
                assert_eq!(e.a2, checksum(0, s));
                assert!(e.done);
            }
            Slot::Torn => panic!("slot {s} torn"),
        }
    }
}

#[test]
fn overwrite_policy_keeps_the_last_window() {
    let ring = MemRing::new(&params(CAP, 256, Policy::Overwrite));
    let w = ring.writer;
    for c in 0..TOTAL {
        let s = w
            .begin(&fields_for(0, c, 1, c))
            .expect("overwrite never drops");
        assert_eq!(s, c);
        w.end(s, c + 1, result_for(c));
    }
    let bytes = ring.snapshot();
    let v = parse(&bytes);
    let h = &v.header;
    assert_eq!(h.head, TOTAL);
    assert_eq!(h.dropped, 0);
    assert_eq!(h.counters[counter::END_LOST], 0);
    let (first, end) = v.window();
    assert_eq!((first, end), (TOTAL - CAP, TOTAL));
    assert_eq!(first, 3976, "overwritten count");
    for s in first..end {
        match v.read(s) {
            Slot::Entry(e) => {
                check_entry(&e, s);
                assert_eq!((e.a0, e.a1), (0, s));
            }
            Slot::Torn => panic!("slot {s} torn"),
        }
    }
    // Sequence numbers outside the window map to the same slots but are not what they hold.
    for s in [0, first - 1, first - CAP, end, end + CAP] {
        assert_eq!(v.read(s), Slot::Torn, "seq {s} outside the window");
    }
}

#[test]
fn overwrite_policy_from_four_threads_keeps_the_last_reservations() {
    let ring = MemRing::new(&params(CAP, 256, Policy::Overwrite));
    let got = write_from_threads(ring.writer, true);
    let bytes = ring.snapshot();
    let v = parse(&bytes);
    assert_eq!(v.header.head, TOTAL);
    assert_eq!(v.header.dropped, 0);
    let (first, end) = v.window();
    assert_eq!((first, end), (TOTAL - CAP, TOTAL));
    // Every reservation was granted, each sequence number once.
    let mut who = vec![None; TOTAL as usize];
    for (t, seqs) in got.iter().enumerate() {
        for (c, s) in seqs.iter().enumerate() {
            let s = s.expect("overwrite never drops");
            assert!(who[s as usize].is_none(), "seq {s} twice");
            who[s as usize] = Some((t as u64, c as u64));
        }
    }
    // In lockstep no end is lost, and the window holds exactly the entries reserved as its sequence
    // numbers, all complete: per thread, a contiguous run of its last counters.
    assert_eq!(v.header.counters[counter::END_LOST], 0);
    let mut per_thread = vec![Vec::new(); THREADS as usize];
    for s in first..end {
        match v.read(s) {
            Slot::Entry(e) => {
                check_entry(&e, s);
                assert_eq!(Some((e.a0, e.a1)), who[s as usize], "seq {s}");
                per_thread[e.a0 as usize].push(e.a1);
            }
            Slot::Torn => panic!("slot {s} torn"),
        }
    }
    for (t, cs) in per_thread.iter().enumerate() {
        let lo = PER_THREAD - cs.len() as u64;
        assert!(
            cs.iter().copied().eq(lo..PER_THREAD),
            "thread {t}: live counters are not its last {}",
            cs.len()
        );
    }
}

#[test]
fn overwrite_reader_rejects_stale_slots_in_the_window() {
    let ring = MemRing::new(&params(CAP, 256, Policy::Overwrite));
    let w = ring.writer;
    for c in 0..TOTAL {
        w.instant(&fields_for(0, c, 1, c), 0);
    }
    let good = ring.snapshot();
    let slot_off = |b: &[u8], seq: u64| {
        let v = parse(b);
        v.header.entries_offset as usize + (seq % CAP) as usize * 64
    };

    // A slot in the window that still holds an older lap's stamp (its new writer never committed).
    let s = 4321;
    let mut b = good.clone();
    let off = slot_off(&b, s) + ent::STAMP;
    set_u64(&mut b, off, stamp(s - CAP, true));
    let v = parse(&b);
    assert_eq!(v.read(s), Slot::Torn);
    assert!(matches!(v.read(s - 1), Slot::Entry(e) if e.seq == s - 1));
    assert!(matches!(v.read(s + 1), Slot::Entry(e) if e.seq == s + 1));
    // ... or one from two laps back, or an open entry from the last lap, or a stamp from the future.
    for bad in [
        stamp(s - 2 * CAP, true),
        stamp(s - CAP, false),
        stamp(s + CAP, true),
        0,
        1,
    ] {
        set_u64(&mut b, off, bad);
        assert_eq!(parse(&b).read(s), Slot::Torn, "stamp {bad:#x}");
    }
    // The right sequence number, not yet done, is an open call.
    set_u64(&mut b, off, stamp(s, false));
    assert!(matches!(parse(&b).read(s), Slot::Entry(e) if !e.done && e.t_end == 0));

    // A writer killed between reserving seq 5000 and committing it: head says 5001, the slot still holds
    // seq 3976 (now outside the window). That slot reads torn; the rest of the window is live.
    let mut b = good.clone();
    set_u64(&mut b, causeway_ring::hdr::HEAD, TOTAL + 1);
    let v = parse(&b);
    assert_eq!(v.window(), (TOTAL + 1 - CAP, TOTAL + 1));
    assert_eq!(v.read(TOTAL), Slot::Torn);
    for s in TOTAL + 1 - CAP..TOTAL {
        assert!(matches!(v.read(s), Slot::Entry(e) if e.seq == s && e.a1 == s));
    }
}

#[test]
fn overwrite_end_after_a_lap_leaves_the_newer_entry_alone() {
    let ring = MemRing::new(&params(16, 64, Policy::Overwrite));
    let w = ring.writer;
    let hung = w.begin(&fields_for(0, 0, 1, 0)).unwrap();
    assert_eq!(hung, 0);
    // 16 more entries lap the ring; seq 16 now owns slot 0.
    for c in 1..=16 {
        w.instant(&fields_for(1, c, 2, c), 5);
    }
    // The hung call finally returns.
    w.end(hung, 12345, -1);
    let bytes = ring.snapshot();
    let v = parse(&bytes);
    assert_eq!(v.header.counters[counter::END_LOST], 1);
    assert_eq!(v.window(), (1, 17));
    match v.read(16) {
        Slot::Entry(e) => {
            assert!(e.done);
            assert_eq!((e.a0, e.a1, e.t_end, e.result), (1, 16, 16, 5));
        }
        Slot::Torn => panic!("the newer entry was clobbered"),
    }
    assert_eq!(v.read(0), Slot::Torn);
}

#[test]
fn overwrite_policy_from_free_running_threads_never_mixes_entries() {
    // Many laps of a small ring with threads yielding inside calls: lapped writers must give their
    // entry up (counted) rather than write into a slot a newer entry holds.
    for round in 0..50 {
        let ring = MemRing::new(&params(CAP, 256, Policy::Overwrite));
        let got = write_from_threads(ring.writer, false);
        let bytes = ring.snapshot();
        let v = parse(&bytes);
        let (first, end) = v.window();
        let mut live = 0u64;
        let mut torn = 0u64;
        for s in first..end {
            match v.read(s) {
                Slot::Entry(e) => {
                    // Fields of one entry, all of them, under its own stamp.
                    assert_eq!(
                        e.a2,
                        checksum(e.a0, e.a1),
                        "round {round} seq {s}: fields mixed up"
                    );
                    assert_eq!(e.api, 1 + e.a0 as u16);
                    if e.done {
                        assert_eq!(
                            (e.t_begin, e.t_end),
                            (e.a1, e.a1 + 1),
                            "round {round} seq {s}"
                        );
                        assert_eq!(e.result, result_for(e.a1));
                    }
                    let granted = got[e.a0 as usize][e.a1 as usize];
                    assert_eq!(
                        granted,
                        Some(s),
                        "round {round}: seq {s} holds an entry reserved as {granted:?}"
                    );
                    live += 1;
                }
                Slot::Torn => torn += 1,
            }
        }
        let lost: u64 = got.iter().flatten().filter(|g| g.is_none()).count() as u64;
        assert_eq!(
            lost,
            v.header.counters[counter::LAPPED],
            "round {round}: every lost entry is counted"
        );
        assert_eq!(live + torn, CAP, "round {round}");
    }
}
