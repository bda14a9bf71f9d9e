//! Association and writing: CUPTI's record buffers in, `DeviceInterval` entries out. Buffers are
//! parsed on CUPTI's thread; each device record is tied to its call through the (correlation id →
//! sequence number) pairs learnt so far — from external-correlation records or from the callbacks
//! (`correlate`) — and waits for a pair that has not arrived yet. At the final flush what still waits
//! is written as unassociated (`NO_CALL`).

use super::ffi::*;
use super::records::{parse, Device, Rec};
use super::{clocks::Scale, correlate, start::same_process, API, BY_CALLBACK};
use crate::hot::{guard, state};
use crate::strings::text;
use causeway_ring::layout::{counter, entry_flags, DeviceKind, Kind, NO_CALL};
use causeway_ring::{Fields, Writer};
use std::alloc::Layout;
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::Ordering;
use std::sync::Mutex;

/// Activity buffers handed to CUPTI (CUPTI suggests 1–10 MB).
const BUFFER_SIZE: usize = 8 << 20;
const BUFFER_ALIGN: usize = 8;
/// Correlations kept: those within this many correlation ids of the newest one seen. A kernel's
/// record comes long before a million later calls; older entries are pruned.
const CORRELATION_WINDOW: u32 = 1 << 20;
/// Device records waiting for their correlation; past this the oldest are written with `NO_CALL`.
const PENDING_MAX: usize = 1 << 16;

static COLLECTOR: Mutex<Option<Collector>> = Mutex::new(None);

pub(super) fn lock() -> std::sync::MutexGuard<'static, Option<Collector>> {
    COLLECTOR.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn count_dropped(api: &Api, w: Option<Writer>) {
    let mut n = 0usize;
    // SAFETY: NULL context = the global queue; a valid out-pointer.
    if unsafe { (api.dropped)(std::ptr::null_mut(), 0, &mut n) } == SUCCESS {
        if let Some(w) = w {
            for _ in 0..n {
                w.bump(counter::DEVICE_DROPPED);
            }
        }
    }
}

fn buffer_layout() -> Layout {
    match Layout::from_size_align(BUFFER_SIZE, BUFFER_ALIGN) {
        Ok(l) => l,
        Err(_) => Layout::new::<u64>(),
    }
}

/// CUPTI asks for an empty buffer (on its own thread or in a CUDA call: off the shim's hot path).
pub(super) unsafe extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max: *mut usize,
) {
    // SAFETY: a non-zero-sized layout.
    let p = unsafe { std::alloc::alloc(buffer_layout()) };
    // SAFETY: CUPTI passes valid out-pointers.
    unsafe {
        *buffer = p;
        *size = if p.is_null() { 0 } else { BUFFER_SIZE };
        *max = 0;
    }
}

/// CUPTI hands a buffer of records back: write its device records into the ring and free it.
/// The `discard` diagnostic: buffers are returned unread (what reading them costs, measured apart).
static DISCARD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

pub(super) unsafe extern "C" fn buffer_completed(
    _ctx: *mut c_void,
    _stream: u32,
    buffer: *mut u8,
    size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    if same_process() && !*DISCARD.get_or_init(|| super::start::diag("discard")) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            guard::internal(|| drain(buffer, valid.min(size)))
        }));
    }
    if size == BUFFER_SIZE {
        // SAFETY: `buffer_requested` allocated it with this layout and CUPTI is done with it.
        unsafe { std::alloc::dealloc(buffer, buffer_layout()) };
    }
}

