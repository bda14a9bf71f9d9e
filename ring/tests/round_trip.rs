//! Round trips: every header field, entry field and string record written by the writer reads back
//! exactly; open calls read back as open; tick conversion tracks CLOCK_MONOTONIC.

mod common;

use causeway_ring::clock::{self, Anchor};
use causeway_ring::layout::{counter, entry_flags, flags, hdr, ApiInfo, Class, Layer};
use causeway_ring::{
    file_size, ClockKind, Entry, Fields, Kind, Policy, RingView, Slot, StrKind, StrRecord,
    HEADER_SIZE,
};
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

fn entry(seq: u64, done: bool, f: &Fields, t_end: u64, result: i32) -> Entry {
    Entry {
        seq,
        done,
        t_begin: f.t_begin,
        t_end,
        tid: f.tid,
        api: f.api,
        kind: Kind::from_u8(f.kind),
        flags: f.flags,
        result,
        depth: f.depth,
        node: f.node,
        a0: f.a0,
        a1: f.a1,
        a2: f.a2,
    }
}

#[test]
fn header_round_trips_through_a_ring_file() {
    let dir = TempDir::new("hdr");
    for policy in [Policy::Drop, Policy::Overwrite] {
        let anchor = clock::anchor();
        let mut p = params(256, 1024, policy);
        p.pid = 31337;
        p.ppid = 1;
        p.level = 4;
        p.clock = ClockKind::Tsc;
        p.ticks_per_sec = 2_912_345_678;
        p.anchor = anchor;
        p.exe = "/home/ü/bin/python3.12".as_bytes();
        p.host = b"gpu-node-0042.cluster";
        p.flags = flags::FORKED;
        let ring = FileRing::create(&dir.bytes(), &p);

        // The file: where create_file promised, exactly the size the header describes, private.
        let name = ring.path.file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(ring.path.parent().unwrap(), dir.path());
        assert!(
            name.starts_with("gpu-node-0042.cluster-31337-") && name.ends_with(".cwring"),
            "{name}"
        );
        let parts: Vec<&str> = name.trim_end_matches(".cwring").rsplitn(3, '-').collect();
        assert!(
            parts[0].parse::<u64>().is_ok() && parts[1].parse::<u64>().is_ok(),
            "{name}"
        );
        let meta = std::fs::metadata(&ring.path).unwrap();
        assert_eq!(meta.len(), file_size(256, 1024));
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);

        // Before any entry both anchors are the start anchor.
        let bytes = ring.read_file();
        let v = parse(&bytes);
        let h = &v.header;
        assert_eq!(h.version, causeway_ring::layout::VERSION);
        assert_eq!(h.policy, policy);
        assert_eq!(h.capacity, 256);
        assert_eq!(h.strings_offset, HEADER_SIZE as u64);
        assert_eq!(h.strings_size, 1024);
        assert_eq!(h.entries_offset, HEADER_SIZE as u64 + 1024);
        assert_eq!(h.pid, 31337);
        assert_eq!(h.ppid, 1);
        assert_eq!(h.level, 4);
        assert_eq!(h.clock, ClockKind::Tsc);
        assert_eq!(h.flags, flags::FORKED);
        assert_eq!(h.head, 0);
        assert_eq!(h.dropped, 0);
        assert_eq!(h.strings_used, 0);
        assert_eq!(h.strings_dropped, 0);
        assert_eq!(h.anchor0, anchor);
        assert_eq!(h.anchor1, anchor);
        assert_eq!(h.ticks_per_sec, 2_912_345_678);
        assert_eq!(h.exe, "/home/ü/bin/python3.12");
        assert_eq!(h.host, "gpu-node-0042.cluster");
        assert_eq!(h.notice, None);
        assert_eq!(h.counters, [0; hdr::COUNTER_SLOTS]);
        assert_eq!(v.window(), (0, 0));
        assert!(v.strings.is_empty() && !v.strings_torn);

        // The first entry refreshes the latest anchor (sequence word even again, time moved on).
        ring.writer.instant(&Fields::default(), 0);
        let bytes = ring.read_file();
        let v = parse(&bytes);
        assert_eq!(v.header.anchor0, anchor);
        assert_eq!(get_u64(&bytes, hdr::ANCHOR1_SEQ), 2);
        assert!(v.header.anchor1.mono_ns >= anchor.mono_ns);
        assert!(v.header.anchor1.real_ns >= anchor.real_ns);
        assert_eq!(v.header.head, 1);
    }
}

