//! `causeway export`: a capture as a trace file for a timeline viewer, in the Chrome Trace Event Format
//! (`chrome`, JSON: chrome://tracing, Perfetto UI, Speedscope) or as Perfetto's own protobuf trace
//! (`perfetto`, `.pftrace`: ui.perfetto.dev, trace_processor), or as a directory of Parquet tables
//! (`parquet`: DuckDB, pandas, polars; see `parquet` and docs/parquet.md).
//!
//! Both formats are written from the timeline model (`crate::model`) through one layout, so they show the
//! same thing:
//!
//! * one process per traced process (one ring);
//! * one track per host thread that made calls, NVTX ranges or marks: its calls (name = API, category =
//!   API class) and its NVTX ranges as slices, its marks as instants. A call that never returned and a
//!   range never closed end at the process's last timestamp and say `open`;
//! * one track per device stream (named by `StreamId::label`), after the host threads: kernels, copies,
//!   memsets and graph launches as slices on the host clock, each with its conversion bound (`bound_ns`);
//! * one flow (arrow) from each call to each device span tied to it, by sequence number;
//! * one flow per cross-track dependency of the causal graph (`analysis::causal::graph`): event waits,
//!   context events, host waits, work-token handoffs and (inferred) legacy-stream ordering — named by
//!   the edge type, with its evidence class (Chrome: the flow's name and category; Perfetto: a flow
//!   that terminates at the dependent slice, whose `depends_on` annotation says type and evidence).
//!   Program and stream order are the tracks' own order and get no arrow.
//!
//! Viewers require the slices of one track to nest (a slice either contains another or is disjoint from
//! it). Calls on one thread always nest; NVTX ranges need not (ranges of two domains may interleave, and
//! a start/end range may end on another thread, in the middle of a call), and device spans of one stream
//! may overlap within their bound. Such a slice is never dropped nor clipped: it goes on an extra track
//! beside its thread's or stream's (`… (overlap N)`), so every track nests. Calls keep the thread's own
//! track: a range that would cross a call moves, never the call.
//!
//! All times are the capture's host CLOCK_MONOTONIC nanoseconds. Device intervals that could not be put
//! on the host clock (`ProcessTimeline::unplaced_device`) are not in the export; they are counted in its
//! metadata and in the command's summary.

pub mod chrome;
pub mod graph;
pub mod parquet;
pub mod perfetto;

pub use crate::analysis::causal::why::TokenSource;
use crate::facts::model::{ProcessTimeline, StreamId, Timeline, NO_ISSUER};
use crate::facts::tokens::Tokens;
use crate::read::capture::Capture;
use crate::util::bits::Ranked;
use crate::util::fastmap::{ByThread, Rows};
use crate::util::groups::{self, Sparse};
use crate::util::output::io_problem;
pub use crate::util::output::{check_output, write_output, OutputError as ExportError};
use rayon::prelude::*;
use std::collections::HashMap;
use std::io;
use std::path::Path;

/// The output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Chrome Trace Event Format (JSON object with `traceEvents`).
    Chrome,
    /// Perfetto protobuf trace (`perfetto.protos.Trace`).
    Perfetto,
    /// A directory of Parquet tables (`parquet::TABLES`), not a single file.
    Parquet,
    /// The causal graph as one JSON document: each process's calls, ranges, device work and typed
    /// edges (`graph::write`).
    Graph,
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Processes drawn (those with at least one call, range, mark or device span).
    pub processes: usize,
    /// Processes of the capture with nothing to draw (a shell, a compiler): listed in the metadata only.
    pub empty_processes: usize,
    pub calls: usize,
    pub ranges: usize,
    pub marks: usize,
    pub device_spans: usize,
    /// Call → device span arrows.
    pub flows: usize,
    /// Dependency arrows of the causal graph (event waits, host waits, handoffs, …).
    pub dependency_flows: usize,
    /// Extra tracks made for slices that do not nest on their thread's or stream's track.
    pub overlap_tracks: usize,
    /// Device intervals without a host time, left out.
    pub unplaced_device: u64,
    pub bytes: u64,
}

/// Opens the capture at `capture`, and writes it to `output` in `format`. An existing `output` is
/// replaced only with `force`; the file appears complete or not at all (written beside it, then renamed).
/// `Format::Parquet` writes a directory instead (`parquet::export`).
pub fn export(
    capture: &Path,
    format: Format,
    output: &Path,
    force: bool,
) -> Result<Summary, ExportError> {
    if format == Format::Parquet {
        return parquet::export(capture, output, force);
    }
    check_output(output, force)?;
    crate::util::stages::mark("begin");
    let cap = Capture::open(capture)?;
    cap.refuse_as_output(output)?;
    let rings = cap.rings()?;
    let timeline = Timeline::build(&rings);
    crate::util::stages::mark("timeline");
    let tokens = TokenSource::of(&rings);
    tokens.read_all_and_release(&cap);
    crate::util::stages::mark("tokens");
    let label = capture.display().to_string();
    let out_err = |e: io::Error| ExportError(format!("{}: cannot write: {}", output.display(), e));
    let written = write_output(output, force, "export", |w| {
        write(&timeline, &tokens, &label, format, w).map_err(out_err)
    });
    crate::util::drop::drop_later(timeline);
    let (mut summary, bytes) = written?;
    summary.bytes = bytes;
    Ok(summary)
}

/// Writes `timeline` in `format` (chrome, perfetto or graph: one stream) to `w`; `tokens` are its
/// processes' work tokens (the causal graph's handoff edges). `capture` names the capture in the
/// output's metadata.
pub fn write(
    timeline: &Timeline,
    tokens: &TokenSource,
    capture: &str,
    format: Format,
    w: &mut (impl crate::util::output::Direct + Send),
) -> io::Result<Summary> {
    let s = match format {
        Format::Graph => graph::write(timeline, tokens, capture, w)?,
        Format::Chrome | Format::Perfetto => {
            let layout = Layout::of(timeline, tokens);
            crate::util::stages::mark("layout");
            if format == Format::Chrome {
                chrome::write(&layout, capture, w)?
            } else {
                perfetto::write(&layout, capture, w)?
            }
            let s = layout.summary();
            layout.drop_later();
            s
        }
        Format::Parquet => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "parquet is a directory of tables: use export::parquet::write_dir",
            ))
        }
    };
    w.flush()?;
    Ok(s)
}

// ---- the layout both formats share ------------------------------------------------------------------

/// What a slice shows: an index into its process's `calls`, `ranges` or `device`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum What {
    Call(usize),
    Range(usize),
    Span(usize),
}

impl What {
    /// Its kind (0 call, 1 range, 2 span) and index.
    #[inline]
    fn kind_index(self) -> (usize, usize) {
        match self {
            What::Call(i) => (0, i),
            What::Range(i) => (1, i),
            What::Span(i) => (2, i),
        }
    }
}

/// One slice on a track: what it shows, in 4 bytes (a large capture's layout holds one per call,
/// range and device span): `What::kind_index`'s kind in the top 2 bits, the index below. Its times
/// are the model's, read where they are needed (`Times`): held here too, they tripled the layout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item(u32);

const _: () = assert!(std::mem::size_of::<Item>() == 4);

/// Bits of `Item` below its kind.
const ITEM_INDEX_BITS: u32 = 30;

