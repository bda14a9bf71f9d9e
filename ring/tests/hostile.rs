//! Hostile input to the reader: every malformed file gives an error naming the problem, never a panic;
//! and randomly mangled rings either parse (and read) cleanly or are refused.

mod common;

use causeway_ring::layout::{hdr, rec, StrKind};
use causeway_ring::{file_size, Policy, RingView, Slot, HEADER_SIZE, MAGIC};
use common::*;

const CAP: u64 = 16;
const STRS: u64 = 256;

/// A small valid ring with entries and string records.
fn valid() -> Vec<u8> {
    let ring = MemRing::new(&params(CAP, STRS, Policy::Overwrite));
    let w = ring.writer;
    assert!(w.intern(StrKind::Api, 1, 0x0001_0101, b"cudaLaunchKernel"));
    assert!(w.intern(StrKind::Kernel, 0xabc, 0, b"k"));
    assert!(w.intern(StrKind::Text, 5, 0, b"step"));
    for c in 0..20 {
        let s = w.begin(&fields_for(c % 3, c, 7, c)).unwrap();
        if c != 19 {
            w.end(s, c + 1, 0);
        }
    }
    let b = ring.snapshot();
    assert_eq!(b.len() as u64, file_size(CAP, STRS));
    parse(&b);
    b
}

/// Parses `b`, which must fail with a message containing `word`.
#[track_caller]
fn refused(b: &[u8], word: &str) -> String {
    match RingView::parse(b) {
        Ok(_) => panic!("parsed, expected an error about {word:?}"),
        Err(e) => {
            assert!(
                e.0.contains(word),
                "error {:?} does not mention {word:?}",
                e.0
            );
            assert_eq!(e.to_string(), e.0);
            e.0
        }
    }
}

fn with(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut b = valid();
    f(&mut b);
    b
}

#[test]
fn empty_and_short_inputs_are_truncated() {
    refused(&[], "truncated");
    refused(b"CAUS", "truncated");
    refused(&MAGIC, "truncated");
    let mut b = MAGIC.to_vec();
    b.resize(HEADER_SIZE - 1, 0);
    refused(&b, "truncated");
    // Short and not even a ring.
    refused(b"NOTARING-but-long-enough", "magic");
    refused(&[0xff; 100], "magic");
}

#[test]
fn random_bytes_are_not_a_ring() {
    let mut rng = Rng(0x00C0_FFEE);
    for i in 0..200 {
        let len = [0, 1, 7, 8, 64, 4095, 4096, 4097, 10_000][i % 9];
        let b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let e = RingView::parse(&b).err().expect("random bytes parsed");
        assert!(
            e.0.contains("magic") || e.0.contains("truncated"),
            "{len} random bytes: {e}"
        );
    }
    // All zeros: a ring whose creator died before finishing the header.
    refused(&vec![0; 8192], "never completed");
}

#[test]
fn correct_magic_then_garbage() {
    let mut rng = Rng(42);
    for _ in 0..200 {
        let mut b: Vec<u8> = (0..8192).map(|_| rng.next() as u8).collect();
        b[..8].copy_from_slice(&MAGIC);
        refused(&b, "version");
    }
    // Magic and version right, the rest garbage: refused on some header field, never a panic.
    for _ in 0..500 {
        let mut b: Vec<u8> = (0..8192).map(|_| rng.next() as u8).collect();
        b[..8].copy_from_slice(&MAGIC);
        set_u32(&mut b, hdr::VERSION, causeway_ring::layout::VERSION);
        let e = RingView::parse(&b).err().expect("garbage parsed");
        assert!(e.0.contains("corrupt header"), "{e}");
    }
}

#[test]
fn version_and_sizes() {
    refused(&with(|b| set_u32(b, hdr::VERSION, 1)), "version 1");
    refused(&with(|b| set_u32(b, hdr::VERSION, 3)), "version 3");
    refused(&with(|b| set_u32(b, hdr::VERSION, 0)), "version");
    refused(&with(|b| set_u32(b, hdr::HEADER_SIZE, 8192)), "header size");
    refused(&with(|b| set_u32(b, hdr::ENTRY_SIZE, 32)), "entry size");
    refused(&with(|b| set_u32(b, hdr::POLICY, 0)), "policy");
    refused(&with(|b| set_u32(b, hdr::POLICY, 3)), "policy");
    refused(&with(|b| set_u32(b, hdr::CLOCK, 0)), "clock");
    refused(&with(|b| set_u32(b, hdr::CLOCK, 9)), "clock");
}

