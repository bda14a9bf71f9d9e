//! Level 3 for Level Zero: when each kernel, copy and fill appended to an immediate command list
//! ran, from kernel timestamp events (`zeEventQueryKernelTimestamp`), tied to the append call.
//!
//! **Which appends.** Those of class launch, copy and fill. On an *immediate* command list the work
//! runs as appended, once, and is tied to the append. A *regular* list's appends are its recipe:
//! its work runs at each `zeCommandQueueExecuteCommandLists`, as a CUDA graph's nodes run at each
//! graph launch, so each execution is tied to the execute call (the interval names the kernel by its
//! handle); before each execute the backend resets its own events of the lists executed (reading
//! what the previous execution left first). An append that signals the program's own event is timed
//! through that event when its pool is a timestamp pool (else counted untimed); one that signals
//! none signals ours instead: an event of the backend's own `KERNEL_TIMESTAMP | HOST_VISIBLE` pool
//! in the list's context, taken from a fixed set (a bitmap: no allocation, no lock on the hot path)
//! and reset and returned once read. The program never sees it: not in its calls, not in the
//! capture's event links.
//!
//! **Reaping, synchronously,** as for Unified Runtime (`ur.rs`): after each successful host sync of
//! the program (`zeCommandQueueSynchronize`, `zeEventHostSynchronize`, `zeFenceHostSynchronize`),
//! and right after an append to a synchronous immediate list, on the program's thread, each pending
//! event that has signalled is read and written as an interval anchored to
//! `zeDeviceGetGlobalTimestamps`'s device time between two host clock readings. Kernel timestamps
//! keep only `kernelTimestampValidBits` of the device timer: each is unwrapped to the anchor's
//! value nearest it (exact while the two lie within half the wrap, 171 s at 32 bits of 80 ns). Before
//! the program destroys or resets an event, or destroys a context, what is pending on it is read
//! (or, not yet signalled, counted untimed), so the backend never touches a handle the program
//! has let go.

use super::anchored::{
    bracketed, claim, copy_kind, count_untimed, kind_of, write_anchor, write_interval, Anchor,
    Lazy, Timed, Work, FREE, READY, REAPING,
};
use crate::hot::{guard, state};
use crate::resolve;
use causeway_ring::layout::{Class, DeviceKind, Layer};
use causeway_ring::{clock, Writer};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

type P = *mut c_void;

const SUCCESS: i32 = 0;
/// `ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS`, at offset 28 of `ze_command_queue_desc_t`.
const MODE_SYNCHRONOUS: u32 = 1;
const QUEUE_DESC_MODE: usize = 28;
/// `ze_event_pool_desc_t` (24 bytes): stype 16, flags KERNEL_TIMESTAMP | HOST_VISIBLE, count.
const POOL_DESC_STYPE: u32 = 16;
const POOL_FLAGS: u32 = 4 | 1;
/// `ze_event_desc_t` (32 bytes): stype 17, index, signal and wait scope HOST.
const EVENT_DESC_STYPE: u32 = 17;
const SCOPE_HOST: u32 = 4;
/// `ze_device_properties_t` (368 bytes; stype `DEVICE_PROPERTIES_1_2`: timerResolution in cycles per
/// second, not whole nanoseconds) and its fields.
const DEVICE_PROPS_STYPE: u32 = 0x0002_0006;
const DEVICE_PROPS_SIZE: usize = 368;
const PROPS_TIMER_RESOLUTION: usize = 80;
const PROPS_TS_BITS: usize = 88;
const PROPS_KERNEL_TS_BITS: usize = 92;
/// `ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP`, at offset 16 of `ze_event_pool_desc_t`.
const POOL_FLAG_KERNEL_TIMESTAMP: u32 = 4;
/// Probes of an open-addressing table before it counts as full or the key as absent.
const PROBES: usize = 64;
/// Anchors of this backend's devices are numbered from here (Unified Runtime's from 0).
const DEVICE_BASE: usize = 0x100;

/// Immediate command lists followed at once.
const LISTS: usize = 4096;
/// Contexts with a pool of our own, and events per pool.
const CONTEXTS: usize = 16;
const EVENTS: usize = 1024;
/// Pending appends at most; more are untimed.
const SLOTS: usize = 8192;
/// Devices the backend anchors.
const MAX_DEVICES: usize = 16;

type Fn1 = unsafe extern "C" fn(P) -> i32;
type PoolCreate = unsafe extern "C" fn(P, *const u8, u32, *const P, *mut P) -> i32;
type EventCreate = unsafe extern "C" fn(P, *const u8, *mut P) -> i32;
type KernelTimestamp = unsafe extern "C" fn(P, *mut [u64; 4]) -> i32;
type GlobalTimestamps = unsafe extern "C" fn(P, *mut u64, *mut u64) -> i32;
type DeviceProps = unsafe extern "C" fn(P, *mut u8) -> i32;

