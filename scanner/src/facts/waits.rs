//! Host waits: for each completed synchronising call (stream, device/context and event syncs), the
//! device work it waited for, named by identity only — stream order and event semantics, never
//! timestamp proximity — and, at level 3, how long the device work actually kept the host waiting.
//!
//! Per process, in sequence order (the order calls began):
//! * a **work item** is an outermost launch, copy, memset or graph launch that returned success outside
//!   stream capture; it is pending on its stream (the issuing call's `a0` handle, with the per-thread
//!   default stream kept apart per thread) in the stream's current generation. Synchronous copies (an
//!   API name without `Async`) have finished when their call returns and are not pending work;
//! * every stream (in its generation) has a **frontier**: for each other stream, the sequence number
//!   below which that stream's work must finish before the stream's next operation runs, learned from
//!   stream waits. It starts empty;
//! * an **event record** of E on stream X remembers X's generation, its own sequence number and X's
//!   frontier at that moment (a shared snapshot, copied only when X's frontier changes later);
//! * a **stream wait** (`cudaStreamWaitEvent`, `cuStreamWaitEvent`: `a0` stream S, `a1` event E) makes S
//!   depend on what E captured: the work on X issued before E's latest record (same event generation)
//!   and, transitively, X's frontier at that record. Both are merged into S's frontier, keeping the
//!   highest bound per stream. A wait on an event never recorded (in its generation) is a no-op, as in
//!   CUDA; a wait inside stream capture builds a graph and is no dependency;
//! * a **stream sync** of S covers the work pending on S (current generation) issued before it began,
//!   and the work S's frontier names (cross-stream work);
//! * a **context event record** (`cuCtxRecordEvent`, `cuGreenCtxRecordEvent`: class `CtxEventRecord`)
//!   captures the work pending on every stream issued before it: a stream wait or event sync on its
//!   event depends on all of it. A context event wait (`cuCtxWaitEvent`) is not modelled: it would
//!   make every stream of the context, including streams created later, depend on the event;
//! * a **device/context sync** (a sync-class call with stream 0 whose name does not contain `Stream`:
//!   `cudaDeviceSynchronize`, `cuCtxSynchronize`) covers the work pending on every stream;
//! * an **event sync** of E covers the work pending on X issued before the latest such record of E
//!   (same event generation) that completed before the sync began, and the work the record's frontier
//!   snapshot names;
//! * a stream-class call whose name contains `Destroy` ends its handle's generation (likewise an
//!   event-class `Destroy` for events): CUDA reuses handles, and work, records or frontiers of an older
//!   generation are never taken for the new one's (a device sync still covers old work, and a frontier
//!   naming an old stream generation still names that generation's work).
//!
//! Covered work is no longer pending, so each item is waited for by at most one wait. A frontier bound
//! below which its stream has no pending work left can never name work again (items are appended in
//! sequence order), so such bounds are dropped when a frontier changes, a stream sync clears its
//! stream's frontier and a device sync all of them: a frontier holds at most one bound per stream
//! generation that still has uncovered work, and each wait or sync costs that much plus the items it
//! covers, never a walk over earlier history. Only the outermost sync counts (a runtime sync and the
//! driver sync inside it are one wait); a sync that failed or did not return covers nothing. Not
//! modelled: the legacy default stream's implicit synchronisation with blocking streams — a sync of
//! handle 0 covers only work issued to handle 0 (and what its frontier names).
//!
//! With device intervals (level 3, on the host clock) for every covered item, the last device end is
//! known: `waited_on_device_ns` = max(0, last device end − sync begin) and `tail_ns` = sync end −
//! max(last device end, sync begin), so waited + tail = the time blocked. Without them both are unknown
//! (null), never guessed.

use crate::facts::anchors::{anchored, Anchors};
use crate::facts::streams::{stream_key, Captures, StreamKey, PER_THREAD_STREAM};
use crate::read::decode::Entries;
use crate::read::pair::{args_of, Nesting, Tag};
use crate::util::fastmap::HashMap;
use crate::util::rank::{append, percentiles, total};
use causeway_ring::clock::Converter;
use causeway_ring::layout::{entry_flags, DeviceKind};
use causeway_ring::{Class, Entry, Header};
use serde::Serialize;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// How many of the longest individual waits the report lists.
pub const LONGEST: usize = 10;
/// How many kernel names a listed wait shows.
pub const KERNELS_MAX: usize = 5;
/// How many streams a listed wait shows.
pub const STREAMS_MAX: usize = 8;

/// The waits of one API (by name), over all processes.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct WaitStats {
    pub name: String,
    /// Completed, successful outermost calls.
    pub count: u64,
    /// Of `count`, waits with no pending work known to them.
    pub empty: u64,
    /// Host time blocked in the call.
    pub blocked_total_ns: u64,
    pub blocked_p50_ns: u64,
    pub blocked_p99_ns: u64,
    /// Work items (launches, copies, memsets, graph launches) the waits covered.
    pub work_items: u64,
    /// Waits with work whose every item has device intervals on the host clock.
    pub with_device_times: u64,
    /// Over `with_device_times`: max(0, last device end − sync begin), nearest-rank p50. Null when
    /// `with_device_times` is 0.
    pub waited_p50_ns: Option<u64>,
    /// Over `with_device_times`: sync end − last device end, nearest-rank p50 (negative only when the
    /// device clock conversion is off). Null when `with_device_times` is 0.
    pub tail_p50_ns: Option<i64>,
}

/// One wait, as the longest-waits list shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Wait {
    pub name: String,
    pub pid: u32,
    pub tid: u32,
    /// Sequence number of the (outermost) sync call.
    pub seq: u64,
    pub blocked_ns: u64,
    pub work_items: u64,
    pub waited_on_device_ns: Option<u64>,
    pub tail_ns: Option<i64>,
    /// Names of the kernels waited for, in issue order, deduplicated, at most `KERNELS_MAX`.
    pub kernels: Vec<String>,
    /// Of `work_items`, those on streams other than the synced stream (for an event sync, the event's
    /// recorded stream): work the sync waited for only through stream waits on events
    /// (`cudaStreamWaitEvent`), followed transitively. Always 0 for a device/context sync, which
    /// covers every stream directly.
    pub cross_stream_items: u64,
    /// The streams whose work the wait covered, at most `STREAMS_MAX`: the synced (or event's recorded)
    /// stream first, then the others in the order of their first covered item. Empty when the wait
    /// covered nothing.
    pub streams: Vec<WaitStream>,
}

/// One stream whose work a listed wait covered.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct WaitStream {
    /// The stream handle as the calls passed it (0 the legacy default stream, 2 a per-thread default
    /// stream).
    pub stream: u64,
    /// The thread whose per-thread default stream this is; null for every other stream.
    pub tid: Option<u32>,
    /// The handle's generation: how many times the handle had been destroyed before the work was
    /// issued (0 for the first stream with this handle).
    pub generation: u64,
    /// Covered work items on this stream.
    pub work_items: u64,
    /// Whether the wait reached this stream's work only through stream waits on events (false for the
    /// synced stream itself, an event sync's recorded stream, and every stream of a device sync).
    pub cross: bool,
}

/// How one ring's calls are named and classed (the report's `Names`, behind closures).
pub(crate) struct Lookup<'a> {
    pub class: &'a dyn Fn(&Entry) -> Option<Class>,
    pub api_name: &'a dyn Fn(u16) -> String,
    /// A launch's function handle → kernel name, when recorded.
    pub kernel: &'a dyn Fn(u64) -> Option<String>,
    /// A text id → the string (device interval kernel names).
    pub text: &'a dyn Fn(u64) -> String,
}

#[derive(Default)]
pub(crate) struct WaitAcc {
    count: u64,
    empty: u64,
    blocked: Vec<u64>,
    work_items: u64,
    waited: Vec<u64>,
    tails: Vec<i64>,
}

