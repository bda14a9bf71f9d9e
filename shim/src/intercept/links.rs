//! The events a Level Zero or Unified Runtime call signals and waits for. Both APIs order work with
//! events named in each call — an enqueue's output event and wait list, an append's signal event and
//! wait events — where CUDA names one event per call; so after a successful call the thread writes one
//! `EventLink` entry per event it names, which the causal graph reads as event records and waits.
//! Runs only for recorded calls (a table's `after` closure); at most `MAX_WAITS` waits per call.

use super::hooks::P;
use crate::hot::record;
use causeway_ring::layout::{event_link, Kind};

/// Waits kept per call: a wait list longer than this is cut (the capture counts what it has).
const MAX_WAITS: usize = 64;

fn link(seq: u64, event: u64, role: u64) {
    if event != 0 {
        record::instant(Kind::EventLink, 0, seq, event, role);
    }
}

fn waits(seq: u64, n: u32, list: P) {
    if list.is_null() {
        return;
    }
    let list = list as *const u64;
    for i in 0..(n as usize).min(MAX_WAITS) {
        // SAFETY: the caller passed `n` event handles at `list`, which the real call read.
        link(
            seq,
            unsafe { list.add(i).read_unaligned() },
            event_link::WAITS,
        );
    }
}

/// A Unified Runtime enqueue: its output event (`*phEvent`, written by the call) and its wait list.
pub fn ur(seq: Option<u64>, ph_event: P, n_wait: u32, wait_list: P) {
    let Some(seq) = seq else { return };
    waits(seq, n_wait, wait_list);
    if !ph_event.is_null() {
        // SAFETY: the call succeeded, so it wrote the event handle where `ph_event` points.
        link(
            seq,
            unsafe { (ph_event as *const u64).read_unaligned() },
            event_link::SIGNALS,
        );
    }
}

/// A Level Zero append: the event it signals (an input handle) and its wait events.
pub fn ze(seq: Option<u64>, signal: P, n_wait: u32, wait_list: P) {
    let Some(seq) = seq else { return };
    waits(seq, n_wait, wait_list);
    // Device timing's own event (the program named none) is not the program's.
    if !crate::timing::ze_is_own(signal) {
        link(seq, signal as u64, event_link::SIGNALS);
    }
}

/// A host wait on several events (`urEventWait`) or a wait appended for them
/// (`zeCommandListAppendWaitOnEvents`).
pub fn wait_for(seq: Option<u64>, n: u32, list: P) {
    if let Some(seq) = seq {
        waits(seq, n, list);
    }
}
