//! Level 3's `events` backend: device time from CUDA timing events the shim records around each
//! launch, copy, memset and graph launch on the call's own stream.
//!
//! Hot path (outermost device-work call only): claim a free event pair from the current context's
//! pre-created pool (one atomic add and one compare-and-swap, no allocation, no lock), record the start
//! event, make the real call, record the end event, mark the pair pending. A calls on a capturing stream
//! gets no events: anything recorded there would become part of the application's graph.
//!
//! Off the hot path a reaper thread polls pending pairs, reads each one's device times relative to the
//! pool's current *anchor* — a timing event it recorded on its own idle stream between two host clock
//! readings — and writes a `DeviceInterval` entry with those raw device offsets plus, per anchor, a
//! `DeviceAnchor` entry with the host bracket and the device time since the previous anchor. The scanner
//! converts offsets to host time and states the bound; nothing is converted here.

use crate::hot::{guard, state};
use crate::resolve;
use causeway_ring::layout::{
    counter, entry_flags, Backend, Class, DeviceKind, Layer, NO_CALL, NO_ELAPSED,
};
use causeway_ring::settings::env;
use causeway_ring::{clock, Fields, Kind, Writer};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use std::sync::{Mutex, OnceLock};

type Ev = *mut c_void;
type Ctx = *mut c_void;
type Stream = *mut c_void;

const SUCCESS: i32 = 0;
const NOT_READY: i32 = 600;
/// `CU_STREAM_PER_THREAD`: the per-thread default stream, as a handle any driver call accepts.
const STREAM_PER_THREAD: u64 = 2;
const STREAM_NON_BLOCKING: u32 = 1;
const CAPTURE_MODE_RELAXED: u32 = 2;

/// `CAUSEWAY_EVENTS_DIAG=grow-during-run`: the old pool (256 pairs first, 512 more per reaper pass up
/// to `PAIRS` while the program runs), kept to reproduce the distortion it caused.
static GROW_DURING_RUN: AtomicBool = AtomicBool::new(false);
const OLD_FIRST_PAIRS: usize = 256;
/// Event pairs per context at most: launches in flight (issued, not yet reaped) beyond this go untimed.
const PAIRS: usize = 8192;
/// Pairs created on the first use in a context, on the calling thread, before its first timed call.
/// Creating events while the program runs contends with its own launches and copies in the driver: on
/// the H200 (2026-12-01), making the rest of the 8192 pairs in the reaper during the first tens of
/// milliseconds stretched a two-stream step of 10 µs ops from 25 to 90 µs. So the pool is made up front,
/// large enough for what a step keeps in flight, and grows (doubling, in the reaper) only when more than
/// half of it is in use or a claim found no free pair.
const FIRST_PAIRS: usize = 1024;
/// Contexts the backend follows (a process rarely uses more devices than this).
const MAX_CONTEXTS: usize = 16;
/// A new anchor this often while work is being reaped: keeps offsets (and float rounding) small and
/// lets the scanner measure the device clock's drift between anchors.
const ANCHOR_EVERY_NS: u64 = 200_000_000;
/// An anchor whose host bracket is wider than this is retried (up to `ANCHOR_TRIES`): its half-width
/// is the floor of every bound converted through it.
const ANCHOR_GOOD_NS: u64 = 4_000;
const ANCHOR_TRIES: usize = 16;
/// How long the exit flush waits for work still running on the device.
const EXIT_WAIT_NS: u64 = 2_000_000_000;

type CtxGetCurrent = unsafe extern "C" fn(*mut Ctx) -> i32;
type CtxSetCurrent = unsafe extern "C" fn(Ctx) -> i32;
type CtxGetDevice = unsafe extern "C" fn(*mut i32) -> i32;
type EventCreate = unsafe extern "C" fn(*mut Ev, u32) -> i32;
type EventRecord = unsafe extern "C" fn(Ev, Stream) -> i32;
type EventQuery = unsafe extern "C" fn(Ev) -> i32;
type Elapsed = unsafe extern "C" fn(*mut f32, Ev, Ev) -> i32;
type StreamCreate = unsafe extern "C" fn(*mut Stream, u32) -> i32;
type IsCapturing = unsafe extern "C" fn(Stream, *mut u32) -> i32;
type ExchangeCaptureMode = unsafe extern "C" fn(*mut u32) -> i32;