impl WaitAcc {
    fn absorb(&mut self, o: WaitAcc) {
        self.count += o.count;
        self.empty += o.empty;
        append(&mut self.blocked, o.blocked);
        self.work_items += o.work_items;
        append(&mut self.waited, o.waited);
        append(&mut self.tails, o.tails);
    }
}

/// What one ring contributes.
#[derive(Default)]
pub(crate) struct WaitsPartial {
    pub by_name: HashMap<String, WaitAcc>,
    /// The longest waits of the ring, longest first, at most `LONGEST`.
    pub longest: Vec<Wait>,
}

/// A pending work item: the index of its call entry, its sequence number and its stream.
#[derive(Clone, Copy)]
struct Item {
    idx: usize,
    seq: u64,
    stream: StreamGen,
    /// The latest end of its device intervals (`Device::ends`).
    end: Option<u64>,
}

/// A stream in one generation.
type StreamGen = (StreamKey, u64);

/// A bound of a frontier: another stream (in its generation) and the sequence number below which
/// its work must have finished (exclusive).
type Bound = (StreamGen, u64);

/// What a point in one stream's order depends on through stream waits: its bounds, appended as
/// waits merge them in. A stream may be named more than once (the largest bound holds: draining up
/// to a smaller one takes nothing more), and a bound that names no pending work any more is inert
/// (see `owes`); such bounds are dropped once the log has doubled since it was last pruned, so its
/// length stays within twice the streams with uncovered work (plus `PRUNE_SLACK`), whatever the
/// capture's length, at amortised constant cost per bound.
///
/// An event record keeps a `Snapshot` of its stream's frontier (the log and its length then):
/// appends after it are past its end and pruning starts a new log, so a record costs a pointer,
/// not a copy. (A copy per record, and pruning at every wait, were quadratic in time and memory
/// where a stream keeps waiting on new streams that are never synchronized and records an event
/// after each wait: out of memory at 300 k entries.)
#[derive(Default)]
struct Frontier {
    log: Rc<RefCell<Vec<Bound>>>,
    /// The log's length after it was last pruned.
    kept: usize,
}

/// Bounds a log may hold beyond twice its pruned length before it is pruned again.
const PRUNE_SLACK: usize = 32;

impl Frontier {
    fn snapshot(&self) -> Option<Snapshot> {
        let n = self.log.borrow().len();
        (n > 0).then(|| Snapshot(Rc::clone(&self.log), n))
    }

    /// Appends `bounds`, then prunes if the log has doubled.
    fn extend(&mut self, bounds: &mut Vec<Bound>, pending: &HashMap<StreamGen, VecDeque<Item>>) {
        let n = {
            let mut log = self.log.borrow_mut();
            log.append(bounds);
            log.len()
        };
        if n > 2 * self.kept + PRUNE_SLACK {
            // The live bounds, one per stream (its largest), in stream order; the old log stays as
            // the snapshots taken of it read it.
            let mut live: Vec<Bound> = (self.log.borrow().iter())
                .filter(|(sg, b)| owes(pending, sg, *b))
                .copied()
                .collect();
            live.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            live.dedup_by_key(|(sg, _)| *sg);
            self.kept = live.len();
            self.log = Rc::new(RefCell::new(live));
        }
    }
}

/// A frontier as an event record captured it: the first `.1` bounds of a log.
#[derive(Clone)]
struct Snapshot(Rc<RefCell<Vec<Bound>>>, usize);

impl Snapshot {
    fn of(bounds: Vec<Bound>) -> Option<Snapshot> {
        let n = bounds.len();
        (n > 0).then(|| Snapshot(Rc::new(RefCell::new(bounds)), n))
    }

    /// Calls `f` with each bound (the log is borrowed meanwhile: `f` must not append to it).
    fn each(&self, mut f: impl FnMut(&StreamGen, u64)) {
        for (sg, b) in &self.0.borrow()[..self.1] {
            f(sg, *b);
        }
    }
}

/// The latest completed record of one event (in one generation).
/// The stream a context event record is "on": none, no work is ever pending on it (its record's
/// frontier names every stream instead).
const EVERY_STREAM: StreamGen = ((u64::MAX, u32::MAX), u64::MAX);

struct Record {
    /// The stream it was recorded on, in its generation.
    stream: StreamGen,
    /// The record call's sequence number: it captured the stream's work issued before it.
    seq: u64,
    /// The recorded stream's frontier at the record.
    deps: Option<Snapshot>,
}

/// The device intervals of the issuing calls, by the call's entry index: a flat table sorted by
/// call (a capture holds millions of calls, and a map of small vectors costs more than the rest of
/// the analysis; a table with a slot per entry was 80 MB of fresh memory for 10 M entries, read at
/// random). It keeps indices, not times or names: what the wait pass asks is read from the interval
/// when asked, once per call (8 bytes an interval; the ends and names it kept before were 32).
#[derive(Default)]
pub(crate) struct CallDevice {
    /// (call index, interval index), one per completed interval tied to a call in the capture,
    /// sorted by call, intervals in order within a call.
    calls: Vec<(u32, u32)>,
    /// The same for pairs with an index past 2^32 − 1 (a window of 256 GiB of entries): kept apart,
    /// so that the common table stays half the size.
    wide: Vec<(usize, usize)>,
}

/// The table with what reading its intervals takes: the ring's entries, its header (for the tick
/// conversion) and the events backend's anchors.
struct Device<'a> {
    table: &'a CallDevice,
    entries: Entries<'a>,
    anchors: &'a Anchors,
    header: &'a Header,
}

/// A cursor over `CallDevice::calls` for calls asked in increasing index order (any order works;
/// out of order costs a search), giving each call's latest device end by `end` of its intervals
/// (those in `wide` too).
struct Ends<'a, F> {
    table: &'a CallDevice,
    at: usize,
    end: F,
}

/// The device end of interval `k` (`None`: none known), for [`Ends`].
trait EndOf {
    fn end_of(&self, k: usize) -> Option<u64>;
}

/// The tests' ends.
impl<F: Fn(usize) -> Option<u64>> EndOf for F {
    fn end_of(&self, k: usize) -> Option<u64> {
        self(k)
    }
}

/// The wait pass's ends: read from the interval entries. A type of its own, not a closure, so
/// that it is inlined into [`Ends::of`] (a closure was not: a call per launch).
struct DeviceEnds<'a, 'd> {
    device: &'a Device<'d>,
    ticks: Converter,
}

impl EndOf for DeviceEnds<'_, '_> {
    #[inline(always)]
    fn end_of(&self, k: usize) -> Option<u64> {
        self.device.end(&self.ticks, k)
    }
}

impl<F: EndOf> Ends<'_, F> {
    #[inline]
    fn of(&mut self, idx: usize) -> Option<u64> {
        let calls = &self.table.calls;
        let call = |at: usize| calls.get(at).map(|&(c, _)| c as usize);
        if self.at > 0 && call(self.at - 1).is_some_and(|c| c >= idx) {
            self.at = calls.partition_point(|&(c, _)| (c as usize) < idx);
        }
        while call(self.at).is_some_and(|c| c < idx) {
            self.at += 1;
        }
        // `None` orders below every end.
        let mut latest: Option<u64> = None;
        for &(c, k) in &calls[self.at..] {
            if c as usize != idx {
                break;
            }
            latest = latest.max(self.end.end_of(k as usize));
        }
        if !self.table.wide.is_empty() {
            for k in self.table.wide(idx) {
                latest = latest.max(self.end.end_of(k));
            }
        }
        latest
    }
}

/// Launches onto the stream of the launch before them, gathered without hashing until another
/// stream's launch or a call that reads the queues: a hash map entry per launch was 70 instructions,
/// and consecutive launches nearly always share a stream.
#[derive(Default)]
struct Staged {
    stream: Option<StreamGen>,
    items: Vec<Item>,
}

impl Staged {
    /// Appends the staged items to their stream's queue (they were issued after everything in it).
    fn flush(
        &mut self,
        pending: &mut HashMap<StreamGen, VecDeque<Item>>,
        spare: &mut Vec<VecDeque<Item>>,
    ) {
        if let Some(sg) = self.stream.take() {
            if !self.items.is_empty() {
                pending
                    .entry(sg)
                    .or_insert_with(|| spare.pop().unwrap_or_default())
                    .extend(self.items.drain(..));
            }
        }
    }
}

