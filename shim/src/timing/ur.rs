//! Level 3 for Unified Runtime: when each enqueued kernel, copy and fill ran, from UR's own event
//! profiling (`urEventGetProfilingInfo`), tied to the enqueue call by the event that call returned.
//!
//! **Queues.** Profiling needs a queue created with `UR_QUEUE_FLAG_PROFILING_ENABLE`: the hook of
//! `urQueueCreate` adds the flag to the properties it passes on (a copy; the program's own struct is
//! not written). A queue made otherwise (from a native handle, or before level 3 was on) gives no
//! profiling: its work is counted untimed, never guessed.
//!
//! **Events.** A timed enqueue needs an event. Where the program asked for one, the backend retains
//! it (so the program may release it at once); where it passed none, the hook passes our own output
//! slot and the program still sees none (`ur_event_out`). Either way the call's sequence number and
//! its event go into a fixed table of pending slots: one atomic add and one compare-and-swap, no
//! allocation, no lock; a full table leaves the work untimed (counted).
//!
//! **Reaping, synchronously.** No thread of ours ever calls UR: after each successful host sync of the
//! program (`urQueueFinish`, `urEventWait`), on the thread that made it, the backend reads every
//! pending event that is complete — its device start and end — writes a `DeviceInterval` entry with
//! those times as offsets from an *anchor*, and releases the event. An anchor is a device-clock
//! instant known to lie between two host clock readings, written as a `DeviceAnchor` entry: the
//! scanner converts the offsets to host time with the bracket's half-width as the bound
//! (`facts::anchors`), the model the CUDA events backend uses. The device instant is
//! `urDeviceGetGlobalTimestamps`'s where the adapter has it; else (the OpenCL adapter over PoCL has
//! not) an event's own `COMMAND_QUEUED` time, which the runtime takes inside the enqueue call, so it
//! lies between host readings just before and just after that call: of each pass's completed events
//! the one with the narrowest call anchors its device. So a program that tears the loader down is
//! never raced by us; work not complete at the program's last sync is counted, not timed, and its
//! events are not released (the process is ending).

use super::anchored::{
    bracketed, claim, copy_kind, count_untimed, kind_of, write_anchor, write_interval, Anchor,
    Lazy, Timed, Work, FREE, READY, REAPING,
};
use crate::hot::{guard, state};
use crate::resolve;
use causeway_ring::layout::{Class, DeviceKind, Layer};
use causeway_ring::{clock, Writer};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

type P = *mut c_void;

const SUCCESS: i32 = 0;
/// `UR_STRUCTURE_TYPE_QUEUE_PROPERTIES`.
const QUEUE_PROPERTIES: u32 = 14;
/// `UR_QUEUE_FLAG_PROFILING_ENABLE`.
const PROFILING_ENABLE: u32 = 1 << 1;
/// `UR_EVENT_INFO_COMMAND_EXECUTION_STATUS`, and its `UR_EVENT_STATUS_COMPLETE`.
const INFO_EXECUTION_STATUS: u32 = 3;
const STATUS_COMPLETE: i32 = 0;
/// `UR_PROFILING_INFO_COMMAND_QUEUED` / `_START` / `_END`.
const PROFILING_QUEUED: u32 = 0;
const PROFILING_START: u32 = 2;
const PROFILING_END: u32 = 3;
/// `UR_QUEUE_INFO_DEVICE`.
const QUEUE_INFO_DEVICE: u32 = 1;

/// Pending enqueues at most (issued and not yet reaped); more are untimed.
const SLOTS: usize = 8192;
/// Devices the backend anchors (a process rarely uses more).
const MAX_DEVICES: usize = 16;

type GetInfo = unsafe extern "C" fn(P, u32, usize, *mut c_void, *mut usize) -> i32;
type Retain = unsafe extern "C" fn(P) -> i32;
type Timestamps = unsafe extern "C" fn(P, *mut u64, *mut u64) -> i32;

struct Api {
    event_info: GetInfo,
    profiling_info: GetInfo,
    event_retain: Retain,
    event_release: Retain,
    queue_info: GetInfo,
    timestamps: Option<Timestamps>,
}

