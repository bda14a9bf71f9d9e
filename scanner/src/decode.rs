//! Decoding a ring: reads every slot of its live window into entries, in parallel chunks (a 64 MiB
//! ring holds a million slots), and counts what could not be read and why.

use causeway_ring::{Entry, RingView, Slot};
use rayon::prelude::*;

/// Slots per parallel work item: large enough that scheduling is noise, small enough to spread out.
const CHUNK: usize = 1 << 16;

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
    // The reader bounds the window by the ring's capacity, which the file's size bounds.
    let n = usize::try_from(end.saturating_sub(first)).unwrap_or(0);
    // Each chunk decodes straight into its place in one vector (decoding into a vector per chunk and
    // concatenating copied every entry a second time: a tenth of a large report).
    let mut entries: Vec<Entry> = crate::bigvec::with_capacity(n);
    let written: Vec<(usize, u64, u64)> = entries.spare_capacity_mut()[..n]
        .par_chunks_mut(CHUNK)
        .enumerate()
        .map(|(c, out)| {
            let s = first + (c * CHUNK) as u64;
            let (mut w, mut torn, mut open) = (0, 0, 0);
            for seq in s..s + out.len() as u64 {
                match view.read(seq) {
                    Slot::Entry(en) => {
                        open += u64::from(!en.done);
                        out[w].write(en);
                        w += 1;
                    }
                    Slot::Torn => torn += 1,
                }
            }
            (w, torn, open)
        })
        .collect();
    // Close the holes torn slots left at the end of their chunks.
    let base = entries.as_mut_ptr();
    let mut len = 0;
    let (mut torn, mut open) = (0, 0);
    for (c, &(w, t, o)) in written.iter().enumerate() {
        torn += t;
        open += o;
        let at = c * CHUNK;
        if at != len {
            // SAFETY: chunk `c` initialised `w` entries at `at`; `len <= at`, both ranges lie within
            // the capacity `n`, and `ptr::copy` allows them to overlap. `Entry` is `Copy`: no drops.
            unsafe { std::ptr::copy(base.add(at), base.add(len), w) };
        }
        len += w;
    }
    // SAFETY: the first `len` elements are initialised (moved into place above), `len <= n`.
    unsafe { entries.set_len(len) };
    Decoded {
        overwritten: view.header.overwritten(),
        dropped: view.header.dropped,
        torn,
        open,
        live: len as u64,
        entries,
    }
}

/// The index of the entry with sequence number `seq` in `entries` (sorted by sequence, as `decode`
/// returns them). Sequence numbers are dense except where slots were torn, so the offset from the
/// first entry is nearly always the index: one probe, then a search only near torn slots (a plain
/// binary search was a cache miss per step, per device interval).
#[inline]
pub fn index_of_seq(entries: &[Entry], seq: u64) -> Option<usize> {
    let first = entries.first()?.seq;
    let guess = seq.checked_sub(first)?;
    if let Some(e) = usize::try_from(guess).ok().and_then(|g| entries.get(g)) {
        if e.seq == seq {
            return Some(guess as usize);
        }
    }
    // Torn slots only shift entries down: the entry, if present, is at or before the guess.
    let hi =
        usize::try_from(guess).map_or(entries.len(), |g| g.saturating_add(1).min(entries.len()));
    entries[..hi].binary_search_by_key(&seq, |x| x.seq).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seq: u64) -> Entry {
        Entry {
            seq,
            done: true,
            t_begin: 0,
            t_end: 0,
            tid: 1,
            api: 0,
            kind: None,
            flags: 0,
            result: 0,
            depth: 0,
            a0: 0,
            a1: 0,
            a2: 0,
        }
    }

    #[test]
    fn index_of_seq_finds_entries_across_torn_gaps() {
        // Window from 100; slots 103 and 107..=108 torn.
        let seqs = [100, 101, 102, 104, 105, 106, 109, 110];
        let e: Vec<Entry> = seqs.iter().map(|&s| at(s)).collect();
        for (i, &s) in seqs.iter().enumerate() {
            assert_eq!(index_of_seq(&e, s), Some(i), "seq {s}");
        }
        for s in [0, 99, 103, 107, 108, 111, u64::MAX] {
            assert_eq!(index_of_seq(&e, s), None, "seq {s}");
        }
        assert_eq!(index_of_seq(&[], 5), None);
    }
}