/// Takes the items of `q` issued before `bound` (they are in sequence order).
fn drain_before(q: &mut VecDeque<Item>, bound: u64, out: &mut Vec<Item>) {
    let n = q.partition_point(|i| i.seq < bound);
    // Copied as the queue's (at most two) slices: extending from `drain` went item by item.
    let (a, b) = q.as_slices();
    let from_a = n.min(a.len());
    out.extend_from_slice(&a[..from_a]);
    out.extend_from_slice(&b[..n - from_a]);
    q.drain(..n);
}

/// Takes the items of `sg` issued before `bound`, if any are pending.
fn drain(
    pending: &mut HashMap<StreamGen, VecDeque<Item>>,
    sg: &StreamGen,
    bound: u64,
    out: &mut Vec<Item>,
) {
    if let Some(q) = pending.get_mut(sg) {
        drain_before(q, bound, out);
    }
}

/// Takes the work a frontier names, and lists the streams it names in `touched`.
fn drain_frontier(
    pending: &mut HashMap<StreamGen, VecDeque<Item>>,
    deps: Option<&Snapshot>,
    out: &mut Vec<Item>,
    touched: &mut Vec<StreamGen>,
) {
    if let Some(d) = deps {
        d.each(|sg, bound| {
            drain(pending, sg, bound, out);
            touched.push(*sg);
        });
    }
}

/// Whether stream `sg` still has pending work issued before `bound`. When it has not, the bound can
/// never name work again: items are appended in sequence order, after every bound already taken.
fn owes(pending: &HashMap<StreamGen, VecDeque<Item>>, sg: &StreamGen, bound: u64) -> bool {
    pending
        .get(sg)
        .and_then(VecDeque::front)
        .is_some_and(|i| i.seq < bound)
}

/// Merges what `rec` captured (its stream's work before it and that stream's frontier then) into the
/// frontier of stream `into`, leaving out bounds that name no pending work. Bounds on `into` itself
/// are left out too: its own earlier work precedes any later operation of it anyway. `scratch` is a
/// buffer kept between calls.
fn merge_wait(
    frontiers: &mut HashMap<StreamGen, Frontier>,
    pending: &HashMap<StreamGen, VecDeque<Item>>,
    into: StreamGen,
    rec: &Record,
    scratch: &mut Vec<Bound>,
) {
    scratch.clear();
    let mut take = |sg: &StreamGen, b: u64| {
        if *sg != into && owes(pending, sg, b) {
            scratch.push((*sg, b));
        }
    };
    take(&rec.stream, rec.seq);
    // Read before `into`'s log is appended to: the record may hold a snapshot of that very log.
    if let Some(d) = &rec.deps {
        d.each(&mut take);
    }
    if !scratch.is_empty() {
        frontiers.entry(into).or_default().extend(scratch, pending);
    }
}

impl CallDevice {
    /// Device intervals by issuing call (identity: the interval's a0 is the call's sequence number),
    /// in a walk of their own. `entries` are the ring's live entries in sequence order, `intervals`
    /// its device intervals (with their indices; any superset of them will do).
    pub(crate) fn of(
        entries: Entries,
        intervals: impl Iterator<Item = (usize, Entry)>,
    ) -> CallDevice {
        let mut device = CallDevice::default();
        for (i, e) in intervals.filter(|(_, e)| crate::facts::device::completed_interval(e)) {
            device.add(entries.index_of_seq(e.a0), i);
        }
        device.finish()
    }

    /// Adds one completed device interval, entry `interval`, issued by entry `call` (`None`: not in
    /// the capture). Intervals are added in index order; call `finish` after the last.
    #[inline(always)]
    pub(crate) fn add(&mut self, call: Option<usize>, interval: usize) {
        let Some(ci) = call else {
            return;
        };
        match (u32::try_from(ci), u32::try_from(interval)) {
            (Ok(c), Ok(k)) => self.calls.push((c, k)),
            _ => self.wide.push((ci, interval)),
        }
    }

    /// Sorts the table by call.
    pub(crate) fn finish(mut self) -> CallDevice {
        // Stable: a call's intervals keep their order. They arrive in completion order, close to
        // call order: the sort has little to do.
        self.calls.sort_by_key(|&(c, _)| c);
        self.wide.sort_by_key(|&(c, _)| c);
        self
    }

    /// The intervals of call `idx` in the wide table (empty but for windows past 2^32 entries).
    fn wide(&self, idx: usize) -> impl Iterator<Item = usize> + '_ {
        let lo = self.wide.partition_point(|&(c, _)| c < idx);
        self.wide[lo..]
            .iter()
            .take_while(move |&&(c, _)| c == idx)
            .map(|&(_, k)| k)
    }
}

impl Device<'_> {
    /// The end of interval `k` in host CLOCK_MONOTONIC ns: of a timed interval on the host clock,
    /// or of one converted through the events backend's anchors.
    #[inline(always)]
    fn end(&self, ticks: &Converter, k: usize) -> Option<u64> {
        crate::facts::placement::place(&self.entries.get(k), self.anchors, ticks).map(|p| p.end_ns)
    }

    /// A cursor over the calls' latest device ends, for the wait pass.
    fn ends(&self) -> Ends<'_, DeviceEnds<'_, '_>> {
        Ends {
            table: self.table,
            at: 0,
            // The converter caches the second it last converted in: one per pass, not shared.
            end: DeviceEnds {
                device: self,
                ticks: self.header.converter(),
            },
        }
    }

    /// The kernel names (text ids) of call `idx`'s kernel intervals, in order. The events backend's
    /// intervals (anchored) have no name of their own: the launch's is used.
    fn kernels(&self, idx: usize) -> impl Iterator<Item = u64> + '_ {
        let calls = &self.table.calls;
        let lo = calls.partition_point(|&(c, _)| (c as usize) < idx);
        let hi = calls.partition_point(|&(c, _)| c as usize <= idx);
        let run = calls[lo..hi].iter().map(|&(_, k)| k as usize);
        run.chain(self.table.wide(idx)).filter_map(|k| {
            let e = self.entries.get(k);
            (anchored(&e).is_none() && DeviceKind::from_u16(e.api) == Some(DeviceKind::Kernel))
                .then_some(e.a1)
        })
    }
}

/// A pass that rides along the wait pass's walk over the calls in sequence order, instead of making
/// a walk of its own (kernel counting, on one thread: see `report::alone`). It sees the same capture
/// state the walk keeps.
pub(crate) trait Rider {
    /// Graph-node entry `i`.
    fn graph_node(&mut self, entries: Entries, i: usize);
    /// An outermost launch or graph launch (`class`), entry `i` with its arguments (`args_of`),
    /// whatever it returned.
    fn launch(&mut self, i: usize, class: Class, e: &Entry, captures: &Captures);
}

/// No pass rides along.
impl Rider for () {
    fn graph_node(&mut self, _: Entries, _: usize) {}
    fn launch(&mut self, _: usize, _: Class, _: &Entry, _: &Captures) {}
}

/// A pass that rides along or not, as the schedule decides.
impl<R: Rider> Rider for Option<R> {
    #[inline]
    fn graph_node(&mut self, entries: Entries, i: usize) {
        if let Some(r) = self {
            r.graph_node(entries, i);
        }
    }

    #[inline]
    fn launch(&mut self, i: usize, class: Class, e: &Entry, captures: &Captures) {
        if let Some(r) = self {
            r.launch(i, class, e, captures);
        }
    }
}

/// Entries ahead of a walk over the calls (the wait pass's, kernel counting's) to ask the cache for.
pub(crate) const READ_AHEAD: usize = 32;