impl Api {
    /// The loader's own functions (never our hooks: the backend's calls are not the program's).
    fn resolve() -> Option<Api> {
        let sym = |name: &CStr| resolve::found(name, Layer::UnifiedRuntime);
        // SAFETY: (all transmutes) each address is the UR loader's export of that name, whose C
        // signature (ur_api.h, UR 0.12) is the one given by its type.
        unsafe {
            use std::mem::transmute as t;
            Some(Api {
                event_info: t::<usize, GetInfo>(sym(c"urEventGetInfo")?),
                profiling_info: t::<usize, GetInfo>(sym(c"urEventGetProfilingInfo")?),
                event_retain: t::<usize, Retain>(sym(c"urEventRetain")?),
                event_release: t::<usize, Retain>(sym(c"urEventRelease")?),
                queue_info: t::<usize, GetInfo>(sym(c"urQueueGetInfo")?),
                timestamps: sym(c"urDeviceGetGlobalTimestamps").map(|p| t::<usize, Timestamps>(p)),
            })
        }
    }
}

static BACKEND: Lazy<Api> = Lazy::new(Api::resolve, causeway_ring::layout::Backend::UnifiedRuntime);

/// Level 3 with a device-timing backend: time this runtime's work too.
pub fn want() {
    BACKEND.want();
}

fn api() -> Option<&'static Api> {
    BACKEND.api()
}

// ---- queues ----

/// `urQueueCreate`'s properties with profiling asked for, in `scratch` (`ur_queue_properties_t`:
/// stype u32, pNext, flags u32); the program's own when the backend is off.
pub fn queue_properties(props: P, scratch: &mut [u64; 4]) -> P {
    if api().is_none() {
        return props;
    }
    with_profiling(props, scratch)
}

/// `props` (NULL or a `ur_queue_properties_t`) with the profiling flag, copied into `scratch`; a
/// struct of another type is passed on as it is.
fn with_profiling(props: P, scratch: &mut [u64; 4]) -> P {
    let (mut stype, mut next, mut flags) = (QUEUE_PROPERTIES, 0u64, 0u32);
    if !props.is_null() {
        let p = props as *const u8;
        // SAFETY: the program passed a `ur_queue_properties_t`, which the real call reads.
        unsafe {
            stype = (p as *const u32).read_unaligned();
            next = (p.add(8) as *const u64).read_unaligned();
            flags = (p.add(16) as *const u32).read_unaligned();
        }
        if stype != QUEUE_PROPERTIES {
            return props;
        }
    }
    scratch[0] = u64::from(stype);
    scratch[1] = next;
    scratch[2] = u64::from(flags | PROFILING_ENABLE);
    scratch.as_mut_ptr() as P
}

// ---- the hot path ----

/// What an enqueue's output-event argument became.
#[derive(Clone, Copy)]
pub struct EventOut {
    /// The argument for the real call: the program's, or our slot where it asked for none.
    pub ph_event: P,
    /// The event the call writes is ours.
    owned: bool,
    /// The enqueue is timed (outermost, of a timed class, the backend on).
    timed: bool,
    /// Host ticks just before the real call.
    before: u64,
}

/// An enqueue's output-event argument for its real call: the program's own (retained after the
/// call), or `own` where it asked for none and this call is timed.
#[inline(always)]
pub fn event_out(ph_event: P, depth: u16, class: Class, own: &mut u64) -> EventOut {
    let mut out = EventOut {
        ph_event,
        owned: false,
        timed: false,
        before: 0,
    };
    if kind_of(class).is_none() || depth != 0 || BACKEND.is_off() || api().is_none() {
        return out;
    }
    out.timed = true;
    out.before = clock::ticks();
    if ph_event.is_null() {
        out.ph_event = own as *mut u64 as P;
        out.owned = true;
    }
    out
}

struct Slot {
    state: AtomicU8,
    seq: AtomicU64,
    event: AtomicUsize,
    queue: AtomicUsize,
    /// DeviceKind | copy kind (CUPTI's numbering) << 16.
    what: AtomicU32,
    bytes: AtomicU64,
    /// Host ticks just before and just after the enqueue's real call.
    before: AtomicU64,
    after: AtomicU64,
}

static SLOT: [Slot; SLOTS] = [const {
    Slot {
        state: AtomicU8::new(FREE),
        seq: AtomicU64::new(0),
        event: AtomicUsize::new(0),
        queue: AtomicUsize::new(0),
        what: AtomicU32::new(0),
        bytes: AtomicU64::new(0),
        before: AtomicU64::new(0),
        after: AtomicU64::new(0),
    }
}; SLOTS];
static NEXT: AtomicUsize = AtomicUsize::new(0);
/// Slots READY or being reaped (a sync with none pending scans nothing).
static PENDING: AtomicU32 = AtomicU32::new(0);