#[test]
fn capacity() {
    for cap in [0, 3, 15, 17, 24, 1000, u64::MAX, 1 << 37, 1 << 63] {
        refused(&with(|b| set_u64(b, hdr::CAPACITY, cap)), "capacity");
    }
    // A power of two the file is far too short for.
    refused(&with(|b| set_u64(b, hdr::CAPACITY, 1 << 36)), "truncated");
    refused(&with(|b| set_u64(b, hdr::CAPACITY, CAP * 2)), "truncated");
    // A smaller power of two is a consistent (if odd) file: the extra bytes are ignored.
    let b = with(|b| set_u64(b, hdr::CAPACITY, CAP / 2));
    let v = parse(&b);
    assert_eq!(v.header.capacity, CAP / 2);
}

#[test]
fn string_area_and_entries_offsets() {
    refused(
        &with(|b| set_u64(b, hdr::STRINGS_SIZE, STRS + 4)),
        "string area",
    );
    refused(
        &with(|b| set_u64(b, hdr::STRINGS_SIZE, STRS - 1)),
        "string area",
    );
    refused(
        &with(|b| set_u64(b, hdr::STRINGS_SIZE, 1 << 40)),
        "string area",
    );
    refused(&with(|b| set_u64(b, hdr::STRINGS_OFFSET, 0)), "string area");
    refused(
        &with(|b| set_u64(b, hdr::STRINGS_OFFSET, HEADER_SIZE as u64 + 8)),
        "string area",
    );
    for off in [
        0,
        HEADER_SIZE as u64,
        HEADER_SIZE as u64 + STRS + 64,
        u64::MAX,
    ] {
        refused(
            &with(|b| set_u64(b, hdr::ENTRIES_OFFSET, off)),
            "entries at",
        );
    }
    // Consistent but bigger than the file.
    refused(
        &with(|b| {
            set_u64(b, hdr::STRINGS_SIZE, STRS + 8);
            set_u64(b, hdr::ENTRIES_OFFSET, HEADER_SIZE as u64 + STRS + 8);
        }),
        "truncated",
    );
}

#[test]
fn truncated_at_every_boundary() {
    let b = valid();
    let need = b.len();
    for len in [
        0,
        8,
        HEADER_SIZE - 1,
        HEADER_SIZE,
        HEADER_SIZE + 1,
        HEADER_SIZE + STRS as usize - 1,
        HEADER_SIZE + STRS as usize,
        HEADER_SIZE + STRS as usize + 64,
        need - 64,
        need - 1,
    ] {
        let msg = refused(&b[..len], "truncated");
        if len >= HEADER_SIZE {
            assert!(msg.contains(&need.to_string()), "{msg}");
        }
    }
    // Longer than needed is fine (a ring read from a bigger buffer).
    let mut long = b.clone();
    long.extend_from_slice(&[0xAA; 100]);
    parse(&long);
}

#[test]
fn string_cursor_beyond_the_area() {
    refused(
        &with(|b| set_u64(b, hdr::STR_CURSOR, STRS + 8)),
        "string bytes used",
    );
    refused(
        &with(|b| set_u64(b, hdr::STR_CURSOR, u64::MAX)),
        "string bytes used",
    );
}

#[test]
fn corrupt_string_records() {
    let area = HEADER_SIZE;
    let second = area + ((rec::HDR + "cudaLaunchKernel".len() + 7) & !7);
    for at in [area, second] {
        for size in [8u32, 16, 23, 33, 36, 1 << 20, u32::MAX] {
            let msg = refused(&with(|b| set_u32(b, at + rec::SIZE, size)), "string record");
            assert!(msg.contains(&format!("offset {}", at - area)), "{msg}");
        }
        // Payload longer than the record.
        refused(&with(|b| set_u32(b, at + rec::LEN, 200)), "string record");
        refused(
            &with(|b| set_u32(b, at + rec::LEN, u32::MAX)),
            "string record",
        );
        // Unknown kinds.
        for kind in [0, 5, u32::MAX] {
            let msg = refused(&with(|b| set_u32(b, at + rec::KIND, kind)), "unknown kind");
            assert!(msg.contains("string record"), "{msg}");
        }
    }
    // A record running past the cursor: cut the cursor short of the last record's end.
    let v = valid();
    let used = get_u64(&v, hdr::STR_CURSOR);
    refused(
        &with(|b| set_u64(b, hdr::STR_CURSOR, used - 8)),
        "string record",
    );
    // A cursor that is not a multiple of 8 leaves a stub too short for the record that starts there.
    refused(
        &with(|b| {
            set_u64(b, hdr::STR_CURSOR, used + 4);
            set_u32(b, HEADER_SIZE + used as usize, 24);
        }),
        "string record",
    );
    // ... while a zero size word there is just an uncommitted tail.
    let b = with(|b| set_u64(b, hdr::STR_CURSOR, used + 4));
    assert!(parse(&b).strings_torn);

    // A record reserved but never committed (size 0) is a torn tail, not an error.
    let b = with(|b| set_u32(b, second + rec::SIZE, 0));
    let v = parse(&b);
    assert!(v.strings_torn);
    assert_eq!(v.strings.len(), 1);
    // Invalid UTF-8 in a payload is replaced, not refused.
    let b = with(|b| b[second + rec::HDR] = 0xff);
    assert_eq!(parse(&b).strings[1].text, "\u{fffd}");
}