impl Item {
    pub fn new(what: What) -> Item {
        let (kind, i) = what.kind_index();
        // A process's calls, ranges and spans are each fewer than 2^30: a timeline holding more
        // would need 60 GB of calls before any layout were made (and a ring of 2^30 entries).
        let index = u32::try_from(i)
            .ok()
            .filter(|&i| i >> ITEM_INDEX_BITS == 0)
            .expect("fewer than 2^30 slices of a kind in a process");
        Item((kind as u32) << ITEM_INDEX_BITS | index)
    }

    #[inline]
    fn index(self) -> usize {
        (self.0 & ((1 << ITEM_INDEX_BITS) - 1)) as usize
    }

    /// What the slice shows.
    #[inline]
    pub fn what(self) -> What {
        let i = self.index();
        match self.0 >> ITEM_INDEX_BITS {
            0 => What::Call(i),
            1 => What::Range(i),
            _ => What::Span(i),
        }
    }
}

/// When a process's slices are drawn: the model's begin and end, a slice never ended (a call that
/// never returned, a range never closed) drawn to the process's last timestamp, and an end before
/// its begin drawn at the begin.
#[derive(Clone, Copy)]
pub(crate) struct Times<'t> {
    p: &'t ProcessTimeline,
    last_ns: u64,
}

/// Slices' drawn times, as the layout reads them: from the model (`Times`), or from a test's table.
pub(crate) trait Spans: Copy {
    /// Slice `it`'s (begin, end) as drawn.
    fn span(self, it: Item) -> (u64, u64);

    /// Says that `it`'s times will be read soon.
    #[inline]
    fn prefetch(self, _it: Item) {}
}

/// How far ahead a pass over a lane asks for its slices' times: the layout's passes read the
/// model's calls and spans in lane order, which interleaves threads and streams (strides no
/// prefetcher follows), and a miss each made them wait most of their time.
const AHEAD: usize = 16;

impl Spans for Times<'_> {
    #[inline]
    fn span(self, it: Item) -> (u64, u64) {
        self.of(it)
    }

    #[inline]
    fn prefetch(self, it: Item) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let (p, i) = (self.p, it.index());
            // Addresses only: nothing is read here, and an index past the end is never read.
            let at: *const i8 = match it.what() {
                What::Call(_) => p.calls.as_ptr().wrapping_add(i).cast(),
                What::Range(_) => p.ranges.as_ptr().wrapping_add(i).cast(),
                What::Span(_) => p.device.as_ptr().wrapping_add(i).cast(),
            };
            // SAFETY: a prefetch is a hint: it reads no memory and faults on no address.
            unsafe { _mm_prefetch(at, _MM_HINT_T0) };
        }
        // Elsewhere a hint only: nothing to do.
        #[cfg(not(target_arch = "x86_64"))]
        let _ = it;
    }
}

impl Times<'_> {
    /// Slice `it`'s (begin, end) as drawn.
    #[inline]
    pub fn of(&self, it: Item) -> (u64, u64) {
        let (begin, end) = match it.what() {
            What::Call(i) => {
                let c = &self.p.calls[i];
                (c.begin_ns, c.end_ns.get())
            }
            What::Range(i) => {
                let r = &self.p.ranges[i];
                (r.begin_ns, r.end_ns)
            }
            What::Span(i) => {
                let d = &self.p.device[i];
                (d.begin_ns, Some(d.end_ns))
            }
        };
        (begin, end.unwrap_or(self.last_ns).max(begin))
    }

    /// Whether slice `it` never ended (drawn to the process's last timestamp).
    #[inline]
    pub fn open(&self, it: Item) -> bool {
        match it.what() {
            What::Call(i) => self.p.calls[i].end_ns.get().is_none(),
            What::Range(i) => self.p.ranges[i].end_ns.is_none(),
            What::Span(_) => false,
        }
    }
}

/// The slices of one track, properly nested, in the order (begin, longest first) that nesting
/// reconstruction needs.
pub(crate) type Lane = Vec<Item>;

pub(crate) struct ThreadLanes {
    pub tid: u32,
    /// Lane 0 is the thread's own track; more lanes hold ranges that do not nest on it.
    pub lanes: Vec<Lane>,
    /// Indices into the process's `marks`, in time order.
    pub marks: Vec<usize>,
}

pub(crate) struct StreamLanes {
    pub stream: StreamId,
    /// Lane 0 is the stream's track; more lanes hold spans that overlap without nesting.
    pub lanes: Vec<Lane>,
}

pub(crate) struct ProcLayout<'t> {
    pub p: &'t ProcessTimeline,
    /// The pid the trace shows (`Layout::of`): the process's own, unless a process of another host
    /// with the same pid was drawn before it (rings of several machines or pid namespaces in one
    /// directory), whose tracks a viewer would merge with its own: then one from `SHOWN_PID_BASE`
    /// up, the same for every ring of that host and pid (a process that execs writes two).
    pub pid: u32,
    /// Earliest timestamp of anything in the process (0 when it has nothing).
    pub first_ns: u64,
    /// When its slices are drawn.
    pub times: Times<'t>,
    pub threads: Vec<ThreadLanes>,
    pub streams: Vec<StreamLanes>,
    /// Largest conversion bound of the process's device spans.
    pub bound_max_ns: u64,
    /// The process's first call -> device flow id (Perfetto's, one per span: `flows_of`,
    /// `span_flow`): the flows below are numbered from it (4 bytes each, not 8: a process has fewer
    /// than 2^32 spans). Chrome binds them per call instead (`bind_base`).
    flow_base: u64,
    /// Call `i`'s Chrome flow binding (`call_bind`) is `bind_base + i`: unique in the file.
    bind_base: u64,
    /// The spans each call issued, in span order: the flows it starts end there (`flows_of`).
    issued: Sparse,
    /// The spans tied to a call: the flow ending at each is its rank among them (`span_flow`).
    tied: Ranked,
    /// Calls whose kernel and stream their device work shows (one bit each; `call_shown`).
    shown: Vec<u64>,
    /// The dependency flows (`Dep`), and their indices sorted by source and by target slice.
    pub deps: Vec<Dep>,
    deps_out: Vec<(What, usize)>,
    deps_in: Vec<(What, usize)>,
    /// Slices with a dependency flow either way, one bit each, by kind (call, range, span): most have
    /// none, and the bit spares them the searches of `deps_from` and `deps_into`.
    dep_bits: [Vec<u64>; 3],
}

/// A dependency of the causal graph drawn as a flow between two slices.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dep {
    pub id: u64,
    pub from: What,
    pub to: What,
    /// The edge type (`EdgeKind::name`).
    pub kind: &'static str,
    /// The evidence class (`Evidence::name`).
    pub evidence: &'static str,
    /// "kind (evidence)": the dependent slice's `depends_on` annotation.
    pub label: &'static str,
}

/// `depends_on`'s value for an edge type and evidence class.
fn dep_label(kind: &str, evidence: &str) -> &'static str {
    match (kind, evidence) {
        ("event_wait", "explicit") => "event_wait (explicit)",
        ("context_event", "explicit") => "context_event (explicit)",
        ("host_wait", "explicit") => "host_wait (explicit)",
        ("handoff", "observed") => "handoff (observed)",
        ("legacy_stream", "inferred") => "legacy_stream (inferred)",
        _ => "dependency",
    }
}

/// First pid shown for a process whose own pid another host's process has in the same trace: above
/// Linux's largest pid_max (2^22), below Chrome's synthetic tids (`chrome::SYNTHETIC_TID_BASE`).
pub const SHOWN_PID_BASE: u32 = 1 << 29;