/// After a successful enqueue: a timed one's event (`*ph_event`; ours when `owned`) joins the
/// pending table. Our own event is taken out of the slot, so the call's event links see none.
#[inline]
pub fn enqueued(seq: Option<u64>, queue: u64, class: Class, a: [u64; 2], e: EventOut) {
    let EventOut {
        ph_event,
        owned,
        timed,
        before,
    } = e;
    let (Some(kind), true) = (kind_of(class), timed) else {
        return;
    };
    let after = clock::ticks();
    // `event_out` found the loader's functions.
    let (false, Some(api)) = (ph_event.is_null(), BACKEND.get()) else {
        return;
    };
    // SAFETY: the call succeeded, so it wrote the event handle where `ph_event` points.
    let event = unsafe { (ph_event as *const usize).read_unaligned() };
    if owned {
        // SAFETY: our own slot (`event_out`).
        unsafe { (ph_event as *mut usize).write_unaligned(0) };
    }
    if event == 0 {
        return;
    }
    let (Some(seq), Some(slot)) = (seq, seq.and_then(|_| claim(&SLOT, &NEXT, |s| &s.state))) else {
        count_untimed(1);
        if owned {
            // SAFETY: our own event, which nothing else holds.
            guard::internal(|| unsafe { (api.event_release)(event as P) });
        }
        return;
    };
    if !owned {
        // SAFETY: the program's event, just returned to it: kept alive until we have read it.
        guard::internal(|| unsafe { (api.event_retain)(event as P) });
    }
    slot.seq.store(seq, Ordering::Relaxed);
    slot.event.store(event, Ordering::Relaxed);
    slot.queue.store(queue as usize, Ordering::Relaxed);
    // a1: a launch's kernel handle, a copy's or fill's bytes; a copy's a2: its direction
    // (overrides.txt).
    let bytes = a[0];
    slot.what.store(
        kind as u32 | u32::from(copy_kind(kind, a[1])) << 16,
        Ordering::Relaxed,
    );
    slot.bytes.store(bytes, Ordering::Relaxed);
    slot.before.store(before, Ordering::Relaxed);
    slot.after.store(after, Ordering::Relaxed);
    PENDING.fetch_add(1, Ordering::Relaxed);
    slot.state.store(READY, Ordering::Release);
}

// ---- reaping ----

/// Per device the backend has met: its handle, and its latest anchor.
struct Device {
    handle: usize,
    anchor: Option<Anchor>,
    /// `urDeviceGetGlobalTimestamps` failed here: anchors come from enqueue calls.
    no_global_clock: bool,
}

#[derive(Default)]
struct Clocks {
    devices: Vec<Device>,
    /// Queue → index in `devices`.
    queues: Vec<(usize, usize)>,
}

static CLOCKS: Mutex<Clocks> = Mutex::new(Clocks {
    devices: Vec::new(),
    queues: Vec::new(),
});

/// In a fork child: the tables hold the parent's handles, and a lock may have been held by a thread
/// that is gone. Unified Runtime timing is off here.
pub fn on_fork_child() {
    BACKEND.off();
}

/// At exit: what no sync of the program read is counted untimed (no runtime call: the loader may
/// be torn down).
pub fn at_exit() {
    count_untimed(u64::from(PENDING.swap(0, Ordering::AcqRel)));
}

/// After a successful host sync of the program (on its thread): every pending event that is complete
/// becomes a device interval.
pub fn synced() {
    reap_where(None);
}

/// Before the program releases `queue` (returned, for the real call): its pending work is read
/// now, or (not complete) counted untimed, and the backend forgets the queue, which it never asks
/// about once released.
pub fn queue_ending(queue: P) -> P {
    reap_where(Some(queue as usize));
    if let Ok(mut c) = CLOCKS.lock() {
        c.queues.retain(|&(q, _)| q != queue as usize);
    }
    queue
}

/// After a successful `urQueueCreate`: the queue's device, known without asking the runtime later.
pub fn queue_created(device: P, ph_queue: P) {
    if ph_queue.is_null() || device.is_null() || !BACKEND.is_on() {
        return;
    }
    // SAFETY: the call succeeded, so it wrote the queue handle there.
    let queue = unsafe { (ph_queue as *const usize).read_unaligned() };
    if let Ok(mut c) = CLOCKS.lock() {
        if let Some(d) = c.device_index(device as usize) {
            c.queues.retain(|&(q, _)| q != queue);
            c.queues.push((queue, d));
        }
    }
}