#[test]
fn entries_round_trip_with_every_field() {
    let ring = MemRing::new(&params(64, 256, Policy::Drop));
    let w = &ring.writer;
    let mut want = Vec::new();

    // A complete call.
    let f = Fields {
        node: 4242,
        t_begin: 1_000,
        tid: 77,
        api: 3,
        kind: Kind::Call as u8,
        flags: entry_flags::PER_THREAD,
        depth: 2,
        a0: u64::MAX,
        a1: 0,
        a2: 0xDEAD_BEEF_0BAD_F00D,
    };
    let s = w.begin(&f).expect("slot");
    w.end(s, 2_000, -7);
    want.push(entry(s, true, &f, 2_000, -7));

    // An instant entry of every kind.
    for (i, k) in [
        Kind::RangePush,
        Kind::RangePop,
        Kind::RangeStart,
        Kind::RangeEnd,
        Kind::Mark,
        Kind::ThreadStart,
        Kind::ProcessStart,
        Kind::ProcessExit,
    ]
    .into_iter()
    .enumerate()
    {
        let i = i as u64;
        let f = Fields {
            node: 0,
            t_begin: 10_000 + i,
            tid: 100 + i as u32,
            api: 40 + i as u16,
            kind: k as u8,
            flags: 0,
            depth: i as u16,
            a0: i,
            a1: i << 32,
            a2: !i,
        };
        w.instant(&f, i as i32);
        want.push(entry(want.len() as u64, true, &f, f.t_begin, i as i32));
    }

    // Extremes, and a kind byte the reader does not know.
    let f = Fields {
        node: 0,
        t_begin: u64::MAX - 1,
        tid: u32::MAX,
        api: u16::MAX,
        kind: 0xEE,
        flags: 0xFF,
        depth: u16::MAX,
        a0: 1 << 63,
        a1: u64::MAX,
        a2: 1,
    };
    w.instant(&f, i32::MIN);
    want.push(entry(want.len() as u64, true, &f, f.t_begin, i32::MIN));

    // A call that completes out of order, after a later one began.
    let f1 = Fields {
        t_begin: 50,
        tid: 9,
        api: 1,
        kind: Kind::Call as u8,
        depth: 0,
        a0: 5,
        ..Fields::default()
    };
    let f2 = Fields {
        t_begin: 51,
        depth: 1,
        a0: 6,
        ..f1
    };
    let s1 = w.begin(&f1).unwrap();
    let s2 = w.begin(&f2).unwrap();
    w.end(s2, 60, 2);
    w.end(s1, 70, i32::MAX);
    want.push(entry(s1, true, &f1, 70, i32::MAX));
    want.push(entry(s2, true, &f2, 60, 2));

    // An open call: begun, never ended (a hung call, or the process died in it).
    let open = Fields {
        node: 0,
        t_begin: 999,
        tid: 12,
        api: 8,
        kind: Kind::Call as u8,
        flags: 1,
        depth: 3,
        a0: 1,
        a1: 2,
        a2: 3,
    };
    let so = w.begin(&open).unwrap();
    want.push(entry(so, false, &open, 0, 0));

    let bytes = ring.snapshot();
    let v = parse(&bytes);
    assert_eq!(v.header.head, want.len() as u64);
    assert_eq!(v.window(), (0, want.len() as u64));
    for e in &want {
        assert_eq!(v.read(e.seq), Slot::Entry(*e), "seq {}", e.seq);
    }
    // The open slot's stamp says open; its raw t_end is still 0 (nothing leaked from the begin).
    match v.read(so) {
        Slot::Entry(e) => assert!(!e.done && e.t_end == 0 && e.result == 0),
        Slot::Torn => panic!("open call read as torn"),
    }
    // Slots never reserved are not live.
    assert_eq!(v.read(want.len() as u64), Slot::Torn);
    assert_eq!(v.read(63), Slot::Torn);
}