pub(crate) struct Layout<'t> {
    pub procs: Vec<ProcLayout<'t>>,
}

impl<'t> Layout<'t> {
    pub fn of(t: &'t Timeline, tokens: &TokenSource) -> Layout<'t> {
        let mut next_flow = 1u64;
        let mut next_bind = BIND_BASE;
        let procs = t
            .processes
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let pl = ProcLayout::of(p, tokens.get(k), &mut next_flow, next_bind);
                next_bind += p.calls.len() as u64;
                pl
            })
            .collect();
        let mut l = Layout { procs };
        l.tell_pids_apart();
        l
    }

    /// Shown pids (`ProcLayout::pid`): each (pid, host) of the drawn processes gets the pid where no
    /// other host's process was drawn with it first, else the next from `SHOWN_PID_BASE`.
    fn tell_pids_apart(&mut self) {
        let mut shown: HashMap<(u32, &str), u32> = HashMap::default();
        let mut hosts: HashMap<u32, usize> = HashMap::default();
        let mut next = SHOWN_PID_BASE;
        for pl in self.procs.iter_mut().filter(|p| !p.is_empty()) {
            let key = (pl.p.pid, pl.p.host.as_str());
            pl.pid = *shown.entry(key).or_insert_with(|| {
                let n = hosts.entry(key.0).or_default();
                *n += 1;
                if *n == 1 {
                    key.0
                } else {
                    next += 1;
                    next - 1
                }
            });
        }
    }

    /// Gives the layout's memory back on a thread of its own (`util::drop`): at 10 M entries its
    /// tracks and flows are most of a gigabyte, whose unmapping the output does not need.
    fn drop_later(self) {
        let owned: Vec<_> = (self.procs.into_iter())
            .map(|pl| {
                let lanes = (pl.threads, pl.streams);
                let flows = (pl.tied, pl.issued, pl.shown);
                (lanes, flows, pl.deps, pl.deps_out, pl.deps_in, pl.dep_bits)
            })
            .collect();
        crate::util::drop::drop_later(owned);
    }

    /// The processes with something to draw, in capture order.
    pub fn drawn(&self) -> impl Iterator<Item = &ProcLayout<'t>> {
        self.procs.iter().filter(|p| !p.is_empty())
    }

    fn summary(&self) -> Summary {
        let mut s = Summary {
            processes: self.drawn().count(),
            empty_processes: self.procs.len() - self.drawn().count(),
            ..Summary::default()
        };
        for pl in &self.procs {
            s.calls += pl.p.calls.len();
            s.ranges += pl.p.ranges.len();
            s.marks += pl.p.marks.len();
            s.device_spans += pl.p.device.len();
            // One flow per tied span, listed under its call.
            s.flows += pl.issued.items().len();
            s.dependency_flows += pl.deps.len();
            s.unplaced_device += pl.p.unplaced_device;
            s.overlap_tracks += pl
                .threads
                .iter()
                .map(|t| t.lanes.len().saturating_sub(1))
                .sum::<usize>();
            s.overlap_tracks += pl
                .streams
                .iter()
                .map(|t| t.lanes.len().saturating_sub(1))
                .sum::<usize>();
        }
        s
    }
}

impl<'t> ProcLayout<'t> {
    fn of(
        p: &'t ProcessTimeline,
        tokens: Option<&Tokens>,
        next_flow: &mut u64,
        bind_base: u64,
    ) -> ProcLayout<'t> {
        let (first_ns, last_ns) = p.extent();
        let times = Times { p, last_ns };
        // The tracks, the causal graph and the call -> device flows need nothing of each other:
        // built side by side. The flows are numbered from `next_flow`, the dependencies after them.
        let ((threads, streams), ((dep_edges, issued), flows)) = rayon::join(
            || rayon::join(|| thread_tracks(p, times), || stream_tracks(p, times)),
            || {
                // Each device span's issuing call, and the spans each call issued: the graph and
                // the flows both need them (one list, lent to the graph and given back).
                let issuers = p.issuers();
                let issued = Sparse::by_key(p.calls.len(), &issuers);
                rayon::join(
                    || {
                        crate::analysis::causal::graph::Graph::cross_track_edges(
                            p, tokens, &issuers, issued,
                        )
                    },
                    || Flows::of(p, &issuers),
                )
            },
        );
        let Flows { tied, shown } = flows;
        let flow_base = *next_flow;
        *next_flow += issued.items().len() as u64;

        // Dependencies across tracks, from the causal graph, in the graph's edge order.
        let what = |n| match n {
            crate::analysis::causal::graph::Node::Call(i) => Some(What::Call(i as usize)),
            crate::analysis::causal::graph::Node::Work(j) => Some(What::Span(j as usize)),
            crate::analysis::causal::graph::Node::Absent(_) => None,
        };
        let mut deps = Vec::new();
        for e in &dep_edges {
            let (Some(from), Some(to)) = (what(e.from()), what(e.to())) else {
                continue;
            };
            let id = *next_flow;
            *next_flow += 1;
            deps.push(Dep {
                id,
                from,
                to,
                kind: e.kind.name(),
                evidence: e.evidence().name(),
                label: dep_label(e.kind.name(), e.evidence().name()),
            });
        }
        let mut deps_out: Vec<(What, usize)> =
            deps.iter().enumerate().map(|(k, d)| (d.from, k)).collect();
        let mut deps_in: Vec<(What, usize)> =
            deps.iter().enumerate().map(|(k, d)| (d.to, k)).collect();
        deps_out.sort();
        deps_in.sort();
        let mut dep_bits: [Vec<u64>; 3] = [
            vec![0; p.calls.len().div_ceil(64)],
            vec![0; p.ranges.len().div_ceil(64)],
            vec![0; p.device.len().div_ceil(64)],
        ];
        for (w, _) in deps_out.iter().chain(&deps_in) {
            let (kind, i) = w.kind_index();
            set_bit(&mut dep_bits[kind], i);
        }