/// Reads the waits of one ring. `entries` are its live entries in sequence order, `nest` their
/// nesting (`pair::Nesting`), `device` the device intervals of their calls, `anchors` the events
/// backend's clock model; `rider` rides along.
pub(crate) fn analyze(
    h: &Header,
    entries: Entries,
    nest: &Nesting,
    device: &CallDevice,
    anchors: &Anchors,
    look: &Lookup,
    rider: &mut impl Rider,
) -> WaitsPartial {
    let device = &Device {
        table: device,
        entries,
        anchors,
        header: h,
    };
    // Its arguments stand in for those of a call recorded through CUPTI's runtime callback.
    let args_of = |i: usize| args_of(entries, nest, i);

    let mut names: HashMap<u16, String> = HashMap::default();
    let mut name_of = |api: u16| -> String {
        names
            .entry(api)
            .or_insert_with(|| (look.api_name)(api))
            .clone()
    };
    let mut captures = Captures::default();
    let mut stream_gen: HashMap<StreamKey, u64> = HashMap::default();
    let mut event_gen: HashMap<u64, u64> = HashMap::default();
    let mut pending: HashMap<StreamGen, VecDeque<Item>> = HashMap::default();
    // Emptied queues, kept for their memory: a stream's queue empties at every sync, and one grown
    // afresh each time was a twentieth of this pass.
    let mut spare: Vec<VecDeque<Item>> = Vec::new();
    // Streams with a non-empty frontier (cross-stream dependencies from stream waits).
    let mut frontiers: HashMap<StreamGen, Frontier> = HashMap::default();
    let mut bounds = Vec::new();
    // (event, generation) → its latest completed record.
    let mut records: HashMap<(u64, u64), Record> = HashMap::default();
    let mut out = WaitsPartial::default();
    let mut ends = device.ends();
    // The work each sync covered, in one buffer reused from sync to sync.
    let mut covered = Vec::new();
    let mut touched: Vec<StreamGen> = Vec::new();
    let mut staged = Staged::default();

    for i in 0..entries.len() {
        let (class, outermost) = match nest.tag(i) {
            Tag::Call { class, outermost } => (class, outermost),
            Tag::GraphNode => {
                rider.graph_node(entries, i);
                continue;
            }
            Tag::Skip => continue,
        };
        // A call one layer down matters only to capture state: most are skipped unread.
        if !outermost && !Captures::tracks(class) {
            continue;
        }
        // The calls read are a few entries apart, each in a slot of its own: ask for a later
        // one now, which the hardware's own prefetching did not (a miss per call was a fifth of
        // this pass on 10 M entries).
        entries.prefetch(i + READ_AHEAD);
        let e = args_of(i);
        let ok = e.done && e.result == 0;
        if !class.issues_work() {
            captures.apply(class, &e);
        } else if outermost && matches!(class, Class::Launch | Class::GraphLaunch) {
            rider.launch(i, class, &e, &captures);
        }
        if !outermost || !ok {
            continue;
        }
        if !class.issues_work() {
            // What follows may read the queues: the staged launches join theirs first.
            staged.flush(&mut pending, &mut spare);
        }
        match class {
            k if k.issues_work() => {
                if captures.capturing(&e) {
                    continue;
                }
                if class == Class::Copy && !name_of(e.api).contains("Async") {
                    continue;
                }
                let sg = stream_of(&stream_gen, &e);
                if staged.stream != Some(sg) {
                    staged.flush(&mut pending, &mut spare);
                    staged.stream = Some(sg);
                }
                staged.items.push(Item {
                    idx: i,
                    seq: e.seq,
                    stream: sg,
                    end: ends.of(i),
                });
            }
            Class::Stream if name_of(e.api).contains("Destroy") => {
                let key = stream_key(&e);
                let g = stream_gen.entry(key).or_default();
                frontiers.remove(&(key, *g));
                *g += 1;
            }
            Class::Event if name_of(e.api).contains("Destroy") => {
                // The ended lifetime's record (and the frontier copy it holds) is never looked up
                // again: dropped, so memory follows the live events.
                let g = event_gen.entry(e.a1).or_default();
                records.remove(&(e.a1, *g));
                *g += 1;
            }
            Class::EventRecord if !captures.capturing(&e) => {
                let sg = stream_of(&stream_gen, &e);
                let eg = event_gen.get(&e.a1).copied().unwrap_or(0);
                let rec = Record {
                    stream: sg,
                    seq: e.seq,
                    deps: frontiers.get(&sg).and_then(Frontier::snapshot),
                };
                records.insert((e.a1, eg), rec);
            }
            // Recorded over every stream: the work pending anywhere before it, as a frontier.
            Class::CtxEventRecord => {
                let eg = event_gen.get(&e.a1).copied().unwrap_or(0);
                let all: Vec<Bound> = pending
                    .iter()
                    .filter(|(_, q)| q.front().is_some_and(|it| it.seq < e.seq))
                    .map(|(sg, _)| (*sg, e.seq))
                    .collect();
                let rec = Record {
                    stream: EVERY_STREAM,
                    seq: e.seq,
                    deps: Snapshot::of(all),
                };
                records.insert((e.a1, eg), rec);
            }
            // A wait in a capturing stream (or one that joins a capture through it) builds a graph.
            Class::StreamWait if !captures.capturing(&e) => {
                let eg = event_gen.get(&e.a1).copied().unwrap_or(0);
                // An event never recorded (in this generation): the wait is a no-op.
                if let Some(rec) = records.get(&(e.a1, eg)) {
                    let sg = stream_of(&stream_gen, &e);
                    merge_wait(&mut frontiers, &pending, sg, rec, &mut bounds);
                }
            }
            Class::Sync | Class::EventSync => {
                let name = name_of(e.api);
                covered.clear();
                touched.clear();
                // The stream covered directly; None: all of them (a device sync).
                let mut direct = None;
                if class == Class::EventSync {
                    let eg = event_gen.get(&e.a1).copied().unwrap_or(0);
                    if let Some(rec) = records.get(&(e.a1, eg)) {
                        direct = (rec.stream != EVERY_STREAM).then_some(rec.stream);
                        drain(&mut pending, &rec.stream, rec.seq, &mut covered);
                        drain_frontier(&mut pending, rec.deps.as_ref(), &mut covered, &mut touched);
                        touched.push(rec.stream);
                    }
                } else if e.a0 == 0
                    && e.flags & entry_flags::PER_THREAD == 0
                    && !name.contains("Stream")
                {
                    for q in pending.values_mut() {
                        drain_before(q, e.seq, &mut covered);
                    }
                    // Every bound was taken before this sync began: none names pending work now.
                    frontiers.clear();
                    touched.extend(pending.keys());
                } else {
                    let sg = stream_of(&stream_gen, &e);
                    direct = Some(sg);
                    drain(&mut pending, &sg, e.seq, &mut covered);
                    // The sync waited for the stream's waits too; its frontier has no work left.
                    let deps = frontiers.remove(&sg).and_then(|f| f.snapshot());
                    drain_frontier(&mut pending, deps.as_ref(), &mut covered, &mut touched);
                    touched.push(sg);
                }
                covered.sort_unstable_by_key(|it| it.seq);
                // Queues this wait emptied are given back; only those it drained are looked at
                // (every pending stream per stream sync grew as syncs × streams never synced).
                for sg in &touched {
                    if pending.get(sg).is_some_and(VecDeque::is_empty) {
                        spare.extend(pending.remove(sg));
                    }
                }
                record_wait(
                    h, &e, name, &covered, direct, entries, device, look, &mut out,
                );
            }
            _ => {}
        }
    }
    // Launches still staged were never synced; nothing reads the queues after the walk, so they
    // are not flushed.
    out
}

/// The stream a call names, in its current generation.
fn stream_of(stream_gen: &HashMap<StreamKey, u64>, e: &Entry) -> StreamGen {
    let key = stream_key(e);
    // Streams are rarely destroyed: no hashing per launch until one is.
    let g = if stream_gen.is_empty() {
        0
    } else {
        stream_gen.get(&key).copied().unwrap_or(0)
    };
    (key, g)
}