struct Api {
    pool_create: PoolCreate,
    event_create: EventCreate,
    query_status: Fn1,
    host_reset: Fn1,
    event_destroy: Fn1,
    pool_destroy: Fn1,
    kernel_timestamp: KernelTimestamp,
    global_timestamps: GlobalTimestamps,
    device_props: DeviceProps,
}

impl Api {
    /// The loader's own functions (never our hooks).
    fn resolve() -> Option<Api> {
        let sym = |name: &CStr| resolve::found(name, Layer::LevelZero);
        // SAFETY: (all transmutes) each address is the Level Zero loader's export of that name,
        // whose C signature (ze_api.h 1.8) is the one given by its type (descriptors and results
        // passed as bytes of their sizes).
        unsafe {
            use std::mem::transmute as t;
            Some(Api {
                pool_create: t::<usize, PoolCreate>(sym(c"zeEventPoolCreate")?),
                event_create: t::<usize, EventCreate>(sym(c"zeEventCreate")?),
                query_status: t::<usize, Fn1>(sym(c"zeEventQueryStatus")?),
                host_reset: t::<usize, Fn1>(sym(c"zeEventHostReset")?),
                event_destroy: t::<usize, Fn1>(sym(c"zeEventDestroy")?),
                pool_destroy: t::<usize, Fn1>(sym(c"zeEventPoolDestroy")?),
                kernel_timestamp: t::<usize, KernelTimestamp>(sym(c"zeEventQueryKernelTimestamp")?),
                global_timestamps: t::<usize, GlobalTimestamps>(sym(
                    c"zeDeviceGetGlobalTimestamps",
                )?),
                device_props: t::<usize, DeviceProps>(sym(c"zeDeviceGetProperties")?),
            })
        }
    }
}

static BACKEND: Lazy<Api> = Lazy::new(Api::resolve, causeway_ring::layout::Backend::LevelZero);

/// Level 3 with a device-timing backend: time this runtime's work too.
pub fn want() {
    BACKEND.want();
}

fn api() -> Option<&'static Api> {
    BACKEND.api()
}

// ---- immediate command lists ----

/// A list handle's slot: 0 empty, `GONE` a destroyed list's.
struct List {
    key: AtomicUsize,
    context: AtomicUsize,
    device: AtomicUsize,
    synchronous: AtomicBool,
    /// A regular command list (appends are recorded, run at executes).
    regular: AtomicBool,
}

const GONE: usize = 1;
/// A slot being filled.
const FILLING_KEY: usize = 2;
static LIST: [List; LISTS] = [const {
    List {
        key: AtomicUsize::new(0),
        context: AtomicUsize::new(0),
        device: AtomicUsize::new(0),
        synchronous: AtomicBool::new(false),
        regular: AtomicBool::new(false),
    }
}; LISTS];

fn list_home(list: usize) -> usize {
    (list >> 4).wrapping_mul(0x9e37_79b9) % LISTS
}

/// The slot of immediate list `list`, if the backend follows it.
#[inline]
fn list_of(list: usize) -> Option<&'static List> {
    let home = list_home(list);
    for i in 0..PROBES {
        let s = &LIST[(home + i) % LISTS];
        match s.key.load(Ordering::Acquire) {
            0 => return None,
            k if k == list => return Some(s),
            _ => {}
        }
    }
    None
}

/// After a successful `zeCommandListCreateImmediate`: follow the new list.
pub fn immediate_created(context: P, device: P, desc: P, ph_list: P) {
    let synchronous = !desc.is_null()
        // SAFETY: the program's `ze_command_queue_desc_t`, which the real call read.
        && unsafe { (desc as *const u8).add(QUEUE_DESC_MODE).cast::<u32>().read_unaligned() }
            == MODE_SYNCHRONOUS;
    follow(context, device, ph_list, synchronous, false);
}

/// After a successful `zeCommandListCreate`: follow the new regular list.
pub fn regular_created(context: P, device: P, ph_list: P) {
    follow(context, device, ph_list, false, true);
}