fn drain(buffer: *mut u8, valid: usize) {
    let Some(api) = API.get() else { return };
    let w = state::writer();
    let mut items = Vec::new();
    let mut rec: *mut u8 = std::ptr::null_mut();
    let end = buffer as usize + valid;
    loop {
        // SAFETY: our buffer, its valid length, and the previous record (NULL for the first).
        if unsafe { (api.next_record)(buffer, valid, &mut rec) } != SUCCESS || rec.is_null() {
            break;
        }
        let at = rec as usize;
        if at < buffer as usize || at >= end {
            break;
        }
        // SAFETY: CUPTI's record lies inside the buffer's valid bytes.
        let bytes = unsafe { std::slice::from_raw_parts(rec, (end - at).min(MAX_RECORD)) };
        match parse(bytes) {
            Rec::External { kind, id, corr } if kind == EXTERNAL_KIND => {
                items.push(Item::Correlation { corr, id })
            }
            Rec::Device(d) => {
                let a1 = match d.name {
                    // SAFETY: CUPTI's kernel name, NUL-terminated, kept alive by CUPTI.
                    Some(p) if p != 0 => text::TEXT
                        .intern(unsafe { CStr::from_ptr(p as *const c_char) }.to_bytes(), w),
                    Some(_) => 0,
                    None => d.bytes,
                };
                items.push(Item::Interval(Interval::of(&d, a1)));
            }
            _ => {}
        }
    }
    let mut c = lock();
    if let Some(c) = c.as_mut() {
        c.absorb(callback_pairs(false).chain(items).collect(), w);
    }
    count_dropped(api, w);
}

/// The (correlation id → call) pairs the callbacks noted since the last drain, as items.
pub(super) fn callback_pairs(last: bool) -> impl Iterator<Item = Item> {
    let mut v = Vec::new();
    if BY_CALLBACK.load(Ordering::Relaxed) {
        correlate::drain(&mut v, last);
    }
    v.into_iter()
        .map(|(corr, id)| Item::Correlation { corr, id })
}

/// A device interval ready to write but for its call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Interval {
    api: DeviceKind,
    depth: u16,
    start: u64,
    end: u64,
    /// Text id of the kernel name, or bytes.
    a1: u64,
    /// Stream | device << 32.
    a2: u64,
    corr: u32,
    /// Kernels: CUPTI's queued and submitted times (0: not collected).
    queued: u64,
    submitted: u64,
    /// `ent::NODE`: the graph node's index in its executable graph + 1 (0: not graph work, or an
    /// index past 16 bits).
    node: u16,
}

impl Interval {
    pub(super) fn of(d: &Device, a1: u64) -> Interval {
        Interval {
            api: d.kind,
            depth: d.copy_kind as u16,
            start: d.start,
            end: d.end,
            a1,
            a2: d.stream as u64 | (d.device as u64) << 32,
            corr: d.corr,
            queued: d.queued,
            submitted: d.submitted,
            node: match d.graph_node {
                0 => 0,
                id => u16::try_from((id & 0xFFFF_FFFF) + 1).unwrap_or(0),
            },
        }
    }
}

/// What one buffer contributes, in buffer order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Item {
    /// CUPTI's correlation id `corr` belongs to the call with sequence number `id`.
    Correlation {
        corr: u32,
        id: u64,
    },
    Interval(Interval),
}

/// Ties device records to calls across buffers: correlations seen so far, and device records whose
/// correlation has not been seen yet.
pub(super) struct Collector {
    calls: HashMap<u32, u64>,
    newest: u32,
    pending: VecDeque<Interval>,
    /// After the final flush nothing waits any more.
    finished: bool,
    /// Set when CUPTI's times are on the ring's clock (the timestamp callback was accepted).
    clock: Option<Scale>,
}

impl Collector {
    pub(super) fn new(clock: Option<Scale>) -> Collector {
        Collector {
            calls: HashMap::new(),
            newest: 0,
            pending: VecDeque::new(),
            finished: false,
            clock,
        }
    }

    /// One buffer's records: learn its correlations, then write every device record (older ones
    /// first) whose call is known, and keep the others for later buffers.
    pub(super) fn absorb(&mut self, items: Vec<Item>, w: Option<Writer>) {
        let mut fresh = Vec::new();
        for it in items {
            match it {
                Item::Correlation { corr, id } => self.learn(corr, id),
                Item::Interval(iv) => fresh.push(iv),
            }
        }
        let waiting = std::mem::take(&mut self.pending);
        for iv in waiting.into_iter().chain(fresh) {
            self.place(iv, w);
        }
        while self.pending.len() > PENDING_MAX {
            if let Some(iv) = self.pending.pop_front() {
                self.write(&iv, NO_CALL, w);
            }
        }
    }

