//! Nesting of calls: for each call entry, the call that contains it on the same thread. The shim hooks
//! both the CUDA runtime and the driver, so one `cudaLaunchKernel` (depth 0) shows up again as the
//! `cuLaunchKernel` (depth 1) the runtime made for it; the report needs the pairing to count that launch
//! once and to borrow the driver call's kernel name when the runtime entry has none.

use causeway_ring::{Entry, Kind};

/// `parents(entries)[i]` is the index of the innermost call enclosing call `i` on the same thread, with
/// depth one less and a time span that contains it; `None` for depth-0 calls, non-call entries, and
/// calls whose parent was lost (dropped, overwritten or torn).
pub fn parents(entries: &[Entry]) -> Vec<Option<usize>> {
    let mut parent = vec![None; entries.len()];
    // Calls of one thread in the order the thread made them: sequence numbers are reserved in program
    // order on a thread, and the entries arrive sorted by sequence, so a stable sort by tid suffices.
    let mut order: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].kind == Some(Kind::Call))
        .collect();
    order.sort_by_key(|&i| entries[i].tid);
    // The chain of calls that may still enclose the next one, as (depth, index), depths increasing.
    // A stack of this shape keeps hostile depths (up to 65535) linear in time and memory.
    let mut stack: Vec<(u16, usize)> = Vec::new();
    let mut tid = None;
    for &i in &order {
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
