//! The model behind `causeway report`: per-process accounting, per-API call statistics, kernel launch
//! counts and NVTX ranges, computed from decoded and paired rings. Rendering lives in `render`; this
//! module only computes, so tests can assert exact numbers and `--json` can serialize it as is.
//!
//! Kernel counts are executions, as a profiler (CUPTI) counts them, not launch calls: a launch into a
//! stream that is being captured executes nothing (it adds a node to a graph), and a graph launch
//! executes every kernel node of its instantiated graph. `KernelStats` shows both parts.
//!
//! At level 3 the `device` section adds what the device observed (`crate::device`): when each kernel,
//! copy and memset ran, tied by sequence number to the call that issued it.

mod device;

use crate::facts::model::{ProcessTimeline, Timeline};
use crate::facts::ranges::Pairer;
use crate::facts::streams::Captures;
use crate::facts::waits::{self, Rider, WaitsPartial};
pub use crate::facts::waits::{Wait, WaitStats};
use crate::read::capture::{Capture, CaptureError, Ring};
use crate::read::decode::{Decoded, Entries};
use crate::read::names::{layer_name, Names};
use crate::read::pair::{args_of, Nester, Nesting, Tag};
use crate::util::fastmap::{ByThread, HashMap, Rows};
use crate::util::rank::Samples;
use causeway_ring::clock::Converter;
use causeway_ring::layout::{counter, flags};
use causeway_ring::{Class, Entry, Header, Kind};
use device::DevicePartial;
pub use device::{
    DeviceClock, DeviceCopyStats, DeviceKernelStats, DeviceReport, Unassociated,
    CONVERSION_ANCHORS, CONVERSION_CALLBACK, CONVERSION_MIXED, CONVERSION_NONE,
};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub capture: String,
    pub processes: Vec<Process>,
    /// Sorted by total host time, largest first.
    pub apis: Vec<ApiStats>,
    /// Sorted by executions (`launches`), most first.
    pub kernels: Vec<KernelStats>,
    /// Sorted by total time, largest first.
    pub ranges: Vec<RangeStats>,
    pub marks: Vec<MarkStats>,
    /// CUDA entry points the program looked up (through `cuGetProcAddress` or `dlsym`) and got a
    /// function no hook of the shim stands in for: their calls were not traced. All processes, sorted
    /// by name (per process: `Process::untraced`).
    pub unmatched_lookups: Vec<Unmatched>,
    /// Level 3: what the device observed (all zero and empty without device intervals).
    pub device: DeviceReport,
    /// Host waits (stream, device/context and event syncs) per API name, with the device work each
    /// waited for (`crate::waits`); sorted by total blocked time, largest first.
    pub waits: Vec<WaitStats>,
    /// The longest individual waits (at most `waits::LONGEST`), longest first.
    pub longest_waits: Vec<Wait>,
    pub totals: Totals,
    /// One line each, for the user: lost or unfinished entries, shims that disabled themselves.
    pub warnings: Vec<String>,
    /// What the programs named through NVTX (streams, events, devices, contexts, categories, threads),
    /// by process, kind and handle; a thing named twice has its later name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nvtx_names: Vec<NvtxName>,
}

/// A stream, event, device, context, category or thread the program named through NVTX.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct NvtxName {
    pub pid: u32,
    /// `stream`, `event`, `device`, `context`, `category`, `thread` or `other` (a generic resource).
    pub kind: &'static str,
    /// The handle (stream, event, context), device ordinal, category number, thread id or resource
    /// identifier named.
    pub handle: u64,
    /// The domain of a category or resource (`None`: the default domain, or named by a call that
    /// takes none).
    pub domain: Option<String>,
    pub name: String,
}

/// The `named` kind of a name-class call, as reports print it.
fn named_kind(a2: u64) -> &'static str {
    use causeway_ring::layout::named;
    match a2 & 0xff {
        named::DEVICE => "device",
        named::CONTEXT => "context",
        named::STREAM => "stream",
        named::EVENT => "event",
        named::CATEGORY => "category",
        named::THREAD => "thread",
        _ => "other",
    }
}

