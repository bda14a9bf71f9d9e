//! Nesting of calls: for each call entry, the call that contains it on the same thread. The shim hooks
//! both the CUDA runtime and the driver, so one `cudaLaunchKernel` (depth 0) shows up again as the
//! `cuLaunchKernel` (depth 1) the runtime made for it; the report needs the pairing to count that launch
//! once and to borrow the driver call's kernel name when the runtime entry has none.

use causeway_ring::layout::entry_flags;
use causeway_ring::{Class, Entry, Kind};
use std::collections::HashMap;

/// `parents(entries)[i]` is the index of the innermost call enclosing call `i` on the same thread, with
/// depth one less and a time span that contains it; `None` for depth-0 calls, non-call entries, and
/// calls whose parent was lost (dropped, overwritten or torn).
pub fn parents(entries: &[Entry]) -> Vec<Option<usize>> {
    let mut parent = vec![None; entries.len()];
    // Calls of one thread in the order the thread made them: sequence numbers are reserved in program
    // order on a thread, and the entries arrive sorted by sequence, so grouping by tid in entry order
    // suffices (a bucket per thread: linear, where a sort by tid was a third of a large report).
    let mut slot: HashMap<u32, usize> = HashMap::new();
    let mut buckets: Vec<Vec<usize>> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if e.kind == Some(Kind::Call) {
            let b = *slot.entry(e.tid).or_insert_with(|| {
                buckets.push(Vec::new());
                buckets.len() - 1
            });
            buckets[b].push(i);
        }
    }
    let order = buckets.into_iter().flatten();
    // The chain of calls that may still enclose the next one, as (depth, index), depths increasing.
    // A stack of this shape keeps hostile depths (up to 65535) linear in time and memory.
    let mut stack: Vec<(u16, usize)> = Vec::new();
    let mut tid = None;
    for i in order {
        let e = &entries[i];
        if tid != Some(e.tid) {
            tid = Some(e.tid);
            stack.clear();
        }
        // A call at depth d started after every earlier call at depth >= d on this thread had returned.
        while stack.last().is_some_and(|&(d, _)| d >= e.depth) {
            stack.pop();
        }
        if let Some(&(d, p)) = stack.last() {
            if e.depth > 0 && d == e.depth - 1 && contains(&entries[p], e) {
                parent[i] = Some(p);
            }
        }
        stack.push((e.depth, i));
    }
    parent
}

/// Whether `p`'s span contains `c`'s. An open call (`done == false`) extends to the end of the capture.
fn contains(p: &Entry, c: &Entry) -> bool {
    if p.t_begin > c.t_begin {
        return false;
    }
    if !p.done {
        return true;
    }
    c.t_begin <= p.t_end && (!c.done || c.t_end <= p.t_end)
}

/// The first child of each call that is the same operation one layer down: a call of the same class
/// nested directly in it (the driver launch a runtime launch made). `class_of(i)` is call `i`'s class,
/// `None` for entries that are not calls.
/// Indexed by entry (dense: looked up for every call, so no hashing); `None` where there is no such
/// child.
pub fn same_class_children(
    parent: &[Option<usize>],
    class_of: impl Fn(usize) -> Option<Class>,
) -> Vec<Option<usize>> {
    let mut child = vec![None; parent.len()];
    for (i, p) in parent.iter().enumerate() {
        if let Some(p) = *p {
            let c = class_of(i);
            if c.is_some() && child[p].is_none() && class_of(p) == c {
                child[p] = Some(i);
            }
        }
    }
    child
}

/// Entry `i` with the arguments it was recorded with — or, for a call recorded through CUPTI's runtime
/// callback (which carries none), those of its same-class child: stream, handles and the per-thread
/// stream flag.
#[inline]
pub fn args_of(entries: &[Entry], child: &[Option<usize>], i: usize) -> Entry {
    let e = entries[i];
    if e.flags & entry_flags::VIA_CUPTI_CALLBACK == 0 {
        return e;
    }
    match child.get(i).copied().flatten() {
        Some(c) => {
            let k = &entries[c];
            let per_thread = k.flags & entry_flags::PER_THREAD;
            Entry {
                a0: k.a0,
                a1: k.a1,
                a2: k.a2,
                flags: e.flags | per_thread,
                ..e
            }
        }
        _ => e,
    }
}