        ProcLayout {
            p,
            pid: p.pid,
            first_ns,
            times,
            threads,
            streams,
            bound_max_ns: (p.device.par_iter().map(|d| d.bound_ns).max()).unwrap_or(0),
            flow_base,
            bind_base,
            issued,
            tied,
            shown,
            deps,
            deps_out,
            deps_in,
            dep_bits,
        }
    }

    /// Whether call `i`'s kernel and stream are shown by device work drawn with a flow: its own (a
    /// span tied to it on the track of the stream handle it passed, named by the kernel it
    /// launched), or its enclosing call's when that one is shown and is of the same class with the
    /// same kernel and stream (a runtime launch's driver launch). Perfetto leaves such a call's
    /// `kernel` and `stream` out.
    #[inline]
    pub fn call_shown(&self, i: usize) -> bool {
        bit(&self.shown, i)
    }

    /// Whether slice `w` has a dependency flow either way.
    #[inline]
    pub fn has_deps(&self, w: What) -> bool {
        let (kind, i) = w.kind_index();
        bit(&self.dep_bits[kind], i)
    }

    /// The dependency flows leaving slice `w`, in edge order.
    pub fn deps_from(&self, w: What) -> impl Iterator<Item = &Dep> + '_ {
        run(&self.deps_out, w).map(move |k| &self.deps[k])
    }

    /// The dependency flows ending at slice `w`, in edge order.
    pub fn deps_into(&self, w: What) -> impl Iterator<Item = &Dep> + '_ {
        run(&self.deps_in, w).map(move |k| &self.deps[k])
    }

    /// Nothing to draw: no call, range, mark or device span.
    pub fn is_empty(&self) -> bool {
        let p = self.p;
        p.calls.is_empty() && p.ranges.is_empty() && p.marks.is_empty() && p.device.is_empty()
    }

    /// Name of a thread's track (lane 0) or of one of its overlap tracks.
    pub fn thread_name(&self, tid: u32, lane: usize) -> String {
        let base = if tid == self.p.pid {
            format!("main thread {tid}")
        } else {
            format!("thread {tid}")
        };
        if lane == 0 {
            base
        } else {
            format!("{base} (overlap {lane})")
        }
    }

    /// Name of a stream's track (lane 0) or of one of its overlap tracks: its label, with the name
    /// the program gave it through NVTX.
    pub fn stream_name(&self, stream: &StreamId, lane: usize) -> String {
        let label = self.p.stream_label(stream);
        if lane == 0 {
            label
        } else {
            format!("{label} (overlap {lane})")
        }
    }

    /// The ids of the flows call `i` starts, in span order (Perfetto's; Chrome's is `call_bind`).
    pub fn flows_of(&self, i: usize) -> impl Iterator<Item = u64> + '_ {
        let spans = self.issued.of(i);
        spans
            .iter()
            .map(|&j| self.flow_base + u64::from(self.tied.rank(j as usize)))
    }

    /// The id of the flow ending at device span `j`, if it is tied to a call (Perfetto's; Chrome's
    /// is `span_bind`).
    #[inline]
    pub fn span_flow(&self, j: usize) -> Option<u64> {
        (self.tied.contains(j)).then(|| self.flow_base + u64::from(self.tied.rank(j)))
    }

    /// The binding of the flows call `i` starts, if it issued device work: one per call, shared by
    /// every span it issued (`span_bind`), so a call's flows go out of one event (Chrome's `bind_id`).
    #[inline]
    pub fn call_bind(&self, i: usize) -> Option<u64> {
        (!self.issued.of(i).is_empty()).then_some(self.bind_base + i as u64)
    }

    /// The binding of the flow ending at device span `j` (its call's `call_bind`), if it is tied to a
    /// call. `near` is the index of a call near the span's (the last one found, as spans come in
    /// issue order), updated: the call is found in a few probes, as `ProcessTimeline::issuers` finds
    /// it.
    #[inline]
    pub fn span_bind(&self, j: usize, near: &mut usize) -> Option<u64> {
        if !self.tied.contains(j) {
            return None;
        }
        let i = self
            .p
            .call_index_near(self.p.device[j].call.get()?, *near)?;
        *near = i;
        Some(self.bind_base + i as u64)
    }

    /// The process's name in a trace: its executable's base name, and where its pid is shown as
    /// another (`pid`), its own pid and host.
    pub fn process_label(&self) -> String {
        if self.pid == self.p.pid {
            self.exe_name().to_string()
        } else {
            format!(
                "{} (pid {} on {})",
                self.exe_name(),
                self.p.pid,
                self.p.host
            )
        }
    }

    pub fn exe_name(&self) -> &str {
        let exe = self.p.exe.trim_end_matches('/');
        let base = exe.rsplit('/').next().unwrap_or(exe);
        if base.is_empty() {
            "?"
        } else {
            base
        }
    }
}

/// The first call's flow binding (`ProcLayout::call_bind`), past any count of flows a viewer numbers
/// itself: Perfetto gives the file's `s`/`f` flows (the dependencies) ids from 0 up in the space the
/// bindings are in, so bindings from 1 would join a dependency's arrow to a call's.
const BIND_BASE: u64 = 1 << 32;

/// Bit `i` of a set kept as 64-bit words (unset past its end).
#[inline]
fn bit(words: &[u64], i: usize) -> bool {
    words.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
}

#[inline]
fn set_bit(words: &mut [u64], i: usize) {
    words[i / 64] |= 1 << (i % 64);
}

/// The call -> device flows of a process: one per device span tied to a call, numbered in span order
/// from 0 (`ProcLayout::flow_base` is added where they are written).
struct Flows {
    /// The spans tied to a call: a span's flow is its rank among them.
    tied: Ranked,
    /// Calls whose kernel and stream their device work shows (`ProcLayout::call_shown`).
    shown: Vec<u64>,
}

impl Flows {
    /// `p`'s flows, numbered from 0; `issuers` is `p.issuers()`.
    fn of(p: &ProcessTimeline, issuers: &[u32]) -> Flows {
        // Whether each span's track and name show its call's stream and kernel: on every thread.
        let shows: Vec<bool> = (p.device.par_iter().zip(issuers))
            .map(|(d, &ci)| ci != NO_ISSUER && shows_call(d, &p.calls[ci as usize]))
            .collect();
        let mut shown = vec![0u64; p.calls.len().div_ceil(64)];
        for (&ci, _) in issuers.iter().zip(&shows).filter(|(_, &sh)| sh) {
            set_bit(&mut shown, ci as usize);
        }
        drop(shows);
        let tied = Ranked::from_fn(issuers.len(), |j| issuers[j] != NO_ISSUER);
        shown_through_enclosing(p, &mut shown, 1 << 20);
        Flows { tied, shown }
    }
}

/// Whether span `d`, tied to call `c`, shows the call's stream and kernel: it is on the track of the
/// stream handle the call passed, named by the kernel it launched (or the call launched none).
fn shows_call(d: &crate::facts::model::DeviceSpan, c: &crate::facts::model::Call) -> bool {
    let stream = c.stream().is_some_and(|s| d.stream == StreamId::Handle(s));
    let kernel = match &c.kernel {
        Some(k) => **k == *d.name,
        None => c.class != Some(causeway_ring::Class::Launch),
    };
    stream && kernel
}

/// Marks in `shown` the nested calls whose enclosing call is marked, of the same class, and names
/// the same kernel and stream. The enclosing call is the latest earlier call of the thread one level
/// out (calls are in sequence order, numbered as they begin); it is looked for among the 64 calls
/// before, and a call whose enclosing one is further keeps its own arguments. The enclosing calls
/// that match are found on every thread; the marks then pass down in call order (a call's enclosing
/// one may have been marked through its own).
fn shown_through_enclosing(p: &ProcessTimeline, shown: &mut [u64], window: usize) {
    let calls = &p.calls;
    // `window` calls at a time (the layout's: 1 Mi): the pairs of all calls at once were 8 bytes a
    // nested call (53 MB at 10 M entries, most of them nested launches), held beside the layout.
    let window = window.max(1);
    for lo in (0..calls.len()).step_by(window) {
        let matched: Vec<(u32, u32)> = (lo..(lo + window).min(calls.len()))
            .into_par_iter()
            .with_min_len(1 << 12)
            .filter_map(|i| {
                let c = &calls[i];
                if c.depth == 0 {
                    return None;
                }
                let j = (i.saturating_sub(64)..i)
                    .rev()
                    .find(|&j| calls[j].tid == c.tid && calls[j].depth < c.depth)?;
                let o = &calls[j];
                let same = o.depth + 1 == c.depth
                    && o.class == c.class
                    && o.kernel == c.kernel
                    && o.stream() == c.stream();
                same.then_some((i as u32, j as u32))
            })
            .collect();
        for (i, j) in matched {
            if bit(shown, j as usize) {
                set_bit(shown, i as usize);
            }
        }
    }
}

