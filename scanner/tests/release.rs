//! `Capture::release_pages`: the exports give the mapped rings' pages back once the model holds what
//! they read. The pages must leave this process's memory, and the capture must read the same after.

mod common;
#[path = "../benches/support/synth.rs"]
mod synth;

use causeway_ring::layout::ClockKind;
use causeway_scanner::read::capture::Capture;

#[test]
fn released_pages_leave_the_process_and_read_back_the_same() {
    let dir = std::env::temp_dir().join(format!("causeway-release-{}", std::process::id()));
    // 500 k entries: a 32 MiB entry area, far above anything else this test maps.
    let (path, _, _) = synth::write(&dir, 500_000, 4, ClockKind::Tsc);
    let cap = Capture::open(&path).unwrap();
    let bytes = cap.files[0].bytes();
    let len = bytes.len() as u64;
    // Read every page (as decoding does): the mapping is resident.
    let sum = |b: &[u8]| b.iter().step_by(512).map(|&x| x as u64).sum::<u64>();
    let before_sum = sum(bytes);
    let touched = common::rss_file_kib();
    cap.release_pages();
    let released = common::rss_file_kib();
    assert!(
        touched - released >= len / 1024 * 9 / 10,
        "RssFile {touched} KiB -> {released} KiB: at most a tenth of the {} KiB ring may stay",
        len / 1024
    );
    // The pages come back from the file as they were.
    assert_eq!(sum(cap.files[0].bytes()), before_sum);
    let rings = cap.rings().unwrap();
    assert_eq!(rings.len(), 1);
    drop(rings);
    drop(cap);
    std::fs::remove_dir_all(&dir).unwrap();
}
