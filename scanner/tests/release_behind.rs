//! Rings given back as they are read: building the timeline (and reading the work tokens) gives each
//! part of a mapped ring back once its passes are done with it, so the model and the whole ring are
//! never held at once. What is built must be what a build that keeps every page builds.
//!
//! One test per file: `RssFile` is the whole process's, and tests of one file run side by side.

mod common;
#[path = "../benches/support/synth.rs"]
mod synth;

use causeway_ring::layout::{ClockKind, Policy, ENTRY_SIZE};
use causeway_ring::RingView;
use causeway_scanner::facts::model::Timeline;
use causeway_scanner::read::capture::{Capture, Ring};
use causeway_scanner::read::decode;
use std::sync::Mutex;

#[test]
fn a_ring_is_given_back_as_the_timeline_is_built_and_the_timeline_is_the_same() {
    // Which byte ranges a decode gives back, in a ring whose window wraps round its end: the
    // check's (one chunk here) and a pass's, each as the slots' runs before and after the wrap.
    let b = common::RingBuilder::new(64, Policy::Overwrite);
    for i in 0..100 {
        b.call(7, 1, 0, 10 * i, 10 * i + 5, 0, 0);
    }
    let mut bytes = b.bytes().to_vec();
    common::mark_closed(&mut bytes);
    let view = RingView::parse(&bytes).unwrap();
    let at = |slot: usize| view.header.entries_offset as usize + slot * ENTRY_SIZE;
    let got = Mutex::new(Vec::new());
    let record = |offset, len| got.lock().unwrap().push((offset, len));
    let (first, end) = view.window();
    assert_eq!(
        (first, end),
        (36, 100),
        "the window wraps: slots 36..64, then 0..36"
    );
    decode::analysed_releasing(&view, &record, |d| {
        // The check gave the whole window back.
        assert_eq!(
            std::mem::take(&mut *got.lock().unwrap()),
            [(at(36), 28 * ENTRY_SIZE), (at(0), 36 * ENTRY_SIZE)]
        );
        // A pass's part: entries 20..40 are slots 56..64 and 0..12.
        d.release(20..40);
        assert_eq!(
            std::mem::take(&mut *got.lock().unwrap()),
            [(at(56), 8 * ENTRY_SIZE), (at(0), 12 * ENTRY_SIZE)]
        );
        d.release(3..3);
        assert!(
            got.lock().unwrap().is_empty(),
            "an empty part gives nothing back"
        );
    });

    // A capture on disk: 600 k entries, a 64 MiB entry area.
    let dir = std::env::temp_dir().join(format!("causeway-behind-{}", std::process::id()));
    let (path, _, _) = synth::write(&dir, 600_000, 4, ClockKind::Tsc);
    let cap = Capture::open(&path).unwrap();
    let ring_kib = cap.files[0].bytes().len() as u64 / 1024;
    let rings = cap.rings().unwrap();
    let before = common::rss_file_kib();
    let released = Timeline::build(&rings);
    let tokens = causeway_scanner::facts::tokens::of_ring(&rings[0]);
    let after = common::rss_file_kib();
    assert!(
        after.saturating_sub(before) < ring_kib / 8,
        "RssFile {before} -> {after} KiB over the build: at most an eighth of the {ring_kib} KiB \
         ring may stay mapped"
    );
    // The same ring read keeping every page builds the same timeline and tokens.
    let kept: Vec<Ring> = (rings.iter())
        .map(|r| Ring {
            path: r.path,
            view: cap.files[0].view().unwrap(),
            file: None,
        })
        .collect();
    let whole = Timeline::build(&kept);
    assert!(released.processes[0].calls.len() > 300_000);
    assert_eq!(
        serde_json::to_string(&released).unwrap(),
        serde_json::to_string(&whole).unwrap()
    );
    let kept_tokens = causeway_scanner::facts::tokens::of_ring(&kept[0]);
    assert_eq!(format!("{tokens:?}"), format!("{kept_tokens:?}"));
    assert!(
        common::rss_file_kib() > after + ring_kib / 2,
        "the build that keeps its pages holds the ring mapped (the measure above can fail)"
    );
    drop((rings, kept));
    drop(cap);
    std::fs::remove_dir_all(&dir).unwrap();
}
