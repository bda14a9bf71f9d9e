//! Seed rings for the reader fuzz target (fuzz/seeds/): small valid rings of each shape. With
//! `CAUSEWAY_WRITE_SEEDS=<dir>` the test (re)writes them there; it always checks that the checked-in
//! seeds still parse, so a format change that leaves them stale fails here.

mod common;

use causeway_ring::clock::Anchor;
use causeway_ring::layout::{counter, flags, ApiInfo, Class, Layer, StrKind};
use causeway_ring::{ClockKind, Fields, Kind, Policy, Slot};
use common::*;
use std::path::Path;

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();

    // Drop policy: calls, an open call, NVTX entries, every string kind.
    let ring = MemRing::new(&params(16, 256, Policy::Drop));
    let w = ring.writer;
    let info = ApiInfo {
        layer: Layer::Runtime,
        class: Class::Launch,
        level: 1,
    };
    w.intern(StrKind::Api, 1, info.pack(), b"cudaLaunchKernel");
    w.intern(StrKind::Kernel, 0x5000, 0, b"_Z4axpyPfS_f");
    w.intern(StrKind::Text, 9, 0, b"epoch 1");
    w.intern(StrKind::Thread, 77, 0, b"main");
    for c in 0..6 {
        let s = w.begin(&fields_for(0, c, 77, 1000 * c)).unwrap();
        w.end(s, 1000 * c + 500, 0);
    }
    let push = Fields {
        t_begin: 9000,
        tid: 77,
        api: 2,
        kind: Kind::RangePush as u8,
        a0: 9,
        ..Fields::default()
    };
    w.instant(&push, 0);
    w.begin(&fields_for(1, 0, 78, 9500)).unwrap();
    w.set_flag(flags::CLOSED);
    out.push(("drop.cwring", ring.snapshot()));

    // Overwrite policy, wrapped twice, with a lost end.
    let ring = MemRing::new(&params(8, 128, Policy::Overwrite));
    let w = ring.writer;
    w.intern(StrKind::Api, 3, 0x0002_0204, b"cuMemcpyAsync");
    for c in 0..21 {
        w.instant(&fields_for(2, c, 5, c), c as i32);
    }
    w.bump(counter::END_LOST);
    out.push(("overwrite.cwring", ring.snapshot()));

    // TSC clock with two anchors, a notice, counters, a torn string tail.
    let mut p = params(4, 64, Policy::Drop);
    p.clock = ClockKind::Tsc;
    p.ticks_per_sec = 3_000_000_000;
    p.anchor = Anchor {
        ticks: 10_000,
        mono_ns: 1_000_000,
        real_ns: 1_700_000_000_000_000_000,
    };
    p.level = 4;
    p.flags = flags::FORKED;
    let ring = MemRing::new(&p);
    let w = ring.writer;
    w.intern(StrKind::Text, 1, 0, b"x");
    w.notice(b"disabled: test");
    w.set_flag(flags::DISABLED);
    w.bump(counter::NAMES_MISSED);
    let mut b = ring.snapshot();
    // No entries written, so anchor1 is still the start anchor: move it 1 ms on at 3 GHz.
    set_u64(&mut b, causeway_ring::hdr::ANCHOR1, 10_000 + 3_000_000);
    set_u64(&mut b, causeway_ring::hdr::ANCHOR1 + 8, 2_000_000);
    // A record reserved past the committed one but never committed.
    set_u64(&mut b, causeway_ring::hdr::STR_CURSOR, 64);
    for s in 0..3u64 {
        let off = parse(&b).header.entries_offset as usize + 64 * s as usize;
        set_u64(&mut b, off, causeway_ring::layout::stamp(s, s != 1));
        set_u64(&mut b, off + 8, 20_000 + s);
    }
    set_u64(&mut b, causeway_ring::hdr::HEAD, 4);
    out.push(("tsc.cwring", b));
    out
}

fn check(name: &str, b: &[u8]) {
    assert!(b.len() <= 64 << 10, "{name}: seed over 64 KiB");
    let v = parse(b);
    let (first, end) = v.window();
    let live = (first..end)
        .filter(|&s| matches!(v.read(s), Slot::Entry(_)))
        .count();
    assert!(live > 0, "{name}: no live entries");
}

#[test]
fn fuzz_seeds() {
    let seeds = seeds();
    for (name, b) in &seeds {
        check(name, b);
    }
    let tsc = parse(&seeds[2].1);
    assert!(tsc.strings_torn);
    assert_eq!(tsc.header.rate, 3_000_000_000);
    assert_eq!(tsc.read(3), Slot::Torn);

    if let Some(dir) = std::env::var_os("CAUSEWAY_WRITE_SEEDS") {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, b) in &seeds {
            std::fs::write(Path::new(&dir).join(name), b).unwrap();
        }
    }
    // The checked-in seeds (if this checkout has the fuzz project) must still be valid rings.
    let checked_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds");
    if let Ok(rd) = std::fs::read_dir(&checked_in) {
        let mut n = 0;
        for e in rd {
            let p = e.unwrap().path();
            check(&p.display().to_string(), &std::fs::read(&p).unwrap());
            n += 1;
        }
        assert!(n >= 2, "{}: only {n} seeds", checked_in.display());
    }
}