struct Api {
    ctx_get_current: CtxGetCurrent,
    ctx_set_current: CtxSetCurrent,
    ctx_get_device: CtxGetDevice,
    event_create: EventCreate,
    event_record: EventRecord,
    event_query: EventQuery,
    elapsed: Elapsed,
    stream_create: StreamCreate,
    is_capturing: IsCapturing,
    exchange_capture_mode: Option<ExchangeCaptureMode>,
}

impl Api {
    /// The driver's own functions (never our hooks: the backend's calls are not the program's).
    fn resolve() -> Option<Api> {
        let sym = |name: &CStr| resolve::found(name, Layer::Driver);
        // SAFETY: (all transmutes) each address is the driver's export of that name, whose C signature
        // (from cuda.h) is the one given by its type.
        unsafe {
            use std::mem::transmute as t;
            Some(Api {
                ctx_get_current: t::<usize, CtxGetCurrent>(sym(c"cuCtxGetCurrent")?),
                ctx_set_current: t::<usize, CtxSetCurrent>(sym(c"cuCtxSetCurrent")?),
                ctx_get_device: t::<usize, CtxGetDevice>(sym(c"cuCtxGetDevice")?),
                event_create: t::<usize, EventCreate>(sym(c"cuEventCreate")?),
                event_record: t::<usize, EventRecord>(sym(c"cuEventRecord")?),
                event_query: t::<usize, EventQuery>(sym(c"cuEventQuery")?),
                elapsed: t::<usize, Elapsed>(
                    sym(c"cuEventElapsedTime_v2").or_else(|| sym(c"cuEventElapsedTime"))?,
                ),
                stream_create: t::<usize, StreamCreate>(sym(c"cuStreamCreate")?),
                is_capturing: t::<usize, IsCapturing>(sym(c"cuStreamIsCapturing")?),
                exchange_capture_mode: sym(c"cuThreadExchangeStreamCaptureMode")
                    .map(|p| t::<usize, ExchangeCaptureMode>(p)),
            })
        }
    }
}

// ---- state ----

const OFF: u8 = 0;
/// Asked for (level 3, `--backend events`); the driver is not loaded yet.
const WANTED: u8 = 1;
const ON: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(OFF);
static API: OnceLock<Api> = OnceLock::new();
/// Driver look-ups tried while the driver was not yet loaded (each is a walk of the loaded objects).
static TRIES: AtomicU32 = AtomicU32::new(0);
const MAX_TRIES: u32 = 4096;
static POOLS: [AtomicPtr<Pool>; MAX_CONTEXTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_CONTEXTS];
/// Serialises pool creation, reaping passes and the exit flush (never taken on the hot path).
static REAP: Mutex<()> = Mutex::new(());
static STOP: AtomicBool = AtomicBool::new(false);
static REAPER: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);
static NEXT_ANCHOR: AtomicU64 = AtomicU64::new(1);
static PID: AtomicU32 = AtomicU32::new(0);
static SAID_CONTEXTS: AtomicBool = AtomicBool::new(false);
/// Time one in this many steps (or calls, without NVTX ranges) (`CAUSEWAY_EVENTS_SAMPLE`; 1 = every
/// call).
static SAMPLE: AtomicU32 = AtomicU32::new(1);
/// Sampling by steps: set once the program pushed an outermost NVTX range. From then on a call is timed
/// only while a sampled window is open.
static STEPPED: AtomicBool = AtomicBool::new(false);
/// Whether a sampled window is open: an outermost push range, chosen one in `SAMPLE` at random, on
/// some thread. Every device-work call made meanwhile, on any thread, is timed, so a sampled step is
/// timed whole (its copy/compute overlap can be measured) and the others run without timing events.
static WINDOW: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread's sampling generator (xorshift64; 0 until seeded).
    static RNG: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The NVTX domain (+1; 0 = none) whose outermost range this thread opened the sampled window with.
    static OWNER: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Whether to time this call when sampling one in `every`: at random, with probability 1/every, so that
