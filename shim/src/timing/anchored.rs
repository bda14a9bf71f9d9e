//! What the Intel backends (`ur.rs`, `ze.rs`) share: their switch (`Lazy`), their pending-work
//! slots' states (`claim`), and what they write: device intervals as signed offsets from an
//! anchor — a device-clock instant known to lie between two host clock readings — in the form the
//! CUDA events backend uses (`entry_flags::ANCHORED`; the scanner's `facts::anchors` converts them),
//! with `entry_flags::PROFILED`: the runtime took each start after its call began.

use crate::hot::{guard, state};
use causeway_ring::layout::{counter, entry_flags, Backend, Class, DeviceKind, NO_ELAPSED};
use causeway_ring::{clock, Fields, Kind, Writer};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// A new anchor this often: keeps offsets small and lets the scanner measure the clocks' drift.
pub const ANCHOR_EVERY_NS: u64 = 200_000_000;
/// An anchor whose host bracket is wider than this is retried (up to `ANCHOR_TRIES`).
const ANCHOR_GOOD_NS: u64 = 4_000;
const ANCHOR_TRIES: usize = 16;

/// Intel anchors are numbered from here, apart from the CUDA events backend's (from 1).
static NEXT_ANCHOR: AtomicU64 = AtomicU64::new(1 << 31);

#[derive(Clone, Copy, Debug)]
pub struct Anchor {
    pub id: u64,
    /// The device instant (device ns).
    pub device_ns: u64,
    /// Host ticks when it was taken (its bracket's end) and the bracket's width.
    pub taken: u64,
    pub width: u64,
}

impl Anchor {
    /// Whether it is older than `ANCHOR_EVERY_NS` at host ticks `now` (or absent).
    pub fn stale(a: Option<Anchor>, now: u64) -> bool {
        a.is_none_or(|a| state::ticks_to_ns(now.saturating_sub(a.taken)) >= ANCHOR_EVERY_NS)
    }
}

/// Writes an anchor of device `index`: device instant `device_ns` lies between host ticks `t0` and
/// `t1`; `prev` is that device's previous anchor (the scanner measures drift between them).
pub fn write_anchor(
    w: Writer,
    index: usize,
    prev: Option<Anchor>,
    t0: u64,
    t1: u64,
    device_ns: u64,
) -> Anchor {
    let id = NEXT_ANCHOR.fetch_add(1, Ordering::Relaxed);
    let elapsed = prev.map_or(NO_ELAPSED, |p| device_ns.wrapping_sub(p.device_ns));
    let f = Fields {
        t_begin: t0,
        kind: Kind::DeviceAnchor as u8,
        a0: id,
        a1: index as u64,
        a2: elapsed,
        ..Fields::default()
    };
    w.complete(&f, t1, 0);
    Anchor {
        id,
        device_ns,
        taken: t1,
        width: t1 - t0,
    }
}

/// Reads a device clock (`read`: its value, `None` on failure) between two host clock readings,
/// retried while the bracket is wider than `ANCHOR_GOOD_NS`: the narrowest (t0, t1, value).
pub fn bracketed(mut read: impl FnMut() -> Option<u64>) -> Option<(u64, u64, u64)> {
    let mut best: Option<(u64, u64, u64)> = None;
    for _ in 0..ANCHOR_TRIES {
        let t0 = clock::ticks();
        let v = read();
        let t1 = clock::ticks();
        let v = v?;
        if best.is_none_or(|(b0, b1, _)| t1 - t0 < b1 - b0) {
            best = Some((t0, t1, v));
        }
        if state::ticks_to_ns(t1 - t0) <= ANCHOR_GOOD_NS {
            break;
        }
    }
    best
}

/// The device kind of an issuing call's class the Intel backends time (`None`: not timed): kernels,
/// copies and fills, the work the ring has a device kind for.
pub const fn kind_of(class: Class) -> Option<DeviceKind> {
    match class {
        Class::Launch => Some(DeviceKind::Kernel),
        Class::Copy => Some(DeviceKind::Memcpy),
        Class::Memset => Some(DeviceKind::Memset),
        _ => None,
    }
}

/// What one interval says besides its times.
pub struct Work {
    pub seq: u64,
    pub kind: DeviceKind,
    /// Copies: CUPTI's copy kind numbering.
    pub copy_kind: u16,
    /// A kernel's handle (named like a launch's a1), a copy's or fill's bytes.
    pub a1: u64,
    /// The queue or command list handle (its low 32 bits are kept).
    pub stream: u64,
}

/// How an interval was timed.
pub enum Timed {
    /// Device ns offsets (start, end) from the anchor.
    Anchored(i64, i64, Anchor),
    /// The device's own ns, no anchor: durations only.
    OwnClock(u64, u64),
    /// Not timed.
    Untimed,
}

pub fn write_interval(w: Writer, work: &Work, t: Timed) {
    let (t0, t1, flags, anchor) = match t {
        Timed::Anchored(s, e, a) => (s as u64, e as u64, entry_flags::ANCHORED, a.id << 32),
        Timed::OwnClock(s, e) => (s, e, 0, 0),
        Timed::Untimed => (0, 0, 0, 0),
    };
    let f = Fields {
        t_begin: t0,
        api: work.kind as u16,
        kind: Kind::DeviceInterval as u8,
        flags: flags | entry_flags::PROFILED,
        depth: work.copy_kind,
        a0: work.seq,
        a1: work.a1,
        a2: (work.stream & 0xffff_ffff) | anchor,
        ..Fields::default()
    };
    w.complete(&f, t1, 0);
}