fn follow(context: P, device: P, ph_list: P, synchronous: bool, regular: bool) {
    if ph_list.is_null() || BACKEND.is_off() {
        return;
    }
    // SAFETY: the call succeeded, so it wrote the list handle there.
    let list = unsafe { (ph_list as *const usize).read_unaligned() };
    if list <= FILLING_KEY {
        return;
    }
    // Our pool and its events are made here, off the appends' path.
    if let Some(api) = api() {
        pool_of(api, context as usize);
    }
    let home = list_home(list);
    for i in 0..PROBES {
        let s = &LIST[(home + i) % LISTS];
        let k = s.key.load(Ordering::Acquire);
        let claimed = (k == 0 || k == GONE || k == list)
            && s.key
                .compare_exchange(k, FILLING_KEY, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok();
        if claimed {
            s.context.store(context as usize, Ordering::Relaxed);
            s.device.store(device as usize, Ordering::Relaxed);
            s.synchronous.store(synchronous, Ordering::Relaxed);
            s.regular.store(regular, Ordering::Relaxed);
            s.key.store(list, Ordering::Release);
            return;
        }
    }
}

// ---- the program's timestamp pools and their events ----

/// Handles in an open-addressing set (0 empty, `GONE` removed).
struct Set<const N: usize>([AtomicUsize; N]);

impl<const N: usize> Set<N> {
    const fn new() -> Self {
        Set([const { AtomicUsize::new(0) }; N])
    }

    fn insert(&self, h: usize) {
        let home = list_home(h);
        for i in 0..PROBES {
            let k = &self.0[(home + i) % N];
            let v = k.load(Ordering::Acquire);
            if v == h
                || ((v == 0 || v == GONE)
                    && k.compare_exchange(v, h, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok())
            {
                return;
            }
        }
    }

    fn contains(&self, h: usize) -> bool {
        let home = list_home(h);
        for i in 0..PROBES {
            match self.0[(home + i) % N].load(Ordering::Acquire) {
                0 => return false,
                v if v == h => return true,
                _ => {}
            }
        }
        false
    }

    fn remove(&self, h: usize) {
        let home = list_home(h);
        for i in 0..PROBES {
            let k = &self.0[(home + i) % N];
            match k.load(Ordering::Acquire) {
                0 => return,
                v if v == h => {
                    k.store(GONE, Ordering::Release);
                    return;
                }
                _ => {}
            }
        }
    }
}

/// The program's event pools made with `ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP`, and their events:
/// only those may be asked for kernel timestamps.
static TS_POOLS: Set<256> = Set::new();
static TS_EVENTS: Set<8192> = Set::new();

/// After a successful `zeEventPoolCreate`.
pub fn pool_created(desc: P, ph_pool: P) {
    if desc.is_null() || ph_pool.is_null() || BACKEND.is_off() {
        return;
    }
    // SAFETY: the program's `ze_event_pool_desc_t`, which the real call read; the call succeeded,
    // so it wrote the pool handle.
    let (flags, pool) = unsafe {
        (
            (desc as *const u8).add(16).cast::<u32>().read_unaligned(),
            (ph_pool as *const usize).read_unaligned(),
        )
    };
    if flags & POOL_FLAG_KERNEL_TIMESTAMP != 0 && pool > FILLING_KEY {
        TS_POOLS.insert(pool);
    }
}

/// After a successful `zeEventCreate`.
pub fn event_created(pool: P, ph_event: P) {
    if ph_event.is_null() || !TS_POOLS.contains(pool as usize) {
        return;
    }
    // SAFETY: the call succeeded, so it wrote the event handle there.
    let e = unsafe { (ph_event as *const usize).read_unaligned() };
    if e > FILLING_KEY {
        TS_EVENTS.insert(e);
    }
}

/// Before `zeEventPoolDestroy` (returned, for the real call).
pub fn pool_ending(pool: P) -> P {
    TS_POOLS.remove(pool as usize);
    pool
}

/// After a successful `zeCommandListDestroy`: its recipe is dropped and the list forgotten.
pub fn list_destroyed(list: P) {
    if let Some(s) = list_of(list as usize) {
        forget_recipe(list as usize);
        s.key.store(GONE, Ordering::Release);
    }
}

// ---- regular lists' recipes ----

/// One timed append of a regular list: what each execute of the list runs and signals.
struct Step {
    /// The list (0: a free entry).
    list: AtomicUsize,
    event: AtomicUsize,
    /// As `Slot::own`.
    own: AtomicU32,
    what: AtomicU32,
    a1: AtomicU64,
}

const STEPS: usize = 16384;
static STEP: [Step; STEPS] = [const {
    Step {
        list: AtomicUsize::new(0),
        event: AtomicUsize::new(0),
        own: AtomicU32::new(0),
        what: AtomicU32::new(0),
        a1: AtomicU64::new(0),
    }
}; STEPS];
/// Entries below this index may be in use.
static STEPS_TOP: AtomicUsize = AtomicUsize::new(0);
/// Where the next free entry probably is.
static STEP_HINT: AtomicUsize = AtomicUsize::new(0);

/// Records a timed append of regular list `list`; false when the recipe table is full.
fn add_step(list: usize, event: usize, own: u32, what: u32, a1: u64) -> bool {
    let from = STEP_HINT.load(Ordering::Relaxed);
    for k in 0..STEPS {
        let i = (from + k) % STEPS;
        let st = &STEP[i];
        if st
            .list
            .compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            st.event.store(event, Ordering::Relaxed);
            st.own.store(own, Ordering::Relaxed);
            st.what.store(what, Ordering::Relaxed);
            st.a1.store(a1, Ordering::Relaxed);
            STEPS_TOP.fetch_max(i + 1, Ordering::AcqRel);
            STEP_HINT.store(i + 1, Ordering::Relaxed);
            st.list.store(list, Ordering::Release);
            return true;
        }
    }
    false
}

fn steps_of(list: usize) -> impl Iterator<Item = &'static Step> {
    STEP[..STEPS_TOP.load(Ordering::Acquire)]
        .iter()
        .filter(move |st| st.list.load(Ordering::Acquire) == list)
}