/// Reads what completed: of every queue, or (`only`) of one queue, whose unfinished work is then
/// counted untimed and released.
fn reap_where(only: Option<usize>) {
    if PENDING.load(Ordering::Relaxed) == 0 {
        return;
    }
    let (Some(api), Some(w)) = (BACKEND.get(), state::writer()) else {
        return;
    };
    guard::internal(|| reap(api, w, only));
}

fn reap(api: &Api, w: Writer, only: Option<usize>) {
    let Ok(mut clocks) = CLOCKS.lock() else {
        return;
    };
    // Pass 1: the complete events, with their times and devices.
    let mut done: Vec<Done> = Vec::new();
    let mut left = PENDING.load(Ordering::Acquire);
    for s in SLOT.iter() {
        if left == 0 {
            break;
        }
        if s.state.load(Ordering::Acquire) != READY {
            continue;
        }
        left -= 1;
        let queue = s.queue.load(Ordering::Relaxed);
        if only.is_some_and(|q| q != queue)
            || s.state
                .compare_exchange(READY, REAPING, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            continue;
        }
        let event = s.event.load(Ordering::Relaxed) as P;
        let mut status = -1i32;
        // SAFETY: an event we hold a reference to; a 4-byte status out.
        let r = unsafe {
            (api.event_info)(
                event,
                INFO_EXECUTION_STATUS,
                4,
                &mut status as *mut i32 as *mut c_void,
                std::ptr::null_mut(),
            )
        };
        // Queued, submitted or running: kept. Complete: read. An error status (or a failed
        // query): the work is over, its times unknown.
        if r == SUCCESS && matches!(status, 1..=3) && only.is_none() {
            s.state.store(READY, Ordering::Release);
            continue;
        }
        let times = (r == SUCCESS && status == STATUS_COMPLETE)
            .then(|| profiled(api, event))
            .flatten();
        let device = times.and_then(|_| clocks.device_of(api, queue));
        done.push(Done {
            slot: s,
            times,
            device,
        });
    }
    // Pass 2: an anchor per device, then the intervals.
    for d in 0..clocks.devices.len() {
        let candidates = done.iter().filter(|x| x.device == Some(d));
        clocks.anchor(api, d, candidates, w);
    }
    for x in done {
        let anchor = x.device.and_then(|d| clocks.devices[d].anchor);
        write(w, x.slot, x.times, anchor);
        let event = x.slot.event.load(Ordering::Relaxed) as P;
        // SAFETY: our reference (our own event, or the one we retained).
        unsafe { (api.event_release)(event) };
        PENDING.fetch_sub(1, Ordering::Relaxed);
        x.slot.state.store(FREE, Ordering::Release);
    }
}

/// A pending enqueue whose event completed.
struct Done {
    slot: &'static Slot,
    times: Option<Times>,
    /// Index in `Clocks::devices` (`None`: the queue's device is unknown).
    device: Option<usize>,
}

/// An event's device times (ns of the device's clock).
#[derive(Clone, Copy)]
struct Times {
    queued: Option<u64>,
    start: u64,
    end: u64,
}

/// The event's device times; `None` when the queue was not profiling.
fn profiled(api: &Api, event: P) -> Option<Times> {
    let read = |what: u32| {
        let mut v = 0u64;
        // SAFETY: a complete event we hold; an 8-byte value out.
        let r = unsafe {
            (api.profiling_info)(
                event,
                what,
                8,
                &mut v as *mut u64 as *mut c_void,
                std::ptr::null_mut(),
            )
        };
        (r == SUCCESS).then_some(v)
    };
    let (start, end) = (read(PROFILING_START)?, read(PROFILING_END)?);
    let queued = read(PROFILING_QUEUED).filter(|&q| q != 0 && q <= start);
    (end >= start).then_some(Times { queued, start, end })
}