/// The host threads' tracks: every tid with a call, a range or a mark, its slices drawn at `times`.
fn thread_tracks(p: &ProcessTimeline, times: Times) -> Vec<ThreadLanes> {
    let mut tids: Vec<u32> = p.threads.clone();
    tids.extend(p.ranges.iter().map(|r| r.tid));
    tids.extend(p.marks.iter().map(|m| m.tid));
    tids.sort_unstable();
    tids.dedup();
    // An item whose thread the timeline does not list (none a capture gives) is not drawn.
    let slot = |tid: u32| tids.binary_search(&tid).map_or(groups::NONE, |k| k as u32);
    // Each call's thread, found once per thread (`ByThread` answers the calls after it).
    let mut slots: ByThread<u32> = ByThread::default();
    let mut call_slot = |tid: u32| slots.get_or_insert_with(tid, || slot(tid));
    let mut ranges_by_tid: Vec<Vec<usize>> = vec![Vec::new(); tids.len()];
    for (i, r) in p.ranges.iter().enumerate() {
        if let Some(v) = ranges_by_tid.get_mut(slot(r.tid) as usize) {
            v.push(i);
        }
    }
    // The calls by thread, in call order, counted first and then written straight into each
    // thread's list made at its size: no table of each call's thread nor of the calls by thread
    // beside the lists (8 bytes a call, 52 MB at 10 M entries, at the layout's peak).
    let mut count = vec![0usize; tids.len()];
    for c in &p.calls {
        if let Some(n) = count.get_mut(call_slot(c.tid) as usize) {
            *n += 1;
        }
    }
    let mut by_tid: Vec<Vec<Item>> = (count.iter().zip(&ranges_by_tid))
        .map(|(&n, ranges)| Vec::with_capacity(n + ranges.len()))
        .collect();
    drop(count);
    for (i, c) in p.calls.iter().enumerate() {
        if let Some(items) = by_tid.get_mut(call_slot(c.tid) as usize) {
            items.push(Item::new(What::Call(i)));
        }
    }
    for (items, ranges) in by_tid.iter_mut().zip(ranges_by_tid) {
        items.extend(ranges.iter().map(|&i| Item::new(What::Range(i))));
    }
    let mut marks_by_tid: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, m) in p.marks.iter().enumerate() {
        marks_by_tid.entry(m.tid).or_default().push(i);
    }
    let mut marks: Vec<Vec<usize>> = tids
        .iter()
        .map(|tid| marks_by_tid.remove(tid).unwrap_or_default())
        .collect();
    tids.into_par_iter()
        .zip(by_tid.into_par_iter())
        .zip(marks.par_iter_mut())
        .map(|((tid, items), marks)| {
            // Begin order, the enclosing slice first: longer first, a range before a call of the
            // same extent, the outer level first. A thread's calls arrive in order (sequence
            // order), its ranges after them.
            let items = sort_nearly_sorted(items, times, |it| {
                let (begin, end) = times.of(it);
                let tie = match it.what() {
                    What::Range(i) => (0u8, p.ranges[i].level),
                    What::Call(i) => (1, u32::from(p.calls[i].depth)),
                    What::Span(_) => (2, 0),
                };
                (begin, std::cmp::Reverse(end), tie)
            });
            marks.sort_by_key(|&i| p.marks[i].ns);
            ThreadLanes {
                tid,
                lanes: thread_lanes(items, times),
                marks: std::mem::take(marks),
            }
        })
        .collect()
}

/// The device streams' tracks, in StreamId order.
fn stream_tracks(p: &ProcessTimeline, times: Times) -> Vec<StreamLanes> {
    // Spans interleave among a few streams: `Rows`' recent table finds each one's without hashing.
    // Counted first, each stream's list then made at its size (grown by doubling, a list was up
    // to twice its size, and copied as it grew).
    let mut count: Rows<StreamId, usize> = Rows::default();
    for d in &p.device {
        *count.row(d.stream.get()) += 1;
    }
    let mut by_stream: Rows<StreamId, Vec<Item>> = Rows::default();
    for (stream, n) in count.into_iter() {
        *by_stream.row(stream) = Vec::with_capacity(n);
    }
    for (i, d) in p.device.iter().enumerate() {
        by_stream.row(d.stream.get()).push(Item::new(What::Span(i)));
    }
    let mut streams: Vec<(StreamId, Vec<Item>)> = by_stream.into_iter().collect();
    streams.sort_unstable_by_key(|(stream, _)| *stream);
    streams
        .into_par_iter()
        .map(|(stream, items)| {
            // A stream's spans arrive nearly in begin order.
            let items = sort_nearly_sorted(items, times, |it| {
                let (begin, end) = times.of(it);
                (begin, std::cmp::Reverse(end))
            });
            StreamLanes {
                stream,
                lanes: greedy_lanes(items, times),
            }
        })
        .collect()
}

/// `items` stably sorted by `key`, for lists that arrive nearly in order: the items in order with
/// all before them are found in one pass, each item's key read once (an item's times are read
/// from the model, so a comparison sort's two reads per comparison were most of the layout's
/// time); the others, few, are sorted and merged in.
fn sort_nearly_sorted<K: Ord>(
    items: Vec<Item>,
    t: impl Spans,
    key: impl Fn(Item) -> K,
) -> Vec<Item> {
    let mut rest: Vec<Item> = Vec::new();
    let mut last: Option<K> = None;
    let mut kept = items;
    let mut n = 0;
    for k in 0..kept.len() {
        if let Some(&y) = kept.get(k + AHEAD) {
            t.prefetch(y);
        }
        let x = kept[k];
        let kx = key(x);
        if last.as_ref().is_some_and(|l| kx < *l) {
            rest.push(x);
        } else {
            kept[n] = x;
            n += 1;
            last = Some(kx);
        }
    }
    kept.truncate(n);
    if rest.is_empty() {
        return kept;
    }
    rest.sort_by_cached_key(|&x| key(x));
    // Merged in place, from the back (the list has room: it held them all): on equal keys the item
    // in order first (it came first: a later item equal to it would have been in order too).
    let (mut i, mut j) = (n, rest.len());
    kept.resize(n + j, Item::new(What::Call(0)));
    let mut r_key = key(rest[j - 1]);
    let mut k_key = (i > 0).then(|| key(kept[i - 1]));
    while j > 0 {
        let w = i + j - 1;
        if k_key.as_ref().is_some_and(|kk| *kk > r_key) {
            kept[w] = kept[i - 1];
            i -= 1;
            if let Some(&y) = i.checked_sub(AHEAD).and_then(|a| kept.get(a)) {
                t.prefetch(y);
            }
            k_key = (i > 0).then(|| key(kept[i - 1]));
        } else {
            kept[w] = rest[j - 1];
            j -= 1;
            if j > 0 {
                r_key = key(rest[j - 1]);
            }
        }
    }
    kept
}

/// The indices listed for `w` in a list sorted by slice.
fn run(list: &[(What, usize)], w: What) -> impl Iterator<Item = usize> + '_ {
    let lo = list.partition_point(|&(x, _)| x < w);
    list[lo..]
        .iter()
        .take_while(move |&&(x, _)| x == w)
        .map(|&(_, k)| k)
}

