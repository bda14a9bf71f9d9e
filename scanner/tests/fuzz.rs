//! Mutation fuzzing in process: flip bytes of a valid ring (header fields, string records, entry
//! slots) and run the whole pipeline. The reader may refuse a mutant; nothing may panic.

mod common;

use causeway_ring::layout::{self, ent, hdr};
use causeway_ring::RingView;
use causeway_scanner::read::capture::Ring;
use causeway_scanner::render::text as render;
use causeway_scanner::Report;
use common::*;
use std::path::Path;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The scenario ring with its torn slot committed (as an open call) and marked closed: the scanner
/// reads such a ring in place from its mapping rather than from a copy.
fn closed_whole_scenario() -> Vec<u8> {
    let mut b = scenario().bytes().to_vec();
    let view = RingView::parse(&b).unwrap();
    let (first, end) = view.window();
    let capacity = view.header.capacity;
    let torn: Vec<u64> = (first..end)
        .filter(|&s| view.read(s) == causeway_ring::Slot::Torn)
        .collect();
    assert!(!torn.is_empty(), "the scenario has a torn slot to repair");
    let entries = layout::HEADER_SIZE + STRINGS as usize;
    for seq in torn {
        let off = entries + (seq & (capacity - 1)) as usize * layout::ENTRY_SIZE + ent::STAMP;
        b[off..off + 8].copy_from_slice(&layout::stamp(seq, false).to_le_bytes());
    }
    mark_closed(&mut b);
    b
}

#[test]
fn mutants_never_panic() {
    let entries = layout::HEADER_SIZE + STRINGS as usize;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut parsed, mut refused) = (0, 0);
    // The scenario as written (read from a copy: it has a torn slot and is not closed), and whole
    // and closed (read in place).
    for good in [scenario().bytes().to_vec(), closed_whole_scenario()] {
        for _ in 0..2000 {
            let mut b = good.clone();
            for _ in 0..1 + rng.below(8) {
                // Aim at the places a bad value could hurt: header words, string records, entry
                // fields; and the head counter set whole near its end (windows that would overflow).
                let off = match rng.below(4) {
                    0 => rng.below(hdr::COUNTERS + 8 * hdr::COUNTER_SLOTS),
                    1 => layout::HEADER_SIZE + rng.below(512),
                    2 => {
                        let head = u64::MAX - rng.below(1 << 17) as u64;
                        b[hdr::HEAD..hdr::HEAD + 8].copy_from_slice(&head.to_le_bytes());
                        continue;
                    }
                    _ => entries + rng.below(b.len() - entries),
                };
                b[off] = match rng.below(4) {
                    0 => 0,
                    1 => 0xff,
                    2 => b[off] ^ (1 << rng.below(8)),
                    _ => rng.next() as u8,
                };
            }
            match RingView::parse(&b) {
                Ok(view) => {
                    parsed += 1;
                    let ring = Ring {
                        file: None,
                        path: Path::new("mutant.cwring"),
                        view,
                    };
                    let r = Report::build("mutant", &[ring]);
                    let _ = render::render(&r);
                    serde_json::to_string(&r).unwrap();
                    assert!(r.totals.entries <= 64);
                }
                Err(_) => refused += 1,
            }
        }
    }
    // Both paths must have been exercised for the test to mean anything.
    assert!(
        parsed > 100 && refused > 100,
        "parsed {parsed}, refused {refused}"
    );
}