/// a loop whose length is a multiple of `every` is not always sampled at the same call.
#[inline(always)]
fn sampled(every: u32) -> bool {
    RNG.with(|c| {
        let mut x = c.get();
        if x == 0 {
            x = seed();
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.set(x);
        x % every as u64 == 0
    })
}

#[cold]
fn seed() -> u64 {
    // Any odd, thread-distinct value: the thread's stack address mixed with the clock.
    let local = 0u8;
    let v = (&local as *const u8 as u64) ^ clock::ticks().rotate_left(32);
    v.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1
}

/// An outermost NVTX push range of `domain` opened on this thread (called at every level; cheap): with
/// sampling, the first one switches to sampling by steps, and one in `SAMPLE` of them, at random,
/// opens the timed window if none is open.
pub fn outer_push(domain: u64) {
    let every = SAMPLE.load(Ordering::Relaxed);
    if every <= 1 || STATE.load(Ordering::Relaxed) == OFF {
        return;
    }
    if !STEPPED.swap(true, Ordering::Relaxed) {
        if let Some(w) = state::writer() {
            w.set_flag(causeway_ring::layout::flags::STEP_SAMPLED);
        }
    }
    if sampled(every)
        && WINDOW
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    {
        OWNER.with(|o| o.set(domain.wrapping_add(1)));
    }
}

/// The outermost NVTX push range of `domain` on this thread closed: if it opened the window, the
/// window closes.
pub fn outer_pop(domain: u64) {
    let _ = OWNER.try_with(|o| {
        if o.get() != 0 && o.get() == domain.wrapping_add(1) {
            o.set(0);
            WINDOW.store(false, Ordering::Release);
        }
    });
}

/// Level 3 with `--backend events`: called once at start-up; the backend starts on the first device
/// work it sees once the driver is loaded.
pub fn want(sample_every: u32) {
    // A diagnostic, not a setting: the pool grown while the program runs, as before issue 19, so that
    // the control harness can be shown an instrument that removes overlap on real hardware.
    if std::env::var_os(env::EVENTS_DIAG).is_some_and(|v| v == "grow-during-run") {
        GROW_DURING_RUN.store(true, Ordering::Relaxed);
    }
    SAMPLE.store(sample_every.max(1), Ordering::Relaxed);
    STATE.store(WANTED, Ordering::Relaxed);
    if let Some(w) = state::writer() {
        w.set_sample_every(sample_every.max(1));
    }
}

/// In a fork child: the parent's events and reaper did not come along, so once the parent had started
/// the backend the child records host calls only. Returns whether that happened (the child says so).
/// A parent that never touched the device leaves the backend wanted: the child may start its own.
pub fn on_fork_child() -> bool {
    if STATE.load(Ordering::Relaxed) != ON {
        return false;
    }
    for p in POOLS.iter() {
        p.store(std::ptr::null_mut(), Ordering::Relaxed);
    }
    STATE.store(OFF, Ordering::Relaxed);
    true
}

pub const FORK_NOTICE: &[u8] =
    b"events backend: a forked child records host calls only (its parent's events do not carry over)";

// ---- pools ----

const UNMADE: u8 = 0;
const FREE: u8 = 1;
const CLAIMED: u8 = 2;
const PENDING: u8 = 3;

/// One start/end event pair and what its call issued.
struct Pair {
    state: AtomicU8,
    start: AtomicUsize,
    end: AtomicUsize,
    seq: AtomicU64,
    stream: AtomicU64,
    /// `DeviceKind` | copy kind << 16.
    what: AtomicU32,
    bytes: AtomicU64,
}

impl Pair {
    const fn new() -> Pair {
        Pair {
            state: AtomicU8::new(UNMADE),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            seq: AtomicU64::new(0),
            stream: AtomicU64::new(0),
            what: AtomicU32::new(0),
            bytes: AtomicU64::new(0),
        }
    }
}

/// One context's events. Created once, never freed (the process may use it until exit).
struct Pool {
    ctx: usize,
    device: i32,
    pairs: Box<[Pair]>,
    cursor: AtomicUsize,
    made: AtomicUsize,
    /// Set when a claim found no free pair: the reaper grows the pool on its next pass.
    starved: AtomicBool,
    /// The reaper's own stream, where anchors are recorded (never waited on by the program's work).
    stream: usize,
    /// Two anchor events used in turn: `anchors[cur]` is the current one.
    anchors: [usize; 2],
    anchor: Mutex<AnchorState>,
}

#[derive(Default)]
struct AnchorState {
    cur: usize,
    /// 0 until the first anchor is taken.
    id: u64,
    /// Host ticks when the current anchor was taken.
    taken: u64,
}

fn make_pairs(api: &Api, pool: &Pool, upto: usize) -> bool {
    while pool.made.load(Ordering::Relaxed) < upto {
        let i = pool.made.load(Ordering::Relaxed);
        let (mut a, mut b): (Ev, Ev) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: valid out-pointers; flags 0 = a timing event.
        let ok = unsafe {
            (api.event_create)(&mut a, 0) == SUCCESS && (api.event_create)(&mut b, 0) == SUCCESS
        };
        if !ok {
            return false;
        }
        let p = &pool.pairs[i];
        p.start.store(a as usize, Ordering::Relaxed);
        p.end.store(b as usize, Ordering::Relaxed);
        p.state.store(FREE, Ordering::Release);
        pool.made.store(i + 1, Ordering::Release);
    }
    true
}

#[cold]
fn create_pool(api: &Api, ctx: usize) -> Option<&'static Pool> {
    let _g = REAP.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = find_pool(ctx) {
        return Some(p);
    }
    let Some(slot) = POOLS.iter().find(|p| p.load(Ordering::Acquire).is_null()) else {
        if !SAID_CONTEXTS.swap(true, Ordering::Relaxed) {
            state::warn(
                b"events backend: more contexts than it follows; work in the others is untimed",
            );
        }
        return None;
    };
    guard::internal(|| {
        let mut device = 0;
        let mut stream: Stream = std::ptr::null_mut();
        let (mut a0, mut a1): (Ev, Ev) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: valid out-pointers, in the calling thread's current context (`ctx`).
        let ok = unsafe {
            (api.ctx_get_device)(&mut device) == SUCCESS
                && (api.stream_create)(&mut stream, STREAM_NON_BLOCKING) == SUCCESS
                && (api.event_create)(&mut a0, 0) == SUCCESS
                && (api.event_create)(&mut a1, 0) == SUCCESS
        };
        if !ok {
            state::warn(b"events backend: could not create its stream or events; work in this context is untimed");
            return None;
        }
        let pool: &'static Pool = Box::leak(Box::new(Pool {
            ctx,
            device,
            pairs: (0..PAIRS).map(|_| Pair::new()).collect(),
            cursor: AtomicUsize::new(0),
            made: AtomicUsize::new(0),
            starved: AtomicBool::new(false),
            stream: stream as usize,
            anchors: [a0 as usize, a1 as usize],
            anchor: Mutex::new(AnchorState::default()),
        }));
        let first = if GROW_DURING_RUN.load(Ordering::Relaxed) {
            OLD_FIRST_PAIRS
        } else {
            FIRST_PAIRS
        };
        make_pairs(api, pool, first);
        slot.store(pool as *const Pool as *mut Pool, Ordering::Release);
        start_reaper();
        Some(pool)
    })
}