/// Lanes for one thread's items (in begin order, enclosing first). Lane 0 gets every call and every
/// range that nests with them; a range that would cross a call is evicted from lane 0 (the call stays),
/// and a range that would cross what lane 0 holds goes to a further lane.
fn thread_lanes(mut items: Vec<Item>, t: impl Spans) -> Vec<Lane> {
    let mut evicted = vec![false; items.len()];
    // Open slices of lane 0: (end, index into items).
    let mut stack: Vec<(u64, usize)> = Vec::new();
    for (i, &x) in items.iter().enumerate() {
        if let Some(&y) = items.get(i + AHEAD) {
            t.prefetch(y);
        }
        let (begin, end) = t.span(x);
        while stack.last().is_some_and(|&(e, _)| e <= begin) {
            stack.pop();
        }
        loop {
            match stack.last() {
                Some(&(e, j)) if e < end => {
                    // x would start inside j and end after it.
                    let x_call = matches!(x.what(), What::Call(_));
                    let j_range = matches!(items[j].what(), What::Range(_));
                    if x_call && j_range {
                        evicted[j] = true;
                        stack.pop();
                    } else {
                        evicted[i] = true;
                        break;
                    }
                }
                _ => break,
            }
        }
        if !evicted[i] {
            stack.push((end, i));
        }
    }
    // Lane 0 keeps its items in place; the evicted (few) move out, in order.
    let rest: Vec<Item> = items
        .iter()
        .zip(&evicted)
        .filter(|(_, &e)| e)
        .map(|(x, _)| *x)
        .collect();
    let mut k = 0;
    items.retain(|_| {
        k += 1;
        !evicted[k - 1]
    });
    let mut lanes = vec![items];
    lanes.extend(greedy_lanes(rest, t));
    lanes
}

/// Puts each item (in begin order, enclosing first) on the first lane where it nests, opening lanes as
/// needed. Lane 0 keeps its items in `items`' own list (nearly all of a stream's: a copy was a
/// second list as long); the few on other lanes move out, in order.
///
/// A lane takes an item when, its slices ended by the item's begin taken off, the innermost open one
/// (its stack's top) ends at or after the item's end. Each lane's top is kept in a `LaneTops`: tops
/// ended by the begin are taken off first (each slice once, over the whole run), then the first lane
/// whose top is at or after the end is found in O(log lanes) — a scan of the lanes was quadratic
/// where slices all overlap (40 000 overlapping NVTX ranges: 2.5 s of a Chrome export).
fn greedy_lanes(mut items: Vec<Item>, t: impl Spans) -> Vec<Lane> {
    use crate::util::lanes::LaneTops;
    let mut stacks: Vec<Vec<u64>> = Vec::new();
    let mut tops = LaneTops::default();
    // (item, lane) of the items not on lane 0, and one bit per item: moved.
    let mut moved: Vec<(usize, usize)> = Vec::new();
    let mut moved_bits = vec![0u64; items.len().div_ceil(64)];
    for (k, &x) in items.iter().enumerate() {
        if let Some(&y) = items.get(k + AHEAD) {
            t.prefetch(y);
        }
        let (begin, end) = t.span(x);
        // A lane without slices has top u64::MAX: at `begin` u64::MAX it would be "ended" again
        // and again. Slices ending at u64::MAX stay on their stacks then, which takes nothing from
        // what a lane accepts (a top at u64::MAX accepts every slice, as an empty lane does).
        while let Some(l) = tops.first_at_most(begin.min(u64::MAX - 1)) {
            let stack = &mut stacks[l];
            while stack.last().is_some_and(|&e| e <= begin) {
                stack.pop();
            }
            tops.set(l, stack.last().copied().unwrap_or(u64::MAX));
        }
        let lane = match tops.first_at_least(end) {
            Some(l) => l,
            None => {
                stacks.push(Vec::new());
                tops.push(u64::MAX)
            }
        };
        stacks[lane].push(end);
        tops.set(lane, end);
        if lane > 0 {
            moved.push((k, lane));
            set_bit(&mut moved_bits, k);
        }
    }
    if stacks.is_empty() {
        return Vec::new();
    }
    let mut lanes: Vec<Lane> = vec![Vec::new(); stacks.len()];
    for &(k, lane) in &moved {
        lanes[lane].push(items[k]);
    }
    if !moved.is_empty() {
        let mut k = 0;
        items.retain(|_| {
            k += 1;
            !bit(&moved_bits, k - 1)
        });
    }
    lanes[0] = items;
    lanes
}

/// A slice boundary on one lane, in the order a viewer must see them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Edge {
    Begin(usize),
    End(usize),
}

/// A walk over the begin and end events of a lane's slices (indices into the lane), in nesting order:
/// a slice ends before one that begins at the same time, and a nested slice ends before its parent.
/// Timestamps are non-decreasing. A cursor, not a list: a long lane's events are never all held, and
/// a walk can be copied where it stands and resumed (Perfetto encodes a lane's events in units side by
/// side, each from where the one before it ends).
#[derive(Clone)]
pub(crate) struct Edges {
    /// The next slice to begin, and its (begin, end).
    next: usize,
    ahead: Option<(u64, u64)>,
    /// Slices begun and not ended: (end, index in the lane).
    open: Vec<(u64, usize)>,
}

impl Edges {
    /// A walk from the lane's start; `t` gives a slice's (begin, end).
    pub fn new(lane: &[Item], t: impl Spans) -> Edges {
        for &y in lane.iter().take(AHEAD) {
            t.prefetch(y);
        }
        Edges {
            next: 0,
            ahead: lane.first().map(|&x| t.span(x)),
            open: Vec::new(),
        }
    }

    /// A walk standing where slice `next` of `lane` is about to begin, with the slices `open`
    /// ((end, index), outermost first) still open.
    pub fn resume(lane: &[Item], t: impl Spans, next: usize, open: Vec<(u64, usize)>) -> Edges {
        for &y in lane.iter().skip(next).take(AHEAD) {
            t.prefetch(y);
        }
        Edges {
            next,
            ahead: lane.get(next).map(|&x| t.span(x)),
            open,
        }
    }

    /// The slices open ((end, index), outermost first).
    pub fn open(&self) -> &[(u64, usize)] {
        &self.open
    }

    /// How many of the lane's slices have begun.
    #[inline]
    pub fn begun(&self) -> usize {
        self.next
    }

    /// The next event and its time, if any.
    #[inline]
    pub fn peek(&self) -> Option<(u64, Edge)> {
        match self.open.last() {
            // The innermost open slice ends before the next one begins.
            Some(&(end, j)) if self.ahead.is_none_or(|(begin, _)| end <= begin) => {
                Some((end, Edge::End(j)))
            }
            _ => self.ahead.map(|(begin, _)| (begin, Edge::Begin(self.next))),
        }
    }

    /// Passes `edge`, the event `peek` gave; `lane` and `t` are the ones the walk began with.
    #[inline]
    pub fn pass(&mut self, edge: Edge, lane: &[Item], t: impl Spans) {
        match edge {
            Edge::End(_) => {
                self.open.pop();
            }
            Edge::Begin(i) => {
                let (_, end) = self.ahead.expect("a slice to begin");
                self.open.push((end, i));
                self.next += 1;
                if let Some(&y) = lane.get(self.next + AHEAD) {
                    t.prefetch(y);
                }
                self.ahead = lane.get(self.next).map(|&x| t.span(x));
            }
        }
    }

