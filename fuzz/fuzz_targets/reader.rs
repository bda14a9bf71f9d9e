//! Fuzz target for the ring reader: `RingView::parse` on arbitrary bytes must return Ok or Err, never
//! panic; on Ok, reading every slot of the window and converting times must not panic either, and the
//! scanner's per-pass converter must give the same nanoseconds as `ticks_to_ns`.
#![no_main]

use causeway_ring::{RingView, Slot};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let v = match RingView::parse(data) {
        Ok(v) => v,
        Err(e) => {
            assert!(!e.0.is_empty(), "an error must say what is wrong");
            return;
        }
    };
    let h = &v.header;
    let (first, end) = v.window();
    assert!(first <= end && end - first <= h.capacity);
    let ticks = h.converter();
    for seq in first..end {
        if let Slot::Entry(e) = v.read(seq) {
            assert_eq!(e.seq, seq);
            let _ = h.span_ns(e.t_begin, e.t_end);
            assert_eq!(ticks.ns(e.t_begin), h.ticks_to_ns(e.t_begin));
            assert_eq!(ticks.ns(e.t_end), h.ticks_to_ns(e.t_end));
        }
    }
    for t in [
        0,
        1,
        h.anchor0.ticks,
        h.anchor1.ticks,
        h.anchor0.ticks.wrapping_sub(1),
        h.anchor1.ticks.wrapping_add(h.ticks_per_sec),
        u64::MAX / 2,
        u64::MAX,
    ] {
        assert_eq!(ticks.ns(t), h.ticks_to_ns(t));
        let _ = h.span_ns(0, t);
    }
    for r in &v.strings {
        let _ = (r.kind, r.key, r.aux, r.text.len());
    }
});
