//! Sampling (`--sample N`): which device work a sampling backend times. One *step* in N — an
//! outermost NVTX push range, chosen at random — and every device-work call made, on any thread,
//! while it is open, so that a timed step is timed whole (its copy/compute overlap can be measured).
//! A program that pushes no range has no steps: the events backend then times one call in N, at
//! random; CUPTI, which is switched on and off rather than asked per call, times *windows* of
//! `WINDOW_CALLS` consecutive device-work calls, separated by random gaps of one to 2N − 3 windows
//! (N − 1 on average).
//!
//! Shared by both CUDA backends. The events backend asks `chosen()` per call; CUPTI is told when a
//! window opens or closes (`Want::notify`), and switches its activity kinds then — off the hot path.

use crate::hot::state;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Time one in this many steps (or calls, or call windows); 1 = everything.
static SAMPLE: AtomicU32 = AtomicU32::new(1);
/// Sampling by steps: set once the program pushed an outermost NVTX range. From then on work is timed
/// only while a sampled step is open.
static STEPPED: AtomicBool = AtomicBool::new(false);
/// Whether a sampled window (a step, or CUPTI's call window) is open.
static WINDOW: AtomicBool = AtomicBool::new(false);
/// Told when a window opens or closes (CUPTI's switch): a `fn(bool)`, 0 for none.
static NOTIFY: AtomicUsize = AtomicUsize::new(0);

/// Device-work calls in one of CUPTI's call windows (programs without NVTX steps). Long enough that
/// switching CUPTI on and off (a few µs each) is small against the calls it spans.
pub const WINDOW_CALLS: u64 = 64;
/// Call windows: device-work calls seen (any thread) and the count at which the window next opens or
/// closes.
static CALLS: AtomicU64 = AtomicU64::new(0);
static NEXT: AtomicU64 = AtomicU64::new(0);
/// One thread at a time moves the call window.
static MOVING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread's sampling generator (xorshift64; 0 until seeded).
    static RNG: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The NVTX domain (+1; 0 = none) whose outermost range this thread opened the window with.
    static OWNER: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// At start-up: sample one in `every`; `notify` (CUPTI's switch) is told of each window's opening
/// and closing.
pub fn want(every: u32, notify: Option<fn(bool)>) {
    SAMPLE.store(every.max(1), Ordering::Relaxed);
    if let Some(f) = notify {
        NOTIFY.store(f as usize, Ordering::Release);
    }
    if let Some(w) = state::writer() {
        w.set_sample_every(every.max(1));
    }
}

/// The sampling rate (1: everything is timed).
#[inline(always)]
pub fn every() -> u32 {
    SAMPLE.load(Ordering::Relaxed)
}

/// Whether a window is open now.
#[inline(always)]
pub fn open() -> bool {
    WINDOW.load(Ordering::Relaxed)
}

fn notify(on: bool) {
    let f = NOTIFY.load(Ordering::Acquire);
    if f != 0 {
        // SAFETY: only `want` stores here, and only a `fn(bool)`.
        let f: fn(bool) = unsafe { std::mem::transmute::<usize, fn(bool)>(f) };
        f(on);
    }
}

/// With probability 1/`every`, at random, so that a loop whose length is a multiple of `every` is not
/// always sampled at the same call.
#[inline(always)]
fn sampled(every: u32) -> bool {
    next_random().is_multiple_of(u64::from(every))
}

#[inline(always)]
fn next_random() -> u64 {
    RNG.with(|c| {
        let mut x = c.get();
        if x == 0 {
            x = seed();
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.set(x);
        x
    })
}

#[cold]
fn seed() -> u64 {
    // Any odd, thread-distinct value: the thread's stack address mixed with the clock.
    let local = 0u8;
    let v = (&local as *const u8 as u64) ^ causeway_ring::clock::ticks().rotate_left(32);
    v.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1
}

/// The events backend, per outermost device-work call: every call when not sampling; with NVTX
/// steps, while a sampled step is open; without them, one call in `every` at random.
#[inline(always)]
pub fn chosen() -> bool {
    let every = every();
    if every <= 1 {
        true
    } else if STEPPED.load(Ordering::Relaxed) {
        open()
    } else {
        sampled(every)
    }
}

/// CUPTI, per outermost device-work call, before its real call: in a program without NVTX steps,
/// moves the call window (opening or closing it, and telling CUPTI) when this call reaches its edge.
#[inline(always)]
pub fn call_window() {
    if every() <= 1 || STEPPED.load(Ordering::Relaxed) {
        return;
    }
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    if n >= NEXT.load(Ordering::Relaxed) {
        move_window(n);
    }
}

#[cold]
fn move_window(n: u64) {
    if MOVING
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    // Steps may have begun meanwhile: they own the window from then on.
    if n >= NEXT.load(Ordering::Relaxed) && !STEPPED.load(Ordering::Relaxed) {
        let every = u64::from(every());
        if open() {
            // Closed for a random gap of 1 to 2 every - 3 windows (every - 1 on average), never
            // less than one window, so that two windows never run together.
            let spread = (2 * every).saturating_sub(4) * WINDOW_CALLS;
            let gap = WINDOW_CALLS + next_random() % (spread + 1);
            NEXT.store(n + gap, Ordering::Relaxed);
            set(false);
        } else {
            NEXT.store(n + WINDOW_CALLS, Ordering::Relaxed);
            set(true);
        }
    }
    MOVING.store(false, Ordering::Release);
}

fn set(on: bool) {
    WINDOW.store(on, Ordering::Release);
    notify(on);
}

/// An outermost NVTX push range of `domain` opened on this thread (called at every level; cheap):
/// with sampling, the first one switches to sampling by steps, and one in `every` of them, at random,
/// opens the window if none is open.
pub fn outer_push(domain: u64) {
    let every = every();
    if every <= 1 {
        return;
    }
    if !STEPPED.swap(true, Ordering::Relaxed) {
        if let Some(w) = state::writer() {
            w.set_flag(causeway_ring::layout::flags::STEP_SAMPLED);
        }
        // A call window still open (calls came before the first step) closes with it.
        if open() && NOTIFY.load(Ordering::Relaxed) != 0 {
            set(false);
        }
    }
    if sampled(every)
        && WINDOW
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    {
        OWNER.with(|o| o.set(domain.wrapping_add(1)));
        notify(true);
    }
}

/// The outermost NVTX push range of `domain` on this thread closed: if it opened the window, the
/// window closes.
pub fn outer_pop(domain: u64) {
    let closed = OWNER
        .try_with(|o| {
            let mine = o.get() != 0 && o.get() == domain.wrapping_add(1);
            if mine {
                o.set(0);
            }
            mine
        })
        .unwrap_or(false);
    if closed {
        set(false);
    }
}