/// The streams of `covered` (in sequence order), `direct` first (all direct when it is `None`), at
/// most `STREAMS_MAX`; and how many items are not on `direct`.
fn streams_of(covered: &[Item], direct: Option<StreamGen>) -> (Vec<WaitStream>, u64) {
    let mut order: Vec<StreamGen> = Vec::new();
    let mut counts: HashMap<StreamGen, u64> = HashMap::default();
    if let Some(d) = direct {
        if covered.iter().any(|it| it.stream == d) {
            order.push(d);
        }
    }
    for it in covered {
        let c = counts.entry(it.stream).or_default();
        if *c == 0 && Some(it.stream) != direct {
            order.push(it.stream);
        }
        *c += 1;
    }
    let cross = |sg: StreamGen| direct.is_some_and(|d| d != sg);
    let cross_items = order
        .iter()
        .filter(|&&sg| cross(sg))
        .map(|sg| counts[sg])
        .sum();
    let streams = order
        .into_iter()
        .take(STREAMS_MAX)
        .map(|sg| {
            let ((stream, tid), generation) = sg;
            WaitStream {
                stream,
                tid: (stream == PER_THREAD_STREAM).then_some(tid),
                generation,
                work_items: counts[&sg],
                cross: cross(sg),
            }
        })
        .collect();
    (streams, cross_items)
}

/// Adds one wait to the ring's accounting.
#[allow(clippy::too_many_arguments)]
fn record_wait(
    h: &Header,
    e: &Entry,
    name: String,
    covered: &[Item],
    direct: Option<StreamGen>,
    entries: Entries,
    device: &Device,
    look: &Lookup,
    out: &mut WaitsPartial,
) {
    let blocked = h.span_ns(e.t_begin, e.t_end);
    // The last device end, known only when every covered item has one.
    let last_end = if covered.is_empty() {
        None
    } else {
        covered
            .iter()
            .try_fold(0u64, |m, it| it.end.map(|t| m.max(t)))
    };
    let begin = h.ticks_to_ns(e.t_begin);
    let end = h.ticks_to_ns(e.t_end);
    let waited = last_end.map(|l| l.saturating_sub(begin));
    // Tail: the part of the wait after the work finished — all of it when the work had finished before
    // the wait began. Negative only if a clock conversion is off (a device end after the sync returned).
    let tail = last_end.map(|l| {
        (end as i128 - l.max(begin) as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    });
    let acc = out.by_name.entry(name.clone()).or_default();
    acc.count += 1;
    if covered.is_empty() {
        acc.empty += 1;
    }
    acc.blocked.push(blocked);
    acc.work_items += covered.len() as u64;
    acc.waited.extend(waited);
    acc.tails.extend(tail);

    let longest = &mut out.longest;
    if longest.len() >= LONGEST && longest.last().is_some_and(|w| w.blocked_ns >= blocked) {
        return;
    }
    let mut kernels: Vec<String> = Vec::new();
    'items: for it in covered {
        let mut from_device = device.kernels(it.idx).peekable();
        let mut add = |k: String| {
            if !kernels.contains(&k) {
                kernels.push(k);
            }
            kernels.len() >= KERNELS_MAX
        };
        if from_device.peek().is_some() {
            for id in from_device {
                if add((look.text)(id)) {
                    break 'items;
                }
            }
        } else {
            let c = &entries.get(it.idx);
            if (look.class)(c) == Some(Class::Launch) {
                if let Some(k) = (look.kernel)(c.a1) {
                    if add(k) {
                        break 'items;
                    }
                }
            }
        }
    }
    let (streams, cross_stream_items) = streams_of(covered, direct);
    let w = Wait {
        name,
        pid: h.pid,
        tid: e.tid,
        seq: e.seq,
        blocked_ns: blocked,
        work_items: covered.len() as u64,
        waited_on_device_ns: waited,
        tail_ns: tail,
        kernels,
        cross_stream_items,
        streams,
    };
    insert_longest(longest, w);
}

/// Keeps `list` sorted longest first (ties: pid, then sequence) and at most `LONGEST` long.
fn insert_longest(list: &mut Vec<Wait>, w: Wait) {
    let key = |w: &Wait| (std::cmp::Reverse(w.blocked_ns), w.pid, w.seq);
    let at = list.partition_point(|x| key(x) <= key(&w));
    list.insert(at, w);
    list.truncate(LONGEST);
}

/// Merges the rings' waits: per API name, sorted by total blocked time (largest first), and the
/// longest individual waits.
pub(crate) fn merge(partials: Vec<WaitsPartial>) -> (Vec<WaitStats>, Vec<Wait>) {
    let mut by_name: HashMap<String, WaitAcc> = HashMap::default();
    let mut longest = Vec::new();
    for p in partials {
        for (name, a) in p.by_name {
            by_name.entry(name).or_default().absorb(a);
        }
        for w in p.longest {
            insert_longest(&mut longest, w);
        }
    }
    let mut stats: Vec<WaitStats> = by_name
        .into_iter()
        .map(|(name, mut a)| {
            let [blocked_p50, blocked_p99] = percentiles(&mut a.blocked, [50, 99]);
            let [waited_p50] = percentiles(&mut a.waited, [50]);
            let [tail_p50] = percentiles(&mut a.tails, [50]);
            WaitStats {
                name,
                count: a.count,
                empty: a.empty,
                blocked_total_ns: total(&a.blocked),
                blocked_p50_ns: blocked_p50.unwrap_or(0),
                blocked_p99_ns: blocked_p99.unwrap_or(0),
                work_items: a.work_items,
                with_device_times: a.waited.len() as u64,
                waited_p50_ns: waited_p50,
                tail_p50_ns: tail_p50,
            }
        })
        .collect();
    stats.sort_by(|a, b| {
        b.blocked_total_ns
            .cmp(&a.blocked_total_ns)
            .then(a.name.cmp(&b.name))
    });
    (stats, longest)
}

#[cfg(test)]
mod tests {
    //! Cross-stream waits on synthetic entry lists, read by `analyze` directly.

    use super::*;
    use crate::read::pair::Nesting;
    use causeway_ring::clock::Anchor;
    use causeway_ring::layout::{capture_phase, ClockKind, Policy};
    use causeway_ring::Kind;

    const LAUNCH: u16 = 1;
    const STREAM_SYNC: u16 = 2;
    const EVENT_RECORD: u16 = 3;
    const EVENT_SYNC: u16 = 4;
    const STREAM_WAIT: u16 = 5;
    const CU_STREAM_WAIT: u16 = 6;
    const EVENT_DESTROY: u16 = 7;
    const STREAM_DESTROY: u16 = 8;
    const DEVICE_SYNC: u16 = 9;
    const BEGIN_CAPTURE: u16 = 10;
    const END_CAPTURE: u16 = 11;
    const PREFETCH: u16 = 12;
    const WRITE_VALUE: u16 = 13;
    const CTX_RECORD: u16 = 14;
    const CTX_WAIT: u16 = 15;

    const TID: u32 = 1000;
    const TID2: u32 = 1001;
    const A: u64 = 0x5a00;
    const B: u64 = 0x5b00;
    const C: u64 = 0x5c00;
    const E: u64 = 0xe100;
    const F: u64 = 0xe200;

    fn api(id: u16) -> Option<(&'static str, Class)> {
        Some(match id {
            LAUNCH => ("cudaLaunchKernel", Class::Launch),
            STREAM_SYNC => ("cudaStreamSynchronize", Class::Sync),
            EVENT_RECORD => ("cudaEventRecord", Class::EventRecord),
            EVENT_SYNC => ("cudaEventSynchronize", Class::EventSync),
            STREAM_WAIT => ("cudaStreamWaitEvent", Class::StreamWait),
            CU_STREAM_WAIT => ("cuStreamWaitEvent", Class::StreamWait),
            EVENT_DESTROY => ("cudaEventDestroy", Class::Event),
            STREAM_DESTROY => ("cudaStreamDestroy", Class::Stream),
            DEVICE_SYNC => ("cudaDeviceSynchronize", Class::Sync),
            BEGIN_CAPTURE => ("cudaStreamBeginCapture", Class::Capture),
            END_CAPTURE => ("cudaStreamEndCapture", Class::Capture),
            PREFETCH => ("cudaMemPrefetchAsync", Class::Prefetch),
            WRITE_VALUE => ("cuStreamWriteValue32_v2", Class::MemOp),
            CTX_RECORD => ("cuCtxRecordEvent", Class::CtxEventRecord),
            CTX_WAIT => ("cuCtxWaitEvent", Class::CtxEventWait),
            _ => return None,
        })
    }