#[test]
fn strings_of_every_kind_read_back_in_order() {
    let ring = MemRing::new(&params(16, 4096, Policy::Drop));
    let w = &ring.writer;
    let api = |class, layer, level| {
        ApiInfo {
            layer,
            class,
            level,
        }
        .pack()
    };
    let recs = vec![
        StrRecord {
            kind: StrKind::Api,
            key: 7,
            aux: api(Class::Launch, Layer::Runtime, 1),
            text: "cudaLaunchKernel".into(),
        },
        StrRecord {
            kind: StrKind::Kernel,
            key: 0x7f00_dead_0000,
            aux: 0,
            text: "_Z6kernelPfS_i".into(),
        },
        StrRecord {
            kind: StrKind::Text,
            key: 1,
            aux: 0,
            text: "forward ✓ — ütf8".into(),
        },
        StrRecord {
            kind: StrKind::Thread,
            key: 4242,
            aux: 0,
            text: "pt_autograd_0".into(),
        },
        StrRecord {
            kind: StrKind::Text,
            key: 2,
            aux: 0,
            text: String::new(),
        },
        StrRecord {
            kind: StrKind::Api,
            key: u64::MAX,
            aux: api(Class::Lookup, Layer::Driver, 4),
            text: "cuGetProcAddress_v2".into(),
        },
        // Exactly 8-aligned payloads: 8 and 16 bytes.
        StrRecord {
            kind: StrKind::Kernel,
            key: 3,
            aux: 0,
            text: "abcdefgh".into(),
        },
        StrRecord {
            kind: StrKind::Thread,
            key: 5,
            aux: 0xFFFF_FFFF,
            text: "0123456789abcdef".into(),
        },
    ];
    let mut used = 0;
    for r in &recs {
        assert!(w.intern(r.kind, r.key, r.aux, r.text.as_bytes()));
        used += (24 + r.text.len() as u64).div_ceil(8) * 8;
    }
    let bytes = ring.snapshot();
    let v = parse(&bytes);
    assert_eq!(v.strings, recs);
    assert!(!v.strings_torn);
    assert_eq!(v.header.strings_used, used);
    assert_eq!(v.header.strings_dropped, 0);
    let info = ApiInfo::unpack(v.strings[5].aux);
    assert_eq!(
        (info.class, info.layer, info.level),
        (Class::Lookup, Layer::Driver, 4)
    );
}

#[test]
fn string_area_overflow_and_long_strings() {
    // 128 bytes hold four 32-byte records (24-byte header + up to 8 payload bytes).
    let ring = MemRing::new(&params(16, 128, Policy::Drop));
    let w = &ring.writer;
    for i in 0..4u64 {
        assert!(w.intern(StrKind::Text, i, 0, format!("s{i}").as_bytes()));
    }
    assert!(!w.intern(StrKind::Text, 9, 0, b"x"));
    assert!(!w.intern(StrKind::Thread, 9, 0, b""));
    let bytes = ring.snapshot();
    let v = parse(&bytes);
    assert_eq!(v.header.strings_used, 128);
    assert_eq!(v.header.strings_dropped, 2);
    let keys: Vec<u64> = v.strings.iter().map(|r| r.key).collect();
    assert_eq!(keys, [0, 1, 2, 3]);
    assert_eq!(v.strings[3].text, "s3");

    // A string longer than a record can say is cut at u16::MAX bytes.
    let ring = MemRing::new(&params(16, 1 << 17, Policy::Drop));
    let long = vec![b'k'; 70_000];
    assert!(ring.writer.intern(StrKind::Kernel, 1, 0, &long));
    assert!(ring.writer.intern(StrKind::Kernel, 2, 0, b"after"));
    let bytes = ring.snapshot();
    let v = parse(&bytes);
    assert_eq!(v.strings.len(), 2);
    assert_eq!(v.strings[0].text.len(), u16::MAX as usize);
    assert_eq!(v.strings[1].text, "after");
}

#[test]
fn long_exe_and_host_are_cut_to_their_fields() {
    let exe = vec![b'e'; 3000];
    let host = vec![b'h'; 100];
    let mut p = params(16, 64, Policy::Drop);
    p.exe = &exe;
    p.host = &host;
    let ring = MemRing::new(&p);
    let bytes = ring.snapshot();
    let v = parse(&bytes);
    assert_eq!(v.header.exe, "e".repeat(hdr::EXE_MAX));
    assert_eq!(v.header.host, "h".repeat(hdr::HOST_MAX));
}