    /// The final flush: whatever still waits has no call.
    pub(super) fn finish(&mut self, w: Option<Writer>) {
        self.finished = true;
        while let Some(iv) = self.pending.pop_front() {
            self.write(&iv, NO_CALL, w);
        }
    }

    fn learn(&mut self, corr: u32, id: u64) {
        self.calls.insert(corr, id);
        if corr.wrapping_sub(self.newest) < u32::MAX / 2 {
            self.newest = corr;
        }
        if self.calls.len() > 2 * CORRELATION_WINDOW as usize {
            let newest = self.newest;
            self.calls
                .retain(|&c, _| newest.wrapping_sub(c) <= CORRELATION_WINDOW);
        }
    }

    fn place(&mut self, iv: Interval, w: Option<Writer>) {
        match self.calls.get(&iv.corr) {
            Some(&seq) => self.write(&iv, seq, w),
            // Correlation id 0 is none (device-launched work): nothing will ever tie it.
            None if self.finished || iv.corr == 0 => self.write(&iv, NO_CALL, w),
            None => self.pending.push_back(iv),
        }
    }

    fn write(&self, iv: &Interval, call: u64, w: Option<Writer>) {
        let Some(w) = w else { return };
        // A time of 0 means CUPTI could not time the work (out of device memory): kept as 0.
        let (t0, t1, flags) = match self.clock {
            Some(s) => (s.ticks(iv.start), s.ticks(iv.end), entry_flags::HOST_CLOCK),
            None => (iv.start, iv.end, 0),
        };
        // CUPTI's latency timestamps, when it collected both in order: the gaps before the start, in
        // the interval's units, in the fields a device interval does not otherwise use.
        let latency = (iv.queued != 0 && iv.queued <= iv.submitted && iv.submitted <= iv.start)
            .then(|| match self.clock {
                Some(s) => (s.ticks(iv.queued), s.ticks(iv.submitted)),
                None => (iv.queued, iv.submitted),
            })
            .filter(|&(q, s)| q <= s && s <= t0)
            // Gaps beyond 32 bits of ticks (over a second) are not stored rather than cut.
            .and_then(|(q, s)| Some((u32::try_from(t0 - s).ok()?, u32::try_from(s - q).ok()?)));
        let (tid, result, flags) = match latency {
            Some((to_start, to_submit)) => {
                (to_start, to_submit as i32, flags | entry_flags::LATENCY)
            }
            None => (0, 0, flags),
        };
        let f = Fields {
            node: iv.node,
            t_begin: t0,
            tid,
            api: iv.api as u16,
            kind: Kind::DeviceInterval as u8,
            flags,
            depth: iv.depth,
            a0: call,
            a1: iv.a1,
            a2: iv.a2,
        };
        w.complete(&f, t1, result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strings::text::tests::TestRing;
    use causeway_ring::{Entry, RingView, Slot};

    fn iv(corr: u32, start: u64) -> Item {
        Item::Interval(Interval {
            api: DeviceKind::Kernel,
            depth: 0,
            start,
            end: start + 5,
            a1: 3,
            a2: 7 | 1 << 32,
            corr,
            queued: 0,
            submitted: 0,
            node: 0,
        })
    }

    fn corr(corr: u32, id: u64) -> Item {
        Item::Correlation { corr, id }
    }

    fn intervals(r: &TestRing) -> Vec<Entry> {
        let v = RingView::parse(r.bytes()).expect("ring parses");
        let (a, b) = v.window();
        (a..b)
            .filter_map(|s| match v.read(s) {
                Slot::Entry(e) if e.kind == Some(Kind::DeviceInterval) => Some(e),
                _ => None,
            })
            .collect()
    }

    /// (start, call) of each written interval, in ring order.
    fn written(r: &TestRing) -> Vec<(u64, u64)> {
        intervals(r).iter().map(|e| (e.t_begin, e.a0)).collect()
    }

    #[test]
    fn intervals_carry_their_fields() {
        let r = TestRing::new();
        let mut c = Collector::new(None);
        c.absorb(vec![corr(5, 40), iv(5, 100)], Some(r.w));
        let e = intervals(&r);
        assert_eq!(e.len(), 1);
        let e = e[0];
        assert!(e.done);
        assert_eq!((e.t_begin, e.t_end, e.tid), (100, 105, 0));
        assert_eq!(e.api, DeviceKind::Kernel as u16);
        assert_eq!((e.a0, e.a1, e.a2), (40, 3, 7 | 1 << 32));
        assert_eq!(e.flags & entry_flags::HOST_CLOCK, 0, "CUPTI's own clock");
        // On the ring's clock: flagged.
        let r = TestRing::new();
        let mut c = Collector::new(Some(Scale::IDENTITY));
        c.absorb(vec![corr(5, 40), iv(5, 100)], Some(r.w));
        let e = intervals(&r)[0];
        assert_eq!(e.flags, entry_flags::HOST_CLOCK);
        assert_eq!((e.t_begin, e.t_end), (100, 105));
    }

    #[test]
    fn a_record_before_its_correlation_waits_for_it() {
        let r = TestRing::new();
        let mut c = Collector::new(None);
        // Same buffer, kernel first.
        c.absorb(vec![iv(1, 100), corr(1, 10)], Some(r.w));
        assert_eq!(written(&r), vec![(100, 10)]);
        // Correlation only in a later buffer.
        c.absorb(vec![iv(2, 200)], Some(r.w));
        assert_eq!(written(&r).len(), 1, "waits");
        c.absorb(vec![corr(3, 30)], Some(r.w));
        assert_eq!(written(&r).len(), 1, "still waits");
        c.absorb(vec![corr(2, 20), iv(3, 300)], Some(r.w));
        assert_eq!(written(&r), vec![(100, 10), (200, 20), (300, 30)]);
    }

    #[test]
    fn one_call_many_kernels_and_foreign_kinds() {
        let r = TestRing::new();
        let mut c = Collector::new(None);
        // A graph launch: one correlation, three kernels, across two buffers.
        c.absorb(vec![corr(8, 80), iv(8, 1), iv(8, 2)], Some(r.w));
        c.absorb(vec![iv(8, 3)], Some(r.w));
        assert_eq!(written(&r), vec![(1, 80), (2, 80), (3, 80)]);
        // Correlation id 0 (device-launched work) is never tied.
        c.absorb(vec![iv(0, 4)], Some(r.w));
        assert_eq!(written(&r)[3], (4, NO_CALL));
    }

    #[test]
    fn never_resolved_records_get_no_call_at_the_final_flush() {
        let r = TestRing::new();
        let mut c = Collector::new(None);
        c.absorb(vec![iv(4, 400), iv(5, 500), corr(5, 50)], Some(r.w));
        assert_eq!(written(&r), vec![(500, 50)]);
        c.finish(Some(r.w));
        assert_eq!(written(&r), vec![(500, 50), (400, NO_CALL)]);
        // Buffers after the final flush are written at once.
        c.absorb(vec![iv(6, 600)], Some(r.w));
        assert_eq!(written(&r)[2], (600, NO_CALL));
    }

    #[test]
    fn waiting_records_are_bounded() {
        let r = TestRing::new();
        let mut c = Collector::new(None);
        let items: Vec<Item> = (0..PENDING_MAX as u64 + 3)
            .map(|i| iv(1000 + i as u32, i + 1))
            .collect();
        c.absorb(items, None);
        assert_eq!(c.pending.len(), PENDING_MAX);
        assert_eq!(c.pending.front().unwrap().start, 4, "the oldest went first");
        c.finish(Some(r.w));
        assert!(c.pending.is_empty());
    }

    #[test]
    fn old_correlations_are_pruned() {
        let mut c = Collector::new(None);
        for i in 1..=2 * CORRELATION_WINDOW + 1 {
            c.learn(i, i as u64);
        }
        assert!(c.calls.len() <= CORRELATION_WINDOW as usize + 1);
        assert!(c.calls.contains_key(&(2 * CORRELATION_WINDOW + 1)));
        assert!(!c.calls.contains_key(&1));
    }
}