    /// A process's entries in sequence order: every call takes `[100 s, 100 s + 10]` at sequence `s`.
    #[derive(Default)]
    struct Ring {
        entries: Vec<Entry>,
    }

    impl Ring {
        fn push(&mut self, tid: u32, depth: u16, api: u16, flags: u8, a: [u64; 3]) -> u64 {
            let seq = self.entries.len() as u64;
            self.entries.push(Entry {
                seq,
                done: true,
                t_begin: 100 * seq + depth as u64,
                t_end: 100 * seq + 10 - depth as u64,
                tid,
                api,
                kind: Some(Kind::Call),
                flags,
                result: 0,
                depth,
                node: 0,
                a0: a[0],
                a1: a[1],
                a2: a[2],
            });
            seq
        }
        fn call(&mut self, api: u16, a: [u64; 3]) -> u64 {
            self.push(TID, 0, api, 0, a)
        }
        /// A launch of the kernel named `k` (its function handle) on `stream`.
        fn launch(&mut self, stream: u64, k: &str) -> u64 {
            self.call(LAUNCH, [stream, handle(k), 1])
        }
        fn record(&mut self, event: u64, stream: u64) -> u64 {
            self.call(EVENT_RECORD, [stream, event, 0])
        }
        fn wait(&mut self, stream: u64, event: u64) -> u64 {
            self.call(STREAM_WAIT, [stream, event, 0])
        }
        fn sync(&mut self, stream: u64) -> u64 {
            self.call(STREAM_SYNC, [stream, 0, 0])
        }
        fn event_sync(&mut self, event: u64) -> u64 {
            self.call(EVENT_SYNC, [0, event, 0])
        }
        fn analyze(&self) -> WaitsPartial {
            let h = Header {
                version: 1,
                policy: Policy::Drop,
                capacity: 1024,
                strings_offset: 0,
                strings_size: 0,
                entries_offset: 0,
                pid: 42,
                ppid: 1,
                level: 2,
                clock: ClockKind::Monotonic,
                flags: 0,
                backend: 0,
                sample_every: 1,
                head: self.entries.len() as u64,
                head_behind: 0,
                dropped: 0,
                strings_used: 0,
                strings_dropped: 0,
                anchor0: Anchor::default(),
                anchor1: Anchor::default(),
                ticks_per_sec: 1_000_000_000,
                rate: 1_000_000_000,
                exe: "test".into(),
                host: "host".into(),
                notice: None,
                counters: Default::default(),
            };
            let nest = Nesting::of(&self.entries, |e| api(e.api).map(|(_, c)| c));
            let look = Lookup {
                class: &|e| api(e.api).map(|(_, c)| c),
                api_name: &|id| api(id).map_or_else(|| format!("<api {id}>"), |(n, _)| n.into()),
                kernel: &|h| {
                    KERNELS
                        .get(h.wrapping_sub(0x100) as usize)
                        .map(|k| k.to_string())
                },
                text: &|id| format!("<text {id}>"),
            };
            let anchors = Anchors::from_entries(&h, &self.entries);
            let entries = Entries::from(&self.entries);
            let device = CallDevice::of(entries, entries.iter().enumerate());
            analyze(&h, entries, &nest, &device, &anchors, &look, &mut ())
        }
    }

    #[test]
    fn ends_cursor_answers_in_order_out_of_order_and_missing() {
        // Interval k ends at 10 k, except 3 (no end: untimed, or on the device's own clock).
        let table = CallDevice {
            calls: vec![(2, 2), (5, 5), (5, 3), (5, 1), (6, 6), (9, 9), (11, 3)],
            wide: Vec::new(),
        };
        let end = |k: usize| (k != 3).then_some(10 * k as u64);
        let mut c = Ends {
            table: &table,
            at: 0,
            end,
        };
        let asked = [0, 2, 3, 5, 6, 9, 10, 11, 12, 5, 2, 7, 9, 1, 6, 11];
        let got: Vec<Option<u64>> = asked.iter().map(|&i| c.of(i)).collect();
        let want = [
            None,
            Some(20),
            None,
            // The latest of its ends; the one without an end does not count.
            Some(50),
            Some(60),
            Some(90),
            None,
            // Its one interval has no end.
            None,
            None,
            Some(50),
            Some(20),
            None,
            Some(90),
            None,
            Some(60),
            None,
        ];
        assert_eq!(got, want);
        let mut empty = Ends {
            table: &CallDevice::default(),
            at: 0,
            end,
        };
        assert_eq!(empty.of(3), None);
    }