/// Drops `list`'s recipe (reset or destroyed): what its last execute left pending is read or counted
/// untimed, and our events go back.
fn forget_recipe(list: usize) {
    reap_where(|s| s.list.load(Ordering::Relaxed) == list, true);
    let api = BACKEND.get();
    for st in steps_of(list) {
        let own = st.own.load(Ordering::Relaxed);
        if own & 0xff != 0 {
            let pool = &POOL[(own & 0xff) as usize - 1];
            if let (Some(api), true) = (api, pool.context.load(Ordering::Relaxed) != 0) {
                let e = st.event.load(Ordering::Relaxed) as P;
                // SAFETY: our own event (signalled or not, a reset is allowed on the host).
                guard::internal(|| unsafe { (api.host_reset)(e) });
                give_back(pool, ((own >> 8) & 0xffff) as usize);
            }
        }
        st.list.store(0, Ordering::Release);
    }
}

/// Before `zeCommandListReset`: the list's recipe is dropped (returned, for the real call).
pub fn list_resetting(list: P) -> P {
    if BACKEND.is_on() {
        forget_recipe(list as usize);
    }
    list
}

/// Before `zeCommandQueueExecuteCommandLists`: what the lists' previous execution left pending is
/// read, and our events in their recipes are reset for this one (returned, for the real call).
pub fn executing(n: u32, lists: P) -> P {
    if !BACKEND.is_on() || lists.is_null() {
        return lists;
    }
    let Some(api) = BACKEND.get() else {
        return lists;
    };
    for i in 0..n as usize {
        // SAFETY: the program's array of `n` list handles, which the real call reads.
        let list = unsafe { (lists as *const usize).add(i).read_unaligned() };
        reap_where(|s| s.list.load(Ordering::Relaxed) == list, true);
        for st in steps_of(list) {
            if st.own.load(Ordering::Relaxed) & 0xff != 0 {
                let e = st.event.load(Ordering::Relaxed) as P;
                // SAFETY: our own event; no execution that signals it is running (read above).
                guard::internal(|| unsafe { (api.host_reset)(e) });
            }
        }
    }
    lists
}

/// After a successful execute (sequence number `seq`): each timed step of each regular list it ran
/// joins the pending table, tied to the execute.
pub fn executed(seq: Option<u64>, n: u32, lists: P) {
    let Some(seq) = seq else { return };
    if !BACKEND.is_on() || lists.is_null() {
        return;
    }
    for i in 0..n as usize {
        // SAFETY: as in `executing`.
        let list = unsafe { (lists as *const usize).add(i).read_unaligned() };
        let Some(l) = list_of(list) else { continue };
        for st in steps_of(list) {
            let Some(slot) = claim(&SLOT, &NEXT, |s| &s.state) else {
                count_untimed(1);
                continue;
            };
            slot.seq.store(seq, Ordering::Relaxed);
            slot.event
                .store(st.event.load(Ordering::Relaxed), Ordering::Relaxed);
            slot.list.store(list, Ordering::Relaxed);
            slot.device
                .store(l.device.load(Ordering::Relaxed), Ordering::Relaxed);
            slot.own
                .store(st.own.load(Ordering::Relaxed) | RECIPE, Ordering::Relaxed);
            slot.what
                .store(st.what.load(Ordering::Relaxed), Ordering::Relaxed);
            slot.bytes
                .store(st.a1.load(Ordering::Relaxed), Ordering::Relaxed);
            PENDING.fetch_add(1, Ordering::Relaxed);
            slot.state.store(READY, Ordering::Release);
        }
    }
}

/// `Slot::own` bit: the event belongs to a regular list's recipe (reset before each execute, not
/// returned when read).
const RECIPE: u32 = 1 << 31;
/// `Signal::own`'s event index (and so `Slot::own` bits 8..) of a program event that is not of a
/// timestamp pool: never asked for kernel timestamps.
const NO_STAMPS: u16 = 0x8000;

// ---- our events ----

struct Pool {
    /// 0 none, 1 being made, 2 ready, 3 failed.
    state: AtomicU8,
    context: AtomicUsize,
    handle: AtomicUsize,
    events: [AtomicUsize; EVENTS],
    /// Set bits are free events.
    free: [AtomicU64; EVENTS / 64],
}

static POOL: [Pool; CONTEXTS] = [const {
    Pool {
        state: AtomicU8::new(0),
        context: AtomicUsize::new(0),
        handle: AtomicUsize::new(0),
        events: [const { AtomicUsize::new(0) }; EVENTS],
        free: [const { AtomicU64::new(u64::MAX) }; EVENTS / 64],
    }
}; CONTEXTS];

