//! Host waits: for each completed synchronising call (stream, device/context and event syncs), the
//! device work it waited for, named by identity only — stream order and event semantics, never
//! timestamp proximity — and, at level 3, how long the device work actually kept the host waiting.
//!
//! Per process, in sequence order (the order calls began):
//! * a **work item** is an outermost launch, copy, memset or graph launch that returned success outside
//!   stream capture; it is pending on its stream (the issuing call's `a0` handle, with the per-thread
//!   default stream kept apart per thread) in the stream's current generation. Synchronous copies (an
//!   API name without `Async`) have finished when their call returns and are not pending work;
//! * a **stream sync** of S covers the work pending on S (current generation) issued before it began;
//! * a **device/context sync** (a sync-class call with stream 0 whose name does not contain `Stream`:
//!   `cudaDeviceSynchronize`, `cuCtxSynchronize`) covers the work pending on every stream;
//! * an **event record** of E on stream X remembers X's generation and its own sequence number; an
//!   **event sync** of E covers the work pending on X issued before the latest such record of E
//!   (same event generation) that completed before the sync began;
//! * a stream-class call whose name contains `Destroy` ends its handle's generation (likewise an
//!   event-class `Destroy` for events): CUDA reuses handles, and work or records of an older
//!   generation are never covered by a wait on the new one (a device sync still covers them).
//!
//! Covered work is no longer pending, so each item is waited for by at most one wait. Only the
//! outermost sync counts (a runtime sync and the driver sync inside it are one wait); a sync that
//! failed or did not return covers nothing. Not modelled: a stream that waits on an event
//! (`cudaStreamWaitEvent`) does not make a later sync of it cover the other stream's work, and a sync
//! of the legacy default stream (handle 0) covers only work issued to handle 0.
//!
//! With device intervals (level 3, on the host clock) for every covered item, the last device end is
//! known: `waited_on_device_ns` = max(0, last device end − sync begin) and `tail_ns` = sync end −
//! max(last device end, sync begin), so waited + tail = the time blocked. Without them both are unknown
//! (null), never guessed.

use crate::pair::{args_of, same_class_children};
use crate::report::{percentile, stream_key, Captures, StreamKey};
use causeway_ring::layout::{entry_flags, DeviceKind};
use causeway_ring::{Class, Entry, Header, Kind};
use serde::Serialize;
use std::collections::{HashMap, VecDeque};

/// How many of the longest individual waits the report lists.
pub const LONGEST: usize = 10;
/// How many kernel names a listed wait shows.
pub const KERNELS_MAX: usize = 5;

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
        self.blocked.extend(o.blocked);
        self.work_items += o.work_items;
        self.waited.extend(o.waited);
        self.tails.extend(o.tails);
    }
}

/// What one ring contributes.
#[derive(Default)]
pub(crate) struct WaitsPartial {
    pub by_name: HashMap<String, WaitAcc>,
    /// The longest waits of the ring, longest first, at most `LONGEST`.
    pub longest: Vec<Wait>,
}

/// A pending work item: the index of its call entry and its sequence number.
#[derive(Clone, Copy)]
struct Item {
    idx: usize,
    seq: u64,
}

/// A stream in one generation.
type StreamGen = (StreamKey, u64);

/// The device intervals of one issuing call.
#[derive(Default)]
struct CallDevice {
    /// Latest device end on the host clock (ticks), over timed intervals on the host clock.
    last_end: Option<u64>,
    /// Kernel name text ids, in order.
    kernels: Vec<u64>,
}

fn work_class(c: Option<Class>) -> bool {
    matches!(
        c,
        Some(Class::Launch | Class::Copy | Class::Memset | Class::GraphLaunch)
    )
}

/// Takes the items of `q` issued before `bound` (they are in sequence order).
fn drain_before(q: &mut VecDeque<Item>, bound: u64, out: &mut Vec<Item>) {
    while q.front().is_some_and(|i| i.seq < bound) {
        out.extend(q.pop_front());
    }
}

