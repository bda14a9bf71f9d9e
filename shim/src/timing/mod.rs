//! Device timing (levels 3 and 4): when each kernel, copy and memset ran on the device, tied to the
//! call that issued it. Two backends sit behind this one seam — CUPTI (`cupti/`) and CUDA timing
//! events (`events.rs`) — and nothing outside `timing/` names either: start-up, the hook macro and
//! NVTX call only the functions here. The backends know neither each other nor this seam.
//!
//! Around each outermost device-work call (`Class::issues_work`, a constant per hook) the hook macro
//! calls, in order: `bracket` (just before the entry's begin time is read: the events backend's start
//! event), the entry's begin, `tie` (the CUPTI backend's external correlation id), the real call, the
//! entry's end, `close` (the end event) and `untie`. Each is one relaxed load when its backend is off.
//!
//! Unified Runtime work is timed by UR's own event profiling (`ur.rs`) at level 3 with either
//! backend: the hook macro hands it each timed enqueue's output event (`ur_event_out`,
//! `ur_enqueued`), queue creation asks for profiling (`ur_queue_properties`), and each host sync
//! reaps what completed (`synced`); Level Zero's kernel timestamps (`ze.rs`) likewise.

mod anchored;
mod cupti;
mod events;
mod ur;
mod ze;

use crate::hot::record::Open;
use crate::hot::state;
use causeway_ring::layout::{Class, Layer};
use causeway_ring::settings::Backend;

type P = *mut std::ffi::c_void;

pub use cupti::{FindApi, HookedApi};
pub use events::Bracket;

/// Whether the events backend brackets calls of `class`: kernels, copies, memsets and graph launches,
/// the work the ring has a device kind for. Prefetches, stream memory operations and other stream
/// operations issue work too (host waits wait for them; CUPTI ties what it records of them) but get no
/// timing events: their device time is stated unknown, never guessed.
pub const fn brackets(class: Class) -> bool {
    matches!(
        class,
        Class::Launch | Class::Copy | Class::Memset | Class::GraphLaunch
    )
}

/// At start-up, before the ring goes live: with CUPTI, device timing starts on the process's first
/// hooked call (of any level), and the CUPTI runtime callback finds hooked entry points with `find`.
pub fn configure(backend: Backend, find: FindApi) {
    if backend == Backend::Cupti {
        cupti::want(find);
        state::start_device_timing_with(cupti::start);
    }
}

/// At start-up, once the ring is live (the header says which backend): the events backend starts on
/// the first device work once the driver is loaded, timing one step in `sample_every`.
pub fn announce(backend: Backend, sample_every: u32) {
    if backend == Backend::Events {
        events::want(sample_every);
    }
    if backend != Backend::None && state::level() >= 3 {
        ur::want();
        ze::want();
    }
}

pub use ze::Signal as ZeSignal;

/// A Level Zero append's signal event for its real call: the program's, or the backend's own where
/// it named none and the append is timed (`ze::signal`).
#[inline(always)]
pub fn ze_signal(list: u64, event: P, depth: u16, class: Class) -> ZeSignal {
    ze::signal(list, event, depth, class)
}

/// After a Level Zero append (`code`: its result): a timed one joins the pending table.
#[inline(always)]
pub fn ze_appended(
    seq: Option<u64>,
    list: u64,
    class: Class,
    a: [u64; 2],
    sig: ZeSignal,
    code: i32,
) {
    ze::appended(seq, list, class, a, sig, code)
}

/// Whether `event` is the Level Zero backend's own, just passed to an append on this thread (the
/// program's event links leave it out).
pub fn ze_is_own(event: P) -> bool {
    ze::is_own(event)
}

/// After a successful `zeCommandListCreateImmediate`: the backend follows the list.
pub fn ze_immediate_created(context: P, device: P, desc: P, ph_list: P) {
    ze::immediate_created(context, device, desc, ph_list)
}

/// After a successful `zeCommandListDestroy`.
pub fn ze_list_destroyed(list: P) {
    ze::list_destroyed(list)
}

/// After a successful `zeCommandListCreate`: the backend follows the regular list.
pub fn ze_regular_created(context: P, device: P, ph_list: P) {
    ze::regular_created(context, device, ph_list)
}

/// Before `zeCommandListReset` (the list, returned for the real call).
pub fn ze_list_resetting(list: P) -> P {
    ze::list_resetting(list)
}

/// Before `zeCommandQueueExecuteCommandLists` (the list array, returned for the real call).
pub fn ze_executing(n: u32, lists: P) -> P {
    ze::executing(n, lists)
}

/// After a successful `zeCommandQueueExecuteCommandLists`.
pub fn ze_executed(seq: Option<u64>, n: u32, lists: P) {
    ze::executed(seq, n, lists)
}

/// Before the program destroys or resets a Level Zero event (returned, for the real call).
pub fn ze_event_ending(event: P) -> P {
    ze::event_ending(event)
}