#[test]
fn names_too_long_for_their_fields() {
    refused(
        &with(|b| set_u32(b, hdr::EXE_LEN, hdr::EXE_MAX as u32 + 1)),
        "executable",
    );
    refused(&with(|b| set_u32(b, hdr::EXE_LEN, u32::MAX)), "executable");
    refused(
        &with(|b| set_u32(b, hdr::HOST_LEN, hdr::HOST_MAX as u32 + 1)),
        "host",
    );
    // Exactly full is fine.
    let b = with(|b| set_u32(b, hdr::EXE_LEN, hdr::EXE_MAX as u32));
    assert_eq!(parse(&b).header.exe.len(), hdr::EXE_MAX);
    // A notice being written (length word u32::MAX) or too long is no notice, not an error.
    for n in [u32::MAX, hdr::NOTICE_MAX as u32 + 1] {
        let b = with(|b| set_u32(b, hdr::NOTICE_LEN, n));
        assert_eq!(parse(&b).header.notice, None);
    }
}

#[test]
fn capture_level() {
    for level in [0, 5, u32::MAX] {
        refused(&with(|b| set_u32(b, hdr::LEVEL, level)), "level");
    }
    for level in 1..=4 {
        assert_eq!(
            parse(&with(|b| set_u32(b, hdr::LEVEL, level))).header.level,
            level
        );
    }
}

/// Reads everything a consumer would read from a view.
fn consume(v: &RingView) {
    let (first, end) = v.window();
    assert!(end - first <= v.header.capacity);
    for s in first..end {
        if let Slot::Entry(e) = v.read(s) {
            assert_eq!(e.seq, s);
        }
    }
    let h = &v.header;
    for t in [
        0,
        1,
        h.anchor0.ticks,
        h.anchor1.ticks,
        u64::MAX / 2,
        u64::MAX,
    ] {
        let _ = h.ticks_to_ns(t);
        let _ = h.span_ns(t, t.wrapping_add(1000));
    }
}

/// A bounded, deterministic fuzz on stable: mangle a valid ring (header words, string records, stamps,
/// truncation) and require parse + read to be panic-free. The libFuzzer target in fuzz/ does the same
/// without bounds.
#[test]
fn mangled_rings_never_panic() {
    let base = valid();
    let mut rng = Rng(0xDEC0DE);
    let interesting: [u64; 10] = [0, 1, 2, 7, 8, 16, 4096, u32::MAX as u64, 1 << 36, u64::MAX];
    let (mut ok, mut bad) = (0, 0);
    for i in 0..5000 {
        let mut b = base.clone();
        for _ in 0..1 + rng.below(6) {
            // Mostly the header's words and the string area; sometimes anywhere.
            let region = match rng.below(4) {
                0 => 0..256,
                1 => HEADER_SIZE..HEADER_SIZE + 128,
                2 => hdr::EXE_LEN..hdr::COUNTERS,
                _ => 0..b.len(),
            };
            let off = (region.start + rng.below((region.end - region.start) as u64) as usize) & !3;
            match rng.below(3) {
                0 => b[off] = rng.next() as u8,
                1 => {
                    let v = interesting[rng.below(10) as usize];
                    if off + 8 <= b.len() {
                        set_u64(&mut b, off, v);
                    }
                }
                _ => {
                    if off + 4 <= b.len() {
                        set_u32(&mut b, off, rng.next() as u32);
                    }
                }
            }
        }
        if rng.below(8) == 0 {
            b.truncate(rng.below(b.len() as u64 + 1) as usize);
        }
        let r = std::panic::catch_unwind(|| match RingView::parse(&b) {
            Ok(v) => {
                consume(&v);
                true
            }
            Err(e) => {
                assert!(!e.0.is_empty());
                false
            }
        });
        match r {
            Ok(true) => ok += 1,
            Ok(false) => bad += 1,
            Err(_) => {
                let path = std::env::temp_dir().join(format!("causeway-ring-panic-{i}.cwring"));
                std::fs::write(&path, &b).unwrap();
                panic!(
                    "reader panicked on mangled ring #{i}, saved to {}",
                    path.display()
                );
            }
        }
    }
    // Both outcomes are exercised.
    assert!(ok > 100 && bad > 100, "{ok} parsed, {bad} refused");
}