/// A copy's direction as the hook tables keep it (cudaMemcpyKind: 1 HtoD, 2 DtoH, 3 DtoD) in CUPTI's
/// numbering (1, 2, 8; 0 unknown).
pub fn copy_kind(kind: DeviceKind, direction: u64) -> u16 {
    match (kind, direction) {
        (DeviceKind::Memcpy, 1) => 1,
        (DeviceKind::Memcpy, 2) => 2,
        (DeviceKind::Memcpy, 3) => 8,
        _ => 0,
    }
}

/// An Intel backend's switch and its runtime's functions: off, asked for (level 3 with device
/// timing; the functions not looked up yet), on, or broken (the runtime lacks what it needs). The
/// functions are looked up on first use, under `guard::internal`.
pub struct Lazy<A: 'static> {
    state: AtomicU8,
    api: OnceLock<A>,
    resolve: fn() -> Option<A>,
    /// What the ring's header names as its device timing once this backend is on.
    backend: Backend,
}

const OFF: u8 = 0;
const WANTED: u8 = 1;
const ON: u8 = 2;
const BROKEN: u8 = 3;

impl<A> Lazy<A> {
    pub const fn new(resolve: fn() -> Option<A>, backend: Backend) -> Self {
        Lazy {
            state: AtomicU8::new(OFF),
            api: OnceLock::new(),
            resolve,
            backend,
        }
    }

    pub fn want(&self) {
        self.state.store(WANTED, Ordering::Relaxed);
    }

    /// Off for good (a fork child: the tables hold the parent's handles).
    pub fn off(&self) {
        self.state.store(OFF, Ordering::Relaxed);
    }

    pub fn is_off(&self) -> bool {
        self.state.load(Ordering::Relaxed) == OFF
    }

    pub fn is_on(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ON
    }

    /// The functions if they were looked up (never looks them up).
    pub fn get(&self) -> Option<&A> {
        self.api.get()
    }

    /// The functions, looking them up when the backend is asked for and has not yet.
    #[inline]
    pub fn api(&self) -> Option<&A> {
        match self.state.load(Ordering::Relaxed) {
            ON => self.api.get(),
            WANTED => self.start(),
            _ => None,
        }
    }

    #[cold]
    fn start(&self) -> Option<&A> {
        if let Some(a) = self.api.get() {
            return Some(a);
        }
        match guard::internal(self.resolve) {
            Some(a) => {
                let a = self.api.get_or_init(|| a);
                self.state.store(ON, Ordering::Relaxed);
                // The capture says which runtime timed its work (CUPTI, if it started first, keeps
                // the header).
                if let Some(w) = state::writer() {
                    w.claim_backend(self.backend);
                }
                Some(a)
            }
            None => {
                self.state.store(BROKEN, Ordering::Relaxed);
                None
            }
        }
    }
}

/// The states of a pending-work slot: free, being filled by an issuing call, waiting for its
/// event, being read.
pub const FREE: u8 = 0;
pub const FILLING: u8 = 1;
pub const READY: u8 = 2;
pub const REAPING: u8 = 3;

/// A free slot of `table` (its state, `state_of`, moved from `FREE` to `FILLING`), or `None` after a
/// few tries: the table is full. One atomic add and a compare-and-swap per try.
#[inline]
pub fn claim<S>(
    table: &'static [S],
    next: &AtomicUsize,
    state_of: fn(&S) -> &AtomicU8,
) -> Option<&'static S> {
    for _ in 0..8 {
        let s = &table[next.fetch_add(1, Ordering::Relaxed) % table.len()];
        if state_of(s)
            .compare_exchange(FREE, FILLING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return Some(s);
        }
    }
    None
}

/// Device work a backend knows of but wrote no interval for (a full table), in the ring's counter.
pub fn count_untimed(n: u64) {
    if let Some(w) = state::writer() {
        for _ in 0..n {
            w.bump(counter::DEVICE_UNTIMED);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_kernels_copies_and_fills_are_timed() {
        assert_eq!(kind_of(Class::Launch), Some(DeviceKind::Kernel));
        assert_eq!(kind_of(Class::Copy), Some(DeviceKind::Memcpy));
        assert_eq!(kind_of(Class::Memset), Some(DeviceKind::Memset));
        assert_eq!(kind_of(Class::StreamOp), None);
        assert_eq!(kind_of(Class::Prefetch), None);
    }

    #[test]
    fn copy_directions_in_cuptis_numbering() {
        assert_eq!(copy_kind(DeviceKind::Memcpy, 1), 1);
        assert_eq!(copy_kind(DeviceKind::Memcpy, 2), 2);
        assert_eq!(copy_kind(DeviceKind::Memcpy, 3), 8);
        assert_eq!(copy_kind(DeviceKind::Memcpy, 4), 0);
        assert_eq!(copy_kind(DeviceKind::Memset, 1), 0);
    }
}