/// Before the program destroys a Level Zero context (returned, for the real call).
pub fn ze_context_ending(context: P) -> P {
    ze::context_ending(context)
}

/// After a successful host sync of `layer`: the Intel backends read what completed; nothing for
/// CUDA's layers.
#[inline(always)]
pub fn synced(layer: Layer) {
    match layer {
        Layer::UnifiedRuntime => ur::synced(),
        Layer::LevelZero => ze::synced(),
        _ => {}
    }
}

/// After a successful `zeEventPoolCreate`: a timestamp pool's events may be read.
pub fn ze_pool_created(desc: P, ph_pool: P) {
    ze::pool_created(desc, ph_pool)
}

/// After a successful `zeEventCreate`.
pub fn ze_event_created(pool: P, ph_event: P) {
    ze::event_created(pool, ph_event)
}

/// Before `zeEventPoolDestroy` (the pool, returned for the real call).
pub fn ze_pool_ending(pool: P) -> P {
    ze::pool_ending(pool)
}

pub use ur::EventOut as UrEventOut;

/// A Unified Runtime enqueue's output-event argument for its real call (`ur::event_out`).
#[inline(always)]
pub fn ur_event_out(ph_event: P, depth: u16, class: Class, own: &mut u64) -> UrEventOut {
    ur::event_out(ph_event, depth, class, own)
}

/// After a successful Unified Runtime enqueue: its event joins the pending table (`ur::enqueued`).
#[inline(always)]
pub fn ur_enqueued(seq: Option<u64>, queue: u64, class: Class, a: [u64; 2], e: UrEventOut) {
    ur::enqueued(seq, queue, class, a, e)
}

/// `urQueueCreate`'s properties, with profiling asked for when UR work is timed.
pub fn ur_queue_properties(props: P, scratch: &mut [u64; 4]) -> P {
    ur::queue_properties(props, scratch)
}

/// After a successful `urQueueCreate`: its device, for Unified Runtime timing.
pub fn ur_queue_created(device: P, ph_queue: P) {
    ur::queue_created(device, ph_queue)
}

/// Before `urQueueRelease` (the queue, returned for the real call).
pub fn ur_queue_ending(queue: P) -> P {
    ur::queue_ending(queue)
}

/// Before an outermost device-work call's begin time is read: the events backend records its start
/// event on the call's stream (so the event's cost stays out of the call's recorded duration).
/// `None`: the call is not timed this way.
#[inline(always)]
pub fn bracket(flags: u8, stream: u64) -> Option<Bracket> {
    events::before(flags, stream)
}

/// After the real call and its entry's end: the events backend records the end event and hands the
/// pair to its reaper. `class`, `a1` and `a2` are the hook's, to say what ran.
#[inline(always)]
pub fn close(b: Bracket, seq: Option<u64>, result: i32, class: Class, a1: u64, a2: u64) {
    b.after(seq, result, events::what(class, a1, a2));
}

/// Just before a device-work call's real call: with CUPTI collecting, the outermost call's sequence
/// number becomes the correlation id of the work it issues. Returns whether to `untie` after it.
#[inline(always)]
pub fn tie(open: &Open) -> bool {
    cupti::push(open)
}

/// After the real call of a call `tie` tied.
#[inline(always)]
pub fn untie() {
    cupti::pop()
}

/// An outermost NVTX push range of `domain` opened on this thread: a step, for the events backend's
/// sampling (called at every level; cheap).
#[inline]
pub fn outer_push(domain: u64) {
    events::outer_push(domain)
}

/// The outermost NVTX push range of `domain` on this thread closed.
#[inline]
pub fn outer_pop(domain: u64) {
    events::outer_pop(domain)
}

/// What a fork child lost of device timing: its backends' threads and state stayed in the parent.
#[must_use]
pub struct Lost {
    cupti: bool,
    events: bool,
}

impl Lost {
    /// What to say in the child's ring, once it is made.
    pub fn notices(&self) -> impl Iterator<Item = &'static [u8]> {
        let cupti = self.cupti.then_some(cupti::FORK_NOTICE);
        let events = self.events.then_some(events::FORK_NOTICE);
        cupti.into_iter().chain(events)
    }
}

/// In a fork child (single-threaded, no allocation): device timing that had started in the parent is
/// off here; one that had not may start in the child.
pub fn on_fork_child() -> Lost {
    let cupti = cupti::on_fork_child();
    let events = events::on_fork_child();
    // The Intel backends hold the parent's handles (and maybe a lock a gone thread held): off.
    ur::on_fork_child();
    ze::on_fork_child();
    Lost { cupti, events }
}

/// At exit: device records the backends still hold go into the ring (usually already done by their
/// own exit handlers, which run before the shim's; a second call does nothing).
pub fn flush_at_exit() {
    cupti::flush_at_exit();
    events::flush_at_exit();
    ur::at_exit();
    ze::at_exit();
}