/// Reads the waits of one ring. `entries` are its live entries in sequence order, `parent` their
/// nesting (`pair::parents`).
pub(crate) fn analyze(
    h: &Header,
    entries: &[Entry],
    parent: &[Option<usize>],
    look: &Lookup,
) -> WaitsPartial {
    let class_of = |i: usize| match entries[i].kind {
        Some(Kind::Call) => (look.class)(&entries[i]),
        _ => None,
    };
    // Its arguments stand in for those of a call recorded through CUPTI's runtime callback.
    let child = same_class_children(parent, class_of);
    let args_of = |i: usize| args_of(entries, &child, i);
    // Device intervals by issuing call (identity: the interval's a0 is the call's sequence number).
    let mut device: HashMap<u64, CallDevice> = HashMap::new();
    for e in entries
        .iter()
        .filter(|e| e.kind == Some(Kind::DeviceInterval) && e.done)
    {
        let d = device.entry(e.a0).or_default();
        if DeviceKind::from_u16(e.api) == Some(DeviceKind::Kernel) {
            d.kernels.push(e.a1);
        }
        let timed = e.t_begin != 0 && e.t_end != 0 && e.t_end >= e.t_begin;
        if timed && e.flags & entry_flags::HOST_CLOCK != 0 {
            d.last_end = Some(d.last_end.map_or(e.t_end, |m| m.max(e.t_end)));
        }
    }

    let mut names: HashMap<u16, String> = HashMap::new();
    let mut name_of = |api: u16| -> String {
        names
            .entry(api)
            .or_insert_with(|| (look.api_name)(api))
            .clone()
    };
    let mut captures = Captures::default();
    let mut stream_gen: HashMap<StreamKey, u64> = HashMap::new();
    let mut event_gen: HashMap<u64, u64> = HashMap::new();
    let mut pending: HashMap<StreamGen, VecDeque<Item>> = HashMap::new();
    // (event, generation) → (stream in its generation, the record's sequence number).
    let mut records: HashMap<(u64, u64), (StreamGen, u64)> = HashMap::new();
    let mut out = WaitsPartial::default();

    for (i, p) in parent.iter().enumerate() {
        let Some(class) = class_of(i) else {
            continue;
        };
        let e = args_of(i);
        let outermost = p.and_then(class_of) != Some(class);
        let ok = e.done && e.result == 0;
        if !work_class(Some(class)) {
            captures.apply(class, &e);
        }
        if !outermost || !ok {
            continue;
        }
        match class {
            Class::Launch | Class::Copy | Class::Memset | Class::GraphLaunch => {
                if captures.capturing(&e) {
                    continue;
                }
                if class == Class::Copy && !name_of(e.api).contains("Async") {
                    continue;
                }
                let key = stream_key(&e);
                let g = stream_gen.get(&key).copied().unwrap_or(0);
                pending
                    .entry((key, g))
                    .or_default()
                    .push_back(Item { idx: i, seq: e.seq });
            }
            Class::Stream if name_of(e.api).contains("Destroy") => {
                *stream_gen.entry(stream_key(&e)).or_default() += 1;
            }
            Class::Event if name_of(e.api).contains("Destroy") => {
                *event_gen.entry(e.a1).or_default() += 1;
            }
            Class::EventRecord if !captures.capturing(&e) => {
                let key = stream_key(&e);
                let g = stream_gen.get(&key).copied().unwrap_or(0);
                let eg = event_gen.get(&e.a1).copied().unwrap_or(0);
                records.insert((e.a1, eg), ((key, g), e.seq));
            }
            Class::Sync | Class::EventSync => {
                let name = name_of(e.api);
                let mut covered = Vec::new();
                if class == Class::EventSync {
                    let eg = event_gen.get(&e.a1).copied().unwrap_or(0);
                    if let Some(&(sg, bound)) = records.get(&(e.a1, eg)) {
                        if let Some(q) = pending.get_mut(&sg) {
                            drain_before(q, bound, &mut covered);
                        }
                    }
                } else if e.a0 == 0
                    && e.flags & entry_flags::PER_THREAD == 0
                    && !name.contains("Stream")
                {
                    for q in pending.values_mut() {
                        drain_before(q, e.seq, &mut covered);
                    }
                    covered.sort_unstable_by_key(|it| it.seq);
                } else {
                    let key = stream_key(&e);
                    let g = stream_gen.get(&key).copied().unwrap_or(0);
                    if let Some(q) = pending.get_mut(&(key, g)) {
                        drain_before(q, e.seq, &mut covered);
                    }
                }
                pending.retain(|_, q| !q.is_empty());
                record_wait(h, &e, name, &covered, entries, &device, look, &mut out);
            }
            _ => {}
        }
    }
    out
}

/// Adds one wait to the ring's accounting.
#[allow(clippy::too_many_arguments)]
fn record_wait(
    h: &Header,
    e: &Entry,
    name: String,
    covered: &[Item],
    entries: &[Entry],
    device: &HashMap<u64, CallDevice>,
    look: &Lookup,
    out: &mut WaitsPartial,
) {
    let blocked = h.span_ns(e.t_begin, e.t_end);
    // The last device end, known only when every covered item has one.
    let last_end = if covered.is_empty() {
        None
    } else {
        covered.iter().try_fold(0u64, |m, it| {
            device
                .get(&it.seq)
                .and_then(|d| d.last_end)
                .map(|t| m.max(h.ticks_to_ns(t)))
        })
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
        let from_device = device.get(&it.seq).map(|d| d.kernels.as_slice());
        let mut add = |k: String| {
            if !kernels.contains(&k) {
                kernels.push(k);
            }
            kernels.len() >= KERNELS_MAX
        };
        match from_device {
            Some(ids) if !ids.is_empty() => {
                for &id in ids {
                    if add((look.text)(id)) {
                        break 'items;
                    }
                }
            }
            _ => {
                let c = &entries[it.idx];
                if (look.class)(c) == Some(Class::Launch) {
                    if let Some(k) = (look.kernel)(c.a1) {
                        if add(k) {
                            break 'items;
                        }
                    }
                }
            }
        }
    }
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
    let mut by_name: HashMap<String, WaitAcc> = HashMap::new();
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
            a.blocked.sort_unstable();
            a.waited.sort_unstable();
            a.tails.sort_unstable();
            WaitStats {
                name,
                count: a.count,
                empty: a.empty,
                blocked_total_ns: a.blocked.iter().fold(0u64, |s, &x| s.saturating_add(x)),
                blocked_p50_ns: percentile(&a.blocked, 50),
                blocked_p99_ns: percentile(&a.blocked, 99),
                work_items: a.work_items,
                with_device_times: a.waited.len() as u64,
                waited_p50_ns: (!a.waited.is_empty()).then(|| percentile(&a.waited, 50)),
                tail_p50_ns: crate::device::percentile_i64(&a.tails, 50),
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
