//! Decoding a ring: reads every slot of its live window into entries, in parallel chunks (a 64 MiB
//! ring holds a million slots), and counts what could not be read and why.

use causeway_ring::{Entry, Policy, RingView, Slot};
use rayon::prelude::*;

/// Slots per parallel work item: large enough that scheduling is noise, small enough to spread out.
const CHUNK: u64 = 1 << 16;

/// The entries of one ring and the accounting of its window.
#[derive(Debug, Clone, Default)]
pub struct Decoded {
    /// Committed entries in sequence order.
    pub entries: Vec<Entry>,
    /// Committed entries (`entries.len()`).
    pub live: u64,
    /// Slots reserved but never committed (writer died mid-entry, or still writing).
    pub torn: u64,
    /// Committed calls that had not returned (`done == false`).
    pub open: u64,
    /// Entries lost to the overwrite policy (the window starts after them).
    pub overwritten: u64,
    /// Entries the writer dropped because the ring was full (drop policy; from the header).
    pub dropped: u64,
}

/// Reads the window `[first, end)` of `view`.
pub fn decode(view: &RingView) -> Decoded {
    let (first, end) = view.window();
    let mut starts = Vec::new();
    let mut s = first;
    while s < end {
        starts.push(s);
        s = s.saturating_add(CHUNK);
    }
    let chunks: Vec<(Vec<Entry>, u64)> = starts
        .par_iter()
        .map(|&s| {
            let e = s.saturating_add(CHUNK).min(end);
            let mut out = Vec::with_capacity((e - s) as usize);
            let mut torn = 0;
            for seq in s..e {
                match view.read(seq) {
                    Slot::Entry(en) => out.push(en),
                    Slot::Torn => torn += 1,
                }
            }
            (out, torn)
        })
        .collect();
    let mut d = Decoded {
        overwritten: match view.header.policy {
            Policy::Overwrite => first,
            Policy::Drop => 0,
        },
        dropped: view.header.dropped,
        ..Decoded::default()
    };
    d.entries.reserve(chunks.iter().map(|c| c.0.len()).sum());
    for (entries, torn) in chunks {
        d.torn += torn;
        d.entries.extend(entries);
    }
    d.live = d.entries.len() as u64;
    d.open = d.entries.iter().filter(|e| !e.done).count() as u64;
    d
}