/// The pool of `context`, made on first use.
fn pool_of(api: &Api, context: usize) -> Option<(usize, &'static Pool)> {
    for (i, p) in POOL.iter().enumerate() {
        if p.context.load(Ordering::Acquire) == context {
            match p.state.load(Ordering::Acquire) {
                2 => return Some((i, p)),
                3 => return None,
                _ => {}
            }
        }
    }
    for (i, p) in POOL.iter().enumerate() {
        if p.state
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            let mut desc = [0u8; 24];
            desc[..4].copy_from_slice(&POOL_DESC_STYPE.to_le_bytes());
            desc[16..20].copy_from_slice(&POOL_FLAGS.to_le_bytes());
            desc[20..24].copy_from_slice(&(EVENTS as u32).to_le_bytes());
            let mut h: P = std::ptr::null_mut();
            // SAFETY: the program's context; a valid pool descriptor; all devices of the context.
            let r = guard::internal(|| unsafe {
                (api.pool_create)(context as P, desc.as_ptr(), 0, std::ptr::null(), &mut h)
            });
            p.context.store(context, Ordering::Relaxed);
            if r != SUCCESS || h.is_null() {
                // Remembered, so this context's appends do not try again.
                p.state.store(3, Ordering::Release);
                return None;
            }
            p.handle.store(h as usize, Ordering::Relaxed);
            make_events(api, p);
            p.state.store(2, Ordering::Release);
            return Some((i, p));
        }
    }
    None
}

/// Makes the pool's events (when the pool is made, off the appends' path); an index whose event
/// could not be made is never handed out.
fn make_events(api: &Api, pool: &Pool) {
    let pool_h = pool.handle.load(Ordering::Relaxed) as P;
    for i in 0..EVENTS {
        let mut desc = [0u8; 32];
        desc[..4].copy_from_slice(&EVENT_DESC_STYPE.to_le_bytes());
        desc[16..20].copy_from_slice(&(i as u32).to_le_bytes());
        desc[20..24].copy_from_slice(&SCOPE_HOST.to_le_bytes());
        desc[24..28].copy_from_slice(&SCOPE_HOST.to_le_bytes());
        let mut h: P = std::ptr::null_mut();
        // SAFETY: our pool; a valid event descriptor of an index not yet made.
        let r = guard::internal(|| unsafe { (api.event_create)(pool_h, desc.as_ptr(), &mut h) });
        if r == SUCCESS && !h.is_null() {
            pool.events[i].store(h as usize, Ordering::Release);
        } else {
            pool.free[i / 64].fetch_and(!(1 << (i % 64)), Ordering::AcqRel);
        }
    }
}

/// A free event of `pool`: its index and handle.
fn take_event(pool: &Pool) -> Option<(usize, usize)> {
    for (w, word) in pool.free.iter().enumerate() {
        let mut v = word.load(Ordering::Relaxed);
        while v != 0 {
            let bit = v.trailing_zeros() as usize;
            match word.compare_exchange_weak(
                v,
                v & !(1 << bit),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    let i = w * 64 + bit;
                    return Some((i, pool.events[i].load(Ordering::Acquire)));
                }
                Err(now) => v = now,
            }
        }
    }
    None
}

fn give_back(pool: &Pool, i: usize) {
    pool.free[i / 64].fetch_or(1 << (i % 64), Ordering::AcqRel);
}

// ---- the hot path ----

/// What an append's signal event became.
#[derive(Clone, Copy)]
pub struct Signal {
    /// The event the real call signals.
    pub event: P,
    /// Ours: pool index + 1 and event index (0: not ours).
    own: (u8, u16),
    /// The followed list it is appended to (`None`: the append is not timed).
    list: Option<&'static List>,
}