#[inline(always)]
fn find_pool(ctx: usize) -> Option<&'static Pool> {
    for p in POOLS.iter() {
        let p = p.load(Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        // SAFETY: pools are leaked, so a published pointer stays valid for the life of the process.
        let pool = unsafe { &*p };
        if pool.ctx == ctx {
            return Some(pool);
        }
    }
    None
}

// ---- hot path ----

/// A call whose start event was recorded: `after` finishes it.
pub struct Bracket {
    pool: &'static Pool,
    pair: usize,
    stream: u64,
}

#[cold]
fn untimed() {
    if let Some(w) = state::writer() {
        w.bump(counter::DEVICE_UNTIMED);
    }
}

#[cold]
fn try_start() -> bool {
    if TRIES.fetch_add(1, Ordering::Relaxed) >= MAX_TRIES {
        return false;
    }
    match Api::resolve() {
        Some(api) => {
            let _ = API.set(api);
            // SAFETY: getpid has no preconditions.
            PID.store(unsafe { libc::getpid() } as u32, Ordering::Relaxed);
            let _ = STATE.compare_exchange(WANTED, ON, Ordering::AcqRel, Ordering::Relaxed);
            // The header names the backend once it times something: a Level Zero or Unified
            // Runtime program recorded with `--backend events` is timed by its own runtime, which
            // then names itself.
            if let Some(w) = state::writer() {
                w.claim_backend(Backend::Events);
            }
            true
        }
        None => {
            if TRIES.load(Ordering::Relaxed) == MAX_TRIES {
                state::warn(b"events backend: the CUDA driver's event functions were not found; recording host calls only");
            }
            false
        }
    }
}