impl Clocks {
    /// Device `d`'s anchor for this pass: `urDeviceGetGlobalTimestamps` when the adapter has it (a
    /// new one when the last is old), else the narrowest enqueue call among `done` around its
    /// event's queued time, when it is new or narrower than the last.
    fn anchor<'a>(&mut self, api: &Api, d: usize, done: impl Iterator<Item = &'a Done>, w: Writer) {
        let now = clock::ticks();
        let dev = &mut self.devices[d];
        let prev = dev.anchor;
        let stale = Anchor::stale(prev, now);
        if !dev.no_global_clock {
            if !stale {
                return;
            }
            match take_anchor(api, dev.handle as P, d, prev, w) {
                Some(a) => {
                    dev.anchor = Some(a);
                    return;
                }
                None => dev.no_global_clock = true,
            }
        }
        let best = done
            .filter_map(|x| {
                let q = x.times?.queued?;
                let (b, a) = (
                    x.slot.before.load(Ordering::Relaxed),
                    x.slot.after.load(Ordering::Relaxed),
                );
                (b != 0 && a >= b).then_some((b, a, q))
            })
            .min_by_key(|&(b, a, _)| a - b);
        let Some((t0, t1, device_ns)) = best else {
            return;
        };
        let narrower = prev.is_some_and(|p| (t1 - t0) * 2 < p.width);
        if stale || narrower {
            dev.anchor = Some(write_anchor(w, d, prev, t0, t1, device_ns));
        }
    }

    fn device_of(&mut self, api: &Api, queue: usize) -> Option<usize> {
        if let Some(&(_, d)) = self.queues.iter().find(|(q, _)| *q == queue) {
            return Some(d);
        }
        let mut device = 0usize;
        // SAFETY: the program's queue (its enqueue succeeded); a handle-sized value out.
        let r = unsafe {
            (api.queue_info)(
                queue as P,
                QUEUE_INFO_DEVICE,
                std::mem::size_of::<usize>(),
                &mut device as *mut usize as *mut c_void,
                std::ptr::null_mut(),
            )
        };
        if r != SUCCESS || device == 0 {
            return None;
        }
        let d = self.device_index(device)?;
        self.queues.push((queue, d));
        Some(d)
    }

    /// The backend's index of device `device`, met now if not before.
    fn device_index(&mut self, device: usize) -> Option<usize> {
        match self.devices.iter().position(|x| x.handle == device) {
            Some(d) => Some(d),
            None if self.devices.len() < MAX_DEVICES => {
                self.devices.push(Device {
                    handle: device,
                    anchor: None,
                    no_global_clock: false,
                });
                Some(self.devices.len() - 1)
            }
            None => None,
        }
    }
}

/// Reads the device's clock between two host clock readings, retried while the bracket is wide, and
/// writes the anchor.
fn take_anchor(
    api: &Api,
    device: P,
    index: usize,
    prev: Option<Anchor>,
    w: Writer,
) -> Option<Anchor> {
    let read = api.timestamps?;
    let best = bracketed(|| {
        let mut dev = 0u64;
        // SAFETY: a device handle the loader gave for the program's queue; the host time not asked.
        let r = unsafe { read(device, &mut dev, std::ptr::null_mut()) };
        (r == SUCCESS && dev != 0).then_some(dev)
    });
    let (t0, t1, device_ns) = best?;
    Some(write_anchor(w, index, prev, t0, t1, device_ns))
}

fn write(w: Writer, s: &Slot, times: Option<Times>, anchor: Option<Anchor>) {
    let what = s.what.load(Ordering::Relaxed);
    let work = Work {
        seq: s.seq.load(Ordering::Relaxed),
        kind: DeviceKind::from_u16((what & 0xffff) as u16).unwrap_or(DeviceKind::Kernel),
        copy_kind: (what >> 16) as u16,
        a1: s.bytes.load(Ordering::Relaxed),
        stream: s.queue.load(Ordering::Relaxed) as u64,
    };
    let timed = match (times, anchor) {
        (Some(t), Some(a)) => Timed::Anchored(
            t.start.wrapping_sub(a.device_ns) as i64,
            t.end.wrapping_sub(a.device_ns) as i64,
            a,
        ),
        (Some(t), None) => Timed::OwnClock(t.start, t.end),
        (None, _) => Timed::Untimed,
    };
    write_interval(w, &work, timed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_properties_gain_profiling_in_a_copy() {
        let mut scratch = [0u64; 4];
        // None given: ours, in order, profiling.
        let p = with_profiling(std::ptr::null_mut(), &mut scratch);
        assert_eq!(p, scratch.as_mut_ptr() as P);
        assert_eq!(scratch[..3], [14, 0, 2]);
        // The program's (out of order, with a pNext chain) keeps its flags and chain; its struct is
        // not written.
        let mine: [u64; 3] = [14, 0xdead_0000, 1];
        let p = with_profiling(mine.as_ptr() as P, &mut scratch);
        assert_eq!(p, scratch.as_mut_ptr() as P);
        assert_eq!(scratch[..3], [14, 0xdead_0000, 1 | 2]);
        assert_eq!(mine, [14, 0xdead_0000, 1]);
        // Not a queue properties struct: passed on untouched.
        let other: [u64; 3] = [99, 0, 0];
        assert_eq!(
            with_profiling(other.as_ptr() as P, &mut scratch),
            other.as_ptr() as P
        );
    }
}