#[test]
fn notice_flags_and_counters_round_trip() {
    let ring = MemRing::new(&params(16, 64, Policy::Overwrite));
    let w = &ring.writer;
    w.notice(b"cuInit failed: first notice wins");
    w.notice(b"second notice is ignored");
    w.set_flag(flags::DISABLED);
    w.set_flag(flags::CLOSED);
    for _ in 0..3 {
        w.bump(counter::END_LOST);
    }
    w.bump(counter::PROC_UNMATCHED);
    w.bump(hdr::COUNTER_SLOTS - 1);
    w.bump(hdr::COUNTER_SLOTS); // out of range: ignored, not a stray write
    w.bump(usize::MAX);
    let bytes = ring.snapshot();
    let v = parse(&bytes);
    assert_eq!(
        v.header.notice.as_deref(),
        Some("cuInit failed: first notice wins")
    );
    assert_eq!(v.header.flags, flags::DISABLED | flags::CLOSED);
    let mut want = [0u64; hdr::COUNTER_SLOTS];
    want[counter::END_LOST] = 3;
    want[counter::PROC_UNMATCHED] = 1;
    want[hdr::COUNTER_SLOTS - 1] = 1;
    assert_eq!(v.header.counters, want);
    // Nothing after the counters was touched.
    assert!(bytes[hdr::COUNTERS + 8 * hdr::COUNTER_SLOTS..HEADER_SIZE]
        .iter()
        .all(|&b| b == 0));
}

/// The tightest (monotonic, ticks, monotonic) bracket of a few tries.
fn bracket() -> (u64, u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..50 {
        let m0 = clock::clock_ns(libc::CLOCK_MONOTONIC);
        let t = clock::ticks();
        let m1 = clock::clock_ns(libc::CLOCK_MONOTONIC);
        if m1 - m0 < best.2 - best.0 {
            best = (m0, t, m1);
        }
    }
    best
}

fn assert_close(bytes: &[u8], what: &str) {
    const TOL: u64 = 5_000;
    let v = parse(bytes);
    let (m0, t, m1) = bracket();
    let ns = v.header.ticks_to_ns(t);
    assert!(
        ns + TOL >= m0 && ns <= m1 + TOL,
        "{what}: ticks_to_ns({t}) = {ns}, CLOCK_MONOTONIC read {m0}..{m1} (off by {} ns, clock {:?})",
        (ns as i128 - ((m0 + m1) / 2) as i128),
        v.header.clock
    );
}

#[test]
fn ticks_to_ns_tracks_clock_monotonic() {
    // The only test in this binary that selects the process clock.
    let (kind, hz) = clock::init(false);
    assert_eq!(clock::kind(), kind);
    let mut p = params(16, 64, Policy::Drop);
    p.clock = kind;
    p.ticks_per_sec = hz;
    p.anchor = clock::anchor();
    let ring = MemRing::new(&p);

    // Right after start the rate measured at start-up converts.
    assert_close(&ring.snapshot(), "start-up rate");
    // With a second anchor 3 ms later the rate comes from the anchors.
    std::thread::sleep(Duration::from_millis(3));
    ring.writer.update_anchor();
    let bytes = ring.snapshot();
    assert_ne!(parse(&bytes).header.anchor1, p.anchor);
    assert_close(&bytes, "anchored rate");
    // And still holds 30 ms past the last anchor.
    std::thread::sleep(Duration::from_millis(30));
    assert_close(&bytes, "extrapolated 30 ms");

    // Monotone over a range around the anchors, and one second of ticks is one second.
    let v = parse(&bytes);
    let h = &v.header;
    let mut rng = Rng(0x1234_5678);
    let mut t = h.anchor0.ticks.saturating_sub(10 * hz);
    let mut prev = h.ticks_to_ns(t);
    for _ in 0..20_000 {
        t += 1 + rng.below(hz / 100);
        let ns = h.ticks_to_ns(t);
        assert!(ns >= prev, "ticks_to_ns not monotone at {t}: {ns} < {prev}");
        prev = ns;
    }
    let t0 = h.anchor1.ticks;
    let one_s = h.span_ns(t0, t0 + hz);
    assert!(
        one_s.abs_diff(1_000_000_000) < 1_000_000,
        "{hz} ticks = {one_s} ns"
    );
}