thread_local! {
    /// The event of ours this thread's latest append signalled (0: none).
    static OWN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether `event` is the backend's own, just passed to an append on this thread.
pub fn is_own(event: P) -> bool {
    !event.is_null() && OWN.with(|o| o.get()) == event as usize
}

/// An append's signal event for its real call: the program's, or ours where it named none.
#[inline(always)]
pub fn signal(list: u64, event: P, depth: u16, class: Class) -> Signal {
    let untimed = Signal {
        event,
        own: (0, 0),
        list: None,
    };
    OWN.with(|o| o.set(0));
    if kind_of(class).is_none() || depth != 0 || BACKEND.is_off() {
        return untimed;
    }
    let Some(api) = api() else { return untimed };
    let Some(l) = list_of(list as usize) else {
        return untimed;
    };
    if !event.is_null() {
        // Kernel timestamps may be asked only of an event of a timestamp pool: another one's work
        // is written untimed (known, not timed).
        let stamps = TS_EVENTS.contains(event as usize);
        return Signal {
            own: (0, if stamps { 0 } else { NO_STAMPS }),
            list: Some(l),
            ..untimed
        };
    }
    let Some((pi, pool)) = pool_of(api, l.context.load(Ordering::Relaxed)) else {
        return untimed;
    };
    let Some((i, e)) = take_event(pool) else {
        count_untimed(1);
        return untimed;
    };
    OWN.with(|o| o.set(e));
    Signal {
        event: e as P,
        own: (pi as u8 + 1, i as u16),
        list: Some(l),
    }
}

struct Slot {
    state: AtomicU8,
    seq: AtomicU64,
    event: AtomicUsize,
    list: AtomicUsize,
    device: AtomicUsize,
    /// Ours: pool index + 1 | event index << 8 (0: the program's).
    own: AtomicU32,
    /// DeviceKind | copy kind << 16.
    what: AtomicU32,
    bytes: AtomicU64,
}

static SLOT: [Slot; SLOTS] = [const {
    Slot {
        state: AtomicU8::new(FREE),
        seq: AtomicU64::new(0),
        event: AtomicUsize::new(0),
        list: AtomicUsize::new(0),
        device: AtomicUsize::new(0),
        own: AtomicU32::new(0),
        what: AtomicU32::new(0),
        bytes: AtomicU64::new(0),
    }
}; SLOTS];
static NEXT: AtomicUsize = AtomicUsize::new(0);
static PENDING: AtomicU32 = AtomicU32::new(0);

/// After an append (`code`: its result): a timed one joins the pending table; ours goes back when
/// the call failed.
#[inline]
pub fn appended(seq: Option<u64>, list: u64, class: Class, a: [u64; 2], sig: Signal, code: i32) {
    let (Some(l), Some(kind)) = (sig.list, kind_of(class)) else {
        return;
    };
    let (pi, ei) = sig.own;
    if code != SUCCESS {
        if pi != 0 {
            give_back(&POOL[pi as usize - 1], ei as usize);
        }
        return;
    }
    let what = kind as u32 | u32::from(copy_kind(kind, a[1])) << 16;
    let own = u32::from(pi) | u32::from(ei) << 8;
    if l.regular.load(Ordering::Relaxed) {
        // Recorded: its work runs at each execute of the list.
        if !add_step(list as usize, sig.event as usize, own, what, a[0]) {
            // The list signals our event at every execute: it is not returned (leaked).
            count_untimed(1);
        }
        return;
    }
    let Some(seq) = seq else {
        count_untimed(1);
        return;
    };
    let Some(slot) = claim(&SLOT, &NEXT, |s| &s.state) else {
        // Untimed. An event of ours the work will signal is not returned (it would need a reset
        // once signalled); the set is large, and this happens only with a full table.
        count_untimed(1);
        return;
    };
    slot.seq.store(seq, Ordering::Relaxed);
    slot.event.store(sig.event as usize, Ordering::Relaxed);
    slot.list.store(list as usize, Ordering::Relaxed);
    slot.device
        .store(l.device.load(Ordering::Relaxed), Ordering::Relaxed);
    slot.own.store(own, Ordering::Relaxed);
    slot.what.store(what, Ordering::Relaxed);
    // a1: a launch's kernel handle, a copy's or fill's bytes; a copy's a2: its direction.
    slot.bytes.store(a[0], Ordering::Relaxed);
    let pending = PENDING.fetch_add(1, Ordering::Relaxed) + 1;
    slot.state.store(READY, Ordering::Release);
    // A program that only appends to synchronous lists, or syncs in ways not hooked, is read when
    // half the table waits (its work is done or ours; the program's events stay until ended).
    if l.synchronous.load(Ordering::Relaxed) && pending as usize > SLOTS / 2 {
        synced();
    }
}

// ---- reaping ----

struct Device {
    handle: usize,
    /// Device ns per timer tick, and the bits a global and a kernel timestamp keep.
    ns_per_tick: f64,
    global_bits: u32,
    kernel_bits: u32,
    anchor: Option<Anchor>,
    /// The anchor's device timer value (ticks, unwrapped to 64 bits).
    anchor_ticks: u64,
}

static DEVICES: Mutex<Vec<Device>> = Mutex::new(Vec::new());

/// In a fork child: the tables hold the parent's handles, and a lock may have been held by a thread
/// that is gone. Level Zero timing is off here.
pub fn on_fork_child() {
    BACKEND.off();
}

/// At exit: what no sync of the program read is counted untimed (no driver call: the runtime may
/// be torn down).
pub fn at_exit() {
    count_untimed(u64::from(PENDING.swap(0, Ordering::AcqRel)));
}

/// After a successful host sync of the program: every pending event that signalled is written.
pub fn synced() {
    reap_where(|_| true, false);
}

/// Before the program destroys or resets `event`: its pending appends are read now, or counted
/// untimed when it has not signalled (returned, for the real call).
pub fn event_ending(event: P) -> P {
    reap_where(|s| s.event.load(Ordering::Relaxed) == event as usize, true);
    event
}

/// Before the program destroys `context`: what is pending in it is read or counted untimed, and our
/// pool there is destroyed (returned, for the real call).
pub fn context_ending(context: P) -> P {
    let lists_in = |s: &Slot| {
        list_of(s.list.load(Ordering::Relaxed))
            .is_some_and(|l| l.context.load(Ordering::Relaxed) == context as usize)
    };
    reap_where(lists_in, true);
    let api = BACKEND.get();
    for p in POOL.iter() {
        if p.context.load(Ordering::Acquire) != context as usize {
            continue;
        }
        if let (Some(api), 2) = (api, p.state.load(Ordering::Acquire)) {
            // Our events and pool go before the context does (a validation layer refuses to
            // destroy a context with children). Steps of regular lists in it are forgotten.
            for st in STEP.iter() {
                let own = st.own.load(Ordering::Relaxed);
                let mine = own & 0xff != 0 && std::ptr::eq(&POOL[(own & 0xff) as usize - 1], p);
                if mine {
                    st.list.store(0, Ordering::Release);
                }
            }
            guard::internal(|| {
                for e in &p.events {
                    let h = e.swap(0, Ordering::AcqRel);
                    if h != 0 {
                        // SAFETY: our own event; its pool and context are still alive.
                        unsafe { (api.event_destroy)(h as P) };
                    }
                }
                // SAFETY: our own pool, its events destroyed.
                unsafe { (api.pool_destroy)(p.handle.swap(0, Ordering::AcqRel) as P) };
            });
        }
        for w in &p.free {
            w.store(u64::MAX, Ordering::Relaxed);
        }
        p.context.store(0, Ordering::Relaxed);
        p.state.store(0, Ordering::Release);
    }
    context
}

fn reap_where(pick: impl Fn(&Slot) -> bool, drop_unsignalled: bool) {
    if PENDING.load(Ordering::Relaxed) == 0 {
        return;
    }
    let (Some(api), Some(w)) = (BACKEND.get(), state::writer()) else {
        return;
    };
    guard::internal(|| reap(api, w, pick, drop_unsignalled));
}

fn reap(api: &Api, w: Writer, pick: impl Fn(&Slot) -> bool, drop_unsignalled: bool) {
    let Ok(mut devices) = DEVICES.lock() else {
        return;
    };
    let mut left = PENDING.load(Ordering::Acquire);
    let mut mine: Vec<&'static Slot> = Vec::new();
    for s in SLOT.iter() {
        if left == 0 {
            break;
        }
        if s.state.load(Ordering::Acquire) != READY {
            continue;
        }
        left -= 1;
        if pick(s)
            && s.state
                .compare_exchange(READY, REAPING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            mine.push(s);
        }
    }
    // A program event appended to more than once before this reap was reset and reused between:
    // it holds only its latest work's times.
    let mut latest: Vec<(usize, u64)> = (mine.iter())
        .filter(|s| s.own.load(Ordering::Relaxed) & 0xff == 0)
        .map(|s| {
            (
                s.event.load(Ordering::Relaxed),
                s.seq.load(Ordering::Relaxed),
            )
        })
        .collect();
    latest.sort_unstable_by(|a, b| b.cmp(a));
    latest.dedup_by_key(|x| x.0);
    for s in mine {
        let event = s.event.load(Ordering::Relaxed) as P;
        let own = s.own.load(Ordering::Relaxed);
        let seq = s.seq.load(Ordering::Relaxed);
        let theirs = own & 0xff == 0;
        let superseded = theirs
            && latest
                .iter()
                .find(|x| x.0 == event as usize)
                .is_some_and(|x| x.1 != seq);
        // SAFETY: an event the program has not let go (see `event_ending`), or ours.
        let signalled = !superseded && unsafe { (api.query_status)(event) } == SUCCESS;
        // Not signalled yet: kept, unless it is ending (the program destroys or resets it, or its
        // context; its list is reset or executed again).
        if !superseded && !signalled && !drop_unsignalled {
            s.state.store(READY, Ordering::Release);
            continue;
        }
        let mut ts = [0u64; 4];
        let stamps = own >> 8 & u32::from(NO_STAMPS) == 0;
        // SAFETY: as above (an event of a timestamp pool, or ours); a
        // `ze_kernel_timestamp_result_t` (4 × u64) out.
        let timed =
            signalled && stamps && unsafe { (api.kernel_timestamp)(event, &mut ts) } == SUCCESS;
        let d = device_index(api, &mut devices, s.device.load(Ordering::Relaxed));
        // Times that could not be read make an untimed interval (the work is known, its time
        // not).
        let t = match (timed, d) {
            (true, Some(d)) => anchored(api, &mut devices[d], d, ts[0], ts[1], w),
            _ => Timed::Untimed,
        };
        let what = s.what.load(Ordering::Relaxed);
        let work = Work {
            seq,
            kind: DeviceKind::from_u16((what & 0xffff) as u16).unwrap_or(DeviceKind::Kernel),
            copy_kind: (what >> 16) as u16,
            a1: s.bytes.load(Ordering::Relaxed),
            stream: s.list.load(Ordering::Relaxed) as u64,
        };
        write_interval(w, &work, t);
        if own & 0xff != 0 && own & RECIPE == 0 {
            let pool = &POOL[(own & 0xff) as usize - 1];
            // Ours goes back once signalled (reset first); one abandoned unsignalled, or whose
            // context is gone, does not. A recipe's stays with its list.
            if signalled && pool.context.load(Ordering::Relaxed) != 0 {
                // SAFETY: our own signalled event.
                unsafe { (api.host_reset)(event) };
                give_back(pool, ((own >> 8) & 0xffff) as usize);
            }
        }
        PENDING.fetch_sub(1, Ordering::Relaxed);
        s.state.store(FREE, Ordering::Release);
    }
}

/// The backend's index of device `handle`, reading its timer's properties the first time.
fn device_index(api: &Api, devices: &mut Vec<Device>, handle: usize) -> Option<usize> {
    if let Some(i) = devices.iter().position(|d| d.handle == handle) {
        return Some(i);
    }
    if devices.len() >= MAX_DEVICES || handle == 0 {
        return None;
    }
    let mut props = [0u8; DEVICE_PROPS_SIZE];
    props[..4].copy_from_slice(&DEVICE_PROPS_STYPE.to_le_bytes());
    // SAFETY: the program's device; a `ze_device_properties_t` of stype 3, its size.
    if unsafe { (api.device_props)(handle as P, props.as_mut_ptr()) } != SUCCESS {
        return None;
    }
    let at = |o: usize, n: usize| {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&props[o..o + n]);
        u64::from_le_bytes(b)
    };
    let hz = at(PROPS_TIMER_RESOLUTION, 8);
    let global_bits = at(PROPS_TS_BITS, 4) as u32;
    let kernel_bits = at(PROPS_KERNEL_TS_BITS, 4) as u32;
    if hz == 0 || !(1..=64).contains(&kernel_bits) || !(1..=64).contains(&global_bits) {
        return None;
    }
    devices.push(Device {
        handle,
        ns_per_tick: 1e9 / hz as f64,
        global_bits,
        kernel_bits,
        anchor: None,
        anchor_ticks: 0,
    });
    Some(devices.len() - 1)
}