/// Before the real call of the outermost device-work call: records the start event on the call's
/// stream. `None`: the call goes untimed (backend off, capture, or no free pair — the latter counted).
#[inline(always)]
pub fn before(flags: u8, stream: u64) -> Option<Bracket> {
    match STATE.load(Ordering::Relaxed) {
        OFF => None,
        ON => {
            if chosen() {
                before_on(flags, stream)
            } else {
                None
            }
        }
        _ => {
            if !try_start() {
                return None;
            }
            // The pool is made now, at the first device work, not in the first step sampling times.
            let _ = API.get().and_then(current_pool);
            if chosen() {
                before_on(flags, stream)
            } else {
                None
            }
        }
    }
}

/// The pool of the calling thread's current context, made on first use.
fn current_pool(api: &Api) -> Option<&'static Pool> {
    let mut ctx: Ctx = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    if unsafe { (api.ctx_get_current)(&mut ctx) } != SUCCESS || ctx.is_null() {
        return None;
    }
    find_pool(ctx as usize).or_else(|| create_pool(api, ctx as usize))
}

/// Whether sampling times this call: every call at sample 1; with NVTX steps, while a sampled window
/// is open; without them, one call in `SAMPLE` at random.
#[inline(always)]
fn chosen() -> bool {
    let every = SAMPLE.load(Ordering::Relaxed);
    if every <= 1 {
        true
    } else if STEPPED.load(Ordering::Relaxed) {
        WINDOW.load(Ordering::Relaxed)
    } else {
        sampled(every)
    }
}

#[inline(never)]
fn before_on(flags: u8, stream: u64) -> Option<Bracket> {
    let api = API.get()?;
    let Some(pool) = current_pool(api) else {
        untimed();
        return None;
    };
    let stream = if stream == 0 && flags & entry_flags::PER_THREAD != 0 {
        STREAM_PER_THREAD
    } else {
        stream
    };
    let mut status = 0u32;
    // SAFETY: the call's own stream handle and a valid out-pointer. A capturing stream (status 1) or an
    // invalidated capture (2) must not get our events.
    if unsafe { (api.is_capturing)(stream as Stream, &mut status) } != SUCCESS || status != 0 {
        return None;
    }
    let made = pool.made.load(Ordering::Acquire).max(1);
    for _ in 0..4 {
        let i = pool.cursor.fetch_add(1, Ordering::Relaxed) % made;
        let p = &pool.pairs[i];
        if p.state
            .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            let ev = p.start.load(Ordering::Relaxed) as Ev;
            // SAFETY: our own event and the call's stream, in the current context.
            if unsafe { (api.event_record)(ev, stream as Stream) } != SUCCESS {
                p.state.store(FREE, Ordering::Release);
                untimed();
                return None;
            }
            return Some(Bracket {
                pool,
                pair: i,
                stream,
            });
        }
    }
    pool.starved.store(true, Ordering::Relaxed);
    untimed();
    None
}