    /// Indices past 2^32 − 1 go to the wide table and are found there, alone or beside a call's
    /// other intervals.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn calls_and_intervals_past_32_bits_keep_their_device_ends() {
        let far = 1usize << 33;
        let mut d = CallDevice::default();
        for (call, interval) in [(5, 7), (far, 9), (5, far + 1), (6, 8), (far, far + 2)] {
            d.add(Some(call), interval);
        }
        d.add(None, 3);
        let d = d.finish();
        assert_eq!(d.calls, [(5, 7), (6, 8)]);
        assert_eq!(d.wide, [(5, far + 1), (far, 9), (far, far + 2)]);
        let mut c = Ends {
            table: &d,
            at: 0,
            end: |k: usize| Some(10 * k as u64),
        };
        assert_eq!(c.of(5), Some(10 * (far as u64 + 1)));
        assert_eq!(c.of(6), Some(80));
        assert_eq!(c.of(far), Some(10 * (far as u64 + 2)));
        assert_eq!(c.of(far + 1), None);
        assert_eq!(d.wide(5).collect::<Vec<_>>(), [far + 1]);
    }

    const KERNELS: [&str; 8] = ["a0", "a1", "b0", "b1", "c0", "c1", "d0", "d1"];

    fn handle(k: &str) -> u64 {
        0x100 + KERNELS.iter().position(|&x| x == k).unwrap() as u64
    }

    fn wait_of(p: &WaitsPartial, seq: u64) -> &Wait {
        p.longest
            .iter()
            .find(|w| w.seq == seq)
            .unwrap_or_else(|| panic!("no wait seq {seq} in {:?}", p.longest))
    }

    /// (work items, cross-stream items, kernels).
    fn summary(w: &Wait) -> (u64, u64, Vec<&str>) {
        let k = w.kernels.iter().map(String::as_str).collect();
        (w.work_items, w.cross_stream_items, k)
    }

    /// (handle, generation, items, cross) per listed stream.
    fn streams(w: &Wait) -> Vec<(u64, u64, u64, bool)> {
        w.streams
            .iter()
            .map(|s| (s.stream, s.generation, s.work_items, s.cross))
            .collect()
    }

    #[test]
    fn a_stream_sync_after_a_wait_covers_the_other_streams_work_before_the_record() {
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.record(E, A);
        // After the record: not what E captured.
        r.launch(A, "a1");
        r.launch(B, "b0");
        r.wait(B, E);
        r.launch(B, "b1");
        let sb = r.sync(B);
        let sa = r.sync(A);
        let p = r.analyze();
        let w = wait_of(&p, sb);
        assert_eq!(summary(w), (3, 1, vec!["a0", "b0", "b1"]));
        assert_eq!(streams(w), [(B, 0, 2, false), (A, 0, 1, true)]);
        // A's kernel before E was covered by B's sync; the one after it is left for A's own.
        let w = wait_of(&p, sa);
        assert_eq!(summary(w), (1, 0, vec!["a1"]));
        assert_eq!(streams(w), [(A, 0, 1, false)]);
        let acc = &p.by_name["cudaStreamSynchronize"];
        assert_eq!((acc.count, acc.empty, acc.work_items), (2, 0, 4));
    }

    #[test]
    fn prefetches_and_stream_memory_operations_are_work_a_sync_waits_for() {
        let mut r = Ring::default();
        r.call(PREFETCH, [A, 4096, 0]);
        r.launch(A, "a0");
        r.call(WRITE_VALUE, [B, 0xf1a9, 1]);
        let sa = r.sync(A);
        let sb = r.sync(B);
        let p = r.analyze();
        let w = wait_of(&p, sa);
        assert_eq!((w.work_items, w.cross_stream_items), (2, 0));
        assert_eq!(streams(w), [(A, 0, 2, false)]);
        let w = wait_of(&p, sb);
        assert_eq!((w.work_items, w.cross_stream_items), (1, 0));
    }

    #[test]
    fn a_context_event_captures_every_streams_earlier_work() {
        const CTX: u64 = 0xc7c7;
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.launch(B, "b0");
        r.call(CTX_RECORD, [CTX, E, 0]);
        // After the record: not captured.
        r.launch(C, "c0");
        // A context wait is not modelled: it adds no dependency.
        r.call(CTX_WAIT, [CTX, E, 0]);
        let es = r.event_sync(E);
        let sc = r.sync(C);
        let p = r.analyze();
        // Like a device sync, it waits on no one stream: every covered stream is direct.
        let w = wait_of(&p, es);
        assert_eq!(summary(w), (2, 0, vec!["a0", "b0"]));
        let w = wait_of(&p, sc);
        assert_eq!(summary(w), (1, 0, vec!["c0"]));
        // A stream that waits on the context's event depends on both streams' work before it.
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.launch(B, "b0");
        r.call(CTX_RECORD, [CTX, E, 0]);
        r.wait(C, E);
        r.launch(C, "c0");
        let sc = r.sync(C);
        let p = r.analyze();
        let w = wait_of(&p, sc);
        assert_eq!(summary(w), (3, 2, vec!["a0", "b0", "c0"]));
    }

    #[test]
    fn a_wait_with_no_work_after_it_still_makes_the_sync_wait_for_the_other_stream() {
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.record(E, A);
        // The driver wait inside the runtime one is the same wait.
        let rt = r.push(TID, 0, STREAM_WAIT, 0, [B, E, 0]);
        r.push(TID, 1, CU_STREAM_WAIT, 0, [B, E, 0]);
        r.entries[rt as usize].t_end += 20;
        let sb = r.sync(B);
        let p = r.analyze();
        let w = wait_of(&p, sb);
        assert_eq!(summary(w), (1, 1, vec!["a0"]));
        assert_eq!(streams(w), [(A, 0, 1, true)]);
    }

    #[test]
    fn an_event_recorded_after_a_wait_carries_the_cross_stream_work() {
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.record(E, A);
        r.wait(B, E);
        r.launch(B, "b0");
        r.record(F, B);
        r.launch(B, "b1");
        let ef = r.event_sync(F);
        let sb = r.sync(B);
        let p = r.analyze();
        let w = wait_of(&p, ef);
        assert_eq!(summary(w), (2, 1, vec!["a0", "b0"]));
        assert_eq!(streams(w), [(B, 0, 1, false), (A, 0, 1, true)]);
        let w = wait_of(&p, sb);
        assert_eq!(summary(w), (1, 0, vec!["b1"]));
    }

    #[test]
    fn a_wait_on_a_never_recorded_event_adds_nothing() {
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.wait(B, E);
        r.launch(B, "b0");
        // Recorded only after the wait: the wait did not see it.
        r.record(E, A);
        let sb = r.sync(B);
        let sa = r.sync(A);
        let p = r.analyze();
        let w = wait_of(&p, sb);
        assert_eq!(summary(w), (1, 0, vec!["b0"]));
        assert_eq!(streams(w), [(B, 0, 1, false)]);
        assert_eq!(summary(wait_of(&p, sa)), (1, 0, vec!["a0"]));
    }

    #[test]
    fn a_reused_event_handle_does_not_carry_the_old_events_work() {
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.record(E, A);
        r.call(EVENT_DESTROY, [0, E, 0]);
        // The handle comes back from the next create: a new event, never recorded.
        r.wait(B, E);
        r.launch(B, "b0");
        let sb = r.sync(B);
        let sa = r.sync(A);
        let p = r.analyze();
        assert_eq!(summary(wait_of(&p, sb)), (1, 0, vec!["b0"]));
        assert_eq!(summary(wait_of(&p, sa)), (1, 0, vec!["a0"]));
    }

    #[test]
    fn stream_generations_are_kept_apart_across_waits() {
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.record(E, A);
        r.call(STREAM_DESTROY, [A, 0, 0]);
        // A new stream with A's handle: its work is not what E captured.
        r.launch(A, "a1");
        r.wait(B, E);
        // C waits, then is destroyed: the new C does not inherit the old one's dependencies.
        r.record(F, A);
        r.wait(C, F);
        r.call(STREAM_DESTROY, [C, 0, 0]);
        r.launch(C, "c0");
        let sc = r.sync(C);
        let sb = r.sync(B);
        let sa = r.sync(A);
        let p = r.analyze();
        assert_eq!(summary(wait_of(&p, sc)), (1, 0, vec!["c0"]));
        let w = wait_of(&p, sb);
        assert_eq!(summary(w), (1, 1, vec!["a0"]));
        assert_eq!(streams(w), [(A, 0, 1, true)]);
        let w = wait_of(&p, sa);
        assert_eq!(summary(w), (1, 0, vec!["a1"]));
        assert_eq!(streams(w), [(A, 1, 1, false)]);
    }

    #[test]
    fn chained_waits_are_transitive() {
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.record(E, A);
        r.launch(A, "a1");
        r.wait(B, E);
        r.launch(B, "b0");
        r.record(F, B);
        r.launch(B, "b1");
        r.wait(C, F);
        r.launch(C, "c0");
        let sc = r.sync(C);
        let sa = r.sync(A);
        let sb = r.sync(B);
        let p = r.analyze();
        let w = wait_of(&p, sc);
        assert_eq!(summary(w), (3, 2, vec!["a0", "b0", "c0"]));
        assert_eq!(
            streams(w),
            [(C, 0, 1, false), (A, 0, 1, true), (B, 0, 1, true)]
        );
        assert_eq!(summary(wait_of(&p, sa)), (1, 0, vec!["a1"]));
        assert_eq!(summary(wait_of(&p, sb)), (1, 0, vec!["b1"]));
    }

    #[test]
    fn a_wait_keeps_the_highest_bound_and_covered_work_is_not_covered_twice() {
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.record(E, A);
        r.launch(A, "a1");
        r.record(F, A);
        r.wait(B, F);
        // An older capture of A's work adds nothing to the later one.
        r.wait(B, E);
        let sb = r.sync(B);
        // The record E captured was covered already.
        r.wait(C, E);
        r.launch(C, "c0");
        let sc = r.sync(C);
        let p = r.analyze();
        assert_eq!(summary(wait_of(&p, sb)), (2, 2, vec!["a0", "a1"]));
        assert_eq!(summary(wait_of(&p, sc)), (1, 0, vec!["c0"]));
    }

    #[test]
    fn a_device_sync_covers_everything_directly() {
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.record(E, A);
        r.wait(B, E);
        r.launch(B, "b0");
        let dev = r.call(DEVICE_SYNC, [0, 0, 0]);
        let sb = r.sync(B);
        let p = r.analyze();
        let w = wait_of(&p, dev);
        assert_eq!(summary(w), (2, 0, vec!["a0", "b0"]));
        assert_eq!(streams(w), [(A, 0, 1, false), (B, 0, 1, false)]);
        assert_eq!(summary(wait_of(&p, sb)), (0, 0, vec![]));
        assert!(wait_of(&p, sb).streams.is_empty());
    }

    #[test]
    fn per_thread_default_streams_wait_apart_from_the_legacy_stream() {
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.record(E, A);
        // Thread 2's per-thread default stream (a `_ptsz` call on handle 0) waits on E.
        r.push(TID2, 0, STREAM_WAIT, entry_flags::PER_THREAD, [0, E, 0]);
        r.push(TID2, 0, LAUNCH, 0, [PER_THREAD_STREAM, handle("b0"), 1]);
        // The legacy stream and thread 1's per-thread stream did not wait.
        let legacy = r.sync(0);
        let other = r.sync(PER_THREAD_STREAM);
        let mine = r.push(TID2, 0, STREAM_SYNC, 0, [PER_THREAD_STREAM, 0, 0]);
        let p = r.analyze();
        assert_eq!(summary(wait_of(&p, legacy)), (0, 0, vec![]));
        assert_eq!(summary(wait_of(&p, other)), (0, 0, vec![]));
        let w = wait_of(&p, mine);
        assert_eq!(summary(w), (2, 1, vec!["a0", "b0"]));
        assert_eq!(
            streams(w),
            [(PER_THREAD_STREAM, 0, 1, false), (A, 0, 1, true)]
        );
        assert_eq!((w.streams[0].tid, w.streams[1].tid), (Some(TID2), None));
    }

    #[test]
    fn a_wait_inside_stream_capture_is_no_dependency() {
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.record(E, A);
        r.call(BEGIN_CAPTURE, [B, 0, capture_phase::BEGIN]);
        r.wait(B, E);
        r.call(END_CAPTURE, [B, 0, capture_phase::END]);
        r.launch(B, "b0");
        let sb = r.sync(B);
        let p = r.analyze();
        assert_eq!(summary(wait_of(&p, sb)), (1, 0, vec!["b0"]));
    }

    /// Draining takes the items before the bound, in order, from a queue wrapped around its buffer
    /// (two slices) as from a straight one, and leaves the rest.
    #[test]
    fn drain_takes_the_items_before_the_bound_across_the_wrap() {
        let item = |seq| Item {
            idx: seq as usize,
            seq,
            stream: ((A, 0), 0),
            end: None,
        };
        let mut wrapped = 0;
        for start in 0..8u64 {
            for bound in 0..12u64 {
                let mut q: VecDeque<Item> = VecDeque::with_capacity(8);
                // Pushing and popping `start` items first moves the queue's head along its buffer.
                for s in 0..start {
                    q.push_back(item(s));
                    q.pop_front();
                }
                q.extend((100..108).map(item));
                wrapped += usize::from(!q.as_slices().1.is_empty());
                let mut out = vec![item(1)];
                drain_before(&mut q, 100 + bound, &mut out);
                let taken: Vec<u64> = out.iter().map(|i| i.seq).collect();
                let want: Vec<u64> = std::iter::once(1).chain(100..100 + bound.min(8)).collect();
                assert_eq!(taken, want, "start {start} bound {bound}");
                let left: Vec<u64> = q.iter().map(|i| i.seq).collect();
                assert_eq!(left, (100 + bound.min(8)..108).collect::<Vec<_>>());
            }
        }
        assert!(wrapped > 0, "no queue wrapped around its buffer");
    }

    /// The frontier tests' round: stream `((A, 0), g)` gets one item `seq` and records an event
    /// after it, and stream `((B, 0), 0)` waits on that record. Returns the new stream.
    fn wait_on_new_stream(
        pending: &mut HashMap<StreamGen, VecDeque<Item>>,
        frontiers: &mut HashMap<StreamGen, Frontier>,
        scratch: &mut Vec<Bound>,
        g: u64,
        seq: u64,
    ) -> StreamGen {
        let t: StreamGen = ((A, 0), g);
        pending.entry(t).or_default().push_back(Item {
            idx: 0,
            seq,
            stream: t,
            end: None,
        });
        let rec = Record {
            stream: t,
            seq: seq + 1,
            deps: None,
        };
        merge_wait(frontiers, pending, ((B, 0), 0), &rec, scratch);
        t
    }

    #[test]
    fn frontiers_stay_bounded_by_the_streams_with_uncovered_work() {
        // A thousand short-lived streams, each waited on by B and then synced: B's frontier keeps
        // only the bounds that still name pending work, give or take the slack before a pruning.
        let b: StreamGen = ((B, 0), 0);
        let mut pending: HashMap<StreamGen, VecDeque<Item>> = HashMap::default();
        let mut frontiers: HashMap<StreamGen, Frontier> = HashMap::default();
        let mut scratch = Vec::new();
        let mut snapshots = Vec::new();
        for g in 0..1000u64 {
            let t = wait_on_new_stream(&mut pending, &mut frontiers, &mut scratch, g, 3 * g);
            snapshots.push(frontiers[&b].snapshot());
            let n = frontiers[&b].log.borrow().len();
            assert!(n <= 2 + PRUNE_SLACK + 1, "{n}");
            let mut out = Vec::new();
            drain(&mut pending, &t, 3 * g + 2, &mut out);
            assert_eq!(out.len(), 1);
            pending.retain(|_, q| !q.is_empty());
        }
        // Work covered since it was captured is not merged in at all.
        let rec = Record {
            stream: ((A, 0), 0),
            seq: 1,
            deps: snapshots[10].clone(),
        };
        let before = Rc::clone(&frontiers[&b].log);
        let len = before.borrow().len();
        merge_wait(&mut frontiers, &pending, ((C, 0), 0), &rec, &mut scratch);
        assert!(!frontiers.contains_key(&((C, 0), 0)));
        assert!(Rc::ptr_eq(&before, &frontiers[&b].log));
        assert_eq!(frontiers[&b].log.borrow().len(), len);
    }

    #[test]
    fn records_keep_their_frontier_in_linear_memory() {
        // B waits on a record of a new stream each round (whose work is never synced), then records
        // an event of its own that is never destroyed: each record captures a frontier naming every
        // stream so far. Kept as copies that was n²/2 bounds; as snapshots of shared logs the
        // distinct logs hold a few bounds per round, and each snapshot still reads its own frontier.
        let b: StreamGen = ((B, 0), 0);
        let n = 2000u64;
        let mut pending: HashMap<StreamGen, VecDeque<Item>> = HashMap::default();
        let mut frontiers: HashMap<StreamGen, Frontier> = HashMap::default();
        let mut scratch = Vec::new();
        let mut records = Vec::new();
        for g in 0..n {
            wait_on_new_stream(&mut pending, &mut frontiers, &mut scratch, g, 10 * g);
            records.push(frontiers[&b].snapshot().unwrap());
        }
        let held: usize = (records.iter())
            .map(|s| (Rc::as_ptr(&s.0), s.0.borrow().capacity()))
            .collect::<std::collections::BTreeMap<_, _>>()
            .values()
            .sum();
        assert!(held <= 8 * n as usize, "{held} bounds held for {n} records");
        // The k-th record names exactly streams 0..=k, each with its own bound.
        for (k, s) in records.iter().enumerate().step_by(97) {
            let mut named = Vec::new();
            s.each(|sg, bound| named.push((sg.1, bound)));
            named.sort_unstable();
            named.dedup();
            let want: Vec<(u64, u64)> = (0..=k as u64).map(|g| (g, 10 * g + 1)).collect();
            assert_eq!(named, want, "record {k}");
        }
    }

    #[test]
    fn the_new_fields_are_in_the_json() {
        let mut r = Ring::default();
        r.launch(A, "a0");
        r.record(E, A);
        r.wait(B, E);
        let sb = r.sync(B);
        let p = r.analyze();
        let v = serde_json::to_value(wait_of(&p, sb)).unwrap();
        assert_eq!(v["cross_stream_items"], 1);
        assert_eq!(
            v["streams"],
            serde_json::json!([{
                "stream": A, "tid": null, "generation": 0, "work_items": 1, "cross": true
            }])
        );
    }
}