/// The NVTX names of one ring: a walk over its calls, made only when the per-API table counted a
/// naming call (programs rarely name anything).
fn nvtx_names(h: &Header, entries: Entries, names: &Names, apis: &ApiTable) -> Vec<NvtxName> {
    let named = |id: u16| names.api(id).is_some_and(|(_, i)| i.class == Class::Name);
    if !apis.by_id.iter().any(|(id, a)| a.calls > 0 && named(*id)) {
        return Vec::new();
    }
    let mut latest: BTreeMap<(&'static str, u64, u64), String> = BTreeMap::new();
    for e in entries.iter() {
        if e.kind != Some(Kind::Call) || names.class(&e) != Some(Class::Name) || e.a1 == 0 {
            continue;
        }
        let kind = named_kind(e.a2);
        let domain = e.a2 >> 32;
        latest.insert((kind, e.a0, domain), names.text(e.a1));
    }
    latest
        .into_iter()
        .map(|((kind, handle, domain), name)| NvtxName {
            pid: h.pid,
            kind,
            handle,
            domain: names.domain(domain),
            name,
        })
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct Process {
    pub file: String,
    /// The ring's key: its file name without `.cwring` (the `ring` column of every exported table;
    /// unique where a pid is not: a process that execs keeps its pid and writes a second ring).
    pub ring: String,
    pub pid: u32,
    pub ppid: u32,
    pub exe: String,
    pub host: String,
    pub level: u32,
    pub policy: String,
    pub capacity: u64,
    /// Committed entries read from the ring's window.
    pub entries: u64,
    pub dropped: u64,
    pub torn: u64,
    pub open: u64,
    pub overwritten: u64,
    /// Entries whose kind byte this scanner does not know (newer shim, or corruption).
    pub unknown_kind: u64,
    /// A TSC ring whose tick rate is unknown (0 in its header, and its anchors measure none): its
    /// times cannot be made nanoseconds (a damaged header). Said in a warning, not in the JSON.
    #[serde(skip)]
    pub no_tick_rate: bool,
    pub threads: usize,
    pub strings_dropped: u32,
    /// A string record was reserved but never committed; later names are missing.
    pub strings_torn: bool,
    pub counters: BTreeMap<String, u64>,
    pub notice: Option<String>,
    pub disabled: bool,
    pub closed: bool,
    pub forked: bool,
    /// Device-timing backend of the ring (`none`, `cupti`, `events`).
    pub backend: String,
    /// The events backend timed one in this many steps, or device-work calls (1: every call).
    pub sample_every: u32,
    /// Whether it sampled steps (outermost NVTX push ranges, every call in a timed one) rather than
    /// calls (header flag `step_sampled`).
    pub step_sampled: bool,
    /// Committed entries found past the header's head word (a damaged header would hide them).
    pub head_behind: u64,
    /// No call, NVTX range or mark, device interval, drop or torn slot: only the process's own
    /// lifecycle (a shell, a compiler). The text report folds such processes into one line.
    pub recorded_nothing: bool,
    /// Device intervals read (level 3).
    pub device_intervals: u64,
    /// Device intervals tied to the live call that issued them.
    pub associated: u64,
    pub unassociated: Unassociated,
    /// Device records the backend itself dropped (header counter `device_dropped`).
    pub device_dropped: u64,
    /// Device work the backend could not time (header counter `device_untimed`).
    pub device_untimed: u64,
    /// Device intervals not on the ring's clock: their durations count, their times do not.
    pub unconverted: u64,
    /// Entry points this process reached that the shim does not trace (`Report::unmatched_lookups`),
    /// sorted by name; absent from the JSON when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub untraced: Vec<Unmatched>,
    /// The process's work tokens (`facts::tokens`); absent from the JSON when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<crate::facts::tokens::Summary>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ApiStats {
    pub name: String,
    pub layer: String,
    pub class: String,
    /// Calls seen, completed or not.
    pub calls: u64,
    /// Completed calls that returned nonzero.
    pub errors: u64,
    /// How many completed calls returned each nonzero code (`cudaError_t` / `CUresult`).
    pub error_codes: BTreeMap<i32, u64>,
    /// Calls that had not returned.
    pub open: u64,
    /// Host time of completed calls.
    pub total_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct KernelStats {
    /// The kernel's name, demangled when it is a mangled C++ symbol.
    pub name: String,
    /// The symbol as the program named it (the same as `name` when it is not mangled).
    pub symbol: String,
    /// Executions the program asked for: `direct + via_graph`. Comparable to a profiler's count.
    pub launches: u64,
    /// Launch calls that returned success outside stream capture, each counted once however many
    /// layers saw it.
    pub direct: u64,
    /// Executions as a kernel node of a graph: one per node per successful graph launch.
    pub via_graph: u64,
    /// Launch calls that returned success into a stream being captured: each added a node to a graph
    /// and executed nothing (the node runs, and counts in `via_graph`, when the graph is launched).
    pub captured: u64,
    /// Launch calls that returned an error.
    pub failed: u64,
    /// Launch calls that had not returned.
    pub open: u64,
    /// Device intervals with this kernel's name: executions observed on the device. Present only when
    /// the capture has device intervals (level 3); compare with `launches`, executions requested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_count: Option<u64>,
}

impl KernelStats {
    /// Adds another row for the same kernel (another process).
    fn absorb(&mut self, k: &KernelStats) {
        self.launches += k.launches;
        self.direct += k.direct;
        self.via_graph += k.via_graph;
        self.captured += k.captured;
        self.failed += k.failed;
        self.open += k.open;
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RangeStats {
    pub name: String,
    /// `None` for NVTX's default domain.
    pub domain: Option<String>,
    /// Completed ranges (push matched by pop, start matched by end).
    pub count: u64,
    /// Pushes or starts with no matching pop or end in the capture.
    pub open: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MarkStats {
    pub name: String,
    pub domain: Option<String>,
    pub count: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Totals {
    pub entries: u64,
    pub dropped: u64,
    pub torn: u64,
    pub open: u64,
    pub overwritten: u64,
    pub calls: u64,
    /// Kernel executions: the sum of `kernels[].launches` (direct launches and graph kernel nodes).
    pub launches: u64,
    pub failed_launches: u64,
    /// Graph launch calls that returned success outside stream capture, each counted once however
    /// many layers saw it.
    pub graph_launches: u64,
    /// Graph launches whose kernels are not (all) known: no graph-node entries for their exec (its
    /// instantiation was not recorded, or its entries were lost), so their executions are missing
    /// from `launches`.
    pub graph_launches_unresolved: u64,
    /// Launch calls into a capturing stream: the sum of `kernels[].captured`.
    pub captured_launches: u64,
    /// Level Zero command-list executes and Unified Runtime command-buffer enqueues that succeeded:
    /// they run work whose launches were counted when appended, once, however often it runs.
    #[serde(skip_serializing_if = "is_zero")]
    pub list_executes: u64,
    /// Pops and ends that matched no push or start (their opening entry was lost).
    pub unmatched_range_ends: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Report {
    /// Opens, decodes and summarizes the capture at `path`.
    pub fn from_path(path: &Path) -> Result<Report, CaptureError> {
        let capture = Capture::open(path)?;
        let rings = capture.rings()?;
        let mut r = Report::build(&path.display().to_string(), &rings);
        r.warnings.splice(0..0, capture.skipped_warnings());
        Ok(r)
    }

    /// Summarizes already validated rings (one per process).
    pub fn build(capture: &str, rings: &[Ring]) -> Report {
        Self::build_and(capture, rings, false).0
    }

    /// The report and the timeline of the rings, each ring decoded once for both (`html` and
    /// `compare` show both).
    pub fn build_with_timeline(capture: &str, rings: &[Ring]) -> (Report, Timeline) {
        let (r, t) = Self::build_and(capture, rings, true);
        (
            r,
            Timeline {
                processes: t.into_iter().flatten().collect(),
            },
        )
    }

    fn build_and(
        capture: &str,
        rings: &[Ring],
        timeline: bool,
    ) -> (Report, Vec<Option<ProcessTimeline>>) {
        let progress = crate::util::progress::Progress::rings(
            "causeway report",
            rings.len(),
            crate::read::capture::bytes_of(rings),
        );
        let (partials, timelines): (Vec<Partial>, Vec<Option<ProcessTimeline>>) = rings
            .par_iter()
            .map(|r| {
                let p = analyze(r, timeline);
                progress.ring_done();
                p
            })
            .unzip();
        drop(progress);
        (merge(capture, partials), timelines)
    }
}

/// Names from one ring's string area. Keys are the writer's, so they are only meaningful per ring.
#[derive(Default)]
struct ApiAcc {
    layer: String,
    class: String,
    calls: u64,
    errors: u64,
    error_codes: BTreeMap<i32, u64>,
    open: u64,
    durations: Samples<u64>,
}

impl ApiAcc {
    /// Adds another accumulator for the same API (another id, another process).
    fn absorb(&mut self, other: ApiAcc) {
        self.calls += other.calls;
        self.errors += other.errors;
        self.open += other.open;
        for (code, n) in other.error_codes {
            *self.error_codes.entry(code).or_default() += n;
        }
        self.durations.append(other.durations);
    }
}

#[derive(Default)]
struct RangeAcc {
    count: u64,
    open: u64,
    total_ns: u64,
    max_ns: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Unmatched {
    pub name: String,
    pub count: u64,
}

/// What one ring contributes; merged across processes by name.
struct Partial {
    process: Process,
    decoded_totals: Totals,
    apis: HashMap<String, ApiAcc>,
    kernels: HashMap<String, KernelStats>,
    ranges: HashMap<(String, Option<String>), RangeAcc>,
    marks: HashMap<(String, Option<String>), u64>,
    unmatched: HashMap<String, u64>,
    device: DevicePartial,
    waits: WaitsPartial,
    /// Demangled kernel names → the symbols they came from.
    symbols: Vec<(String, String)>,
    nvtx_names: Vec<NvtxName>,
}

/// One ring's analysis, in as few passes over its entries as the dependencies allow: a pass over 10 M
/// entries costs ~65 ms of memory traffic before any work (see docs/results, scanner throughput).
///
/// 1. Side by side: the calls' nesting (its per-thread stacks give the thread set), and the non-calls
///    decode listed (anchors, then the device table of the waits, beside NVTX and the other host
///    tables).
/// 2. Side by side: kernel executions and host waits (both walk the calls in order, on the nesting).
///
/// The per-API table and the device intervals are order-free and placed by the threads the pool has
/// ([`fused`]): with few, they ride along walks made anyway (the nesting; the device table's walk
/// over the intervals), which saves CPU time; with many, they are arms of their own (the device pass
/// beside the waits), which saves wall time. On one thread, where nothing runs beside anything,
/// walks are merged instead ([`alone`]): the nesting, the per-API table and the device intervals
/// ride along the decoder's check of every slot ([`WalkAlong`]; the device pass is made apart when
/// an interval needs the anchors, read later), and kernel counting rides along the waits' walk.
/// Every way the report is the same (tested).
fn analyze(ring: &Ring, timeline: bool) -> (Partial, Option<ProcessTimeline>) {
    let names = Names::of(ring);
    // On one thread the nesting, the per-API table and the device intervals ride along the
    // decoder's check of every slot: one walk over the ring, not three.
    let along = alone().then(|| WalkAlong {
        names: &names,
        ticks: ring.view.header.converter(),
        header: &ring.view.header,
    });
    crate::read::decode::analysed_along(&ring.view, along.as_ref(), |d, walked| {
        if timeline {
            let (p, t) = rayon::join(
                || analyze_decoded(ring, d, &names, walked),
                || crate::facts::model::process_decoded(ring, d, &names),
            );
            (p, Some(t))
        } else {
            (analyze_decoded(ring, d, &names, walked), None)
        }
    })
}

/// What one thread builds along the decoder's walk ([`analyze`]).
struct WalkAlong<'a> {
    names: &'a Names,
    ticks: Converter,
    header: &'a Header,
}

/// [`WalkAlong`]'s state: the nesting, the per-API table, and the device intervals with the
/// waits' device table, unless an interval could not be taken along (it needed the events
/// backend's anchors, read later, or named a call not checked yet: `device::Walk::step`);
/// `device_ok` is then false and the device pass is made apart, as on more threads.
struct Walked {
    nest: Nester,
    apis: ApiTable,
    device: device::Walk,
    call_device: waits::CallDevice,
    device_ok: bool,
}

impl crate::read::decode::Along for WalkAlong<'_> {
    type State = Walked;

    fn start(&self, len: usize) -> Walked {
        Walked {
            nest: Nester::new(len),
            apis: ApiTable::default(),
            device: device::Walk::new(self.header),
            call_device: waits::CallDevice::default(),
            device_ok: true,
        }
    }

    #[inline(always)]
    fn step(&self, w: &mut Walked, entries: Entries, i: usize, e: &Entry) {
        if e.kind == Some(Kind::DeviceInterval) {
            if w.device_ok {
                let table = &mut w.call_device;
                w.device_ok = w.device.step(
                    entries,
                    None,
                    |c| self.names.class(c),
                    i,
                    e,
                    |call, k, _| table.add(call, k),
                );
            }
            return;
        }
        if w.nest.step(i, e, |e| self.names.class(e)).is_some() {
            w.apis.add(&self.ticks, e);
        }
    }
}

/// Threads up to which the order-free passes ride along others (see [`analyze`]). Measured on the
/// H200 machine: fused was 12 % faster on two CPUs, spread 40 % faster on sixteen
/// (docs/results/2026-11-29-scanner-throughput.md).
const FUSED_UP_TO: usize = 2;

fn fused() -> bool {
    rayon::current_num_threads() <= FUSED_UP_TO
}

/// One thread: kernel counting rides along the wait pass's walk over the calls instead of making
/// its own, which saves 7 % of the instructions (callgrind, 1 M entries). On two CPUs counting
/// beside the waits was faster: 0.373 s against 0.413 s median for 10 M entries, 9 runs each on the
/// H200 machine (docs/results/2026-11-29-scanner-throughput.md).
fn alone() -> bool {
    rayon::current_num_threads() == 1
}

fn analyze_decoded(ring: &Ring, d: &Decoded, names: &Names, walked: Option<Walked>) -> Partial {
    let h = &ring.view.header;
    let entries = d.entries();
    let fused = fused();
    let (calls_along, device_along) = match walked {
        Some(w) => (
            Some((w.nest, w.apis)),
            w.device_ok.then_some((w.device, w.call_device)),
        ),
        None => (None, None),
    };
    let calls = || {
        if let Some((nest, apis)) = calls_along {
            return (nest.finish(), apis);
        }
        let (mut apis, ticks) = (ApiTable::default(), h.converter());
        let nest = Nesting::visiting(
            entries,
            |e| names.class(e),
            |_, e, _| {
                if fused {
                    apis.add(&ticks, e);
                }
            },
        );
        (nest, apis)
    };
    let apis_alone = || {
        let (mut apis, ticks) = (ApiTable::default(), h.converter());
        if !fused {
            for e in entries.iter().filter(|e| e.kind == Some(Kind::Call)) {
                apis.add(&ticks, &e);
            }
        }
        apis
    };
    let non_calls = || {
        // The events backend's clock model, read once for the device pass and the wait pass.
        let anchors = crate::facts::anchors::Anchors::of(h, d.rest().map(|(_, e)| e));
        let table = || {
            if let Some((walk, call_device)) = device_along {
                let device = walk.finish(
                    &anchors,
                    |id| names.kernel_text(id),
                    |f| names.kernel(f).map(str::to_string),
                );
                (Some(device), call_device.finish())
            } else if fused {
                let mut call_device = waits::CallDevice::default();
                let device = device_pass(h, d, names, &anchors, Some(&mut call_device));
                (Some(device), call_device.finish())
            } else {
                let call_device = waits::CallDevice::of(entries, d.intervals_alone());
                (None, call_device)
            }
        };
        let ((device, call_device), others) = rayon::join(table, || others_stats(h, d, names));
        (anchors, device, call_device, others)
    };
    let ((nest, nest_apis), ((anchors, device, call_device, others), alone_apis)) =
        rayon::join(calls, || rayon::join(non_calls, apis_alone));
    let apis = if fused { nest_apis } else { alone_apis };
    let mut totals = Totals {
        entries: d.live,
        dropped: d.dropped,
        torn: d.torn,
        open: d.open,
        overwritten: d.overwritten,
        calls: apis.calls(),
        unmatched_range_ends: others.unmatched_range_ends,
        ..Totals::default()
    };
    let waits = |rider: &mut Option<KernelCount>| {
        let look = waits::Lookup {
            class: &|e| names.class(e),
            api_name: &|id| {
                names
                    .api(id)
                    .map_or_else(|| format!("<api {id}>"), |(n, _)| n.to_string())
            },
            kernel: &|h| names.kernel(h).map(str::to_string),
            text: &|id| names.kernel_text(id),
        };
        waits::analyze(h, entries, &nest, &call_device, &anchors, &look, rider)
    };
    let device = || device.unwrap_or_else(|| device_pass(h, d, names, &anchors, None));
    let (kernels, (waits, device)) = if alone() {
        // Kernel counting rides along the wait pass's walk over the calls: one walk, not two.
        let mut count = Some(KernelCount::new(entries, names, &nest));
        let waits = waits(&mut count);
        let kernels = count.map_or_else(HashMap::default, |c| c.finish(&mut totals));
        (kernels, (waits, device()))
    } else {
        rayon::join(
            || kernel_stats(d, names, &nest, &mut totals),
            || rayon::join(|| waits(&mut None), device),
        )
    };
    let mut threads = Threads::default();
    for &tid in nest.threads() {
        threads.add(tid);
    }
    threads.absorb(&others.threads);
    let mut process = process(ring, d, &device, threads.len(), others.unknown_kind);
    // One walk over the non-calls, like the NVTX tables'.
    let tokens = crate::facts::tokens::tokens(h, d, names);
    process.tokens = (!tokens.is_empty()).then(|| tokens.summary());
    // Nothing but its own start and end (a shell, a compiler a framework ran).
    process.recorded_nothing = totals.calls == 0
        && others.ranges.is_empty()
        && others.marks.is_empty()
        && process.tokens.is_none()
        && process.device_intervals == 0
        && process.dropped == 0
        && process.torn == 0;
    Partial {
        process,
        decoded_totals: totals,
        nvtx_names: nvtx_names(h, entries, names, &apis),
        apis: apis.named(names),
        kernels,
        ranges: others.ranges,
        marks: others.marks,
        unmatched: others.unmatched,
        device,
        waits,
        symbols: names
            .symbols()
            .map(|(a, b)| (a.clone(), b.clone()))
            .collect(),
    }
}

/// The device intervals of one ring; with `call_device`, filling the waits' device table on the way.
fn device_pass(
    h: &Header,
    d: &Decoded,
    names: &Names,
    anchors: &crate::facts::anchors::Anchors,
    mut call_device: Option<&mut waits::CallDevice>,
) -> DevicePartial {
    device::analyze(
        h,
        d.entries(),
        d.intervals(),
        anchors,
        |e| names.class(e),
        |id| names.kernel_text(id),
        |f| names.kernel(f).map(str::to_string),
        |call, i, _| {
            if let Some(t) = call_device.as_deref_mut() {
                t.add(call, i);
            }
        },
    )
}

/// The program's threads: every thread id except the device backend's own (it writes the device
/// intervals and anchors). A set, not a sorted copy of every entry's thread id (10 M of them).
#[derive(Default)]
struct Threads(ByThread<()>);

impl Threads {
    #[inline]
    fn add(&mut self, tid: u32) {
        self.0.get_or_insert_with(tid, || ());
    }

    fn absorb(&mut self, other: &Threads) {
        for tid in other.0.ids() {
            self.add(tid);
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

fn process(
    ring: &Ring,
    d: &Decoded,
    dev: &DevicePartial,
    threads: usize,
    unknown_kind: u64,
) -> Process {
    let h = &ring.view.header;
    let counters = counter::NAMES
        .iter()
        .enumerate()
        .map(|(i, n)| (n.to_string(), h.counters[i]))
        .collect();
    Process {
        file: ring.path.display().to_string(),
        ring: crate::facts::model::ring_key(ring.path),
        pid: h.pid,
        ppid: h.ppid,
        exe: h.exe.clone(),
        host: h.host.clone(),
        level: h.level,
        policy: h.policy.name().to_string(),
        capacity: h.capacity,
        entries: d.live,
        dropped: d.dropped,
        torn: d.torn,
        open: d.open,
        overwritten: d.overwritten,
        unknown_kind,
        no_tick_rate: h.clock == causeway_ring::ClockKind::Tsc && h.rate == 0,
        threads,
        strings_dropped: h.strings_dropped,
        strings_torn: ring.view.strings_torn,
        counters,
        notice: h.notice.clone(),
        disabled: h.flags & flags::DISABLED != 0,
        closed: h.flags & flags::CLOSED != 0,
        forked: h.flags & flags::FORKED != 0,
        backend: crate::facts::device::backend_name(h.backend),
        sample_every: h.sample_every.max(1),
        step_sampled: h.flags & flags::STEP_SAMPLED != 0,
        head_behind: h.head_behind,
        recorded_nothing: false,
        untraced: Vec::new(),
        tokens: None,
        device_intervals: dev.intervals,
        associated: dev.associated,
        unassociated: dev.unassociated,
        device_dropped: h.counters[counter::DEVICE_DROPPED],
        device_untimed: h.counters[counter::DEVICE_UNTIMED],
        unconverted: dev.unconverted,
    }
}

/// Per-API call statistics, aggregated by API id (no string work per entry) and named at the end.
/// Only `Kind::Call` entries are API calls; NVTX and lifecycle entries are instants, not calls.
#[derive(Default)]
struct ApiTable {
    /// Row in `by_id` by API id (`u32::MAX`: none yet).
    slot: Vec<u32>,
    by_id: Vec<(u16, ApiAcc)>,
}

impl ApiTable {
    #[inline(always)]
    fn add(&mut self, ticks: &Converter, e: &Entry) {
        let id = e.api as usize;
        if id >= self.slot.len() {
            self.slot.resize(id + 1, u32::MAX);
        }
        let s = &mut self.slot[id];
        if *s == u32::MAX {
            *s = self.by_id.len() as u32;
            self.by_id.push((e.api, ApiAcc::default()));
        }
        let acc = &mut self.by_id[*s as usize].1;
        acc.calls += 1;
        if e.done {
            if e.result != 0 {
                acc.errors += 1;
                *acc.error_codes.entry(e.result).or_default() += 1;
            }
            acc.durations.push(ticks.span_ns(e.t_begin, e.t_end));
        } else {
            acc.open += 1;
        }
    }

    /// Calls seen, of every API.
    fn calls(&self) -> u64 {
        self.by_id.iter().map(|(_, a)| a.calls).sum()
    }

    fn named(self, names: &Names) -> HashMap<String, ApiAcc> {
        let mut out: HashMap<String, ApiAcc> = HashMap::default();
        for (id, acc) in self.by_id {
            let (name, layer, class) = match names.api(id) {
                Some((name, info)) => (name.to_string(), layer_name(info.layer), info.class.name()),
                None => (format!("<api {id}>"), "unknown", Class::Other.name()),
            };
            // Two ids with one name (a corrupt or repeated record) still make one row.
            let m = out.entry(name).or_insert_with(|| ApiAcc {
                layer: layer.into(),
                class: class.into(),
                ..ApiAcc::default()
            });
            m.absorb(acc);
        }
        out
    }
}

/// The kernel nodes of one instantiated graph exec, from graph-node entries.
#[derive(Default)]
struct GraphExec {
    /// Kernel nodes the entries declare.
    count: u32,
    /// Function handle by node ordinal.
    nodes: BTreeMap<u32, u64>,
    /// Successful graph launches of this node list not yet added to its kernels.
    launched: u64,
}

/// Kernel rows of one process, keyed by the function handle that names them (no string work per
/// launch) and named at the end.
#[derive(Default)]
struct Kernels {
    rows: Rows<u64, KernelStats>,
}

impl Kernels {
    #[inline]
    fn row(&mut self, handle: u64) -> &mut KernelStats {
        self.rows.row(handle)
    }

    /// Adds `g`'s pending launches to its kernels: one execution per node per launch.
    fn flush(&mut self, g: &mut GraphExec) {
        if g.launched == 0 {
            return;
        }
        for &f in g.nodes.values() {
            self.row(f).via_graph += g.launched;
        }
        g.launched = 0;
    }

    /// The rows by kernel name; two handles with one name make one row.
    fn named(self, names: &Names) -> HashMap<String, KernelStats> {
        let mut out: HashMap<String, KernelStats> = HashMap::default();
        for (h, k) in self.rows {
            let name = names
                .kernel(h)
                .map_or_else(|| unknown_handle(h), str::to_string);
            out.entry(name.clone())
                .or_insert_with(|| KernelStats {
                    name,
                    ..KernelStats::default()
                })
                .absorb(&k);
        }
        out
    }
}

fn unknown_handle(h: u64) -> String {
    format!("<unknown handle {h:#x}>")
}

/// Counts kernel executions, in sequence order per process:
/// * a launch counts once: a launch-class call inside another launch-class call is the same launch
///   seen one layer down (runtime → driver), so only the outermost counts (likewise graph launches);
/// * a launch into a capturing stream (between a successful begin and end of capture on the stream,
///   or on a stream that joined that capture by waiting on an event recorded in it) is `captured`;
/// * a successful graph launch outside capture executes each kernel node of its exec, as the
///   graph-node entries of the exec's latest instantiation list them.
fn kernel_stats(
    d: &Decoded,
    names: &Names,
    nest: &Nesting,
    totals: &mut Totals,
) -> HashMap<String, KernelStats> {
    let entries = d.entries();
    let mut count = KernelCount::new(entries, names, nest);
    let mut captures = Captures::default();
    for i in 0..entries.len() {
        // Nested in a call of its own class: the same operation one layer down, already counted.
        let (class, outermost) = match nest.tag(i) {
            Tag::Skip => continue,
            Tag::GraphNode => {
                count.graph_node(entries, i);
                continue;
            }
            Tag::Call { class, outermost } => (class, outermost),
        };
        // Only what is counted or changes capture state needs the entry read.
        let counted = outermost && matches!(class, Class::Launch | Class::GraphLaunch);
        if !counted && !Captures::tracks(class) {
            continue;
        }
        // As in the wait pass: the next calls read are a few entries on.
        entries.prefetch(i + waits::READ_AHEAD);
        let e = &args_of(entries, nest, i);
        if counted {
            count.launch(i, class, e, &captures);
        } else {
            captures.apply(class, e);
        }
    }
    count.finish(totals)
}

/// Kernel counting ([`kernel_stats`]) as a pass that walks the calls alone or rides along the wait
/// pass's walk ([`waits::Rider`]): fed the graph-node entries and the outermost launches and graph
/// launches in sequence order, with the capture state at each.
struct KernelCount<'a> {
    entries: Entries<'a>,
    names: &'a Names,
    nest: &'a Nesting,
    graphs: HashMap<u64, GraphExec>,
    out: Kernels,
    /// Whether a handle has a name, by handle: asked per launch, answered by the string area's map.
    named: Rows<u64, Option<bool>>,
    graph_launches: u64,
    graph_launches_unresolved: u64,
    list_executes: u64,
}

impl<'a> KernelCount<'a> {
    fn new(entries: Entries<'a>, names: &'a Names, nest: &'a Nesting) -> Self {
        KernelCount {
            entries,
            names,
            nest,
            graphs: HashMap::default(),
            out: Kernels::default(),
            named: Rows::default(),
            graph_launches: 0,
            graph_launches_unresolved: 0,
            list_executes: 0,
        }
    }

    #[inline]
    fn has_name(&mut self, h: u64) -> bool {
        let names = self.names;
        *self
            .named
            .row(h)
            .get_or_insert_with(|| names.kernel(h).is_some())
    }

    /// The kernel rows by name, and the launch totals added to `totals`.
    fn finish(mut self, totals: &mut Totals) -> HashMap<String, KernelStats> {
        for g in self.graphs.values_mut() {
            self.out.flush(g);
        }
        totals.graph_launches += self.graph_launches;
        totals.graph_launches_unresolved += self.graph_launches_unresolved;
        totals.list_executes += self.list_executes;
        let mut rows = self.out.named(self.names);
        for k in rows.values_mut() {
            k.launches = k.direct + k.via_graph;
            totals.launches += k.launches;
            totals.failed_launches += k.failed;
            totals.captured_launches += k.captured;
        }
        rows
    }
}

impl waits::Rider for KernelCount<'_> {
    #[inline]
    fn graph_node(&mut self, entries: Entries, i: usize) {
        graph_node(&entries.get(i), &mut self.graphs, &mut self.out);
    }

    #[inline]
    fn launch(&mut self, i: usize, class: Class, e: &Entry, captures: &Captures) {
        match class {
            Class::Launch => {
                // The runtime's handle, or else the one the driver call below it named. The same
                // operation one layer down: its kernel name names a runtime launch whose own handle
                // has none.
                let handle = if self.has_name(e.a1) {
                    e.a1
                } else {
                    let below = self.nest.child(i).map(|c| self.entries.get(c).a1);
                    below.filter(|&h| self.has_name(h)).unwrap_or(e.a1)
                };
                let captured = captures.capturing(e);
                let k = self.out.row(handle);
                if !e.done {
                    k.open += 1;
                } else if e.result != 0 {
                    k.failed += 1;
                } else if captured {
                    k.captured += 1;
                } else {
                    k.direct += 1;
                }
            }
            // A CUDA graph launch runs its exec's kernel nodes. A Level Zero command-list execute or
            // a Unified Runtime command buffer runs work whose launches were recorded as they were
            // appended, and counted there.
            Class::GraphLaunch
                if e.done
                    && e.result == 0
                    && !captures.capturing(e)
                    && self.names.api(e.api).is_some_and(|(_, i)| {
                        matches!(
                            i.layer,
                            causeway_ring::Layer::Runtime | causeway_ring::Layer::Driver
                        )
                    }) =>
            {
                self.graph_launches += 1;
                match self.graphs.get_mut(&e.a1) {
                    Some(g) => {
                        g.launched += 1;
                        if g.nodes.len() < g.count as usize {
                            self.graph_launches_unresolved += 1;
                        }
                    }
                    None => self.graph_launches_unresolved += 1,
                }
            }
            Class::GraphLaunch
                if e.done
                    && e.result == 0
                    && self.names.api(e.api).is_some_and(|(_, i)| {
                        matches!(
                            i.layer,
                            causeway_ring::Layer::LevelZero | causeway_ring::Layer::UnifiedRuntime
                        )
                    }) =>
            {
                self.list_executes += 1
            }
            _ => {}
        }
    }
}

/// Adds one graph-node entry to its exec's node list. Ordinal 0 starts the list afresh (a new
/// instantiation, possibly reusing the handle); so does an ordinal that does not fit the current list
/// (its ordinal-0 entry was lost). Ordinal 0 of count 0 is an explicitly empty list (a graph with no
/// kernel nodes); any other ordinal at or past the count contradicts itself and is ignored.
fn graph_node(e: &Entry, graphs: &mut HashMap<u64, GraphExec>, out: &mut Kernels) {
    let ordinal = e.a2 as u32;
    let count = (e.a2 >> 32) as u32;
    if ordinal >= count && (ordinal, count) != (0, 0) {
        return;
    }
    let g = graphs.entry(e.a0).or_default();
    // Launches so far ran the list as it was.
    out.flush(g);
    if ordinal == 0 || g.count != count || g.nodes.contains_key(&ordinal) {
        g.count = count;
        g.nodes.clear();
    }
    if count > 0 {
        g.nodes.insert(ordinal, e.a1);
    }
}

type RangeKey = (String, Option<String>);

/// What the non-call entries give the host tables.
#[derive(Default)]
struct Others {
    ranges: HashMap<RangeKey, RangeAcc>,
    marks: HashMap<RangeKey, u64>,
    /// Pops and ends that matched no push or start.
    unmatched_range_ends: u64,
    /// `cuGetProcAddress` answers that matched no hook, by symbol.
    unmatched: HashMap<String, u64>,
    /// Entries of a kind this scanner does not know.
    unknown_kind: u64,
    /// Threads of NVTX and lifecycle entries (not the device backend's anchors).
    threads: Threads,
}

/// The host tables of the entries that are neither calls nor device intervals, in one pass over
/// them. NVTX entries pair into ranges: push/pop nest per thread and domain; start/end pair by range
/// id (a2) across threads of the process.
fn others_stats(h: &Header, d: &Decoded, names: &Names) -> Others {
    let mut out = Others::default();
    let mut pairer = Pairer::default();
    for (_, e) in d.rest() {
        if e.kind != Some(Kind::DeviceAnchor) {
            out.threads.add(e.tid);
        }
        if let Some(r) = pairer.step(&e) {
            let key = (names.text(r.open.a0), names.domain(r.open.a1));
            let acc = out.ranges.entry(key).or_default();
            let ns = h.span_ns(r.open.t_begin, r.t_end);
            acc.count += 1;
            acc.total_ns = acc.total_ns.saturating_add(ns);
            acc.max_ns = acc.max_ns.max(ns);
        }
        match e.kind {
            Some(Kind::Mark) => {
                *out.marks
                    .entry((names.text(e.a0), names.domain(e.a1)))
                    .or_default() += 1
            }
            Some(Kind::ProcUnmatched) => *out.unmatched.entry(names.text(e.a0)).or_default() += 1,
            None => out.unknown_kind += 1,
            _ => {}
        }
    }
    for (open, _) in pairer.still_open() {
        let key = (names.text(open.a0), names.domain(open.a1));
        out.ranges.entry(key).or_default().open += 1;
    }
    out.unmatched_range_ends = pairer.unmatched_ends;
    out
}

/// One API's row, its samples reduced to percentiles.
fn api_stats((name, mut a): (String, ApiAcc)) -> ApiStats {
    let [p50, p99, max] = a.durations.percentiles([50, 99, 100]);
    ApiStats {
        name,
        layer: a.layer,
        class: a.class,
        calls: a.calls,
        errors: a.errors,
        error_codes: a.error_codes,
        open: a.open,
        total_ns: a.durations.total(),
        p50_ns: p50.unwrap_or(0),
        p99_ns: p99.unwrap_or(0),
        max_ns: max.unwrap_or(0),
    }
}

fn merge(capture: &str, partials: Vec<Partial>) -> Report {
    let mut totals = Totals::default();
    let mut processes = Vec::new();
    let mut apis: HashMap<String, ApiAcc> = HashMap::default();
    let mut kernels: HashMap<String, KernelStats> = HashMap::default();
    let mut ranges: HashMap<RangeKey, RangeAcc> = HashMap::default();
    let mut marks: HashMap<RangeKey, u64> = HashMap::default();
    let mut unmatched: HashMap<String, u64> = HashMap::default();
    let mut nvtx_names: Vec<NvtxName> = Vec::new();
    let mut devices = Vec::new();
    let mut wait_partials = Vec::new();
    let mut device_dropped = 0u64;
    let mut device_untimed = 0u64;
    let mut symbols: HashMap<String, String> = HashMap::default();
    for p in partials {
        for (shown, raw) in p.symbols {
            symbols.entry(shown).or_insert(raw);
        }
        devices.push(p.device);
        wait_partials.push(p.waits);
        device_dropped = device_dropped.saturating_add(p.process.device_dropped);
        device_untimed = device_untimed.saturating_add(p.process.device_untimed);
        let mut untraced: Vec<Unmatched> = p
            .unmatched
            .iter()
            .map(|(name, &count)| Unmatched {
                name: name.clone(),
                count,
            })
            .collect();
        untraced.sort_by(|a, b| a.name.cmp(&b.name));
        for (name, n) in p.unmatched {
            *unmatched.entry(name).or_default() += n;
        }
        let t = &p.decoded_totals;
        totals.entries += t.entries;
        totals.dropped = totals.dropped.saturating_add(t.dropped);
        totals.torn += t.torn;
        totals.open += t.open;
        totals.overwritten = totals.overwritten.saturating_add(t.overwritten);
        totals.calls += t.calls;
        totals.launches += t.launches;
        totals.failed_launches += t.failed_launches;
        totals.graph_launches += t.graph_launches;
        totals.graph_launches_unresolved += t.graph_launches_unresolved;
        totals.list_executes += t.list_executes;
        totals.captured_launches += t.captured_launches;
        totals.unmatched_range_ends += t.unmatched_range_ends;
        processes.push(Process {
            untraced,
            ..p.process
        });
        for (name, a) in p.apis {
            let m = apis.entry(name).or_insert_with(|| ApiAcc {
                layer: a.layer.clone(),
                class: a.class.clone(),
                ..ApiAcc::default()
            });
            m.absorb(a);
        }
        for (name, k) in p.kernels {
            let m = kernels.entry(name).or_insert_with(|| KernelStats {
                name: k.name.clone(),
                ..KernelStats::default()
            });
            m.absorb(&k);
        }
        for (key, r) in p.ranges {
            let m = ranges.entry(key).or_default();
            m.count += r.count;
            m.open += r.open;
            m.total_ns = m.total_ns.saturating_add(r.total_ns);
            m.max_ns = m.max_ns.max(r.max_ns);
        }
        for (key, n) in p.marks {
            *marks.entry(key).or_default() += n;
        }
        nvtx_names.extend(p.nvtx_names);
    }
    nvtx_names.sort();
    // The rows' percentiles are most of the merge's work (millions of samples in the largest):
    // computed side by side, rows and sections.
    let apis = || {
        let rows: Vec<(String, ApiAcc)> = apis.into_iter().collect();
        let mut rows: Vec<ApiStats> = rows.into_par_iter().map(api_stats).collect();
        rows.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
        rows
    };
    let (apis, (mut device, (waits, longest_waits))) = rayon::join(apis, || {
        rayon::join(
            || device::merge(devices, device_dropped, device_untimed),
            || waits::merge(wait_partials),
        )
    });
    device.sample_every = processes
        .iter()
        .map(|p: &Process| p.sample_every)
        .max()
        .unwrap_or(1);
    device.step_sampled = processes.iter().any(|p| p.step_sampled);
    if device.intervals > 0 {
        // Executions requested (launches) next to executions observed, by kernel name; a kernel the
        // device ran but no traced launch asked for gets a row of its own.
        for k in &device.kernels {
            kernels
                .entry(k.name.clone())
                .or_insert_with(|| KernelStats {
                    name: k.name.clone(),
                    ..KernelStats::default()
                })
                .device_count = Some(k.count);
        }
        for k in kernels.values_mut() {
            k.device_count.get_or_insert(0);
        }
    }
    let symbol_of = |name: &str| {
        symbols
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_string())
    };
    let mut kernels: Vec<KernelStats> = kernels.into_values().collect();
    for k in kernels.iter_mut() {
        k.symbol = symbol_of(&k.name);
    }
    for k in device.kernels.iter_mut() {
        k.symbol = symbol_of(&k.name);
    }
    kernels.sort_by(|a, b| {
        (b.launches, b.captured, b.failed, b.open, b.device_count)
            .cmp(&(a.launches, a.captured, a.failed, a.open, a.device_count))
            .then(a.name.cmp(&b.name))
    });
    let mut ranges: Vec<RangeStats> = ranges
        .into_iter()
        .map(|((name, domain), r)| RangeStats {
            name,
            domain,
            count: r.count,
            open: r.open,
            total_ns: r.total_ns,
            max_ns: r.max_ns,
        })
        .collect();
    ranges.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then(b.count.cmp(&a.count))
            .then((&a.name, &a.domain).cmp(&(&b.name, &b.domain)))
    });
    let mut marks: Vec<MarkStats> = marks
        .into_iter()
        .map(|((name, domain), count)| MarkStats {
            name,
            domain,
            count,
        })
        .collect();
    marks.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then((&a.name, &a.domain).cmp(&(&b.name, &b.domain)))
    });
    let warnings = warnings(&processes, &totals, &device);
    let mut unmatched_lookups: Vec<Unmatched> = unmatched
        .into_iter()
        .map(|(name, count)| Unmatched { name, count })
        .collect();
    unmatched_lookups.sort_by(|a, b| a.name.cmp(&b.name));
    Report {
        capture: capture.to_string(),
        processes,
        apis,
        kernels,
        ranges,
        marks,
        unmatched_lookups,
        device,
        waits,
        longest_waits,
        totals,
        warnings,
        nvtx_names,
    }
}

fn warnings(processes: &[Process], totals: &Totals, device: &DeviceReport) -> Vec<String> {
    let mut w = Vec::new();
    // Levels 2 and up record every launch, copy and sync: none at all means CUDA never ran in a
    // traced process, which a table of zeros would not say.
    if totals.calls == 0 && processes.iter().any(|p| p.level >= 2) {
        w.push(format!(
            "no CUDA runtime or driver call was recorded in {}: the program did not use CUDA in a \
             traced process (a launcher that runs the GPU work in a process started without the shim, \
             or a CPU-only run?)",
            if processes.len() == 1 {
                "its one process".to_string()
            } else {
                format!("any of its {} processes", processes.len())
            }
        ));
    }
    // Rings of several machines (or pid namespaces) in one directory may share pids.
    let mut hosts: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for p in processes {
        let h = hosts.entry(p.pid).or_default();
        if !h.contains(&p.host.as_str()) {
            h.push(&p.host);
        }
    }
    for (pid, h) in hosts.iter().filter(|(_, h)| h.len() > 1) {
        w.push(format!(
            "pid {pid} is the pid of processes on {} hosts ({}): `why --call {pid}:SEQ` reads the \
             first ring of it with that call; the trace exports show the others' under pids of their own, named \
             with their host",
            h.len(),
            h.join(", ")
        ));
    }
    for p in processes {
        let who = format!("pid {} ({})", p.pid, p.file);
        if p.disabled {
            w.push(format!(
                "{who}: the shim disabled itself and stopped recording: {}",
                p.notice.as_deref().unwrap_or("(no notice left)")
            ));
        } else if let Some(n) = &p.notice {
            w.push(format!("{who}: shim notice: {n}"));
        }
        if p.dropped > 0 {
            w.push(format!(
                "{who}: {} entries dropped because the ring was full (raise --ring-mb, or use --policy overwrite to keep the newest)",
                p.dropped
            ));
        }
        if p.head_behind > 0 {
            w.push(format!(
                "{who}: {} committed entries lay past the header's head word (a damaged header, or a \
                 process still writing); they are read",
                p.head_behind
            ));
        }
        if p.torn > 0 {
            w.push(format!(
                "{who}: {} slots torn (reserved but never committed: the process died while writing them, or is still running)",
                p.torn
            ));
        }
        if p.open > 0 {
            w.push(format!(
                "{who}: {} calls still open (they had not returned when the capture was read: hung, or the process died in them)",
                p.open
            ));
        }
        if p.unknown_kind > 0 {
            w.push(format!(
                "{who}: {} entries of a kind this scanner does not know (skipped)",
                p.unknown_kind
            ));
        }
        if p.no_tick_rate {
            w.push(format!(
                "{who}: the ring's tick rate is unknown (0 in its header, and its clock anchors \
                 measure none): its times are not nanoseconds and every duration is wrong"
            ));
        }
        if p.strings_dropped > 0 || p.strings_torn {
            w.push(format!(
                "{who}: some names are missing ({} strings did not fit the string area{})",
                p.strings_dropped,
                if p.strings_torn {
                    "; the string area ends in a torn record"
                } else {
                    ""
                }
            ));
        }
        let nonzero: Vec<String> = p
            .counters
            .iter()
            .filter(|(_, &v)| v > 0)
            .map(|(k, v)| {
                let i = counter::NAMES.iter().position(|n| n == k);
                format!("{k}={v} ({})", i.map_or("", |i| counter::MEANINGS[i]))
            })
            .collect();
        if !nonzero.is_empty() {
            w.push(format!("{who}: shim counters: {}", nonzero.join("; ")));
        }
        let u = &p.unassociated;
        if u.total > 0 {
            w.push(format!(
                "{who}: {} of {} device intervals are not tied to a call in the capture ({} with no call, {} whose call is not in the capture, {} naming a call of another class)",
                u.total, p.device_intervals, u.no_call, u.call_not_in_capture, u.wrong_class
            ));
        }
        if p.unconverted > 0 {
            w.push(format!(
                "{who}: {} of {} device intervals are not on the host clock (no timestamp callback): their durations are reported, their start times and latencies are not",
                p.unconverted, p.device_intervals
            ));
        }
    }
    let c = &device.clock;
    if c.before_call > 0 {
        let min = c.min_launch_to_start_ns.unwrap_or(0);
        w.push(format!(
            "{} of {} device intervals start before the call that issued them (min launch→start {} ns): the device clock conversion is off by at least {} ns",
            c.before_call,
            c.checked,
            min,
            min.unsigned_abs()
        ));
    }
    if totals.graph_launches_unresolved > 0 {
        w.push(format!(
            "{} of {} graph launches ran graphs whose kernel nodes are not (all) in the capture (instantiated before recording began, or entries lost): their kernel executions are not counted",
            totals.graph_launches_unresolved, totals.graph_launches
        ));
    }
    if totals.unmatched_range_ends > 0 {
        w.push(format!(
            "{} NVTX pops/ends matched no push/start (their opening entry was lost)",
            totals.unmatched_range_ends
        ));
    }
    w
}