/// What a call of `class` with entry arguments `a1`, `a2` ran on the device: `DeviceKind` | copy kind
/// (CUPTI's numbering) << 16, and the bytes (copies, memsets).
#[inline(always)]
pub fn what(class: Class, a1: u64, a2: u64) -> (u32, u64) {
    match class {
        Class::Launch => (DeviceKind::Kernel as u32, 0),
        Class::GraphLaunch => (DeviceKind::Graph as u32, 0),
        Class::Memset => (DeviceKind::Memset as u32, a1),
        // The entry's a2 is cudaMemcpyKind for both tables (driver copies use the same numbers).
        _ => {
            let kind: u32 = match a2 {
                0 => 9, // HtoH
                1 => 1, // HtoD
                2 => 2, // DtoH
                3 => 8, // DtoD
                _ => 0, // default / unknown
            };
            (DeviceKind::Memcpy as u32 | kind << 16, a1)
        }
    }
}

impl Bracket {
    /// After the real call (and its entry's end): records the end event and hands the pair to the
    /// reaper, or frees it if the call failed (it issued nothing).
    #[inline(never)]
    pub fn after(self, seq: Option<u64>, result: i32, what: (u32, u64)) {
        let p = &self.pool.pairs[self.pair];
        let Some(api) = API.get() else { return };
        let ev = p.end.load(Ordering::Relaxed) as Ev;
        if result != SUCCESS {
            p.state.store(FREE, Ordering::Release);
            return;
        }
        // SAFETY: our own event and the call's stream, in the current context.
        if unsafe { (api.event_record)(ev, self.stream as Stream) } != SUCCESS {
            p.state.store(FREE, Ordering::Release);
            untimed();
            return;
        }
        p.seq.store(seq.unwrap_or(NO_CALL), Ordering::Relaxed);
        p.stream.store(self.stream, Ordering::Relaxed);
        p.what.store(what.0, Ordering::Relaxed);
        p.bytes.store(what.1, Ordering::Relaxed);
        p.state.store(PENDING, Ordering::Release);
    }
}

// ---- reaper ----

fn start_reaper() {
    let mut g = REAPER.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_some() {
        return;
    }
    // Exit handlers run in reverse order of registration: registered now (CUDA is up, its own
    // handlers are already registered), ours runs before CUDA tears its contexts down.
    // SAFETY: a plain extern "C" function with no arguments.
    unsafe { libc::atexit(at_exit) };
    match std::thread::Builder::new()
        .name("causeway-events".into())
        .spawn(reaper)
    {
        Ok(h) => *g = Some(h),
        Err(_) => state::warn(
            b"events backend: could not start its reaper thread; device work is untimed",
        ),
    }
}

fn reaper() {
    let Some(api) = API.get() else { return };
    guard::internal(|| {
        if let Some(x) = api.exchange_capture_mode {
            // Relaxed: our event queries must not count as unsafe calls during the program's captures.
            let mut mode = CAPTURE_MODE_RELAXED;
            // SAFETY: a valid in/out pointer.
            unsafe { x(&mut mode) };
        }
        while !STOP.load(Ordering::Acquire) {
            let reaped = {
                let _g = REAP.lock().unwrap_or_else(|e| e.into_inner());
                if STOP.load(Ordering::Acquire) {
                    break;
                }
                pools().map(|p| pass(api, p, false)).sum::<usize>()
            };
            let pause = if reaped > 0 { 100_000 } else { 1_000_000 };
            std::thread::sleep(std::time::Duration::from_nanos(pause));
        }
    });
}

fn pools() -> impl Iterator<Item = &'static Pool> {
    POOLS.iter().map_while(|p| {
        let p = p.load(Ordering::Acquire);
        // SAFETY: see `find_pool`.
        (!p.is_null()).then(|| unsafe { &*p })
    })
}

