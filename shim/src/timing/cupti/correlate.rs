//! CUPTI correlation through callbacks (`CAUSEWAY_CUPTI_CORRELATION=callback`): the cheaper way to tie
//! CUPTI's device records to our calls. External correlation needs CUPTI's `RUNTIME` and `DRIVER`
//! activity kinds, a record per API call; here CUPTI only calls our subscriber at the entry of the
//! API calls, and we note (CUPTI correlation id → our sequence number) there.
//!
//! The hook of an outermost device-work call sets this thread's current sequence number around its real
//! call (`enter`/`leave`, no CUPTI call); the subscriber's `API_ENTER` callback, inside the real call on
//! the same thread, appends the pair to a fixed lock-free queue (one atomic add, two stores); the CUPTI
//! buffer thread drains the queue into its correlation map before placing device records. A full queue
//! loses the pair (counted): that call's device records are then unassociated, never guessed.

use causeway_ring::layout::NO_CALL;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Pairs in flight between the calling threads and the buffer thread (16 MiB).
const QUEUE: usize = 1 << 20;

struct Slot {
    /// `(ticket + 1) << 32 | correlation id`, written last: the ticket tells a reader the slot holds
    /// this round's pair.
    tag: AtomicU64,
    seq: AtomicU64,
}

static SLOTS: [Slot; QUEUE] = [const {
    Slot {
        tag: AtomicU64::new(0),
        seq: AtomicU64::new(0),
    }
}; QUEUE];
static HEAD: AtomicU64 = AtomicU64::new(0);
static TAIL: AtomicU64 = AtomicU64::new(0);
/// Pairs lost to a full queue.
pub static LOST: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static CURRENT: Cell<u64> = const { Cell::new(NO_CALL) };
}

/// Around the real call of an outermost device-work call: its sequence number is this thread's current
/// one until `leave`.
#[inline(always)]
pub fn enter(seq: u64) {
    CURRENT.with(|c| c.set(seq));
}

#[inline(always)]
pub fn leave() {
    CURRENT.with(|c| c.set(NO_CALL));
}

/// At CUPTI's `API_ENTER` on the calling thread: ties `corr` to the current call, if any.
#[inline]
pub fn note(corr: u32) {
    let seq = CURRENT.with(|c| c.get());
    if seq != NO_CALL {
        push(corr, seq);
    }
}

/// Room kept free for threads that pass the fullness check at the same moment: no ticket ever lands
/// on a slot the reader has not read.
const SLACK: u64 = 1 << 12;

fn push(corr: u32, seq: u64) {
    if HEAD
        .load(Ordering::Relaxed)
        .wrapping_sub(TAIL.load(Ordering::Acquire))
        >= QUEUE as u64 - SLACK
    {
        LOST.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let t = HEAD.fetch_add(1, Ordering::Relaxed);
    let s = &SLOTS[t as usize % QUEUE];
    s.seq.store(seq, Ordering::Relaxed);
    s.tag.store(tag(t, corr), Ordering::Release);
}

fn tag(ticket: u64, corr: u32) -> u64 {
    ((ticket.wrapping_add(1) & 0xffff_ffff) << 32) | corr as u64
}

/// Everything pushed so far, in order, as (correlation id, sequence number). Stops at a slot whose
/// writer has not finished yet (it is picked up by the next drain) unless `last` (the final flush:
/// such a writer will never finish). One reader at a time (the caller holds the collector's lock).
pub fn drain(out: &mut Vec<(u32, u64)>, last: bool) {
    let head = HEAD.load(Ordering::Acquire);
    let mut t = TAIL.load(Ordering::Relaxed);
    while t < head {
        let s = &SLOTS[t as usize % QUEUE];
        let g = s.tag.load(Ordering::Acquire);
        if g >> 32 == (t.wrapping_add(1) & 0xffff_ffff) {
            out.push((g as u32, s.seq.load(Ordering::Relaxed)));
        } else if !last {
            break;
        }
        t += 1;
    }
    TAIL.store(t, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_come_out_in_order_and_only_inside_a_call() {
        note(7); // no call open: nothing
        enter(41);
        note(8);
        note(9); // a runtime call and the driver call inside it: both tie to 41
        leave();
        note(10);
        enter(42);
        note(11);
        leave();
        let mut v = Vec::new();
        drain(&mut v, false);
        assert_eq!(v, vec![(8, 41), (9, 41), (11, 42)]);
        v.clear();
        drain(&mut v, false);
        assert!(v.is_empty());
    }
}