/// A kernel timestamp's start and end (ticks, `kernel_bits` of the timer) as offsets from the
/// device's anchor, taking a new one when it is old.
fn anchored(api: &Api, d: &mut Device, index: usize, start: u64, end: u64, w: Writer) -> Timed {
    if Anchor::stale(d.anchor, clock::ticks()) {
        let read = api.global_timestamps;
        let handle = d.handle as P;
        let got = bracketed(|| {
            let (mut host, mut dev) = (0u64, 0u64);
            // SAFETY: the program's device; two u64 out.
            let r = unsafe { read(handle, &mut host, &mut dev) };
            (r == SUCCESS).then_some(dev)
        });
        if let Some((t0, t1, raw)) = got {
            // The global timer keeps `global_bits`: unwrapped past the previous anchor's value.
            let ticks = match d.anchor {
                Some(_) if d.global_bits < 64 => {
                    let m = (1u64 << d.global_bits) - 1;
                    d.anchor_ticks + (raw.wrapping_sub(d.anchor_ticks) & m)
                }
                _ => raw,
            };
            let ns = (ticks as f64 * d.ns_per_tick) as u64;
            d.anchor = Some(write_anchor(w, DEVICE_BASE + index, d.anchor, t0, t1, ns));
            d.anchor_ticks = ticks;
        }
    }
    let Some(a) = d.anchor else {
        return Timed::Untimed;
    };
    let s = unwrap(start, d.anchor_ticks, d.kernel_bits);
    let mut e = unwrap(end, d.anchor_ticks, d.kernel_bits);
    if e < s && d.kernel_bits < 63 {
        // The end wrapped once past the start.
        e += 1i64 << d.kernel_bits;
    }
    let ns = |t: i64| (t as f64 * d.ns_per_tick).round() as i64;
    Timed::Anchored(ns(s), ns(e), a)
}

/// `k` (the low `bits` of the device timer) as ticks from `anchor` (the full timer): the value with
/// those low bits nearest the anchor.
fn unwrap(k: u64, anchor: u64, bits: u32) -> i64 {
    if bits >= 63 {
        return k.wrapping_sub(anchor) as i64;
    }
    let m = 1i64 << bits;
    let d = (k.wrapping_sub(anchor) & (m as u64 - 1)) as i64;
    if d >= m / 2 {
        d - m
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_timestamps_unwrap_to_the_anchor_nearest() {
        // 32 bits; the anchor at 2^32 + 100 ticks.
        let a = (1u64 << 32) + 100;
        assert_eq!(unwrap(50, a, 32), -50);
        assert_eq!(unwrap(150, a, 32), 50);
        // Before the wrap: low bits near 2^32.
        assert_eq!(unwrap((1 << 32) - 10, a, 32), -110);
        assert_eq!(unwrap(7, 7, 64), 0);
        assert_eq!(unwrap(5, 9, 63), -4);
    }
}