/// One reaping pass over a pool: writes an interval for every pair whose end event completed.
/// Returns how many it wrote.
fn pass(api: &Api, pool: &Pool, at_exit: bool) -> usize {
    // SAFETY: the pool's own context, made current on this (the backend's) thread.
    if unsafe { (api.ctx_set_current)(pool.ctx as Ctx) } != SUCCESS {
        return 0;
    }
    let w = state::writer();
    if !at_exit {
        grow_if_needed(api, pool);
    }
    let mut st = pool.anchor.lock().unwrap_or_else(|e| e.into_inner());
    let now = clock::ticks();
    if st.id == 0 || state::ticks_to_ns(now.saturating_sub(st.taken)) >= ANCHOR_EVERY_NS || at_exit
    {
        let any_pending = pool
            .pairs
            .iter()
            .any(|p| p.state.load(Ordering::Relaxed) == PENDING);
        if st.id == 0 || any_pending || at_exit {
            take_anchor(api, pool, &mut st, w);
        }
    }
    if st.id == 0 {
        return 0;
    }
    let anchor = pool.anchors[st.cur] as Ev;
    // Streams seen not ready in this pass: their later pairs cannot be ready either.
    let mut blocked: [u64; 8] = [u64::MAX; 8];
    let mut nblocked = 0;
    let mut n = 0;
    let made = pool.made.load(Ordering::Acquire);
    for p in pool.pairs[..made].iter() {
        if p.state.load(Ordering::Acquire) != PENDING {
            continue;
        }
        let stream = p.stream.load(Ordering::Relaxed);
        if blocked[..nblocked].contains(&stream) {
            continue;
        }
        let (start, end) = (
            p.start.load(Ordering::Relaxed) as Ev,
            p.end.load(Ordering::Relaxed) as Ev,
        );
        // SAFETY: our own event.
        match unsafe { (api.event_query)(end) } {
            SUCCESS => {}
            NOT_READY => {
                if nblocked < blocked.len() {
                    blocked[nblocked] = stream;
                    nblocked += 1;
                }
                continue;
            }
            _ => {
                p.state.store(FREE, Ordering::Release);
                untimed();
                continue;
            }
        }
        let (mut off, mut dur) = (0f32, 0f32);
        // SAFETY: our own completed events, in the current context, valid out-pointers.
        let ok = unsafe {
            (api.elapsed)(&mut off, anchor, start) == SUCCESS
                && (api.elapsed)(&mut dur, start, end) == SUCCESS
        };
        if ok {
            let t0 = ms_to_ns(off);
            let t1 = t0.saturating_add(ms_to_ns(dur).max(0));
            write_interval(w, p, t0, t1, st.id);
            n += 1;
        } else {
            untimed();
        }
        p.state.store(FREE, Ordering::Release);
    }
    n
}

/// Doubles the pool (up to `PAIRS`) when a claim found it empty or more than half of it is in use:
/// the only time events are created while the program runs (see `FIRST_PAIRS`).
fn grow_if_needed(api: &Api, pool: &Pool) {
    let made = pool.made.load(Ordering::Acquire);
    if made >= PAIRS {
        return;
    }
    if GROW_DURING_RUN.load(Ordering::Relaxed) {
        make_pairs(api, pool, (made + 512).min(PAIRS));
        return;
    }
    let starved = pool.starved.swap(false, Ordering::Relaxed);
    let in_use = pool.pairs[..made]
        .iter()
        .filter(|p| p.state.load(Ordering::Relaxed) != FREE)
        .count();
    if starved || in_use * 2 > made {
        make_pairs(api, pool, (made * 2).clamp(FIRST_PAIRS, PAIRS));
    }
}

fn ms_to_ns(ms: f32) -> i64 {
    (ms as f64 * 1e6).round() as i64
}

fn write_interval(w: Option<Writer>, p: &Pair, t0: i64, t1: i64, anchor: u64) {
    let Some(w) = w else { return };
    let what = p.what.load(Ordering::Relaxed);
    let f = Fields {
        node: 0,
        t_begin: t0 as u64,
        tid: 0,
        api: (what & 0xffff) as u16,
        kind: Kind::DeviceInterval as u8,
        flags: entry_flags::ANCHORED,
        depth: (what >> 16) as u16,
        a0: p.seq.load(Ordering::Relaxed),
        a1: p.bytes.load(Ordering::Relaxed),
        a2: (p.stream.load(Ordering::Relaxed) & 0xffff_ffff) | anchor << 32,
    };
    w.complete(&f, t1 as u64, 0);
}

