//! NVTX ranges: push/pop entries nest per thread and domain; start/end entries pair by range id
//! across the threads of a process. One pairing, read by the report's range table and by the
//! timeline.

use crate::util::fastmap::HashMap;
use causeway_ring::{Entry, Kind};

/// A range that closed: the entry that opened it, the time (ticks) it closed, and its nesting level
/// (push/pop: ranges of the same thread and domain enclosing it, 0 = outermost; start/end: 0).
#[derive(Clone, Copy, Debug)]
pub struct Closed {
    pub open: Entry,
    pub t_end: u64,
    pub level: u32,
}

/// Pairs a process's NVTX entries, fed in sequence order.
#[derive(Default)]
pub struct Pairer {
    pushed: HashMap<(u32, u64), Vec<(Entry, u32)>>,
    started: HashMap<u64, Entry>,
    /// Pops and ends that matched no push or start.
    pub unmatched_ends: u64,
}

impl Pairer {
    /// Takes entry `e` (any kind: only range entries count); a pop or end that closes a range
    /// returns it.
    #[inline]
    pub fn step(&mut self, e: &Entry) -> Option<Closed> {
        match e.kind {
            Some(Kind::RangePush) => {
                let stack = self.pushed.entry((e.tid, e.a1)).or_default();
                let level = stack.len() as u32;
                stack.push((*e, level));
                None
            }
            Some(Kind::RangePop) => match self.pushed.get_mut(&(e.tid, e.a1)).and_then(Vec::pop) {
                Some((open, level)) => Some(Closed {
                    open,
                    t_end: e.t_begin,
                    level,
                }),
                None => {
                    self.unmatched_ends += 1;
                    None
                }
            },
            Some(Kind::RangeStart) => {
                self.started.insert(e.a2, *e);
                None
            }
            Some(Kind::RangeEnd) => match self.started.remove(&e.a2) {
                Some(open) => Some(Closed {
                    open,
                    t_end: e.t_begin,
                    level: 0,
                }),
                None => {
                    self.unmatched_ends += 1;
                    None
                }
            },
            _ => None,
        }
    }

    /// The ranges never closed, with their levels: pushed ones first, then started ones.
    pub fn still_open(&self) -> impl Iterator<Item = (&Entry, u32)> {
        self.pushed
            .values()
            .flatten()
            .map(|(e, l)| (e, *l))
            .chain(self.started.values().map(|e| (e, 0)))
    }
}

/// The `NvtxAttributes` entries of a ring by the sequence number of the mark or range they belong to:
/// one walk over the listed non-calls (NVTX, lifecycle, anchors), never over the calls.
pub fn attributes(d: &crate::read::decode::Decoded) -> HashMap<u64, Entry> {
    d.rest_behind()
        .filter(|(_, e)| e.kind == Some(Kind::NvtxAttributes))
        .map(|(_, e)| (e.a0, e))
        .collect()
}
