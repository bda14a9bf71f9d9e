//! Mutation fuzzing in process: flip bytes of a valid ring (header fields, string records, entry
//! slots) and run the whole pipeline. The reader may refuse a mutant; nothing may panic.

mod common;

use causeway_ring::layout::{self, hdr};
use causeway_ring::RingView;
use causeway_scanner::capture::Ring;
use causeway_scanner::{render, Report};
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

#[test]
fn mutants_never_panic() {
    let good = scenario().bytes().to_vec();
    let entries = layout::HEADER_SIZE + STRINGS as usize;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut parsed, mut refused) = (0, 0);
    for _ in 0..3000 {
        let mut b = good.clone();
        for _ in 0..1 + rng.below(8) {
            // Aim at the places a bad value could hurt: header words, string records, entry fields.
            let off = match rng.below(3) {
                0 => rng.below(hdr::COUNTERS + 8 * hdr::COUNTER_SLOTS),
                1 => layout::HEADER_SIZE + rng.below(512),
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
    // Both paths must have been exercised for the test to mean anything.
    assert!(
        parsed > 100 && refused > 100,
        "parsed {parsed}, refused {refused}"
    );
}