/// Records a new anchor on the pool's own stream and waits for it, keeping the host ticks on either
/// side: the anchor's device instant lies between them. Retried while the bracket is wide.
fn take_anchor(api: &Api, pool: &Pool, st: &mut AnchorState, w: Option<Writer>) {
    let next = 1 - st.cur;
    let ev = pool.anchors[next] as Ev;
    let stream = pool.stream as Stream;
    if st.id == 0 {
        // The first record on a fresh stream is slow; do not let it widen the first anchor.
        record_and_wait(api, ev, stream, 100_000_000);
    }
    let mut last: Option<(u64, u64)> = None;
    for _ in 0..ANCHOR_TRIES {
        let t0 = clock::ticks();
        if !record_and_wait(api, ev, stream, 1_000_000_000) {
            return;
        }
        let t1 = clock::ticks();
        last = Some((t0, t1));
        if state::ticks_to_ns(t1 - t0) <= ANCHOR_GOOD_NS {
            break;
        }
    }
    let Some((t0, t1)) = last else { return };
    let elapsed = if st.id == 0 {
        NO_ELAPSED
    } else {
        let mut ms = 0f32;
        // SAFETY: both anchors are our own completed events.
        if unsafe { (api.elapsed)(&mut ms, pool.anchors[st.cur] as Ev, ev) } == SUCCESS {
            ms_to_ns(ms) as u64
        } else {
            NO_ELAPSED
        }
    };
    let id = NEXT_ANCHOR.fetch_add(1, Ordering::Relaxed);
    if let Some(w) = w {
        let f = Fields {
            t_begin: t0,
            tid: 0,
            kind: Kind::DeviceAnchor as u8,
            a0: id,
            a1: pool.device as u32 as u64,
            a2: elapsed,
            ..Fields::default()
        };
        w.complete(&f, t1, 0);
    }
    st.cur = next;
    st.id = id;
    st.taken = t1;
}

/// Records `ev` on `stream` and spins until it completes: false if the record fails, the query fails
/// or `timeout_ns` passes first.
fn record_and_wait(api: &Api, ev: Ev, stream: Stream, timeout_ns: u64) -> bool {
    // SAFETY: our own event on our own stream.
    if unsafe { (api.event_record)(ev, stream) } != SUCCESS {
        return false;
    }
    let deadline = clock::clock_ns(libc::CLOCK_MONOTONIC) + timeout_ns;
    loop {
        // SAFETY: our own event.
        match unsafe { (api.event_query)(ev) } {
            SUCCESS => return true,
            NOT_READY if clock::clock_ns(libc::CLOCK_MONOTONIC) < deadline => {
                std::hint::spin_loop()
            }
            _ => return false,
        }
    }
}

extern "C" fn at_exit() {
    flush_at_exit();
}

/// Stops the reaper, waits (bounded) for device work still running, reaps it, and takes a last anchor
/// per context so every interval's anchor has a successor (the scanner measures drift between them).
/// Pairs still pending after the wait are counted untimed.
pub fn flush_at_exit() {
    if STATE.load(Ordering::Acquire) != ON
        // SAFETY: getpid has no preconditions.
        || PID.load(Ordering::Relaxed) != unsafe { libc::getpid() } as u32
        || STOP.swap(true, Ordering::AcqRel)
    {
        return;
    }
    let Some(api) = API.get() else { return };
    if let Some(h) = REAPER.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = h.join();
    }
    guard::internal(|| {
        let _g = REAP.lock().unwrap_or_else(|e| e.into_inner());
        let mut ctx: Ctx = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the calling thread's context is restored below.
        unsafe { (api.ctx_get_current)(&mut ctx) };
        let deadline = clock::clock_ns(libc::CLOCK_MONOTONIC) + EXIT_WAIT_NS;
        for pool in pools() {
            loop {
                pass(api, pool, false);
                let left = pool
                    .pairs
                    .iter()
                    .any(|p| p.state.load(Ordering::Acquire) == PENDING);
                if !left || clock::clock_ns(libc::CLOCK_MONOTONIC) >= deadline {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            pass(api, pool, true);
            for p in pool.pairs.iter() {
                if p.state
                    .compare_exchange(PENDING, FREE, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    untimed();
                }
            }
        }
        // SAFETY: restores the thread's own context (possibly none).
        unsafe { (api.ctx_set_current)(ctx) };
    });
    STATE.store(OFF, Ordering::Release);
}