#[test]
fn ticks_to_ns_converts_through_the_anchors() {
    // Synthetic TSC header: 3 GHz from the anchors, 2 GHz as the start-up rate.
    let mut p = params(16, 64, Policy::Drop);
    p.clock = ClockKind::Tsc;
    p.ticks_per_sec = 2_000_000_000;
    p.anchor = Anchor {
        ticks: 1_000_000,
        mono_ns: 5_000_000_000,
        real_ns: 1_700_000_000_000_000_000,
    };
    let ring = MemRing::new(&p);
    let mut bytes = ring.snapshot();
    {
        // Anchors equal: the start-up rate converts.
        let h = parse(&bytes).header;
        assert_eq!(h.ticks_to_ns(1_000_000), 5_000_000_000);
        assert_eq!(h.ticks_to_ns(1_000_000 + 2_000), 5_000_001_000);
        assert_eq!(h.ticks_to_ns(1_000_000 - 2_000), 4_999_999_000);
        assert_eq!(h.span_ns(0, 2_000_000_000), 1_000_000_000);
        assert_eq!(h.ticks_to_ns(0), 4_999_500_000);
    }
    // A second anchor 0.5 s later, 1.5e9 ticks on: the anchors' 3 GHz wins.
    set_u64(&mut bytes, hdr::ANCHOR1, 1_000_000 + 1_500_000_000);
    set_u64(&mut bytes, hdr::ANCHOR1 + 8, 5_500_000_000);
    {
        let h = parse(&bytes).header;
        assert_eq!(h.ticks_to_ns(1_000_000 + 3_000), 5_000_001_000);
        assert_eq!(h.ticks_to_ns(1_000_000 + 3_000_000_000), 6_000_000_000);
        assert_eq!(h.span_ns(7, 7 + 3_000_000_000), 1_000_000_000);
        // Ticks before the epoch of CLOCK_MONOTONIC clamp to 0 instead of wrapping.
        let mut b2 = bytes.clone();
        set_u64(&mut b2, hdr::ANCHOR0 + 8, 10);
        set_u64(&mut b2, hdr::ANCHOR1 + 8, 500_000_010);
        assert_eq!(parse(&b2).header.ticks_to_ns(0), 0);
    }
    // anchor1 caught mid-refresh (odd sequence word: the writer died in the seqlock) is not trusted: the
    // start anchor and the start-up rate convert instead of a half-written anchor.
    {
        let mut b2 = bytes.clone();
        set_u64(&mut b2, hdr::ANCHOR1_SEQ, 7);
        set_u64(&mut b2, hdr::ANCHOR1 + 8, 1); // torn: new ticks, old-looking time
        let h = parse(&b2).header;
        assert_eq!(h.anchor1, h.anchor0);
        assert_eq!(h.rate, 2_000_000_000);
        assert_eq!(h.ticks_to_ns(1_000_000 + 2_000), 5_000_001_000);
        set_u64(&mut b2, hdr::ANCHOR1_SEQ, 8);
        set_u64(&mut b2, hdr::ANCHOR1 + 8, 5_500_000_000);
        assert_eq!(parse(&b2).header.rate, 3_000_000_000);
    }
    // Anchors under 100 µs apart are too close to measure a rate: back to the start-up rate.
    set_u64(&mut bytes, hdr::ANCHOR1, 1_000_000 + 150_000);
    set_u64(&mut bytes, hdr::ANCHOR1 + 8, 5_000_050_000);
    assert_eq!(
        parse(&bytes).header.ticks_to_ns(1_000_000 + 2_000),
        5_000_001_000
    );
    // No usable rate at all: everything maps to the start anchor rather than dividing by zero.
    set_u64(&mut bytes, hdr::TICKS_PER_SEC, 0);
    assert_eq!(parse(&bytes).header.ticks_to_ns(123_456_789), 5_000_000_000);

    // Monotonic clock: ticks are nanoseconds already.
    let ring = MemRing::new(&params(16, 64, Policy::Drop));
    let h = parse(&ring.snapshot()).header;
    for t in [0, 1, 111, 1 << 40, u64::MAX] {
        assert_eq!(h.ticks_to_ns(t), t);
    }
}

#[test]
fn a_zeroed_or_half_made_header_is_not_a_ring() {
    // The magic goes last: a file whose creator died before it reads as "never completed".
    let p = params(16, 64, Policy::Drop);
    let ring = MemRing::new(&p);
    let mut bytes = ring.snapshot();
    bytes[..8].fill(0);
    let e = RingView::parse(&bytes)
        .err()
        .expect("zero magic must not parse");
    assert!(e.0.contains("never completed"), "{e}");
}