    /// The next event and its time, passed.
    #[cfg(test)]
    pub fn next(&mut self, lane: &[Item], t: impl Spans) -> Option<(u64, Edge)> {
        let (ts, edge) = self.peek()?;
        self.pass(edge, lane, t);
        Some((ts, edge))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slices with the times a test gives them: their items, and the times `span` reads for them.
    struct Drawn(Vec<(What, u64, u64)>);

    impl Drawn {
        fn items(&self) -> Vec<Item> {
            self.0.iter().map(|&(w, _, _)| Item::new(w)).collect()
        }

        fn nests(&self, lane: &Lane) -> bool {
            let t: Vec<(u64, u64)> = lane.iter().map(|&x| Spans::span(self, x)).collect();
            t.iter().enumerate().all(|(i, a)| {
                t[i + 1..].iter().all(|b| {
                    b.0 >= a.1 || a.0 >= b.1 || // disjoint
                    (a.0 <= b.0 && b.1 <= a.1) || (b.0 <= a.0 && a.1 <= b.1)
                })
            })
        }
    }

    impl Spans for &Drawn {
        fn span(self, it: Item) -> (u64, u64) {
            let w = it.what();
            let &(_, b, e) = self.0.iter().find(|x| x.0 == w).expect("a test's slice");
            (b, e)
        }
    }

    /// An item gives back the slice it was made with, for every kind and the largest index it holds.
    #[test]
    fn an_item_keeps_what_it_shows() {
        let big = (1usize << ITEM_INDEX_BITS) - 1;
        for what in [
            What::Call(0),
            What::Range(7),
            What::Span(big),
            What::Call(big),
            What::Range(big - 1),
            What::Span(0),
        ] {
            assert_eq!(Item::new(what).what(), what);
        }
        let past = std::panic::catch_unwind(|| Item::new(What::Call(big + 1)));
        assert!(
            past.is_err(),
            "an index past the bits is refused, not folded"
        );
    }

    /// Each thread's track holds that thread's calls, in call order, then nothing else: with more
    /// threads than the table of recent threads has slots, their calls interleaved at random, and
    /// a thread with ranges only.
    #[test]
    fn a_threads_track_is_its_calls_in_order() {
        use crate::facts::handle::Handle;
        use crate::facts::model::{Call, Range};
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let tids: Vec<u32> = (0..150u32).map(|k| 1000 + 7 * k).collect();
        let calls: Vec<Call> = (0..20_000u64)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                Call {
                    seq: i,
                    tid: tids[(x % 150) as usize],
                    api: crate::read::intern("cudaLaunchKernel"),
                    layer: None,
                    class: None,
                    begin_ns: 10 * i,
                    end_ns: Some(10 * i + 5).into(),
                    depth: 0,
                    result: 0,
                    kernel: None,
                    a0: Handle::ZERO,
                    a1: Handle::ZERO,
                    flags: 0,
                }
            })
            .collect();
        let ranges = vec![Range {
            tid: 5,
            name: crate::read::intern("step"),
            domain: None,
            begin_ns: 0,
            end_ns: Some(10),
            level: 0,
            attrs: Default::default(),
        }];
        let p = ProcessTimeline {
            threads: tids.clone(),
            calls,
            ranges,
            ..ProcessTimeline::empty(1)
        };
        let (_, last_ns) = p.extent();
        let tracks = thread_tracks(&p, Times { p: &p, last_ns });
        let got: Vec<u32> = tracks.iter().map(|t| t.tid).collect();
        assert_eq!(got, [&[5], &tids[..]].concat());
        for t in &tracks {
            let items: Vec<What> = t.lanes.iter().flatten().map(|it| it.what()).collect();
            let want: Vec<What> = if t.tid == 5 {
                vec![What::Range(0)]
            } else {
                (p.calls.iter().enumerate())
                    .filter(|(_, c)| c.tid == t.tid)
                    .map(|(i, _)| What::Call(i))
                    .collect()
            };
            assert_eq!(items, want, "thread {}", t.tid);
        }
    }

    /// A mark passes down chains of nested calls (launch in launch in launch, same kernel and
    /// stream) the same whatever the window of calls: chains crossing windows of 1, 2, 3 and 7
    /// calls, a chain broken by another kernel, another thread's calls between.
    #[test]
    fn enclosing_marks_pass_down_across_windows() {
        use crate::facts::handle::Handle;
        use crate::facts::model::Call;
        let call = |seq: u64, tid: u32, depth: u16, kernel: &str| Call {
            seq,
            tid,
            api: crate::read::intern("cudaLaunchKernel"),
            layer: None,
            class: Some(causeway_ring::Class::Launch),
            begin_ns: 10 * seq,
            end_ns: Some(10 * seq + 5).into(),
            depth,
            result: 0,
            kernel: Some(crate::read::intern(kernel)),
            a0: Handle::of(0x5000),
            a1: Handle::ZERO,
            flags: 0,
        };
        let mut calls = Vec::new();
        for r in 0..20u64 {
            let seq = calls.len() as u64;
            let k = if r % 5 == 3 { "other" } else { "k" };
            calls.push(call(seq, 1, 0, "k"));
            calls.push(call(seq + 1, 2, 0, "k"));
            calls.push(call(seq + 2, 1, 1, "k"));
            calls.push(call(seq + 3, 1, 2, k));
            calls.push(call(seq + 4, 1, 3, "k"));
        }
        let p = ProcessTimeline {
            threads: vec![1, 2],
            calls,
            ..ProcessTimeline::empty(1)
        };
        let start = |p: &ProcessTimeline| {
            let mut shown = vec![0u64; p.calls.len().div_ceil(64)];
            for i in (0..p.calls.len()).step_by(10) {
                set_bit(&mut shown, i);
            }
            shown
        };
        let mut whole = start(&p);
        shown_through_enclosing(&p, &mut whole, usize::MAX);
        let marked = (0..p.calls.len()).filter(|&i| bit(&whole, i)).count();
        assert!(marked > 3 * 10, "the chains pass marks down: {marked}");
        for window in [1, 2, 3, 7] {
            let mut got = start(&p);
            shown_through_enclosing(&p, &mut got, window);
            assert_eq!(got, whole, "window {window}");
        }
    }

    /// The drawn times: a slice never ended runs to the process's last timestamp and says so; an end
    /// before its begin is drawn at the begin; a span is never open.
    #[test]
    fn times_are_the_models_with_open_slices_drawn_to_the_end() {
        use crate::facts::model::{Call, DeviceSpan, Range};
        let name = crate::read::intern("x");
        let call = |begin, end: Option<u64>| Call::bare(0, 1, name, (begin, end), 0);
        let p = ProcessTimeline {
            calls: vec![call(10, Some(20)), call(30, None), call(50, Some(40))],
            ranges: vec![Range {
                tid: 1,
                name,
                domain: None,
                begin_ns: 5,
                end_ns: None,
                level: 0,
                attrs: Default::default(),
            }],
            device: vec![DeviceSpan {
                graph_node: crate::facts::model::GraphNode::NONE,
                kind: causeway_ring::layout::DeviceKind::Kernel,
                name,
                begin_ns: 7,
                end_ns: 3,
                bound_ns: 0,
                stream: StreamId::Handle(1).into(),
                call: None.into(),
                bytes: 0,
                queued_ns: None.into(),
                submitted_ns: None.into(),
            }],
            ..ProcessTimeline::empty(1)
        };
        let t = Times { p: &p, last_ns: 99 };
        let got = |w| {
            let it = Item::new(w);
            (t.of(it), t.open(it))
        };
        assert_eq!(got(What::Call(0)), ((10, 20), false));
        assert_eq!(got(What::Call(1)), ((30, 99), true));
        assert_eq!(got(What::Call(2)), ((50, 50), false));
        assert_eq!(got(What::Range(0)), ((5, 99), true));
        assert_eq!(got(What::Span(0)), ((7, 7), false));
    }

    /// The merge of the items in order with the few sorted apart is the stable sort's order, for
    /// lists in order, reversed, nearly in order and random, with many equal keys.
    #[test]
    fn nearly_sorted_lists_sort_as_the_stable_sort_does() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for case in 0..40 {
            let n = [0, 1, 2, 50, 3000][case % 5];
            let keys: Vec<u64> = (0..n as u64)
                .map(|i| match case % 4 {
                    0 => i / 3,
                    1 => n as u64 - i / 2,
                    2 if rand(20) == 0 => rand(n as u64 + 1),
                    2 => i / 2,
                    _ => rand(10),
                })
                .collect();
            let items: Vec<Item> = (0..n).map(|i| Item::new(What::Call(i))).collect();
            let key = |it: Item| match it.what() {
                What::Call(i) => keys[i],
                _ => unreachable!(),
            };
            let mut want = items.clone();
            want.sort_by_key(|&x| key(x));
            let got = sort_nearly_sorted(items, &Drawn(Vec::new()), key);
            let whats = |v: &[Item]| v.iter().map(|x| x.what()).collect::<Vec<_>>();
            assert_eq!(whats(&got), whats(&want), "case {case}");
        }
    }

    #[test]
    fn a_range_crossing_a_call_moves_and_the_call_stays() {
        // Range [0, 150) crosses call [100, 200).
        let d = Drawn(vec![
            (What::Range(0), 0, 150),
            (What::Call(0), 100, 200),
            (What::Call(1), 300, 400),
        ]);
        let lanes = thread_lanes(d.items(), &d);
        assert_eq!(lanes.len(), 2);
        assert_eq!(
            lanes[0].iter().map(|x| x.what()).collect::<Vec<_>>(),
            [What::Call(0), What::Call(1)]
        );
        assert_eq!(lanes[1][0].what(), What::Range(0));
    }

    #[test]
    fn interleaved_ranges_get_a_second_lane_and_every_lane_nests() {
        // A [0,100) and B [50,150) interleave; C [60,70) nests in both; D [100,120) follows A.
        let d = Drawn(vec![
            (What::Range(0), 0, 100),
            (What::Range(1), 50, 150),
            (What::Call(0), 60, 70),
            (What::Range(2), 100, 120),
        ]);
        let lanes = thread_lanes(d.items(), &d);
        assert_eq!(lanes.len(), 2);
        assert!(lanes.iter().all(|l| d.nests(l)));
        assert_eq!(lanes.iter().map(Vec::len).sum::<usize>(), 4);
    }

    /// Overlapping spans go to the first lane they nest on, each lane in begin order; lane 0 is
    /// the list given, less the spans moved out (a plain copy into lanes is the reference).
    #[test]
    fn greedy_lanes_put_each_span_on_the_first_lane_it_nests_on() {
        // Begin order, longer first; overlaps three deep, touching ends, a zero-length span, a span
        // ending with the one it is in.
        let spans = [
            (0, 100),
            (10, 20),
            (50, 150),
            (60, 70),
            (90, 200),
            (100, 100),
            (100, 110),
            (120, 130),
            (150, 160),
            (210, 220),
            (300, 400),
            (350, 400),
        ];
        let got = greedy_by_scan_and_tree(&spans);
        assert_eq!(got.len(), 3, "three deep");
        // Many at once: overlapping without nesting, nested, touching, zero-length, reversed.
        let mut x = 99u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..20 {
            let mut spans: Vec<(u64, u64)> = (0..500)
                .map(|_| {
                    let b = next() % 2000;
                    let len = if round % 4 == 0 {
                        next() % 2000
                    } else {
                        next() % 60
                    };
                    if next() % 50 == 0 {
                        (b, b.saturating_sub(len))
                    } else {
                        (b, b + len)
                    }
                })
                .collect();
            spans.sort_by_key(|&(b, e)| (b, std::cmp::Reverse(e)));
            greedy_by_scan_and_tree(&spans);
        }
        // At the end of time (a damaged ring's raw ticks): it looped for ever on an empty lane.
        let m = u64::MAX;
        greedy_by_scan_and_tree(&[(m - 5, m), (m - 1, m), (m, m), (m, m), (m, m - 1)]);
        let d = Drawn(Vec::new());
        assert!(greedy_lanes(Vec::new(), &d).is_empty());
    }

    /// `greedy_lanes` of `spans` (in begin order, longer first) against a scan of every lane for
    /// each span (the reference); returns the lanes.
    fn greedy_by_scan_and_tree(spans: &[(u64, u64)]) -> Vec<Vec<What>> {
        let d = Drawn(
            (spans.iter().enumerate())
                .map(|(i, &(b, e))| (What::Span(i), b, e))
                .collect(),
        );
        let mut want: Vec<(Vec<u64>, Lane)> = Vec::new();
        for x in d.items() {
            let (b, e) = Spans::span(&d, x);
            let lane = want.iter_mut().position(|(stack, _)| {
                while stack.last().is_some_and(|&end| end <= b) {
                    stack.pop();
                }
                stack.last().is_none_or(|&end| end >= e)
            });
            match lane {
                Some(l) => {
                    want[l].0.push(e);
                    want[l].1.push(x);
                }
                None => want.push((vec![e], vec![x])),
            }
        }
        let want: Vec<Vec<What>> = (want.into_iter())
            .map(|(_, l)| l.iter().map(|x| x.what()).collect())
            .collect();
        let got = greedy_lanes(d.items(), &d);
        let got: Vec<Vec<What>> = got
            .iter()
            .map(|l| l.iter().map(|x| x.what()).collect())
            .collect();
        assert_eq!(got, want);
        got
    }

    #[test]
    fn edges_close_children_first_and_touching_slices_in_order() {
        let d = Drawn(vec![
            (What::Call(0), 0, 100),
            (What::Call(1), 50, 100),
            (What::Call(2), 100, 100),
            (What::Call(3), 100, 130),
        ]);
        let lane = d.items();
        let mut walk = Edges::new(&lane, &d);
        let e: Vec<_> = std::iter::from_fn(|| walk.next(&lane, &d)).collect();
        // A copy taken midway resumes where the walk stood.
        let mut half = Edges::new(&lane, &d);
        for _ in 0..3 {
            let (_, edge) = half.peek().unwrap();
            half.pass(edge, &lane, &d);
        }
        assert_eq!(half.peek(), Some(e[3]));
        let mut resumed = half.clone();
        let rest: Vec<_> = std::iter::from_fn(|| resumed.next(&lane, &d)).collect();
        assert_eq!(rest, e[3..]);
        use Edge::*;
        assert_eq!(
            e.iter().map(|x| x.1).collect::<Vec<_>>(),
            [
                Begin(0),
                Begin(1),
                End(1),
                End(0),
                Begin(2),
                End(2),
                Begin(3),
                End(3)
            ]
        );
        assert!(e.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
